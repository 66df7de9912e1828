//! Row 13: what idle event streams cost `sluice serve` (a SQLite store, the scripted model):
//! its resident memory and threads with 4,000 streams open, waiting for a session's next
//! run, and the CPU they take while nothing happens (first round); and what the process
//! keeps once they have closed, round after round (the allocator's free memory, which it
//! does not hand back to the system but reuses).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::process::Listening;
use crate::{Bench, Row, sibling_binary};

/// Rounds of opening and closing the streams.
const ROUNDS: usize = 3;

/// Row 13.
pub(crate) fn idle_streams(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let n: u64 = if bench.quick { 200 } else { 4000 };
    let what = format!("13. `sluice serve`: resident memory per idle event stream ({n} open)");
    // The bench and the server each hold a descriptor per stream.
    let needed = 2 * n + 512;
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    if limit.is_some_and(|l| l < needed) {
        return Ok(vec![Row {
            what,
            sluice: "—".into(),
            baseline: "—".into(),
            ratio: "—".into(),
            target: format!("not measured: raise the descriptor limit to {needed} (ulimit -n)"),
        }]);
    }
    let dir = bench.work.join("streams");
    std::fs::create_dir_all(dir.join("root"))?;
    std::fs::write(
        dir.join("sluice.toml"),
        format!(
            "[server]\nmax_event_streams = {n}\nmax_connections = {}\nmax_unauthenticated_connections = {}\n",
            n + 64,
            n + 64
        ),
    )?;
    let server = Listening::start(
        Command::new(sibling_binary("sluice")?)
            .arg("--config")
            .arg(dir.join("sluice.toml"))
            .arg("--root")
            .arg(dir.join("root"))
            // Listening once the tools are compiled, so the start is the idle server's.
            .arg("--strict")
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("SLUICE_STORE", dir.join("sessions.db"))
            .env("SLUICE_CACHE_DIR", bench.work.join("cache"))
            .env_remove("SLUICE_STORE_URL")
            .env_remove("SLUICE_SERVER_TOKEN"),
    )?;
    let addr = server.base.trim_start_matches("http://").to_string();
    // A new connection per request: the server closes one idle longer than its
    // header-read timeout (10 s), and a pooled one could be reused just as it closes.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()?;
    let session: Value = bench.runtime.block_on(async {
        http.post(format!("{}/sessions", server.base))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await
    })?;
    let id = session["id"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no session id in {session}"))?
        .to_string();
    let request = format!("GET /sessions/{id}/events HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    std::thread::sleep(Duration::from_secs(2));
    let (start, _) = server.rss_and_threads();
    let (mut first, mut threads, mut cpu) = (0, 0, Duration::ZERO);
    let mut closed = Vec::new();
    for round in 0..ROUNDS {
        let mut streams = Vec::new();
        for _ in 0..n {
            let mut s = TcpStream::connect(&addr)?;
            s.write_all(request.as_bytes())?;
            streams.push(s);
        }
        for s in &mut streams {
            let mut head = [0u8; 12];
            s.read_exact(&mut head)?;
            anyhow::ensure!(&head == b"HTTP/1.1 200", "a stream was refused");
        }
        std::thread::sleep(Duration::from_secs(2));
        let before = server.cpu();
        std::thread::sleep(Duration::from_secs(5));
        if round == 0 {
            cpu = (server.cpu() - before) / 5;
            (first, threads) = server.rss_and_threads();
        }
        drop(streams);
        wait_closed(bench, &http, &server.base)?;
        closed.push(server.rss_and_threads().0);
    }
    let mib = |kib: u64| format!("{:.1} MiB", kib as f64 / 1024.0);
    let kept: Vec<String> = closed
        .iter()
        .map(|c| mib(c.saturating_sub(start)))
        .collect();
    Ok(vec![Row {
        what,
        sluice: format!(
            "{:.1} KiB per stream ({} threads; CPU {:.1} ms/s while idle)",
            first.saturating_sub(start) as f64 / n as f64,
            threads,
            cpu.as_secs_f64() * 1e3
        ),
        baseline: format!(
            "{} at start; kept after they closed, rounds 1 to {ROUNDS}: {}",
            mib(start),
            kept.join(", ")
        ),
        ratio: "—".into(),
        target: "(reported) closed streams hold no thread, task or subscription; what the allocator keeps, it reuses".into(),
    }])
}

/// Waits until `/healthz` of `base` counts no open event stream (at most 60 s).
fn wait_closed(bench: &Bench, http: &reqwest::Client, base: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    bench.runtime.block_on(async {
        loop {
            let health: Value = http
                .get(format!("{base}/healthz"))
                .send()
                .await?
                .json()
                .await?;
            if health["eventStreams"] == 0 {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the streams were still open 60 s after their clients closed: {health}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
}
