//! Row 17: what telemetry costs. Row 1's call (a 4 KiB `read_file` page, in process) and row
//! 11's (`sluice mcp --listen`, 16 clients) with telemetry off, with the Prometheus metrics
//! on, with traces exported over OTLP/HTTP to a local receiver, and with both, each against
//! off in the same run (target: ≤ 5% slower with both on).
//!
//! Telemetry is the process's own (a recorder, a subscriber: installed once, never removed),
//! so row 1's variants each run in a child process of the bench (`--per-call-telemetry
//! MODE`), which wraps every call in an `execute_tool` span as the agent loop does. The
//! receiver answers every export `200` with an empty body (a valid, empty
//! `ExportTraceServiceResponse`) and counts what it received, so a row says the spans were
//! sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use sluice_runtime::{ComponentSpec, EngineOptions, ToolEngine, ToolPolicy, Toolbox};

use crate::{Bench, Row, median, micros, sibling_binary};

/// What is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Off,
    Metrics,
    Traces,
    Both,
}

impl Mode {
    const ALL: [Mode; 4] = [Mode::Off, Mode::Metrics, Mode::Traces, Mode::Both];

    fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Metrics => "metrics",
            Mode::Traces => "traces",
            Mode::Both => "both",
        }
    }

    fn parse(s: &str) -> anyhow::Result<Mode> {
        Mode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                anyhow::anyhow!("a telemetry mode is off, metrics, traces or both; got {s:?}")
            })
    }

    fn metrics(self) -> bool {
        matches!(self, Mode::Metrics | Mode::Both)
    }

    fn traces(self) -> bool {
        matches!(self, Mode::Traces | Mode::Both)
    }

    fn label(self) -> &'static str {
        match self {
            Mode::Off => "telemetry off",
            Mode::Metrics => "metrics on",
            Mode::Traces => "traces exported",
            Mode::Both => "metrics on and traces exported",
        }
    }
}

/// An OTLP/HTTP sink on 127.0.0.1: every request answered `200` with an empty body; counts
/// the requests and their body bytes. Its threads end with the process.
struct Receiver {
    endpoint: String,
    requests: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

impl Receiver {
    fn start() -> anyhow::Result<Receiver> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        let (requests, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (r, b) = (requests.clone(), bytes.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (r, b) = (r.clone(), b.clone());
                std::thread::spawn(move || {
                    let _ = answer(stream, &r, &b);
                });
            }
        });
        Ok(Receiver {
            endpoint,
            requests,
            bytes,
        })
    }

    /// What it received so far, as a row says it.
    fn received(&self) -> String {
        format!(
            "{} exports, {:.1} MB received",
            self.requests.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed) as f64 / 1e6
        )
    }
}

/// Answers each request of one keep-alive connection.
fn answer(stream: TcpStream, requests: &AtomicU64, bytes: &AtomicU64) -> anyhow::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse()?;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        requests.fetch_add(1, Ordering::Relaxed);
        bytes.fetch_add(length as u64, Ordering::Relaxed);
        out.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
        )?;
    }
}

/// Child mode (`sluice-bench --per-call-telemetry MODE ROOT CACHE CALLS [ENDPOINT]`): installs
/// `MODE`'s telemetry, times `CALLS` calls of row 1 each in an `execute_tool` span, and prints
/// the median in nanoseconds.
pub(crate) fn per_call_child(args: &[String]) -> anyhow::Result<()> {
    let [mode, root, cache, calls, rest @ ..] = args else {
        anyhow::bail!("usage: --per-call-telemetry MODE ROOT CACHE CALLS [ENDPOINT]");
    };
    let mode = Mode::parse(mode)?;
    let calls: usize = calls.parse()?;
    let logging = sluice_telemetry::Logging {
        format: sluice_telemetry::LogFormat::Text,
        filter: None,
        colour: false,
        quiet_targets: Vec::new(),
        may_log: sluice_runtime::logs::may_log,
    };
    let traces = sluice_telemetry::Traces {
        otlp_endpoint: rest.first().filter(|_| mode.traces()).cloned(),
        capture_content: false,
    };
    let telemetry = sluice_telemetry::install(&logging, &traces)?;
    if mode.metrics() {
        sluice_telemetry::metrics::install()?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let engine = Arc::new(ToolEngine::new(EngineOptions {
        cache_dir: Some(cache.into()),
        ..EngineOptions::default()
    })?);
    let mut policy = ToolPolicy::read_only([("root".to_string(), Path::new(root).to_path_buf())]);
    policy.timeout = Duration::from_secs(10);
    let toolbox = Toolbox::load(
        engine,
        &[ComponentSpec {
            source: crate::builtin("read_file")?,
            policy,
        }],
    )?;
    let args = json!({"path": "page.log"}).to_string();
    let call = |id: usize| {
        let span = execute_tool_span(id);
        let _entered = span.enter();
        let obs = runtime.block_on(toolbox.call("read_file", &args, 65_536));
        std::hint::black_box(obs.into_text());
    };
    for id in 0..100 {
        call(id);
    }
    let mut samples = Vec::with_capacity(calls);
    for id in 0..calls {
        let t = Instant::now();
        call(id);
        samples.push(t.elapsed());
    }
    drop(telemetry);
    println!("{}", median(samples).as_nanos());
    Ok(())
}

/// The agent loop's span of one call (`sluice_agent`'s `execute_tool`), with the fields the
/// runtime records after it.
fn execute_tool_span(id: usize) -> tracing::Span {
    sluice_runtime::tool_call_span!(
        "execute_tool",
        otel.name = "execute_tool read_file",
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = "read_file",
        gen_ai.tool.call.id = format!("call_{id}"),
        gen_ai.tool.type = "function",
    )
}

/// Row 17: rows 1 and 11 in each [`Mode`], against off.
pub(crate) fn rows(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let root = crate::mcp::page_root(bench)?;
    let calls = if bench.quick { 300 } else { 3000 };
    let me = std::env::current_exe()?;
    let mut rows = Vec::new();

    // Row 1's call, each mode in a child of its own (two rounds, alternating, the faster
    // median of each kept: the machine's drift falls on every mode alike).
    let receiver = Receiver::start()?;
    let mut per_call = [Duration::MAX; 4];
    for _round in 0..2 {
        for (i, mode) in Mode::ALL.into_iter().enumerate() {
            let out = Command::new(&me)
                .arg("--per-call-telemetry")
                .args([mode.as_str(), &root.display().to_string()])
                .arg(bench.work.join("cache"))
                .args([calls.to_string(), receiver.endpoint.clone()])
                .env_remove("SLUICE_LOG")
                .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
                .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                .output()?;
            anyhow::ensure!(
                out.status.success(),
                "the per-call child ({}) failed: {}",
                mode.as_str(),
                String::from_utf8_lossy(&out.stderr)
            );
            let nanos: u64 = String::from_utf8_lossy(&out.stdout).trim().parse()?;
            per_call[i] = per_call[i].min(Duration::from_nanos(nanos));
        }
    }
    let off = per_call[0];
    for (i, mode) in Mode::ALL.into_iter().enumerate().skip(1) {
        let t = per_call[i];
        let slower = t.as_secs_f64() / off.as_secs_f64() - 1.0;
        rows.push(Row {
            what: format!(
                "17{}. read_file 4 KiB page, per call, {}",
                ['a', 'b', 'c'][i - 1],
                mode.label()
            ),
            sluice: micros(t),
            baseline: format!(
                "{} telemetry off{}",
                micros(off),
                if mode.traces() {
                    format!(" ({} for all modes)", receiver.received())
                } else {
                    String::new()
                }
            ),
            ratio: format!("{:+.1}%", slower * 100.0),
            target: verdict(slower),
        });
    }

    // Row 11, `sluice mcp --listen` in each mode.
    // Two alternating rounds, the better of each mode kept (as for row 1).
    let mut served: Vec<(Mode, Option<crate::mcp::Http>, Receiver)> = Vec::new();
    for mode in Mode::ALL {
        served.push((mode, None, Receiver::start()?));
    }
    for _round in 0..2 {
        for (mode, best, receiver) in &mut served {
            let mut command = Command::new(sibling_binary("sluice")?);
            command
                .env_remove("SLUICE_TELEMETRY_METRICS")
                .env_remove("SLUICE_TELEMETRY_OTLP_ENDPOINT")
                .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
                .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
            if mode.metrics() {
                command.env("SLUICE_TELEMETRY_METRICS", "true");
            }
            if mode.traces() {
                command.env("SLUICE_TELEMETRY_OTLP_ENDPOINT", &receiver.endpoint);
            }
            let measured = crate::mcp::measure_http(
                bench,
                &root,
                &mut command,
                crate::mcp::HEAVY_CLIENTS,
                mode.metrics(),
            )?;
            if best
                .as_ref()
                .is_none_or(|b| b.per_second < measured.per_second)
            {
                *best = Some(measured);
            }
        }
    }
    let served: Vec<(Mode, crate::mcp::Http, String)> = served
        .into_iter()
        .filter_map(|(mode, best, receiver)| best.map(|b| (mode, b, receiver.received())))
        .collect();
    let off = served[0].1.per_second;
    for (i, (mode, measured, received)) in served.iter().enumerate().skip(1) {
        let slower = off / measured.per_second - 1.0;
        rows.push(Row {
            what: format!(
                "17{}. MCP Streamable HTTP, {} clients, read_file 4 KiB page, {}",
                ['d', 'e', 'f'][i - 1],
                crate::mcp::HEAVY_CLIENTS,
                mode.label()
            ),
            sluice: format!("{:.0} calls/s", measured.per_second),
            baseline: format!(
                "{off:.0} calls/s telemetry off{}",
                if mode.traces() {
                    format!(" ({received})")
                } else {
                    String::new()
                }
            ),
            ratio: format!("{:+.1}%", slower * 100.0),
            target: verdict(slower),
        });
    }
    Ok(rows)
}

/// The target: ≤ 5% slower with both on; each alone is held to the same bound.
fn verdict(slower: f64) -> String {
    let met = if slower <= 0.05 { "met" } else { "missed" };
    format!("≤ 5% slower ({met})")
}
