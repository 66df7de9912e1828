//! The agent loop over the OpenAI-compatible backend against the fake that behaves like a
//! real llama-cpp-python 0.3.36 server ([`Fake::like_llama_cpp_python`]): a session
//! holding a 32 KB page continues, streamed and not, and one that the 2,048-byte rule
//! (docs/agent-loop.md#context-window-recovery) alone would leave over the window recovers in
//! one retry. The backend's own side of the same fake is in
//! `host/sluice-models/tests/all/llama.rs`.

use std::sync::Arc;
use std::sync::Mutex;

use serde_json::json;
use sluice_agent::{Agent, RunEvent, Settings, Tools};
use sluice_models::Backend;
use sluice_models::provider::Provider;
use sluice_protocol::{Message, Role, SessionStatus, ToolCall, ToolSpec};
use sluice_runtime::CallOptions;
use sluice_runtime::call::observation::Observation;
use sluice_store::{SqliteStore, Store};
use tokio_util::sync::CancellationToken;

use super::{backend, config};
use sluice_test_support::fake_provider::{Fake, LlamaCppPython, Turn};

const T: &str = "2026-01-01T00:00:00Z";

fn read_call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "read_file".into(),
        arguments: r#"{"path":"notes.txt"}"#.into(),
    }
}

/// Tools that are never called: the sessions below only continue.
struct NoTools;

#[async_trait::async_trait]
impl Tools for NoTools {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![]
    }

    fn is_destructive(&self, _name: &str) -> bool {
        false
    }

    async fn call(&self, name: &str, _args: &str, options: &CallOptions) -> Observation {
        Observation::unknown_tool(name).finish(name, options.cap as usize, "")
    }
}

/// A temporary store holding one session whose history is `messages`.
async fn session(messages: &[Message]) -> (tempfile::TempDir, Arc<SqliteStore>, String) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(&dir.path().join("sessions.db")).unwrap());
    let id = store.create_session().await.unwrap().id;
    for m in messages {
        store.append(&id, m).await.unwrap();
    }
    (dir, store, id)
}

/// A read_file observation of exactly `bytes` bytes.
fn page_observation(bytes: usize) -> String {
    let head = r#"{"ok":true,"result":{"path":"notes.txt","content":""#;
    let tail = r#""}}"#;
    let body: String = "the quick brown fox jumps over the lazy dog. "
        .chars()
        .cycle()
        .take(bytes - head.len() - tail.len())
        .collect();
    format!("{head}{body}{tail}")
}

/// Runs `prompt` on session `id` and returns the outcome and the run's events.
async fn run(
    store: Arc<SqliteStore>,
    model: Arc<dyn Backend>,
    id: &str,
    prompt: &str,
) -> (sluice_agent::Outcome, Vec<RunEvent>) {
    let agent = Agent::new(store, model, Arc::new(NoTools), Settings::default());
    let events = Mutex::new(Vec::new());
    let outcome = agent
        .run(id, Some(prompt), &CancellationToken::new(), &|e| {
            events.lock().unwrap().push(e)
        })
        .await
        .unwrap();
    (outcome, events.into_inner().unwrap())
}

fn shrinks(events: &[RunEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, RunEvent::Shrunk { .. }))
        .count()
}

#[tokio::test]
async fn a_session_holding_a_32_kb_page_continues_streamed_and_not() {
    for stream in [true, false] {
        let history = [
            Message::user("Read notes.txt.", T),
            Message::assistant("", vec![read_call("call_1")], T),
            Message::tool("call_1", page_observation(32_768), T),
        ];
        let (_dir, store, id) = session(&history).await;
        let fake = Fake::start(vec![Turn::text("It is about a fox.")]).await;
        fake.like_llama_cpp_python(2048);
        let model = backend(config(Provider::OpenAiCompatible, &fake, stream));
        let (outcome, events) = run(store.clone(), model, &id, "What is it about?").await;

        assert_eq!(outcome.status, SessionStatus::Completed, "{outcome:?}");
        assert_eq!(outcome.answer.as_deref(), Some("It is about a fox."));
        assert_eq!(shrinks(&events), 1, "stream={stream}");
        // Streamed: the empty 200, the same request unstreamed (the 400 with its sizes), the
        // retry (streamed again: an overflow is not a shape the server cannot stream).
        let sent: Vec<(bool, usize)> = fake
            .requests()
            .iter()
            .map(|r| (r.json()["stream"] == true, r.body.len()))
            .collect();
        let expected_streams: &[bool] = if stream {
            &[true, false, true]
        } else {
            &[false, false]
        };
        assert_eq!(
            sent.iter().map(|s| s.0).collect::<Vec<_>>(),
            expected_streams
        );
        assert_eq!(outcome.requests as usize, sent.len());
        let tool = &store.messages(&id).await.unwrap()[2].message;
        assert_eq!(tool.role, Role::Tool);
        assert!(tool.content.len() <= 2048);
        assert!(
            tool.content.contains("…[cut from 32768 bytes"),
            "{}",
            tool.content
        );
        // The audit keeps the original.
        let audit = store.audit(&id).await.unwrap();
        assert_eq!(audit.len(), 1);
        assert_eq!(audit[0].original, page_observation(32_768));
        // Streamed replies from this server report no usage: the run says so.
        assert_eq!(outcome.usage.unreported_replies, u32::from(stream));
    }
}

#[tokio::test]
async fn recovery_shrinks_as_far_as_the_stated_sizes_need_in_one_retry() {
    // Two groups of two 2,109-byte pages (a 4,096-byte cap's read_file pages): the 2,048-byte
    // rule alone cuts the newest group by 61 bytes a page, which is not enough.
    let history = [
        Message::user("Read a.log and b.log.", T),
        Message::assistant("", vec![read_call("call_1"), read_call("call_2")], T),
        Message::tool("call_1", page_observation(2109), T),
        Message::tool("call_2", page_observation(2109), T),
        Message::assistant("", vec![read_call("call_3"), read_call("call_4")], T),
        Message::tool("call_3", page_observation(2109), T),
        Message::tool("call_4", page_observation(2109), T),
    ];
    let (_dir, store, id) = session(&history).await;
    let fake = Fake::start(vec![Turn::text("Both logs are about a fox.")]).await;
    fake.like_llama_cpp_python(2000);
    let model = backend(config(Provider::OpenAiCompatible, &fake, false));
    let (outcome, events) = run(store.clone(), model, &id, "Summarise.").await;

    assert_eq!(outcome.status, SessionStatus::Completed, "{outcome:?}");
    assert_eq!(outcome.requests, 2);
    assert_eq!(shrinks(&events), 1);
    let requests = fake.requests();
    let rejected = requests[0].json();
    let retried = requests[1].json();
    assert!(LlamaCppPython::prompt_tokens(&rejected) > 2000);
    assert!(LlamaCppPython::prompt_tokens(&retried) <= 2000);
    // Every page went to a 512-byte head (2,048 would not have fitted), the newest first.
    let sizes: Vec<usize> = store
        .messages(&id)
        .await
        .unwrap()
        .iter()
        .filter(|m| m.message.role == Role::Tool)
        .map(|m| m.message.content.len())
        .collect();
    assert!(sizes.iter().all(|&s| s <= 512), "{sizes:?}");
    let mut spec_only = rejected.clone();
    for m in spec_only["messages"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .skip(6)
    {
        if m["role"] == "tool" {
            m["content"] = json!("o".repeat(2048));
        }
    }
    assert!(LlamaCppPython::prompt_tokens(&spec_only) > 2000);
    assert_eq!(store.audit(&id).await.unwrap().len(), 4);
}
