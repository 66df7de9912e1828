//! The agent loop (docs/agent-loop.md; rows P1–P11 of docs/regressions.md) through
//! `sluice_agent::Agent::run`: a temporary `SqliteStore`, a `ReplayModel` whose error turns go
//! through the real classifier (sometimes behind a `ContextWindow`), and either the real tools
//! over a temporary root or [`FakeTools`], whose observations come out of the real
//! `Observation::finish` so the real cap applies. Also maxTurns, one run per session, and
//! approvals of destructive calls.

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

#[test]
fn p5_an_overflow_shrinks_the_newest_results_and_the_retry_completes() {
    let events = Mutex::new(Vec::new());
    let db = db();
    let model = script(&[
        calls(&[
            ("text", json!({"bytes": 30_000})),
            ("text", json!({"bytes": 30_000})),
        ]),
        openai_overflow(),
        answer("done"),
    ]);
    let tools = Arc::new(FakeTools::default());
    let agent = agent(&db.store, model.clone(), tools.clone(), DEFAULT_CAP);
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    let outcome = block_on(agent.run(&id, Some("go"), &CancellationToken::new(), &|e| {
        events.lock().unwrap().push(e)
    }))
    .unwrap();

    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(outcome.last_error, None);
    assert_eq!(outcome.answer.as_deref(), Some("done"));
    assert_eq!(
        stored_status(&db.store, &id, &outcome),
        SessionStatus::Completed
    );
    assert_eq!(
        roles(&db.store, &id),
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant
        ]
    );
    let original = text_observation(30_000);
    assert_eq!(original.len(), 30_032);
    let tool = tool_messages(&db.store, &id);
    for m in &tool {
        let c = &m.message.content;
        assert!(c.len() <= 2048, "{} bytes", c.len());
        assert!(
            original.starts_with(&c[..c.find('…').unwrap()]),
            "a head of the original"
        );
        assert!(c.contains("…[cut from 30032 bytes"), "{c}");
        assert!(
            c.ends_with("…[cut from 30032 bytes: a request including this result exceeded the model's context window. Ask for less: a narrower query]"),
            "{c}"
        );
    }
    // Three requests; the retry is under a tenth of the rejected one and carries the shrunk
    // results. No tool ran again.
    assert_eq!(outcome.requests, 3);
    let requests = model.requests();
    let bytes = model.request_bytes();
    assert_eq!(bytes.len(), 3);
    assert!(bytes[2] * 10 < bytes[1], "{bytes:?}");
    let stored: Vec<&str> = tool.iter().map(|m| m.message.content.as_str()).collect();
    assert_eq!(request_tool_contents(&requests[1]), [&original, &original]);
    assert_eq!(request_tool_contents(&requests[2]), stored);
    assert_eq!(tools.calls(), 2);
    // The audit holds the originals.
    let audit = crate::agent_loop::block_on(db.store.audit(&id)).unwrap();
    assert_eq!(audit.len(), 2);
    for (entry, m) in audit.iter().zip(&tool) {
        assert_eq!(entry.seq, m.seq);
        assert_eq!(entry.original, original);
        assert_eq!(entry.replacement, m.message.content);
        assert!(entry.reason.contains(OPENAI_OVERFLOW), "{}", entry.reason);
    }
    let shrunk: Vec<RunEvent> = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, RunEvent::Shrunk { .. }))
        .cloned()
        .collect();
    let to_bytes = stored.iter().map(|s| s.len()).sum();
    assert_eq!(
        shrunk,
        [RunEvent::Shrunk {
            seqs: vec![tool[0].seq, tool[1].seq],
            from_bytes: 60_064,
            to_bytes
        }]
    );
}

#[test]
fn p6_only_the_newest_group_with_a_large_result_is_shrunk() {
    // 9,968 x make an observation of exactly 10,000 bytes.
    assert_eq!(text_observation(9_968).len(), 10_000);
    let big = || ("text", json!({"bytes": 9_968}));
    let small = ("text", json!({"bytes": 10}));
    let db = db();
    let model = script(&[
        calls(&[big()]),
        answer("first"),
        calls(&[small, big()]),
        answer("second"),
        openai_overflow(),
        answer("third"),
    ]);
    let tools = Arc::new(FakeTools::default());
    let agent = agent(&db.store, model.clone(), tools.clone(), DEFAULT_CAP);
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    for prompt in ["one", "two"] {
        let outcome = block_on(run(&agent, &id, Some(prompt)));
        assert_eq!(outcome.status, SessionStatus::Completed);
    }
    let before = tool_messages(&db.store, &id);
    assert_eq!(before.len(), 3);
    let outcome = block_on(run(&agent, &id, Some("three")));
    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(outcome.last_error, None);
    assert_eq!(outcome.requests, 2);

    let after = tool_messages(&db.store, &id);
    // The old group and the small result of the newest group are untouched.
    assert_eq!(after[0], before[0]);
    assert_eq!(after[0].message.content.len(), 10_000);
    assert_eq!(after[1], before[1]);
    let shrunk = &after[2].message.content;
    assert!(shrunk.len() <= 2048);
    assert!(shrunk.contains("…[cut from 10000 bytes"), "{shrunk}");
    let audit = crate::agent_loop::block_on(db.store.audit(&id)).unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].seq, before[2].seq);
    assert_eq!(audit[0].original, before[2].message.content);
    assert_eq!(tools.calls(), 3);
}

#[test]
fn p7_a_session_holding_a_huge_observation_recovers() {
    let db = db();
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    // As an older version (or another writer) would have stored it: one uncapped result.
    let huge = text_observation(1_000_000 - 32);
    assert_eq!(huge.len(), 1_000_000);
    let call = ToolCall {
        id: "call_old".into(),
        name: "text".into(),
        arguments: r#"{"bytes":999968}"#.into(),
    };
    for m in [
        Message::user("read it", now_rfc3339()),
        Message::assistant("", vec![call], now_rfc3339()),
        Message::tool("call_old", huge.clone(), now_rfc3339()),
        Message::assistant("It is long.", vec![], now_rfc3339()),
    ] {
        crate::agent_loop::block_on(db.store.append(&id, &m)).unwrap();
    }
    let model = script(&[answer("recovered")]);
    let window = Arc::new(sluice_models::ContextWindow::new(model.clone(), 100_000));
    let agent = agent(
        &db.store,
        window.clone(),
        Arc::new(FakeTools::default()),
        DEFAULT_CAP,
    );
    let outcome = block_on(run(&agent, &id, Some("and now?")));
    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(outcome.last_error, None);
    assert_eq!(outcome.answer.as_deref(), Some("recovered"));
    assert_eq!(outcome.requests, 2);
    assert_eq!((window.rejected(), window.sent()), (1, 1));
    let tool = tool_messages(&db.store, &id);
    let stored = &tool[0].message.content;
    assert!(stored.len() <= 2048, "{} bytes", stored.len());
    assert!(stored.contains("…[cut from 1000000 bytes"), "{stored}");
    let audit = crate::agent_loop::block_on(db.store.audit(&id)).unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].original, huge);
    assert_eq!(
        roles(&db.store, &id),
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::User,
            Role::Assistant
        ]
    );
}

#[test]
fn p8_rejected_again_after_shrinking_is_an_error() {
    let (db, id, model, tools, outcome) = run_fake(
        &[
            calls(&[("text", json!({"bytes": 30_000}))]),
            anthropic_overflow(),
            anthropic_overflow(),
        ],
        DEFAULT_CAP,
        "go",
    );
    assert_eq!(outcome.status, SessionStatus::Error);
    assert_eq!(
        stored_status(&db.store, &id, &outcome),
        SessionStatus::Error
    );
    let last_error = outcome.last_error.unwrap();
    assert!(
        last_error.contains("still does not fit the model's context window after shrinking"),
        "{last_error}"
    );
    assert!(last_error.contains("start a new session"), "{last_error}");
    assert!(last_error.contains(ANTHROPIC_OVERFLOW), "{last_error}");
    assert_eq!(outcome.requests, 3);
    assert_eq!(model.requests().len(), 3);
    // The shrink happened once and stays; the tool did not run again.
    assert_eq!(
        crate::agent_loop::block_on(db.store.audit(&id))
            .unwrap()
            .len(),
        1
    );
    assert_eq!(tools.calls(), 1);
    assert!(tool_messages(&db.store, &id)[0].message.content.len() <= 2048);
}

#[test]
fn p9_an_overflow_with_nothing_to_shrink_is_an_error_after_one_request() {
    let prompt = "p".repeat(5000);
    let (db, id, model, _tools, outcome) = run_fake(
        &[anthropic_overflow(), answer("never")],
        DEFAULT_CAP,
        &prompt,
    );
    assert_eq!(outcome.status, SessionStatus::Error);
    assert_eq!(
        stored_status(&db.store, &id, &outcome),
        SessionStatus::Error
    );
    let last_error = outcome.last_error.unwrap();
    assert!(
        last_error.contains("no tool result over 2,048 bytes is left to shrink"),
        "{last_error}"
    );
    assert!(
        last_error.contains("shorten the prompt or start a new session"),
        "{last_error}"
    );
    assert!(last_error.contains(ANTHROPIC_OVERFLOW), "{last_error}");
    assert_eq!(outcome.requests, 1);
    assert_eq!(model.requests().len(), 1);
    assert_eq!(roles(&db.store, &id), [Role::User]);
    assert_eq!(
        crate::agent_loop::block_on(db.store.messages(&id)).unwrap()[0]
            .message
            .content,
        prompt
    );
    assert!(
        crate::agent_loop::block_on(db.store.audit(&id))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn p10_a_rate_limit_is_not_an_overflow_and_shrinks_nothing() {
    let rate_limited = json!({"error": {"status": 429, "headers": {"retry-after": 8}, "body": {"error": {
        "message": RATE_LIMITED,
        "type": "tokens",
        "param": null,
        "code": "rate_limit_exceeded"
    }}}});
    let (db, id, model, _tools, outcome) = run_fake(
        &[
            calls(&[("text", json!({"bytes": 30_000}))]),
            rate_limited.clone(),
            rate_limited,
        ],
        DEFAULT_CAP,
        "go",
    );
    assert_eq!(outcome.status, SessionStatus::Error);
    assert_eq!(outcome.last_error.as_deref(), Some(RATE_LIMITED));
    assert_eq!(
        stored_status(&db.store, &id, &outcome),
        SessionStatus::Error
    );
    // The tool call's request, then the rate-limited one: at most twice if retried.
    let requests = model.requests().len();
    assert!((2..=3).contains(&requests), "{requests} requests");
    assert_eq!(outcome.requests as usize, requests);
    let tool = tool_messages(&db.store, &id);
    assert_eq!(tool.len(), 1);
    assert_eq!(tool[0].message.content, text_observation(30_000));
    assert!(
        crate::agent_loop::block_on(db.store.audit(&id))
            .unwrap()
            .is_empty()
    );
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

#[test]
fn p11_cancelling_while_the_model_answers_aborts_and_appends_nothing() {
    let db = db();
    let model = script(&[json!({"content": "too late", "delayMs": 30_000})]);
    let agent = agent(
        &db.store,
        model.clone(),
        Arc::new(FakeTools::default()),
        DEFAULT_CAP,
    );
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let (outcome, busy) = block_on(async {
        let run = agent.run(&id, Some("hello"), &cancel, &|_| {});
        let other = async {
            until("the request", || model.requests().len() == 1).await;
            assert_eq!(
                db.store.session(&id).await.unwrap().status,
                SessionStatus::Running
            );
            // One run per session at a time.
            let busy = agent
                .run(&id, Some("again"), &CancellationToken::new(), &|_| {})
                .await;
            cancel.cancel();
            busy
        };
        tokio::join!(run, other)
    });
    assert!(
        matches!(busy, Err(AgentError::Store(StoreError::Busy(ref s))) if *s == id),
        "{busy:?}"
    );
    let outcome = outcome.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the run did not wait for the reply"
    );
    assert_eq!(outcome.status, SessionStatus::Aborted);
    assert_eq!(outcome.answer, None);
    assert_eq!(
        stored_status(&db.store, &id, &outcome),
        SessionStatus::Aborted
    );
    assert_eq!(roles(&db.store, &id), [Role::User]);
    assert_eq!(
        crate::agent_loop::block_on(db.store.messages(&id)).unwrap()[0]
            .message
            .content,
        "hello"
    );
    assert_eq!(model.requests().len(), 1);
}

/// A backend that cancels `cancel` as it returns a context-window rejection: the run is
/// cancelled between the rejection and the shrink.
struct CancelOnOverflow {
    inner: ReplayModel,
    cancel: CancellationToken,
}

#[async_trait::async_trait]
impl Backend for CancelOnOverflow {
    fn name(&self) -> String {
        self.inner.name()
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, BackendError> {
        let reply = self.inner.complete(request).await;
        if reply
            .as_ref()
            .is_err_and(BackendError::context_window_exceeded)
        {
            self.cancel.cancel();
        }
        reply
    }
}

#[test]
fn cancelled_during_recovery_aborts_and_shrinks_nothing() {
    let db = db();
    let model = script(&[
        calls(&[("text", json!({"bytes": 30_000}))]),
        openai_overflow(),
        answer("never"),
    ]);
    let cancel = CancellationToken::new();
    let backend = CancelOnOverflow {
        inner: model.clone(),
        cancel: cancel.clone(),
    };
    let agent = agent(
        &db.store,
        backend,
        Arc::new(FakeTools::default()),
        DEFAULT_CAP,
    );
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    let outcome = block_on(agent.run(&id, Some("go"), &cancel, &|_| {})).unwrap();
    assert_eq!(outcome.status, SessionStatus::Aborted);
    assert_eq!(model.requests().len(), 2);
    assert!(
        crate::agent_loop::block_on(db.store.audit(&id))
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        tool_messages(&db.store, &id)[0].message.content,
        text_observation(30_000)
    );
    assert_eq!(
        roles(&db.store, &id),
        [Role::User, Role::Assistant, Role::Tool]
    );
}

#[test]
fn max_turns_completes_with_last_error() {
    let db = db();
    let model = script(&[
        calls(&[("text", json!({"bytes": 1}))]),
        calls(&[("text", json!({"bytes": 2}))]),
        calls(&[("text", json!({"bytes": 3}))]),
    ]);
    let settings = Settings {
        max_turns: 2,
        ..Settings::default()
    };
    let agent = Agent::new(
        db.store.clone(),
        Arc::new(model.clone()),
        Arc::new(FakeTools::default()),
        settings,
    );
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    let outcome = block_on(run(&agent, &id, Some("go")));
    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(
        outcome.last_error.as_deref(),
        Some("Reached maxTurns=2 without a final answer.")
    );
    assert_eq!(
        stored_status(&db.store, &id, &outcome),
        SessionStatus::Completed
    );
    assert_eq!(outcome.requests, 2);
    assert_eq!(model.requests().len(), 2);
    assert_eq!(tool_messages(&db.store, &id).len(), 2);
}

/// The hostile component with `destructive = true` and a writable root `rw` (beside the
/// read-only root), and the directory behind `rw`.
fn destructive_sandbox() -> (Sandbox, tempfile::TempDir) {
    let rw = tempfile::tempdir().unwrap();
    let dir = rw.path().to_path_buf();
    let sb = Sandbox::with_component(cache(), DEFAULT_CAP, HOSTILE_WASM, |p| {
        p.destructive = true;
        p.roots.push(RootGrant {
            name: "rw".into(),
            dir,
            write: true,
        });
    });
    (sb, rw)
}

/// Runs a session whose model asks to write `out.txt` with the destructive tool, decides the
/// call with `decision`, and resumes it: (database, session id, model, the written file).
fn approval_round(decision: Decision) -> (Db, String, ReplayModel, PathBuf, tempfile::TempDir) {
    let (sb, rw) = destructive_sandbox();
    let toolbox: Arc<Toolbox> = sb.toolbox.clone();
    assert!(Tools::is_destructive(toolbox.as_ref(), "write_file"));
    let db = db();
    let model = script(&[
        calls(&[(
            "write_file",
            json!({"path": "/rw/out.txt", "contents": "approved"}),
        )]),
        answer("written"),
    ]);
    let agent = agent(&db.store, model.clone(), toolbox, DEFAULT_CAP);
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;

    let outcome = sb.block_on(run(&agent, &id, Some("write it")));
    assert_eq!(outcome.status, SessionStatus::AwaitingApproval);
    assert_eq!(outcome.last_error, None);
    assert_eq!(
        stored_status(&db.store, &id, &outcome),
        SessionStatus::AwaitingApproval
    );
    // No observation for the waiting call, and the tool did not run.
    assert_eq!(roles(&db.store, &id), [Role::User, Role::Assistant]);
    let out = rw.path().join("out.txt");
    assert!(!out.exists());
    // A new prompt cannot jump the queue.
    let refused = sb.block_on(agent.run(&id, Some("more"), &CancellationToken::new(), &|_| {}));
    assert!(
        matches!(&refused, Err(AgentError::AwaitingApproval { call_id, tool, .. }) if call_id == "call_1" && tool == "write_file"),
        "{refused:?}"
    );
    assert_eq!(
        crate::agent_loop::block_on(db.store.session(&id))
            .unwrap()
            .status,
        SessionStatus::AwaitingApproval
    );
    assert_eq!(roles(&db.store, &id), [Role::User, Role::Assistant]);

    crate::agent_loop::block_on(db.store.decide(&id, "call_1", decision)).unwrap();
    let outcome = sb.block_on(run(&agent, &id, None));
    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(outcome.answer.as_deref(), Some("written"));
    assert_eq!(
        roles(&db.store, &id),
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    (db, id, model, out, rw)
}

#[test]
fn an_approved_destructive_call_runs_once_on_the_next_run() {
    let (db, id, model, out, _rw) = approval_round(Decision::Approve);
    let tool = tool_messages(&db.store, &id);
    assert_eq!(tool.len(), 1);
    assert_eq!(tool[0].message.tool_call_id.as_deref(), Some("call_1"));
    assert_eq!(tool[0].message.content, r#"{"ok":true,"result":null}"#);
    assert_eq!(std::fs::read_to_string(out).unwrap(), "approved");
    assert_eq!(model.requests().len(), 2);
}

#[test]
fn a_denied_destructive_call_stores_one_denial_and_does_not_run() {
    let (db, id, _model, out, _rw) = approval_round(Decision::Deny);
    let tool = tool_messages(&db.store, &id);
    assert_eq!(tool.len(), 1);
    assert_eq!(tool[0].message.tool_call_id.as_deref(), Some("call_1"));
    assert_eq!(
        tool[0].message.content,
        r#"{"ok":false,"error":"the operator denied this call of write_file; do not retry it","kind":"denied"}"#
    );
    assert!(!out.exists(), "the denied tool did not run");
}
