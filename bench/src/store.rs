//! Rows 7 and 12: the session store. Row 7 appends to SQLite and PostgreSQL; row 12 runs the
//! scripted model through one `sluice serve` and through two on one PostgreSQL database.
//!
//! The PostgreSQL measurements need a server: `SLUICE_TEST_POSTGRES_URL` (the tests'
//! variable; a role with `CREATEDB`), on which each measurement makes a scratch database and
//! drops it afterwards. Without it, those rows say so in their target column.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_store::{PgStore, SqliteStore, Store};

use crate::process::Listening;
use crate::{Bench, Row, micros, ratio, sibling_binary};

/// The variable naming the PostgreSQL server.
const POSTGRES_URL_VAR: &str = "SLUICE_TEST_POSTGRES_URL";

/// The PostgreSQL server to measure on, if one is named.
fn postgres_server() -> Option<String> {
    std::env::var(POSTGRES_URL_VAR)
        .ok()
        .filter(|u| !u.is_empty())
}

/// A row that could not be measured without PostgreSQL.
fn skipped(what: &str) -> Row {
    Row {
        what: what.into(),
        sluice: "—".into(),
        baseline: "—".into(),
        ratio: "—".into(),
        target: format!("not measured: {POSTGRES_URL_VAR} is not set"),
    }
}

/// Row 7: appending message 10,000 of a session against message 1, on SQLite and on
/// PostgreSQL (a scratch database), with PostgreSQL's per-append latency against SQLite's.
/// One session is filled to 9,999 messages of 1 KiB; then 200 times, message 1 of a new
/// session and the next message (10,000, 10,001, …) of the long one are appended back to
/// back, so both medians see the same disk and the same load.
pub(crate) fn appends(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let appends = |store: Arc<dyn Store>| -> anyhow::Result<(Duration, Duration)> {
        bench.runtime.block_on(async {
            let content = "x".repeat(1024);
            let message = || {
                sluice_protocol::Message::tool(
                    "call_1",
                    content.clone(),
                    sluice_store::now_rfc3339(),
                )
            };
            let long = store.create_session().await?.id;
            for _ in 1..10_000 {
                store.append(&long, &message()).await?;
            }
            let (mut first, mut last) = (Vec::new(), Vec::new());
            for _ in 0..200 {
                let fresh = store.create_session().await?.id;
                let m = message();
                let t = Instant::now();
                let seq = store.append(&fresh, &m).await?;
                first.push(t.elapsed());
                anyhow::ensure!(seq == 1, "a new session's first message is {seq}");
                let m = message();
                let t = Instant::now();
                let seq = store.append(&long, &m).await?;
                last.push(t.elapsed());
                anyhow::ensure!(seq >= 10_000, "the long session's message is {seq}");
            }
            Ok((crate::median(first), crate::median(last)))
        })
    };
    let sqlite: Arc<dyn Store> = Arc::new(SqliteStore::open(&bench.work.join("bench.db"))?);
    let (first, last) = appends(sqlite)?;
    let mut rows = vec![Row {
        what: "7. session store: append message 10,000 vs message 1 (SQLite)".into(),
        sluice: micros(last),
        baseline: format!("{} message 1", micros(first)),
        ratio: ratio(last, first),
        target: "≤ 1.5".into(),
    }];
    let pg_rows = [
        "7b. session store: append message 10,000 vs message 1 (PostgreSQL)",
        "7c. session store: PostgreSQL append vs SQLite append (message 10,000)",
    ];
    let Some(server) = postgres_server() else {
        rows.extend(pg_rows.map(skipped));
        return Ok(rows);
    };
    let url = bench
        .runtime
        .block_on(PgStore::create_scratch_database(&server))?;
    let measured = bench
        .runtime
        .block_on(PgStore::connect(&url))
        .map_err(anyhow::Error::from)
        .and_then(|pg| appends(Arc::new(pg)));
    let _ = bench.runtime.block_on(PgStore::drop_scratch_database(&url));
    let (pg_first, pg_last) = measured?;
    rows.push(Row {
        what: pg_rows[0].into(),
        sluice: micros(pg_last),
        baseline: format!("{} message 1", micros(pg_first)),
        ratio: ratio(pg_last, pg_first),
        target: "≤ 1.2".into(),
    });
    rows.push(Row {
        what: pg_rows[1].into(),
        sluice: micros(pg_last),
        baseline: format!("{} SQLite", micros(last)),
        ratio: ratio(pg_last, last),
        target: "(reported)".into(),
    });
    Ok(rows)
}

/// Clients sending runs at once in row 12.
const CLIENTS: usize = 8;

/// Row 12: scripted-model runs per second (each run: 5 model requests, 4 tool calls, 10
/// messages) through two `sluice serve` replicas on one PostgreSQL database against one
/// replica, with [`CLIENTS`] clients each creating a session and prompting it with
/// `?wait=true`, alternating replicas. Also the CPU time the replicas spent per run
/// (`/proc/PID/stat`), to say what bounds the rate.
pub(crate) fn replicas(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    const WHAT: &str = "12. replicas: scripted-model runs per second, 2 `sluice serve` vs 1 on one PostgreSQL database";
    let Some(server) = postgres_server() else {
        return Ok(vec![skipped(WHAT)]);
    };
    let sluice = sibling_binary("sluice")?;
    let dir = bench.work.join("replicas");
    std::fs::create_dir_all(dir.join("logs"))?;
    std::fs::write(
        dir.join("logs/app.log"),
        "2026-11-30T01:00:01Z ERROR worker-3 lost connection to db-2\n",
    )?;
    std::fs::write(dir.join("sluice.toml"), "[roots]\nlogs = \"logs\"\n")?;
    let runs = if bench.quick { 40 } else { 400 };
    let mut measured = Vec::new();
    for replicas in [1, 2] {
        let url = bench
            .runtime
            .block_on(PgStore::create_scratch_database(&server))?;
        let result = measure_replicas(bench, &sluice, &dir, &url, replicas, runs);
        let _ = bench.runtime.block_on(PgStore::drop_scratch_database(&url));
        measured.push(result?);
    }
    let [(one, one_cpu), (two, two_cpu)] = [measured[0], measured[1]];
    Ok(vec![Row {
        what: format!("{WHAT} ({CLIENTS} clients, {runs} runs)"),
        sluice: format!("{two:.1} runs/s (CPU {} per run)", ms(two_cpu)),
        baseline: format!("{one:.1} runs/s with 1 (CPU {} per run)", ms(one_cpu)),
        ratio: format!("{:.2}×", two / one),
        target: format!(
            "(reported) {} cores for the replicas, PostgreSQL and the clients",
            std::thread::available_parallelism().map_or(0, |n| n.get())
        ),
    }])
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Starts `replicas` servers on the database `url`, warms them up, then sends `runs` runs
/// from [`CLIENTS`] clients. Returns the runs per second and the replicas' CPU time per run.
fn measure_replicas(
    bench: &Bench,
    sluice: &Path,
    dir: &Path,
    url: &str,
    replicas: usize,
    runs: usize,
) -> anyhow::Result<(f64, Duration)> {
    let servers = (0..replicas)
        .map(|_| start_replica(sluice, dir, url, &bench.work.join("cache")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let bases: Arc<Vec<String>> = Arc::new(servers.iter().map(|s| s.base.clone()).collect());
    let http = reqwest::Client::new();
    bench.runtime.block_on(async {
        // Warm-up: every replica runs a few (the tools' first instances, the pools).
        for i in 0..2 * replicas {
            one_run(&http, &bases[i % replicas], i).await?;
        }
        anyhow::Ok(())
    })?;
    let cpu_before: Duration = servers.iter().map(Listening::cpu).sum();
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    bench.runtime.block_on(async {
        let tasks: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let (http, bases, next) = (http.clone(), bases.clone(), next.clone());
                tokio::spawn(async move {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= runs {
                            return anyhow::Ok(());
                        }
                        one_run(&http, &bases[i % bases.len()], i).await?;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await??;
        }
        anyhow::Ok(())
    })?;
    let elapsed = started.elapsed();
    let cpu: Duration = servers.iter().map(Listening::cpu).sum::<Duration>() - cpu_before;
    Ok((
        runs as f64 / elapsed.as_secs_f64(),
        cpu / u32::try_from(runs)?,
    ))
}

/// One run: a new session on `base`, prompted with `?wait=true`; it must complete.
async fn one_run(http: &reqwest::Client, base: &str, i: usize) -> anyhow::Result<()> {
    let created: Value = http
        .post(format!("{base}/sessions"))
        .json(&json!({}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let id = created["id"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no session id in {created}"))?;
    let ended: Value = http
        .post(format!("{base}/sessions/{id}/prompts?wait=true"))
        .json(&json!({"prompt": format!("run {i}: what errors are in the logs?")}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    anyhow::ensure!(
        ended["status"] == "completed" && ended["requests"] == 5,
        "run {i} did not complete as scripted: {ended}"
    );
    Ok(())
}

/// A `sluice serve` replica on a free loopback port; killed when dropped.
fn start_replica(sluice: &Path, dir: &Path, url: &str, cache: &Path) -> anyhow::Result<Listening> {
    Listening::start(
        Command::new(sluice)
            .arg("--config")
            .arg(dir.join("sluice.toml"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("SLUICE_STORE_URL", url)
            .env("SLUICE_CACHE_DIR", cache)
            .env_remove("SLUICE_STORE")
            .env_remove("SLUICE_SERVER_TOKEN"),
    )
}
