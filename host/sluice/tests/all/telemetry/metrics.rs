//! Metrics scraped by a real Prometheus (the Debian package `prometheus`, installed by
//! `.ci/run`): the test starts its own on 127.0.0.1 with a scrape config for the `sluice
//! serve` under test (its bearer token in `authorization: credentials`, a one-second scrape
//! interval), makes a run of the scripted model, and asks Prometheus's query API for the run's
//! series. Without Prometheus the scrape test prints `skipped: …` and passes, except under
//! `CI=true`, where it fails. Also `/metrics` itself: behind the guard (401 without the token)
//! and on `telemetry.metrics_listen` (no token) of `sluice mcp` over stdio.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_models::scripted::MAX_READ_PAGES;

/// How long Prometheus gets to start and to scrape: generous, for a loaded machine. Nothing
/// is asserted about time; a poll that runs out fails with what it saw.
const PATIENCE: Duration = Duration::from_secs(90);

/// The bearer token of the `sluice serve` under test.
const TOKEN: &str = "metrics-test-token-1234";

/// The content type of `GET /metrics`.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A child process, killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A directory with a configuration (`[telemetry]` as given, a root `logs` holding one log
/// that the scripted model reads in [`MAX_READ_PAGES`] pages), a store and a token file.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(telemetry: &str) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("logs")).unwrap();
        // 200 KB: more than the pages the scripted model reads at most.
        let mut log = String::new();
        for i in 0..3000 {
            log.push_str(&format!(
                "{i:05} INFO request served, nothing to report here\n"
            ));
        }
        log.push_str("ERROR db-2 lost its connection\n");
        std::fs::write(dir.path().join("logs/app.log"), log).unwrap();
        std::fs::write(
            dir.path().join("sluice.toml"),
            format!("[telemetry]\n{telemetry}\n\n[roots]\nlogs = \"logs\"\n"),
        )
        .unwrap();
        std::fs::write(dir.path().join("token"), format!("{TOKEN}\n")).unwrap();
        Setup { dir }
    }

    /// `sluice --config … ARGS`, started with its standard streams piped.
    fn spawn(&self, args: &[&str]) -> (Killed, BufReader<ChildStderr>, ChildStdin) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .arg("--config")
            .arg(self.dir.path().join("sluice.toml"))
            .args(args)
            .env("SLUICE_CACHE_DIR", crate::warm_cache())
            .env_remove("SLUICE_SERVER_TOKEN")
            .env_remove("SLUICE_TELEMETRY_METRICS")
            .env_remove("SLUICE_TELEMETRY_METRICS_LISTEN")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let stdin = child.stdin.take().unwrap();
        (Killed(child), stderr, stdin)
    }

    /// `sluice serve` on a free loopback port with the token file: (process, `ADDR:PORT`).
    fn serve(&self) -> (Killed, String) {
        let token = self.dir.path().join("token").display().to_string();
        let store = self.dir.path().join("sessions.db").display().to_string();
        let (child, mut stderr, _stdin) = self.spawn(&[
            "--store",
            &store,
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            &token,
        ]);
        let addr = address_after(&mut stderr, "sluice: serving the operator API on http://");
        (child, addr)
    }
}

/// Reads stderr lines until one starts with `prefix`; the address that follows it.
fn address_after(stderr: &mut BufReader<ChildStderr>, prefix: &str) -> String {
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no line starting {prefix:?} in:\n{seen}"
        );
        if let Some(rest) = line.strip_prefix(prefix) {
            return rest
                .split(|c: char| c == '/' || c.is_whitespace())
                .next()
                .unwrap()
                .to_string();
        }
        seen.push_str(&line);
    }
}

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// `GET http://{addr}/metrics` with `token` (if any): (status, content type, body).
fn get_metrics(addr: &str, token: Option<&str>) -> (u16, String, String) {
    let mut request = client().get(format!("http://{addr}/metrics"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, content_type, response.text().unwrap())
}

/// The `prometheus` program on `PATH`; else `None` after saying why (a failure under
/// `CI=true`).
fn prometheus() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("prometheus"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        sluice_test_support::skip_or_fail(
            "prometheus is not installed (apt-get install prometheus; .ci/run does)",
        );
    }
    found
}

/// A free port on 127.0.0.1 (free when asked; Prometheus binds it right after).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A Prometheus on 127.0.0.1 scraping `target` (`ADDR:PORT`) every second with `TOKEN`;
/// killed when dropped.
struct Prometheus {
    _process: Killed,
    url: String,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(program: &Path, target: &str) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: sluice\n    metrics_path: /metrics\n\
                 \x20   authorization:\n      type: Bearer\n      credentials: {TOKEN}\n\
                 \x20   static_configs:\n      - targets: [\"{target}\"]\n"
            ),
        )
        .unwrap();
        let listen = format!("127.0.0.1:{}", free_port());
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let process = Command::new(program)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={listen}"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let prometheus = Prometheus {
            _process: Killed(process),
            url: format!("http://{listen}"),
            _dir: dir,
        };
        prometheus.poll("to be ready", || {
            client()
                .get(format!("{}/-/ready", prometheus.url))
                .send()
                .ok()
                .filter(|r| r.status().is_success())
                .map(|_| ())
        });
        prometheus
    }

    /// Polls `check` until it answers, at most [`PATIENCE`]; fails naming `what` and
    /// Prometheus's log.
    fn poll<T>(&self, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
        let started = Instant::now();
        loop {
            if let Some(v) = check() {
                return v;
            }
            if started.elapsed() > PATIENCE {
                let log = std::fs::read_to_string(self._dir.path().join("prometheus.log"))
                    .unwrap_or_default();
                panic!("Prometheus did not come {what} in {PATIENCE:?}; its log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The instant query `query`: each series as (its labels but `__name__`, `instance` and
    /// `job`; its value).
    fn query(&self, query: &str) -> Vec<(Value, String)> {
        let body: Value = client()
            .get(format!("{}/api/v1/query", self.url))
            .query(&[("query", query)])
            .send()
            .unwrap()
            .json()
            .unwrap();
        assert_eq!(body["status"], "success", "{query}: {body}");
        body["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|series| {
                let mut labels = series["metric"].clone();
                for name in ["__name__", "instance", "job"] {
                    labels.as_object_mut().unwrap().remove(name);
                }
                (labels, series["value"][1].as_str().unwrap().to_string())
            })
            .collect()
    }
}

/// A run of the scripted model through `sluice serve` (three `read_file` pages among its
/// calls), scraped by Prometheus: its query API returns the call and run series with their
/// counts.
#[test]
fn prometheus_scrapes_a_run_s_calls_and_its_status() {
    let Some(program) = prometheus() else {
        return;
    };
    let setup = Setup::new("metrics = true");
    let (_serve, addr) = setup.serve();
    let prometheus = Prometheus::start(&program, &addr);

    let http = client();
    let session: Value = http
        .post(format!("http://{addr}/sessions"))
        .bearer_auth(TOKEN)
        .json(&json!({}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let ended: Value = http
        .post(format!(
            "http://{addr}/sessions/{}/prompts?wait=true",
            session["id"].as_str().unwrap()
        ))
        .bearer_auth(TOKEN)
        .json(&json!({ "prompt": "what failed?" }))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(ended["status"], "completed", "{ended}");

    // The runs series appears with the run's end: a scrape that has it saw the whole run.
    let runs = prometheus.poll("to scrape the ended run", || {
        Some(prometheus.query("sluice_runs_total")).filter(|r| !r.is_empty())
    });
    assert_eq!(runs, [(json!({"status": "completed"}), "1".to_string())]);
    assert_eq!(
        prometheus.query("up{job=\"sluice\"}"),
        [(json!({}), "1".to_string())]
    );
    assert_eq!(
        prometheus.query("sluice_tool_calls_total{tool=\"read_file\",status=\"ok\"}"),
        [(
            json!({"tool": "read_file", "status": "ok"}),
            MAX_READ_PAGES.to_string()
        )]
    );
    let mut calls = prometheus.query("sluice_tool_calls_total");
    calls.sort_by_key(|(labels, _)| labels["tool"].as_str().unwrap().to_string());
    assert_eq!(
        calls,
        [
            (json!({"tool": "grep_files", "status": "ok"}), "1".into()),
            (json!({"tool": "list_dir", "status": "ok"}), "1".into()),
            (
                json!({"tool": "read_file", "status": "ok"}),
                MAX_READ_PAGES.to_string()
            ),
            (json!({"tool": "tail_file", "status": "ok"}), "1".into()),
        ]
    );
    // One request per tool call and one for the answer.
    assert_eq!(
        prometheus.query("sluice_model_requests_total"),
        [(
            json!({"provider": "scripted", "model": "scripted", "outcome": "ok"}),
            (MAX_READ_PAGES + 4).to_string()
        )]
    );
    assert_eq!(
        prometheus.query("sluice_active_runs"),
        [(json!({}), "0".to_string())]
    );
    // Each call's observation, the assistant turn that asked for it, and the answer (the
    // prompt joins the transcript through the queue, not an append).
    assert_eq!(
        prometheus.query("sluice_store_append_duration_seconds_count"),
        [(
            json!({"store": "sqlite"}),
            (2 * (MAX_READ_PAGES + 3) + 1).to_string()
        )]
    );
}

/// `GET /metrics` of `sluice serve` is behind the API's guard: 401 without the token or with
/// another; with it, Prometheus's text format.
#[test]
fn metrics_behind_the_guard_need_the_token() {
    let setup = Setup::new("metrics = true");
    let (_serve, addr) = setup.serve();
    let (status, _, body) = get_metrics(&addr, Some("not-the-token"));
    assert_eq!(status, 401, "{body}");
    let (status, _, body) = get_metrics(&addr, None);
    assert_eq!(status, 401, "{body}");
    let (status, content_type, body) = get_metrics(&addr, Some(TOKEN));
    assert_eq!(status, 200, "{body}");
    assert_eq!(content_type, CONTENT_TYPE);
}

/// `sluice mcp --listen` serves `/metrics` beside `/mcp`, behind the same guard.
#[test]
fn mcp_listen_serves_metrics_behind_its_guard() {
    let setup = Setup::new("metrics = true");
    let token = setup.dir.path().join("token").display().to_string();
    let (_mcp, mut stderr, _stdin) =
        setup.spawn(&["mcp", "--listen", "127.0.0.1:0", "--token-file", &token]);
    let addr = address_after(&mut stderr, "sluice: serving MCP on http://");
    let (status, _, body) = get_metrics(&addr, Some("not-the-token"));
    assert_eq!(status, 401, "{body}");
    let (status, content_type, body) = get_metrics(&addr, Some(TOKEN));
    assert_eq!(status, 200, "{body}");
    assert_eq!(content_type, CONTENT_TYPE);
}

/// Without `telemetry.metrics` there is no `/metrics`.
#[test]
fn without_telemetry_metrics_there_is_no_route() {
    let setup = Setup::new("");
    let (_serve, addr) = setup.serve();
    let (status, _, body) = get_metrics(&addr, Some(TOKEN));
    assert_eq!(status, 404, "{body}");
}

/// `telemetry.metrics_listen` serves `/metrics` on its own listener without a token, for
/// `sluice mcp` over stdio too: a `tools/call` made over stdin is counted there.
#[test]
fn metrics_listen_serves_sluice_mcp_over_stdio_without_a_token() {
    let setup = Setup::new("metrics_listen = \"127.0.0.1:0\"");
    let (mut mcp, mut stderr, mut stdin) = setup.spawn(&["mcp"]);
    let addr = address_after(&mut stderr, "sluice: serving metrics on http://");
    let mut stdout = BufReader::new(mcp.0.stdout.take().unwrap());
    // A request and its answer; a notification (no `id`) has none.
    let mut ask = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        if message.get("id").is_none() {
            return Value::Null;
        }
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap()
    };
    let initialized = ask(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "metrics-test", "version": "1"}}
    }));
    assert_eq!(initialized["id"], 1, "{initialized}");
    ask(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let called = ask(json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "read_file", "arguments": {"path": "app.log"}}
    }));
    assert_eq!(called["result"]["isError"], false, "{called}");

    let (status, content_type, body) = get_metrics(&addr, None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(content_type, CONTENT_TYPE);
    let series: Vec<&str> = body
        .lines()
        .filter(|l| l.starts_with("sluice_tool_calls_total"))
        .collect();
    assert_eq!(
        series,
        ["sluice_tool_calls_total{tool=\"read_file\",status=\"ok\"} 1"],
        "{body}"
    );
    assert!(
        body.lines().any(|l| l
            == "# HELP sluice_tool_calls_total Tool calls, by tool and status (ok, tool_error, unknown_tool, key_material, cancelled)."),
        "{body}"
    );
}
