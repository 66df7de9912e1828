//! Row 18: the closest peer, microsoft/wassette, serving the same component over MCP stdio:
//! start-up, per-call latency and calls/s side by side, the two servers alternating run by
//! run.
//!
//! The component is wassette's own example `examples/filesystem-rs` (`read-file(path)`),
//! built for `wasm32-wasip2`; both servers grant it read access to one directory holding a
//! 4 KiB file, and both answer `tools/call` of `read-file` with the file's text. Neither
//! binary is built here (GitHub is not reachable from CI): `SLUICE_BENCH_WASSETTE` names the
//! `wassette` binary and `SLUICE_BENCH_PEER_COMPONENT` the component (docs/benchmarks.md
//! says how to build both). Sluice loads it with `builtins = []`, so that its tool is
//! `read_file` as the component names it, at `/data`; wassette preopens the directory at
//! its own path and reads each component's `<id>.policy.yaml` at start-up (it keeps no
//! compile cache, so each of its starts is cold).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::process::McpChild;
use crate::{Bench, Row, micros, millis, ratio, sibling_binary};

/// Calls timed one at a time per run, and requests kept in flight for calls/s.
const CALLS: u64 = 500;
const IN_FLIGHT: u64 = 16;

/// What one run of one server measured.
struct Run {
    /// Spawn to the answer of the first `tools/call` (after `initialize` and a `tools/list`
    /// that lists the component's tool, asked for every 10 ms until it does): Sluice lists a
    /// component's tools while it compiles, and its first call waits for the compile.
    start: Duration,
    /// Sequential `tools/call` round trips, sorted.
    calls: Vec<Duration>,
    /// Calls per second with [`IN_FLIGHT`] requests in flight.
    calls_per_sec: f64,
}

/// Row 18 (see the module docs).
pub(crate) fn rows(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let var = |name: &str| {
        std::env::var_os(name).map(PathBuf::from).ok_or_else(|| {
            anyhow::anyhow!(
                "set SLUICE_BENCH_WASSETTE to a wassette binary and SLUICE_BENCH_PEER_COMPONENT to its examples/filesystem-rs component (docs/benchmarks.md#the-peer); {name} is not set"
            )
        })
    };
    let wassette = var("SLUICE_BENCH_WASSETTE")?;
    let component = var("SLUICE_BENCH_PEER_COMPONENT")?;
    let peer = bench.work.join("peer");
    let data = peer.join("data");
    std::fs::create_dir_all(&data)?;
    let line = "2026-11-30T01:00:00Z INFO  worker-7 processed batch 1234 in 87 ms\n";
    let text = line.repeat(4096 / line.len());
    std::fs::write(data.join("file4k.txt"), &text)?;
    let config = peer.join("sluice.toml");
    std::fs::write(
        &config,
        format!(
            "builtins = []\n\n[roots]\ndata = {:?}\n\n[tools.filesystem]\ncomponent = {:?}\nread = [\"data\"]\n",
            data.display().to_string(),
            component.display().to_string()
        ),
    )?;
    let sluice_binary = sibling_binary("sluice")?;
    let rounds = if bench.quick { 1 } else { 3 };
    let (mut sluice_cold, mut sluice, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        // A fresh compile cache for Sluice's first run of a round (cold), kept for its
        // second (warm); wassette compiles at every start.
        let cache = peer.join(format!("cache-{round}"));
        let sluice_command = || {
            let mut c = Command::new(&sluice_binary);
            c.arg("--config").arg(&config).arg("mcp");
            c.env("SLUICE_CACHE_DIR", &cache);
            c
        };
        let ours = "/data/file4k.txt";
        sluice_cold.push(run(&mut sluice_command(), "read_file", ours, &text)?);
        let state = peer.join(format!("wassette-{round}"));
        theirs.push(run(
            &mut wassette_command(&wassette, &component, &data, &state)?,
            "read-file",
            &data.join("file4k.txt").display().to_string(),
            &text,
        )?);
        sluice.push(run(&mut sluice_command(), "read_file", ours, &text)?);
    }
    let start = |runs: &[Run]| median(runs.iter().map(|r| r.start).collect());
    let p = |runs: &[Run], q: f64| {
        median(
            runs.iter()
                .map(|r| r.calls[((r.calls.len() as f64 * q) as usize).min(r.calls.len() - 1)])
                .collect(),
        )
    };
    let rate = |runs: &[Run]| {
        let mut r: Vec<f64> = runs.iter().map(|r| r.calls_per_sec).collect();
        r.sort_by(f64::total_cmp);
        r[r.len() / 2]
    };
    let target = "≤ 1.0× (keep the lead)".to_string();
    Ok(vec![
        Row {
            what: format!(
                "18. the peer: start until the first `tools/call` answer, the same component (wassette's filesystem-rs) over stdio, warm compile cache (cold: {})",
                millis(start(&sluice_cold))
            ),
            sluice: millis(start(&sluice)),
            baseline: format!("{} wassette (no cache)", millis(start(&theirs))),
            ratio: ratio(start(&sluice), start(&theirs)),
            target: target.clone(),
        },
        Row {
            what: format!(
                "18. the peer: `tools/call` read-file of 4 KiB over stdio, p50 (p99: {} vs {})",
                micros(p(&sluice, 0.99)),
                micros(p(&theirs, 0.99))
            ),
            sluice: micros(p(&sluice, 0.5)),
            baseline: format!("{} wassette", micros(p(&theirs, 0.5))),
            ratio: ratio(p(&sluice, 0.5), p(&theirs, 0.5)),
            target: target.clone(),
        },
        Row {
            what: format!(
                "18. the peer: calls/s over one stdio connection, {IN_FLIGHT} requests in flight"
            ),
            sluice: format!("{:.0} calls/s", rate(&sluice)),
            baseline: format!("{:.0} calls/s wassette", rate(&theirs)),
            ratio: format!("{:.2}×", rate(&theirs) / rate(&sluice)),
            target,
        },
    ])
}

/// `wassette serve --stdio` over a plugin directory under `state` holding `component` and
/// its policy (read access to `data`), with HOME and the XDG directories there too.
fn wassette_command(
    wassette: &Path,
    component: &Path,
    data: &Path,
    state: &Path,
) -> anyhow::Result<Command> {
    let plugins = state.join("plugins");
    std::fs::create_dir_all(&plugins)?;
    std::fs::copy(component, plugins.join("filesystem_rs.wasm"))?;
    std::fs::write(
        plugins.join("filesystem_rs.policy.yaml"),
        format!(
            "version: \"1.0\"\ndescription: \"read-only access to the data\"\npermissions:\n  storage:\n    allow:\n      - uri: \"fs://{}\"\n        access: [\"read\"]\n",
            data.display()
        ),
    )?;
    let mut c = Command::new(wassette);
    c.args(["serve", "--stdio", "--plugin-dir"]).arg(&plugins);
    c.env("HOME", state)
        .env("XDG_DATA_HOME", state.join("data"))
        .env("XDG_CONFIG_HOME", state.join("config"))
        .env("XDG_CACHE_HOME", state.join("cache"));
    Ok(c)
}

/// One run of the server `command` starts: start-up, [`CALLS`] sequential calls of `tool`
/// on the file at `path` (as the component sees it), then calls/s with [`IN_FLIGHT`] in
/// flight. Every answer must hold `text`, the file's.
fn run(command: &mut Command, tool: &str, path: &str, text: &str) -> anyhow::Result<Run> {
    let mut child = McpChild::start(command)?;
    child.send(
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-03-26","capabilities":{},
        "clientInfo":{"name":"sluice-bench","version":"0"}}}),
    )?;
    child.answer(0)?;
    child.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))?;
    // The component's tools are listed once its compile is done (Sluice may answer
    // `initialize` before; wassette compiles first).
    let started = Instant::now();
    loop {
        child.send(&json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}))?;
        let (_, list) = child.answer(1)?;
        if list.to_string().contains("read") {
            break;
        }
        // Not yet: Sluice answers `initialize` while the component compiles.
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(120),
            "the component's tools were not listed: {list}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let call = |id: u64| {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":tool,"arguments":{"path":path}}})
    };
    let check = |answer: &Value| -> anyhow::Result<()> {
        let shown = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("");
        let parsed: Value = serde_json::from_str(shown).unwrap_or(Value::Null);
        let body = parsed["result"].as_str().or(parsed["ok"].as_str());
        anyhow::ensure!(body == Some(text), "not the file's text: {answer}");
        Ok(())
    };
    child.send(&call(2))?;
    let (start, answer) = child.answer(2)?;
    check(&answer)?;
    let mut id = 3;
    let mut calls = Vec::with_capacity(CALLS as usize);
    for _ in 0..CALLS {
        let t = Instant::now();
        child.send(&call(id))?;
        let (_, answer) = child.answer(id)?;
        calls.push(t.elapsed());
        check(&answer)?;
        id += 1;
    }
    calls.sort();
    // Calls/s: keep IN_FLIGHT requests written ahead of the answers.
    let total = CALLS * 2;
    let t = Instant::now();
    let first = id;
    for _ in 0..IN_FLIGHT {
        child.send(&call(id))?;
        id += 1;
    }
    for n in first..first + total {
        let (_, answer) = child.answer(n)?;
        check(&answer)?;
        if id < first + total {
            child.send(&call(id))?;
            id += 1;
        }
    }
    let calls_per_sec = total as f64 / t.elapsed().as_secs_f64();
    Ok(Run {
        start,
        calls,
        calls_per_sec,
    })
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}
