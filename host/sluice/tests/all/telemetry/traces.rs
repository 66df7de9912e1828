//! Traces received by a real OTLP receiver: `otlp_receiver.py` beside this file decodes
//! OTLP/HTTP protobuf with the official definitions (PyPI `opentelemetry-proto`, in the venv
//! of host/sluice-mcp/clients/install.sh) and writes each span as a JSON line. Without the
//! venv a test prints `skipped: …` and passes, except under `CI=true`, where it fails.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use sluice_test_support::{listening, mcp_clients};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// How long a span may take to arrive (the export runs every 100 ms here): generous, for a
/// loaded machine; nothing is asserted about time.
const PATIENCE: Duration = Duration::from_secs(60);

/// Text of the prompt and of the file the run reads, which must not leave the process
/// unless `telemetry.capture_content` is on.
const PROMPT_MARK: &str = "prompt-mark-51c3e9";
const FILE_MARK: &str = "file-mark-8d02ab";

/// A child process, killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The OTLP receiver, listening on 127.0.0.1, writing spans to `spans`.
struct Receiver {
    endpoint: String,
    spans: PathBuf,
    _child: Killed,
}

impl Receiver {
    /// Starts the receiver; `None` (skipped) without the venv.
    fn start(dir: &Path) -> Option<Receiver> {
        let python = mcp_clients::python()?;
        let spans = dir.join("spans.jsonl");
        let mut child = Command::new(python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/telemetry/otlp_receiver.py"))
            .arg(&spans)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut port = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        Some(Receiver {
            endpoint: format!("http://127.0.0.1:{}", port.trim()),
            spans,
            _child: Killed(child),
        })
    }

    /// The spans received so far.
    fn spans(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.spans)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The spans, once one satisfies `done` (fails with what arrived after [`PATIENCE`]).
    fn wait_for(&self, done: impl Fn(&Value) -> bool) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let spans = self.spans();
            if spans.iter().any(&done) {
                return spans;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "the span never came: {spans:#?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// `sluice` with the shared cache, a quick export and the receiver as the endpoint.
fn sluice(receiver: &Receiver, dir: &Path) -> Command {
    let mut c = Command::new(SLUICE);
    c.current_dir(dir)
        .env("SLUICE_CACHE_DIR", crate::warm_cache())
        .env("SLUICE_TELEMETRY_OTLP_ENDPOINT", &receiver.endpoint)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("SLUICE_LOG", "warn")
        .env_remove("SLUICE_TELEMETRY_CAPTURE_CONTENT")
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("OTEL_RESOURCE_ATTRIBUTES")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    c
}

/// A directory with one file for the scripted model to read.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("logs")).unwrap();
    std::fs::write(
        dir.path().join("logs/app.log"),
        format!("INFO start\nERROR {FILE_MARK} failed\n"),
    )
    .unwrap();
    dir
}

/// `sluice run` over `logs/` (the scripted model lists, greps, reads and tails app.log).
fn run(receiver: &Receiver, dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = sluice(receiver, dir);
    c.args([
        "--root",
        "logs",
        "--store",
        "sessions.db",
        "run",
        &format!("what failed in app.log? {PROMPT_MARK}"),
    ]);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Starts a server (`command`) and returns it with the first `http://` URL it prints on
/// stderr; the rest of its stderr is read and dropped.
fn listening(mut command: Command) -> (Killed, String) {
    let mut server = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let url = listening::address_from(server.stderr.take().unwrap());
    let server = Killed(server);
    (server, url)
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

/// The byte sizes `sluice run` reported on stderr for `tool` (`  read_file: 154 bytes …`).
fn reported_bytes(stderr: &str, tool: &str) -> Vec<u64> {
    stderr
        .lines()
        .filter_map(|l| l.trim().strip_prefix(&format!("{tool}: ")))
        .filter_map(|rest| rest.split(' ').next()?.parse().ok())
        .collect()
}

#[test]
fn a_run_exports_one_tree_without_content() {
    let dir = workdir();
    let Some(receiver) = Receiver::start(dir.path()) else {
        return;
    };
    let out = run(&receiver, dir.path(), &[]);
    // The process exits after its spans are exported.
    let spans = receiver.spans();
    let agents = named(&spans, "invoke_agent");
    assert_eq!(agents.len(), 1, "{spans:#?}");
    let agent = agents[0];
    assert_eq!(agent["parent_span_id"], "");
    assert_eq!(attr(agent, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(attr(agent, "gen_ai.agent.name"), "sluice");
    assert_eq!(attr(agent, "sluice.run.status"), "completed");
    assert!(
        attr(agent, "gen_ai.conversation.id")
            .as_str()
            .unwrap()
            .starts_with("s-")
    );
    assert_eq!(agent["resource"]["service.name"], "sluice");
    // One trace: every span of the run is a child of invoke_agent.
    for s in &spans {
        assert_eq!(s["trace_id"], agent["trace_id"], "{s:#}");
        if s["span_id"] != agent["span_id"] {
            assert_eq!(s["parent_span_id"], agent["span_id"], "{s:#}");
        }
    }
    let chats = named(&spans, "chat scripted");
    // The scripted model: list, grep, read, tail, then the answer.
    assert_eq!(chats.len(), 5, "{spans:#?}");
    for c in &chats {
        assert_eq!(attr(c, "gen_ai.operation.name"), "chat");
        assert_eq!(attr(c, "gen_ai.provider.name"), "scripted");
        assert_eq!(attr(c, "gen_ai.request.model"), "scripted");
        assert_eq!(attr(c, "gen_ai.response.model"), "scripted");
    }
    let tools: BTreeSet<&str> = spans
        .iter()
        .filter_map(|s| s["name"].as_str()?.strip_prefix("execute_tool "))
        .collect();
    assert_eq!(
        tools,
        BTreeSet::from(["grep_files", "list_dir", "read_file", "tail_file"])
    );
    let reads = named(&spans, "execute_tool read_file");
    assert_eq!(reads.len(), 1);
    let read = reads[0];
    assert_eq!(attr(read, "gen_ai.tool.name"), "read_file");
    assert_eq!(attr(read, "gen_ai.tool.type"), "function");
    assert_eq!(attr(read, "gen_ai.operation.name"), "execute_tool");
    assert!(attr(read, "gen_ai.tool.call.id").is_string());
    assert_eq!(read["status"]["code"], "STATUS_CODE_UNSET");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let bytes = reported_bytes(&stderr, "read_file");
    assert_eq!(bytes.len(), 1, "{stderr}");
    // Recorded by the runtime (`call_with`, its sandbox facts), as integers.
    assert_eq!(
        attr(read, "sluice.observation.bytes").as_u64(),
        Some(bytes[0]),
        "{read:#}"
    );
    assert_eq!(attr(read, "sluice.observation.paged"), false);
    assert_eq!(attr(read, "sluice.descriptors"), 1);
    assert_eq!(attr(read, "sluice.http.requests"), 0);
    assert_eq!(attr(read, "sluice.http.denied"), 0);
    let peak = attr(read, "sluice.memory.peak_bytes").as_u64().unwrap();
    assert!(peak > 0 && peak.is_multiple_of(65_536), "{read:#}");
    assert!(attr(read, "sluice.guest.time_ms").as_f64().unwrap() > 0.0);
    let digest = attr(read, "sluice.component.digest");
    assert_eq!(
        digest.as_str().unwrap().len(),
        "sha256:".len() + 64,
        "{read:#}"
    );
    assert_eq!(attr(read, "sluice.observation.status"), "ok");
    // Nothing of the prompt or the file left the process.
    let all = serde_json::to_string(&spans).unwrap();
    assert!(!all.contains(PROMPT_MARK), "{all}");
    assert!(!all.contains(FILE_MARK), "{all}");
    assert!(!all.contains("gen_ai.tool.call.result"), "{all}");
}

#[test]
fn capture_content_exports_the_prompt_and_the_observations() {
    let dir = workdir();
    let Some(receiver) = Receiver::start(dir.path()) else {
        return;
    };
    run(
        &receiver,
        dir.path(),
        &[("SLUICE_TELEMETRY_CAPTURE_CONTENT", "true")],
    );
    let spans = receiver.spans();
    let first_chat = named(&spans, "chat scripted")[0];
    let prompt = first_chat["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "gen_ai.input.message")
        .unwrap();
    assert_eq!(prompt["attributes"]["gen_ai.input.role"], "user");
    assert_eq!(
        prompt["attributes"]["gen_ai.input.text"],
        format!("what failed in app.log? {PROMPT_MARK}")
    );
    let read = named(&spans, "execute_tool read_file")[0];
    let result = read["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "gen_ai.tool.call.result")
        .unwrap();
    let text = result["attributes"]["gen_ai.tool.call.result"]
        .as_str()
        .unwrap();
    assert!(text.contains(FILE_MARK), "{text}");
}

#[test]
fn an_mcp_callers_traceparent_is_the_parent_of_tools_call() {
    let dir = workdir();
    let Some(receiver) = Receiver::start(dir.path()) else {
        return;
    };
    let Some(python) = mcp_clients::python() else {
        return;
    };
    let mut command = sluice(&receiver, dir.path());
    command.args(["--root", "logs", "mcp", "--listen", "127.0.0.1:0"]);
    let (server, url) = listening(command);
    let url = if url.ends_with("/mcp") {
        url
    } else {
        format!("{}/mcp", url.trim_end_matches('/'))
    };
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent_id = "00f067aa0ba902b7";
    let out = Command::new(python)
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/telemetry/traceparent_client.py"),
        )
        .args([
            &url,
            "read_file",
            r#"{"path": "app.log"}"#,
            &format!("00-{trace_id}-{parent_id}-01"),
        ])
        .output()
        .unwrap();
    let answer = mcp_clients::answer(&out);
    assert_eq!(answer["is_error"], false, "{answer}");
    let spans = receiver.wait_for(|s| s["name"] == "tools/call read_file");
    drop(server);
    let call = named(&spans, "tools/call read_file")[0];
    assert_eq!(call["trace_id"], trace_id);
    assert_eq!(call["parent_span_id"], parent_id);
    assert_eq!(call["kind"], "SPAN_KIND_SERVER");
    assert_eq!(attr(call, "mcp.method.name"), "tools/call");
    assert_eq!(attr(call, "gen_ai.tool.name"), "read_file");
    assert!(attr(call, "jsonrpc.request.id").is_string());
    let recorded = attr(call, "sluice.observation.status");
    assert_eq!(recorded, "ok", "{call:#}");
    let all = serde_json::to_string(&spans).unwrap();
    assert!(!all.contains(FILE_MARK), "{all}");
}

#[test]
fn json_log_lines_carry_the_span_fields() {
    let dir = workdir();
    let out = Command::new(SLUICE)
        .current_dir(dir.path())
        .env("SLUICE_CACHE_DIR", crate::warm_cache())
        // The log shows the spans its filter enables (the agent's), and content events
        // are inside each; content is logged only when named.
        .env("SLUICE_LOG", "warn,sluice_agent=info,sluice::content=info")
        .env_remove("SLUICE_TELEMETRY_OTLP_ENDPOINT")
        .args([
            "--log-format",
            "json",
            "--root",
            "logs",
            "--store",
            "sessions.db",
            "run",
            "what failed in app.log?",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<Value> = stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let read = lines
        .iter()
        .find(|l| {
            l["fields"]["message"] == "gen_ai.tool.call.arguments"
                && l["span"]["gen_ai.tool.name"] == "read_file"
        })
        .unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(read["target"], "sluice::content");
    assert_eq!(read["span"]["name"], "execute_tool");
    assert_eq!(read["span"]["gen_ai.tool.type"], "function");
    let outer = &read["spans"][0];
    assert_eq!(outer["name"], "invoke_agent");
    assert_eq!(outer["gen_ai.agent.name"], "sluice");
    assert!(
        outer["gen_ai.conversation.id"]
            .as_str()
            .unwrap()
            .starts_with("s-")
    );
}

/// `sluice serve` continues the trace of an API caller: the request's span
/// (`POST /sessions/{id}/prompts`) is a child of the caller's `traceparent`, and the run it
/// starts (`invoke_agent`, its `chat` and `execute_tool` spans) is in the same trace, under
/// it; a request the guard refuses is traced with its status.
#[test]
fn an_api_callers_traceparent_is_the_parent_of_the_request_and_its_run() {
    let dir = workdir();
    let Some(receiver) = Receiver::start(dir.path()) else {
        return;
    };
    let token = "telemetry-test-token";
    std::fs::write(dir.path().join("token"), token).unwrap();
    let mut command = sluice(&receiver, dir.path());
    command
        .args(["--root", "logs", "--store", "sessions.db", "serve"])
        .args(["--listen", "127.0.0.1:0", "--token-file", "token"]);
    let (server, url) = listening(command);
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let trace_id = "0af7651916cd43dd8448eb211c80319c";
    let parent_id = "b7ad6b7169203331";
    let traceparent = format!("00-{trace_id}-{parent_id}-01");
    let session: Value = http
        .post(format!("http://{addr}/sessions"))
        .bearer_auth(token)
        .json(&serde_json::json!({}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let id = session["id"].as_str().unwrap();
    let ended: Value = http
        .post(format!("http://{addr}/sessions/{id}/prompts?wait=true"))
        .bearer_auth(token)
        .header("traceparent", &traceparent)
        .json(&serde_json::json!({"prompt": "what failed in app.log?"}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(ended["status"], "completed", "{ended}");
    let refused = http
        .get(format!("http://{addr}/sessions"))
        .header("traceparent", &traceparent)
        .send()
        .unwrap();
    assert_eq!(refused.status(), 401);
    receiver.wait_for(|s| {
        s["name"] == "invoke_agent"
            && s["trace_id"] == trace_id
            && attr(s, "sluice.run.status") == "completed"
    });
    let spans = receiver.wait_for(|s| s["name"] == "GET /sessions" && s["trace_id"] == trace_id);
    drop(server);
    let prompt = named(&spans, "POST /sessions/{id}/prompts");
    assert_eq!(prompt.len(), 1, "{spans:#?}");
    let prompt = prompt[0];
    assert_eq!(prompt["trace_id"], trace_id);
    assert_eq!(prompt["parent_span_id"], parent_id);
    assert_eq!(prompt["kind"], "SPAN_KIND_SERVER");
    assert_eq!(attr(prompt, "http.request.method"), "POST");
    assert_eq!(attr(prompt, "http.route"), "/sessions/{id}/prompts");
    assert_eq!(attr(prompt, "http.response.status_code"), 200);
    let agent = named(&spans, "invoke_agent");
    assert_eq!(agent.len(), 1, "{spans:#?}");
    assert_eq!(agent[0]["trace_id"], trace_id);
    assert_eq!(agent[0]["parent_span_id"], prompt["span_id"]);
    let reads = named(&spans, "execute_tool read_file");
    assert_eq!(reads[0]["trace_id"], trace_id);
    assert_eq!(reads[0]["parent_span_id"], agent[0]["span_id"]);
    // The session was created without a traceparent: a trace of its own.
    let created = named(&spans, "POST /sessions");
    assert_eq!(created.len(), 1);
    assert_ne!(created[0]["trace_id"], trace_id);
    let refused = named(&spans, "GET /sessions");
    assert_eq!(refused.len(), 1);
    assert_eq!(attr(refused[0], "http.response.status_code"), 401);
    assert_eq!(refused[0]["parent_span_id"], parent_id);
}
