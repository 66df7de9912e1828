//! `sluice-bench`: measures what the sandbox costs, side by side in one run, and prints one
//! table (markdown) to stdout.
//!
//! Build and run it in release mode next to the `sluice` binary (the start-up rows run
//! `sluice call` end to end):
//!
//! ```sh
//! cargo build --release -p sluice -p sluice-bench && ./target/release/sluice-bench
//! ```
//!
//! Rows measure a Sluice operation and a baseline in the same process or back to back, and
//! report their ratio. Times are medians over many runs.

#![allow(clippy::print_stdout, clippy::print_stderr)] // A benchmark prints its table.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_runtime::{ComponentSpec, EngineOptions, Source, ToolEngine, ToolPolicy, Toolbox};

/// One line of the table.
struct Row {
    what: String,
    sluice: String,
    baseline: String,
    ratio: String,
    note: String,
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let work = tempfile::tempdir()?;
    let mut rows = Vec::new();
    rows.extend(per_call(&runtime, work.path())?);
    rows.extend(start(work.path())?);
    print_table(&rows);
    Ok(())
}

/// The median of `samples`.
fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn millis(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Rows 1: one `read_file` of a 4 KiB page through the component (warm `InstancePre`,
/// fresh store per call), with and without the pooling allocator, against `pager` natively.
fn per_call(runtime: &tokio::runtime::Runtime, work: &Path) -> anyhow::Result<Vec<Row>> {
    let root = work.join("per-call");
    std::fs::create_dir_all(&root)?;
    let line = "2026-11-30T01:00:00Z INFO  worker-7 processed batch 1234 in 87 ms\n";
    std::fs::write(root.join("page.log"), line.repeat(4096 / line.len()))?;
    let cap: u32 = 65_536;
    let args = r#"{"path":"page.log"}"#;
    const CALLS: usize = 2000;

    let native = {
        let ctx = sluice_pager::Context::new(
            sluice_pager::Roots::new(vec![sluice_pager::Root::new("root", &root)]),
            sluice_pager::Limits::new(cap),
        );
        let a = sluice_pager::ReadFileArgs {
            path: "page.log".into(),
            ..Default::default()
        };
        let mut samples = Vec::with_capacity(CALLS);
        for _ in 0..CALLS {
            let t = Instant::now();
            let page = sluice_pager::read_file(&ctx, &a).map_err(|e| anyhow::anyhow!(e))?;
            std::hint::black_box(serde_json::to_string(&page)?);
            samples.push(t.elapsed());
        }
        median(samples)
    };

    let mut rows = Vec::new();
    for on_demand in [false, true] {
        let engine = Arc::new(ToolEngine::new(EngineOptions {
            cache_dir: Some(work.join("cache")),
            on_demand_allocation: on_demand,
        })?);
        let policy = ToolPolicy::read_only([("root".to_string(), root.clone())]);
        let toolbox = Toolbox::load(
            engine.clone(),
            &[ComponentSpec {
                source: Source::Builtin("read_file"),
                policy,
            }],
        )?;
        let mut samples = Vec::with_capacity(CALLS);
        for i in 0..CALLS + 100 {
            let t = Instant::now();
            let obs = runtime.block_on(toolbox.call("read_file", args, cap));
            let elapsed = t.elapsed();
            anyhow::ensure!(
                obs.text.starts_with("{\"ok\":true"),
                "read_file failed: {}",
                obs.text
            );
            if i >= 100 {
                samples.push(elapsed);
            }
        }
        let sandboxed = median(samples);
        let allocator = if engine.pooling() {
            "pooling"
        } else {
            "on-demand"
        };
        rows.push(Row {
            what: format!("read_file, 4 KiB page, per call ({allocator} allocator)"),
            sluice: micros(sandboxed),
            baseline: format!("{} native pager", micros(native)),
            ratio: format!("{:.1}×", sandboxed.as_secs_f64() / native.as_secs_f64()),
            note: format!("overhead {}", micros(sandboxed.saturating_sub(native))),
        });
    }
    Ok(rows)
}

/// Rows 8: `sluice call list_dir` end to end, first run (compiles the component) against
/// the second (compiled component from the cache).
fn start(work: &Path) -> anyhow::Result<Vec<Row>> {
    let sluice = sibling_binary("sluice")?;
    let cache = work.join("start-cache");
    let run = || -> anyhow::Result<Duration> {
        let t = Instant::now();
        let out = std::process::Command::new(&sluice)
            .args(["--root", &work.display().to_string(), "call", "list_dir"])
            .env("SLUICE_CACHE_DIR", &cache)
            .output()?;
        let elapsed = t.elapsed();
        anyhow::ensure!(
            out.status.success(),
            "sluice failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(elapsed)
    };
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for _ in 0..5 {
        let _ = std::fs::remove_dir_all(&cache);
        cold.push(run()?);
        for _ in 0..4 {
            warm.push(run()?);
        }
    }
    let (cold, warm) = (median(cold), median(warm));
    Ok(vec![Row {
        what: "`sluice call list_dir` end to end, cached start vs first start".into(),
        sluice: millis(warm),
        baseline: format!("{} first start (compiles)", millis(cold)),
        ratio: format!("{:.0}%", 100.0 * warm.as_secs_f64() / cold.as_secs_f64()),
        note: "target: cached ≤ 20% of first".into(),
    }])
}

/// A binary built next to this one (`cargo build --release -p sluice -p sluice-bench`).
fn sibling_binary(name: &str) -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe()?;
    let path = me.with_file_name(name);
    anyhow::ensure!(
        path.exists(),
        "{} not found: build it with `cargo build --release -p {name}`",
        path.display()
    );
    Ok(path)
}

fn print_table(rows: &[Row]) {
    println!("| measurement | Sluice | baseline | ratio | note |");
    println!("|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} |",
            r.what, r.sluice, r.baseline, r.ratio, r.note
        );
    }
}
