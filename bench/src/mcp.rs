//! Rows 10 and 11: the tools over MCP (`sluice mcp`), against the same call in process.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::process::Listening;
use crate::{Bench, Row, micros, millis, ratio, sibling_binary, time_median};

/// The root of row 1: `page.log`, a 4 KiB log.
pub(crate) fn page_root(bench: &Bench) -> anyhow::Result<std::path::PathBuf> {
    let root = bench.work.join("per-call");
    std::fs::create_dir_all(&root)?;
    let line = "2026-11-30T01:00:00Z INFO  worker-7 processed batch 1234 in 87 ms\n";
    std::fs::write(root.join("page.log"), line.repeat(4096 / line.len()))?;
    Ok(root)
}

fn read_page(id: u64) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"page.log"}}})
        .to_string()
}

/// Row 10: one `tools/call` of a 4 KiB `read_file` page over stdio (write the request line,
/// read the answer line), against the same call in process (`Toolbox::call`).
pub(crate) fn stdio_round_trip(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let root = page_root(bench)?;
    let calls = if bench.quick { 300 } else { 3000 };
    let toolbox = bench.toolbox("read_file", &root, Duration::from_secs(10))?;
    let args = json!({"path": "page.log"}).to_string();
    for _ in 0..100 {
        bench
            .runtime
            .block_on(toolbox.call("read_file", &args, 65_536));
    }
    let in_process = time_median(calls, || {
        let obs = bench
            .runtime
            .block_on(toolbox.call("read_file", &args, 65_536));
        std::hint::black_box(obs.into_text());
        Ok(())
    })?;

    let mut child = Command::new(sibling_binary("sluice")?)
        .args(["--root", &format!("root={}", root.display()), "mcp"])
        .env("SLUICE_CACHE_DIR", bench.work.join("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdin"))?;
    let mut stdout = BufReader::new(
        child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?,
    );
    let mut line = String::new();
    // Writes `before` (lines needing no answer), then `request`, and reads its answer.
    let mut exchange = |before: &str, request: &str| -> anyhow::Result<()> {
        stdin.write_all(before.as_bytes())?;
        stdin.write_all(request.as_bytes())?;
        stdin.write_all(b"\n")?;
        stdin.flush()?;
        line.clear();
        stdout.read_line(&mut line)?;
        anyhow::ensure!(line.contains("\"result\""), "sluice mcp answered {line}");
        Ok(())
    };
    exchange("", &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}).to_string())?;
    exchange(
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
        &read_page(1),
    )?;
    let mut id = 1;
    for _ in 0..100 {
        id += 1;
        exchange("", &read_page(id))?;
    }
    let over_stdio = time_median(calls, || {
        id += 1;
        exchange("", &read_page(id))
    })?;
    drop(stdin);
    let _ = child.wait();
    let target = in_process.mul_f64(1.5) + Duration::from_micros(50);
    Ok(vec![Row {
        what: "10. MCP stdio `tools/call` round trip, read_file 4 KiB page".into(),
        sluice: micros(over_stdio),
        baseline: format!("{} in process", micros(in_process)),
        ratio: ratio(over_stdio, in_process),
        target: format!(
            "≤ 1.5× + 50 µs = {} ({})",
            micros(target),
            if over_stdio <= target {
                "met"
            } else {
                "missed"
            }
        ),
    }])
}

/// Row 11: Streamable HTTP (`sluice mcp --listen`), [`CLIENTS`] clients at a time (1, 4
/// and 16) each calling `read_file` on a 4 KiB page in a loop: calls per second, and the p50
/// and p99 latency of one call.
pub(crate) fn http_concurrent(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let root = page_root(bench)?;
    let mut rows = Vec::new();
    for clients in CLIENTS {
        let measured = measure_http(
            bench,
            &root,
            &mut Command::new(sibling_binary("sluice")?),
            clients,
            false,
        )?;
        let per_second = measured.per_second;
        rows.push(Row {
            what: format!(
                "11. MCP Streamable HTTP, {clients} concurrent client{}, read_file 4 KiB page",
                if clients == 1 { "" } else { "s" }
            ),
            sluice: format!("{per_second:.0} calls/s"),
            baseline: format!("p50 {}, p99 {}", millis(measured.p50), millis(measured.p99)),
            ratio: "—".into(),
            target: if clients == HEAVY_CLIENTS {
                format!(
                    "≥ 2,000 calls/s ({})",
                    if per_second >= 2000.0 {
                        "met"
                    } else {
                        "missed"
                    }
                )
            } else {
                "(reported)".into()
            },
        });
    }
    Ok(rows)
}

/// The numbers of concurrent clients of row 11, one row each.
const CLIENTS: [u64; 3] = [1, 4, HEAVY_CLIENTS];

/// The clients of row 11's target (≥ 2,000 calls/s) and of row 17's telemetry comparison.
pub(crate) const HEAVY_CLIENTS: u64 = 16;

/// What row 11 measured.
pub(crate) struct Http {
    pub(crate) per_second: f64,
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
}

/// Row 11's load on `sluice` (a command to which `--root root=ROOT mcp --listen
/// 127.0.0.1:0` is added, its environment as given) from `clients` concurrent clients; with
/// `metrics`, checks afterwards that its `GET /metrics` counted the calls.
pub(crate) fn measure_http(
    bench: &Bench,
    root: &std::path::Path,
    sluice: &mut Command,
    clients: u64,
    metrics: bool,
) -> anyhow::Result<Http> {
    // Killed when dropped, after the clients are done.
    let server = Listening::start(
        sluice
            .args([
                "--root",
                &format!("root={}", root.display()),
                "mcp",
                "--listen",
                "127.0.0.1:0",
            ])
            .env("SLUICE_CACHE_DIR", bench.work.join("cache")),
    )?;
    // It prints the endpoint itself (`http://ADDR/mcp`).
    let url = server.base.clone();
    let duration = if bench.quick {
        Duration::from_secs(3)
    } else {
        Duration::from_secs(10)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let latencies = runtime.block_on(async {
        let http = reqwest::Client::new();
        let url = Arc::new(url.clone());
        let post = |http: reqwest::Client, url: Arc<String>, id: u64| async move {
            let r = http
                .post(url.as_str())
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-06-18")
                .body(read_page(id))
                .send()
                .await?;
            let body = r.text().await?;
            anyhow::ensure!(body.contains("\"isError\":false"), "answered {body}");
            anyhow::Ok(())
        };
        // Warm up.
        for id in 0..50 {
            post(http.clone(), url.clone(), id).await?;
        }
        let end = Instant::now() + duration;
        let mut tasks = Vec::new();
        for c in 0..clients {
            let (http, url) = (http.clone(), url.clone());
            tasks.push(tokio::spawn(async move {
                let mut times = Vec::new();
                let mut id = c * 1_000_000;
                while Instant::now() < end {
                    let t = Instant::now();
                    post(http.clone(), url.clone(), id).await?;
                    times.push(t.elapsed());
                    id += 1;
                }
                anyhow::Ok(times)
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await??);
        }
        anyhow::Ok(all)
    })?;
    if metrics {
        let text = runtime.block_on(async {
            reqwest::get(format!("{}/metrics", url.trim_end_matches("/mcp")))
                .await?
                .text()
                .await
        })?;
        let counted = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("sluice_tool_calls_total{tool=\"read_file\",status=\"ok\"} ")
            })
            .and_then(|n| n.parse::<usize>().ok());
        anyhow::ensure!(
            counted == Some(latencies.len() + 50),
            "GET /metrics counted {counted:?} read_file calls, not {}",
            latencies.len() + 50
        );
    }
    drop(server);
    let mut latencies = latencies;
    latencies.sort();
    Ok(Http {
        per_second: latencies.len() as f64 / duration.as_secs_f64(),
        p50: latencies[latencies.len() / 2],
        p99: latencies[(latencies.len() * 99 / 100).min(latencies.len() - 1)],
    })
}
