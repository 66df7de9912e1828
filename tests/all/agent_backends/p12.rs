//! Row P12 (`docs/regressions.md#p12`): the real OpenAI backend against a fake server that answers
//! 400 `context_length_exceeded` to bodies over 20,000 bytes, driven by the real agent loop
//! (`sluice_agent::Agent`, a temporary `SqliteStore`, a fake tool whose 30,000-byte
//! observation comes out of the real `Observation::success(..).finish(..)`) → completed;
//! 3 HTTP calls, the 2nd over 20,000 bytes, the 3rd under.

use std::sync::Arc;

use serde_json::json;
use sluice_agent::{Agent, Settings, Tools};
use sluice_models::provider::Provider;
use sluice_protocol::{Role, SessionStatus, ToolSpec};
use sluice_runtime::CallOptions;
use sluice_runtime::call::observation::{DEFAULT_HINT, Observation};
use sluice_store::{SqliteStore, Store};
use tokio_util::sync::CancellationToken;

use super::{backend, config};
use sluice_test_support::fake_provider::{Fake, Turn};

/// The window of the fake, in bytes of request body.
const WINDOW_BYTES: usize = 20_000;

/// One tool, `big`, whose observation is `{"ok":true,"result":{"text":"x"×30000}}`.
struct BigTool;

#[async_trait::async_trait]
impl Tools for BigTool {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "big".into(),
            description: "Returns a large result.".into(),
            input_schema: json!({"type": "object", "properties": {}}),
        }]
    }

    fn is_destructive(&self, _name: &str) -> bool {
        false
    }

    async fn call(&self, name: &str, _args: &str, options: &CallOptions) -> Observation {
        Observation::success(&json!({"text": "x".repeat(30_000)})).finish(
            name,
            options.cap as usize,
            DEFAULT_HINT,
        )
    }
}

#[tokio::test]
async fn p12_the_real_openai_backend_recovers_from_a_20000_byte_window() {
    let fake = Fake::start(vec![
        Turn::Reply {
            content: String::new(),
            tool_calls: vec![("call_big1".into(), "big".into(), "{}".into())],
            usage: (50, 5),
        },
        Turn::text("The result was mostly x."),
    ])
    .await;
    fake.reject_over(
        WINDOW_BYTES,
        Turn::error(
            400,
            r#"{"error":{"message":"This model's maximum context length is 5000 tokens. However, your messages resulted in 7600 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(&dir.path().join("sessions.db")).unwrap());
    let agent = Agent::new(
        store.clone(),
        backend(config(Provider::OpenAi, &fake, true)),
        Arc::new(BigTool),
        Settings::default(),
    );
    let id = store.create_session().await.unwrap().id;
    let outcome = agent
        .run(
            &id,
            Some("Call big, then summarise."),
            &CancellationToken::new(),
            &|_| {},
        )
        .await
        .unwrap();

    assert_eq!(outcome.status, SessionStatus::Completed, "{outcome:?}");
    assert_eq!(outcome.last_error, None);
    assert_eq!(outcome.answer.as_deref(), Some("The result was mostly x."));
    let requests = fake.requests();
    let sizes: Vec<usize> = requests.iter().map(|r| r.body.len()).collect();
    assert_eq!(requests.len(), 3, "{sizes:?}");
    assert!(sizes[0] < WINDOW_BYTES, "{sizes:?}");
    assert!(sizes[1] > WINDOW_BYTES, "{sizes:?}");
    assert!(sizes[2] < WINDOW_BYTES, "{sizes:?}");
    // The 2nd and 3rd carry the same transcript, the observation shrunk in the 3rd.
    let tool_contents = |i: usize| -> Vec<String> {
        requests[i].json()["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(tool_contents(1).len(), 1);
    assert!(tool_contents(1)[0].len() > 30_000);
    assert!(tool_contents(2)[0].len() <= 2048);
    assert!(tool_contents(2)[0].contains("…[cut from 30032 bytes"));
    let stored: Vec<Role> = store
        .messages(&id)
        .await
        .unwrap()
        .iter()
        .map(|m| m.message.role)
        .collect();
    assert_eq!(
        stored,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
}
