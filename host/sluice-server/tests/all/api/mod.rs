//! End-to-end tests of the operator API over real HTTP on 127.0.0.1: a server in this process
//! (a temporary SQLite store, the built-in tools over a tiny temporary root, the scripted or a
//! replay model) and reqwest as the client.

mod approvals; // Destructive calls: awaiting_approval, approve/deny, one observation each.
mod auth; // Bearer tokens: 401s on every route, and no start beyond loopback without one.
mod config; // GET/PUT /agent/config: row P13 (docs/regressions.md#p13), unknown and boot-only keys.
mod console; // The console's assets without the token, windows onto sessions and transcripts, /models.
mod guard; // Host, Origin and Content-Type: 403 and 415 before any route runs (docs/mcp.md#http-guard).
mod listen; // The listener's limits over raw TCP: stalled heads, connection bounds.
mod principals; // [[server.tokens]]: each route's scope, 403 naming it, the single token as admin.
mod runs; // Runs: a full run, events, cancellation, 409, 413, 50 concurrent sessions.
mod streams; // Event streams: at most server.max_event_streams open, 429 beyond; closed ones give back what they held.
mod tenancy; // Another principal's session is the 404 of a missing one on every route; lists; the audit's actors.
mod tls; // HTTPS: the API, /mcp and the console over TLS with a test CA, h2 by ALPN, a certificate swapped while serving.
mod tools; // GET /tools: the built-ins' reports, 401 without the token, the list after a live reload.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};
use sluice_agent::Settings;
use sluice_models::{Backend, ReplayModel, ScriptedModel};
use sluice_runtime::{ComponentSpec, EngineOptions, Source, ToolEngine, ToolPolicy, Toolbox};
use sluice_server::{ServeOptions, Server, ServerError, Services};
use sluice_store::SqliteStore;
use sluice_wiring::report::ToolCatalog;
use tokio::sync::oneshot;

/// One engine per test process, caching compiled components where the other test binaries
/// of the workspace do.
fn engine() -> Arc<ToolEngine> {
    static ENGINE: OnceLock<Arc<ToolEngine>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            Arc::new(
                ToolEngine::new(EngineOptions {
                    cache_dir: Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
                    ..EngineOptions::default()
                })
                .expect("the engine starts"),
            )
        })
        .clone()
}

/// The built-in tools, read-only over `root` (named `root`); those named in `destructive`
/// wait for approval.
fn toolbox(root: &Path, destructive: &[&str]) -> Arc<Toolbox> {
    let specs: Vec<ComponentSpec> = sluice_builtins::BUILTINS
        .iter()
        .map(|&(name, wasm)| {
            let mut policy = ToolPolicy::read_only([("root".to_string(), root.to_path_buf())]);
            policy.destructive = destructive.contains(&name);
            ComponentSpec {
                source: Source::Builtin { name, wasm },
                policy,
            }
        })
        .collect();
    Arc::new(Toolbox::load(engine(), &specs).expect("the built-in tools load"))
}

/// A replay model from JSONL turns.
fn replay(turns: &[Value]) -> Arc<dyn Backend> {
    let text: Vec<String> = turns.iter().map(Value::to_string).collect();
    Arc::new(ReplayModel::parse("test-script", &text.join("\n")).expect("a valid script"))
}

/// How a test server is set up.
struct Setup {
    backend: Arc<dyn Backend>,
    destructive: &'static [&'static str],
    token: Option<String>,
    /// `[[server.tokens]]`.
    tokens: Vec<sluice_config::ServerToken>,
    max_body_bytes: usize,
    allowed_hosts: Vec<String>,
    limits: sluice_server::ServerLimits,
    /// Tools loaded from a configuration and their reports (`GET /tools`), in place of the
    /// built-ins over the test's root (and an empty `GET /tools`).
    loaded: Option<(Arc<dyn sluice_agent::Tools>, ToolCatalog)>,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            backend: Arc::new(ScriptedModel::new()),
            destructive: &[],
            token: None,
            tokens: Vec::new(),
            max_body_bytes: sluice_server::DEFAULT_MAX_BODY_BYTES,
            allowed_hosts: Vec::new(),
            limits: sluice_server::ServerLimits::default(),
            loaded: None,
        }
    }
}

/// A server on 127.0.0.1 with its own store and root; stopped when dropped.
struct TestServer {
    base: String,
    client: reqwest::Client,
    token: Option<String>,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<Result<(), ServerError>>>,
    root: PathBuf,
    /// The server's store, to see what it holds.
    store: Arc<dyn sluice_store::Store>,
    _dir: tempfile::TempDir,
}

/// A tiny root: a log with errors and a note.
fn make_root(dir: &Path) -> PathBuf {
    let root = dir.join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(
        root.join("app.log"),
        "2026-11-30T01:00:00Z INFO  worker-7 started\n2026-11-30T01:00:01Z ERROR worker-3 lost connection to db-2\n2026-11-30T01:00:02Z INFO  worker-3 reconnected\n",
    )
    .unwrap();
    std::fs::write(root.join("notes.txt"), "nothing to see\n").unwrap();
    root
}

/// The services of a test server over a fresh store in `dir` and the tools over `root`.
fn services(dir: &Path, root: &Path, setup: &Setup) -> Services {
    Services {
        store: Arc::new(SqliteStore::open(&dir.join("sessions.db")).unwrap()),
        backend: setup.backend.clone(),
        tools: match &setup.loaded {
            Some((tools, _)) => tools.clone(),
            None => toolbox(root, setup.destructive),
        },
        settings: Settings::default(),
    }
}

impl TestServer {
    async fn start(setup: Setup) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let options = ServeOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            token: setup.token.clone(),
            tokens: setup.tokens.clone(),
            oauth: None,
            max_body_bytes: setup.max_body_bytes,
            allowed_hosts: setup.allowed_hosts.clone(),
            limits: setup.limits.clone(),
            metrics: None,
            tls: None,
        };
        let root = make_root(dir.path());
        let services = services(dir.path(), &root, &setup);
        let store = services.store.clone();
        let mut server = Server::new(services, options).unwrap();
        if let Some((_, catalog)) = &setup.loaded {
            server = server.with_tool_catalog(catalog.clone());
        }
        let bound = server.bind().await.unwrap();
        let base = format!("http://{}", bound.local_addr());
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(bound.serve(async move {
            let _ = stopped.await;
        }));
        TestServer {
            base,
            client: reqwest::Client::new(),
            token: setup.token,
            stop: Some(stop),
            done: Some(done),
            root,
            store,
            _dir: dir,
        }
    }

    async fn scripted() -> TestServer {
        TestServer::start(Setup::default()).await
    }

    /// The root directory the tools read.
    fn root(&self) -> &Path {
        &self.root
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let r = self.client.request(method, self.url(path));
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    /// Sends and returns (status, JSON body).
    async fn send(&self, r: reqwest::RequestBuilder) -> (u16, Value) {
        let response = r.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("a JSON body ({e}): {text:?} (status {status})"));
        (status, body)
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.send(self.request(reqwest::Method::GET, path)).await
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(self.request(reqwest::Method::POST, path).json(&body))
            .await
    }

    async fn put(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(self.request(reqwest::Method::PUT, path).json(&body))
            .await
    }

    /// Creates a session and returns its id.
    async fn session(&self) -> String {
        let (status, body) = self.post("/sessions", json!({})).await;
        assert_eq!(status, 201, "{body}");
        assert_eq!(body["status"], "idle");
        body["id"].as_str().unwrap().to_string()
    }

    /// Posts `prompt` to session `id` and waits for the run to end.
    async fn prompt_wait(&self, id: &str, prompt: &str) -> Value {
        let (status, body) = self
            .post(
                &format!("/sessions/{id}/prompts?wait=true"),
                json!({ "prompt": prompt }),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// The transcript of session `id`.
    async fn messages(&self, id: &str) -> Vec<Value> {
        let (status, body) = self.get(&format!("/sessions/{id}")).await;
        assert_eq!(status, 200, "{body}");
        body["messages"].as_array().unwrap().clone()
    }

    /// Reads the SSE stream at `path` until its `finished` event (or its end) and returns
    /// the events' data.
    async fn events(&self, path: &str) -> Vec<Value> {
        let response = self
            .request(reqwest::Method::GET, path)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        read_events(response).await
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(done) = self.done.take() {
            done.await.unwrap().unwrap();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The events of an SSE response, until `finished` or the end of the stream.
async fn read_events(response: reqwest::Response) -> Vec<Value> {
    let mut reader = EventReader::new(response);
    let mut events = Vec::new();
    while let Some(event) = reader.next().await {
        let finished = event["type"] == "finished";
        events.push(event);
        if finished {
            break;
        }
    }
    events
}

/// Reads an SSE response one event at a time, checking that each message's `event:` and
/// `id:` match its data.
struct EventReader {
    response: reqwest::Response,
    text: String,
}

/// The longest a test waits for the next event of a stream: 120 s.
const EVENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

impl EventReader {
    fn new(response: reqwest::Response) -> EventReader {
        assert_eq!(response.status().as_u16(), 200);
        EventReader {
            response,
            text: String::new(),
        }
    }

    /// The next event's data, or `None` at the end of the stream. Panics when no event
    /// comes within [`EVENT_TIMEOUT`] (keep-alive comments do not count), so a stream that
    /// never sends one fails the test instead of hanging it.
    async fn next(&mut self) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
        loop {
            while let Some(end) = self.text.find("\n\n") {
                let message: String = self.text.drain(..end + 2).collect();
                let (mut kind, mut id, mut data) = (None, None, String::new());
                for line in message.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        kind = Some(v.trim().to_string());
                    } else if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().to_string());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if data.is_empty() {
                    continue; // A keep-alive comment.
                }
                let event: Value = serde_json::from_str(&data).unwrap();
                assert_eq!(kind.as_deref(), event["type"].as_str(), "{message}");
                assert_eq!(
                    id,
                    event["seq"].as_u64().map(|s| s.to_string()),
                    "{message}"
                );
                return Some(event);
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .expect("an event within EVENT_TIMEOUT")
                .unwrap()?;
            self.text.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
}

/// Checks a transcript: gapless positions, the prompt first, every tool message answering a
/// call of the assistant message before it (each call once, in order), every observation
/// within `cap`, and a final assistant message without calls holding `answer`.
fn assert_intact(messages: &[Value], prompt: &str, answer: &str, cap: usize) {
    for (i, m) in messages.iter().enumerate() {
        assert_eq!(m["seq"], json!(i + 1), "{m}");
    }
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["content"], prompt);
    let mut waiting: Vec<String> = Vec::new();
    for m in &messages[1..] {
        match m["role"].as_str().unwrap() {
            "assistant" => {
                assert!(waiting.is_empty(), "calls left unanswered before {m}");
                waiting = m["toolCalls"]
                    .as_array()
                    .map(|calls| {
                        calls
                            .iter()
                            .map(|c| c["id"].as_str().unwrap().to_string())
                            .collect()
                    })
                    .unwrap_or_default();
            }
            "tool" => {
                assert!(!waiting.is_empty(), "an observation nobody asked for: {m}");
                assert_eq!(m["toolCallId"], waiting.remove(0).as_str());
                let content = m["content"].as_str().unwrap();
                assert!(content.len() <= cap, "{} > {cap}", content.len());
                serde_json::from_str::<Value>(content).expect("a whole observation");
            }
            other => panic!("unexpected role {other}"),
        }
    }
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert!(last.get("toolCalls").is_none());
    assert_eq!(last["content"], answer);
}
