//! The agent loop (docs/agent-loop.md; rows P1–P11 of docs/regressions.md) through
//! `sluice_agent::Agent::run`: a temporary `SqliteStore`, a `ReplayModel` whose error turns go
//! through the real classifier (sometimes behind a `ContextWindow`), and either the real tools
//! over a temporary root or [`FakeTools`], whose observations come out of the real
//! `Observation::finish` so the real cap applies. Also maxTurns, one run per session, and
//! approvals of destructive calls.

mod approvals; // Destructive calls: an approved one runs once on the next run; a denied one never.
mod cancel_and_turns; // Cancellation while the model answers (row P11) and during a recovery, and `maxTurns`.
mod recovery; // Context-window recovery, rows P5–P10: what is shrunk, when it is an error.

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_agent::{Agent, AgentError, Outcome, RunEvent, Settings, Tools};
use sluice_models::{Backend, BackendError, ModelReply, ModelRequest, ReplayModel};
use sluice_protocol::{Message, Role, SessionStatus, ToolCall, ToolSpec};
use sluice_runtime::call::observation::{DEFAULT_HINT, Observation};
use sluice_runtime::{CallOptions, RootGrant, Toolbox};
use sluice_store::{Decision, SqliteStore, Store, StoreError, StoredMessage, now_rfc3339};
use sluice_tests::{HOSTILE_WASM, PATIENCE, Sandbox};
use tokio_util::sync::CancellationToken;

use crate::cache;

/// The default cap (`agent.max_tool_result_bytes`).
pub(crate) const DEFAULT_CAP: u32 = 65_536;

/// The message of the OpenAI 400 `context_length_exceeded` used below.
pub(crate) const OPENAI_OVERFLOW: &str = "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.";

/// The message of the Anthropic 400 `prompt is too long` used below.
pub(crate) const ANTHROPIC_OVERFLOW: &str = "prompt is too long: 210000 tokens > 200000 maximum";

/// The message of the OpenAI 429 used below.
const RATE_LIMITED: &str = "Rate limit reached for gpt-4.1 in organization org-test on tokens per minute (TPM): Limit 30000, Used 29000, Requested 5000. Please try again in 8s.";

/// A temporary session database.
pub(crate) struct Db {
    /// Holds the file.
    pub(crate) _dir: tempfile::TempDir,
    /// The database file.
    pub(crate) path: PathBuf,
    /// The store over it.
    pub(crate) store: Arc<SqliteStore>,
}

/// A fresh, empty session database.
pub(crate) fn db() -> Db {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    Db {
        _dir: dir,
        path,
        store,
    }
}

/// A replay model answering with `turns`, one JSONL line each.
pub(crate) fn script(turns: &[Value]) -> ReplayModel {
    let text: Vec<String> = turns.iter().map(Value::to_string).collect();
    ReplayModel::parse("test.jsonl", &text.join("\n")).unwrap()
}

/// A turn calling `calls` (each `(name, arguments)`), in order.
pub(crate) fn calls(calls: &[(&str, Value)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(name, args)| json!({"name": name, "arguments": args}))
        .collect();
    json!({"content": "", "toolCalls": calls})
}

/// A final answer.
pub(crate) fn answer(text: &str) -> Value {
    json!({"content": text})
}

/// OpenAI's 400 `context_length_exceeded`, classified by the real classifier.
pub(crate) fn openai_overflow() -> Value {
    json!({"error": {"status": 400, "body": {"error": {
        "message": OPENAI_OVERFLOW,
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded"
    }}}})
}

/// Anthropic's 400 `invalid_request_error` "prompt is too long".
pub(crate) fn anthropic_overflow() -> Value {
    json!({"error": {"status": 400, "body": {"type": "error", "error": {
        "type": "invalid_request_error",
        "message": ANTHROPIC_OVERFLOW
    }}}})
}

/// An agent over `store`, `backend` and `tools` with cap `cap` and otherwise default settings.
pub(crate) fn agent(
    store: &Arc<SqliteStore>,
    backend: impl Backend + 'static,
    tools: Arc<dyn Tools>,
    cap: u32,
) -> Agent {
    let settings = Settings {
        max_tool_result_bytes: cap,
        ..Settings::default()
    };
    Agent::new(store.clone(), Arc::new(backend), tools, settings)
}

/// Runs `future` on a fresh current-thread runtime.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// One run of session `id`, never cancelled; the run must start.
pub(crate) async fn run(agent: &Agent, id: &str, prompt: Option<&str>) -> Outcome {
    agent
        .run(id, prompt, &CancellationToken::new(), &|_| {})
        .await
        .unwrap()
}

/// The roles of the stored transcript, in order.
pub(crate) fn roles(store: &SqliteStore, id: &str) -> Vec<Role> {
    crate::agent_loop::block_on(store.messages(id))
        .unwrap()
        .iter()
        .map(|m| m.message.role)
        .collect()
}

/// The stored tool messages, in order.
pub(crate) fn tool_messages(store: &SqliteStore, id: &str) -> Vec<StoredMessage> {
    crate::agent_loop::block_on(store.messages(id))
        .unwrap()
        .into_iter()
        .filter(|m| m.message.role == Role::Tool)
        .collect()
}

/// The contents of the tool messages of `request`, in order.
pub(crate) fn request_tool_contents(request: &ModelRequest) -> Vec<&str> {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect()
}

/// The observation `{"ok":true,"result":{"text":"xxx…"}}` of [`FakeTools`]' `text` tool for
/// `bytes`: `bytes + 32` bytes long.
pub(crate) fn text_observation(bytes: usize) -> String {
    format!(
        r#"{{"ok":true,"result":{{"text":"{}"}}}}"#,
        "x".repeat(bytes)
    )
}

/// Tools with exact sizes, whose observations come out of the real
/// `Observation::…().finish(name, cap, hint)` (key scan and cap included):
///
/// - `text {"bytes": n}`: the result `{"text": "x"×n}` (an observation of n + 32 bytes);
/// - `repeat {"char": c, "count": n}`: the result `c`×n, a JSON string;
/// - `fail {"char": c, "count": n}`: a tool error whose message is `c`×n;
/// - any other name: the unknown-tool observation.
///
/// It counts the calls it ran.
#[derive(Default)]
pub(crate) struct FakeTools {
    calls: AtomicUsize,
}

impl FakeTools {
    /// Calls run so far.
    pub(crate) fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl Tools for FakeTools {
    fn specs(&self) -> Vec<ToolSpec> {
        ["text", "repeat", "fail"]
            .iter()
            .map(|name| ToolSpec {
                name: name.to_string(),
                description: format!("test tool {name}"),
                input_schema: json!({"type": "object"}),
            })
            .collect()
    }

    fn is_destructive(&self, _name: &str) -> bool {
        false
    }

    async fn call(&self, name: &str, args: &str, options: &CallOptions) -> Observation {
        let cap = options.cap as usize;
        let args: Value = serde_json::from_str(args).unwrap_or(Value::Null);
        let count = args["count"].as_u64().unwrap_or(0) as usize;
        let repeated = args["char"].as_str().unwrap_or("x").repeat(count);
        let draft = match name {
            "text" => {
                let bytes = args["bytes"].as_u64().unwrap_or(0) as usize;
                Observation::success(&json!({"text": "x".repeat(bytes)}))
            }
            "repeat" => Observation::success(&Value::from(repeated)),
            "fail" => Observation::error(&repeated, None),
            _ => return Observation::unknown_tool(name).finish(name, cap, DEFAULT_HINT),
        };
        self.calls.fetch_add(1, Ordering::SeqCst);
        draft.finish(name, cap, DEFAULT_HINT)
    }
}

/// A session in a fresh database, run once with `prompt` against `turns` and [`FakeTools`]
/// at cap `cap`: (database, session id, model, tools, outcome).
fn run_fake(
    turns: &[Value],
    cap: u32,
    prompt: &str,
) -> (Db, String, ReplayModel, Arc<FakeTools>, Outcome) {
    let db = db();
    let model = script(turns);
    let tools = Arc::new(FakeTools::default());
    let agent = agent(&db.store, model.clone(), tools.clone(), cap);
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    let outcome = block_on(run(&agent, &id, Some(prompt)));
    (db, id, model, tools, outcome)
}

/// The status and lastError stored for session `id`, which must equal the outcome's.
fn stored_status(store: &SqliteStore, id: &str, outcome: &Outcome) -> SessionStatus {
    let session = crate::agent_loop::block_on(store.session(id)).unwrap();
    assert_eq!(session.status, outcome.status);
    assert_eq!(session.last_error, outcome.last_error);
    session.status
}

#[test]
fn p1_a_huge_result_is_capped_before_it_is_stored_and_sent() {
    let (db, id, model, _tools, outcome) = run_fake(
        &[
            calls(&[("repeat", json!({"char": "L", "count": 200_000}))]),
            answer("done"),
        ],
        4096,
        "go",
    );
    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(outcome.answer.as_deref(), Some("done"));
    let tool = tool_messages(&db.store, &id);
    assert_eq!(tool.len(), 1);
    let stored = &tool[0].message.content;
    assert!(stored.len() <= 4096, "{} bytes", stored.len());
    assert!(
        stored.len() > 4096 - 4,
        "the head is as long as the cap allows"
    );
    assert!(
        stored.starts_with(r#"{"ok":true,"result":"LLLL"#),
        "{stored}"
    );
    // `{"ok":true,"result":"` + 200,000 L + `"}`.
    assert!(
        stored
            .ends_with("…[truncated; full result is 200023 bytes. Ask for less: a narrower query]"),
        "{}",
        &stored[stored.len() - 100..]
    );
    // The next request carries exactly the stored string.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(request_tool_contents(&requests[1]), [stored.as_str()]);
}

#[test]
fn p2_a_huge_tool_error_is_capped_too() {
    let (db, id, model, _tools, outcome) = run_fake(
        &[
            calls(&[("fail", json!({"char": "E", "count": 50_000}))]),
            answer("done"),
        ],
        2048,
        "go",
    );
    assert_eq!(outcome.status, SessionStatus::Completed);
    let tool = tool_messages(&db.store, &id);
    let stored = &tool[0].message.content;
    assert!(stored.len() <= 2048, "{} bytes", stored.len());
    assert!(
        stored.starts_with(r#"{"ok":false,"error":"EEE"#),
        "{stored}"
    );
    // `{"ok":false,"error":"` + 50,000 E + `"}`.
    assert!(
        stored
            .ends_with("…[truncated; full result is 50023 bytes. Ask for less: a narrower query]"),
        "{stored}"
    );
    assert_eq!(
        request_tool_contents(&model.requests()[1]),
        [stored.as_str()]
    );
}

#[test]
fn p3_an_unknown_tool_with_a_huge_name_is_capped_through_the_real_toolbox() {
    let sb = Sandbox::new(cache(), 2048);
    let db = db();
    let name = "n".repeat(10_000);
    let model = script(&[calls(&[(&name, json!({}))]), answer("done")]);
    let agent = agent(&db.store, model.clone(), sb.toolbox.clone(), 2048);
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    let outcome = sb.block_on(run(&agent, &id, Some("go")));
    assert_eq!(outcome.status, SessionStatus::Completed);
    let tool = tool_messages(&db.store, &id);
    assert_eq!(tool.len(), 1);
    let stored = &tool[0].message.content;
    assert!(stored.len() <= 2048, "{} bytes", stored.len());
    // The name is cut to 200 characters, so the observation, with the list of the tools,
    // fits the cap whole.
    assert_eq!(
        stored,
        &format!(
            r#"{{"ok":false,"error":"unknown_tool","name":"{}…","tools":["grep_files","list_dir","read_file","run_script","tail_file"]}}"#,
            "n".repeat(200)
        )
    );
    assert_eq!(
        request_tool_contents(&model.requests()[1]),
        [stored.as_str()]
    );
}

#[test]
fn p4_the_system_prompt_travels_in_the_system_slot_and_is_never_stored() {
    const PROMPT: &str = "You are a test agent. Never store me.";
    let db = db();
    let settings = Settings {
        system_prompt: PROMPT.to_string(),
        ..Settings::default()
    };
    // A run whose only request fails: the transcript is what the run stored before asking.
    let failing = script(&[json!({"error": {"network": "connection reset by peer"}})]);
    let tools: Arc<dyn Tools> = Arc::new(FakeTools::default());
    let agent = Agent::new(
        db.store.clone(),
        Arc::new(failing.clone()),
        tools.clone(),
        settings.clone(),
    );
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    let outcome = block_on(run(&agent, &id, Some("hello")));
    assert_eq!(outcome.status, SessionStatus::Error);
    // Any other error: lastError is the provider's message.
    assert_eq!(
        outcome.last_error.as_deref(),
        Some("connection reset by peer")
    );
    let requests = failing.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].system, PROMPT);
    let sent: Vec<Role> = requests[0].messages.iter().map(|m| m.role).collect();
    assert_eq!(sent, [Role::User]);
    assert_eq!(roles(&db.store, &id), [Role::User]);

    // A completed run: the prompt is in every request's slot and in no stored message.
    let model = script(&[calls(&[("text", json!({"bytes": 10}))]), answer("hi")]);
    let agent = Agent::new(db.store.clone(), Arc::new(model.clone()), tools, settings);
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    let outcome = block_on(run(&agent, &id, Some("hello")));
    assert_eq!(outcome.status, SessionStatus::Completed);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.system == PROMPT));
    let sent: Vec<Role> = requests[0].messages.iter().map(|m| m.role).collect();
    assert_eq!(sent, [Role::User]);
    assert_eq!(
        roles(&db.store, &id),
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    for m in crate::agent_loop::block_on(db.store.messages(&id)).unwrap() {
        assert!(!m.message.content.contains(PROMPT), "{m:?}");
    }
}

/// Polls `done` until it holds, yielding to the runtime in between; fails after
/// [`PATIENCE`].
pub(crate) async fn until(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
