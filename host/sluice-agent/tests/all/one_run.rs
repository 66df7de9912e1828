//! The steps of `examples/one_run.rs`, asserted: the scripted model over the built-in file
//! tools and a SQLite store, one prompt, one run (docs/agent-loop.md#a-run).

use std::sync::Arc;

use sluice_agent::{Agent, CancellationToken, Settings};
use sluice_models::ScriptedModel;
use sluice_protocol::{Role, SessionStatus};
use sluice_runtime::{
    Compilers, ComponentSpec, EngineOptions, Source, ToolEngine, ToolPolicy, Toolbox,
};
use sluice_store::{SqliteStore, Store};

/// The built-in file tools, as the example loads them.
const FILE_TOOLS: [&str; 4] = ["read_file", "tail_file", "grep_files", "list_dir"];

/// The example's file, `logs/build.log`: 43 bytes, three lines.
const BUILD_LOG: &str = "step 1 ok\nstep 2 ERROR disk full\nstep 3 ok\n";

/// The scripted model's answer for `What failed in logs/?` over [`BUILD_LOG`].
const ANSWER: &str =
    "Findings for `logs` (scripted offline model: a fixed sequence of tool calls, not an LLM).
Listing: `logs` has 1 entry: build.log (43 bytes).
Search: 1 match for `(?i)error|fail|fatal|panic|exception` in 1 file: logs/build.log (1).
Matches:
- logs/build.log:2: step 2 ERROR disk full
File: `logs/build.log`, because it has the most matches (1).
Read: 43 bytes; 1 page, lines 1–3 (bytes 0–43); reached the end: 3 lines in total.
Last 3 lines of `logs/build.log`:
    step 1 ok
    step 2 ERROR disk full
    step 3 ok";

#[tokio::test]
async fn one_run_of_the_scripted_model_over_the_file_tools() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("logs")).unwrap();
    std::fs::write(root.join("logs/build.log"), BUILD_LOG).unwrap();
    let policy = ToolPolicy::read_only([("root".to_string(), root)]);
    let specs: Vec<ComponentSpec> = sluice_builtins::BUILTINS
        .iter()
        .filter(|(name, _)| FILE_TOOLS.contains(name))
        .map(|&(name, wasm)| ComponentSpec {
            source: Source::Builtin { name, wasm },
            policy: policy.clone(),
        })
        .collect();
    let engine = ToolEngine::new(EngineOptions {
        compilers: Compilers::BaselineOnly,
        ..EngineOptions::default()
    })
    .unwrap();
    let tools = Arc::new(Toolbox::load(Arc::new(engine), &specs).unwrap());
    let store = Arc::new(SqliteStore::open(&dir.path().join("sessions.db")).unwrap());
    let agent = Agent::new(
        store.clone(),
        Arc::new(ScriptedModel::new()),
        tools,
        Settings::default(),
    );
    let session = store.create_session().await.unwrap();

    let outcome = agent
        .run(
            &session.id,
            Some("What failed in logs/?"),
            &CancellationToken::new(),
            &|_| {},
        )
        .await
        .unwrap();

    assert_eq!(outcome.session_id, session.id);
    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(outcome.last_error, None);
    assert_eq!(outcome.answer.as_deref(), Some(ANSWER));
    // Four tool turns and the answer; the scripted model makes no HTTP request.
    assert_eq!(outcome.requests, 5);
    let messages = store.messages(&session.id).await.unwrap();
    let roles: Vec<Role> = messages.iter().map(|m| m.message.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
        ]
    );
    let calls: Vec<(&str, &str, &str)> = messages
        .iter()
        .flat_map(|m| &m.message.tool_calls)
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_1", "list_dir", r#"{"path":"logs"}"#),
            (
                "call_2",
                "grep_files",
                r#"{"pattern":"(?i)error|fail|fatal|panic|exception","path":"logs"}"#
            ),
            ("call_3", "read_file", r#"{"path":"logs/build.log"}"#),
            (
                "call_4",
                "tail_file",
                r#"{"path":"logs/build.log","lines":20}"#
            ),
        ]
    );
    let observations: Vec<(Option<&str>, &str)> = messages
        .iter()
        .filter(|m| m.message.role == Role::Tool)
        .map(|m| {
            (
                m.message.tool_call_id.as_deref(),
                m.message.content.as_str(),
            )
        })
        .collect();
    assert_eq!(
        observations,
        [
            (
                Some("call_1"),
                r#"{"ok":true,"result":{"path":"logs","total":1,"offset":0,"count":1,"entries":[{"name":"build.log","kind":"file","size":43}]}}"#
            ),
            (
                Some("call_2"),
                r#"{"ok":true,"result":{"path":"logs","count":1,"truncated":false,"skippedFiles":0,"results":[{"path":"logs/build.log","line":2,"text":"step 2 ERROR disk full"}]}}"#
            ),
            (
                Some("call_3"),
                r#"{"ok":true,"result":{"path":"logs/build.log","size":43,"offset":0,"startLine":1,"endLine":3,"totalLines":3,"contentBytes":43,"content":"step 1 ok\nstep 2 ERROR disk full\nstep 3 ok\n"}}"#
            ),
            (
                Some("call_4"),
                r#"{"ok":true,"result":{"path":"logs/build.log","truncated":false,"count":3,"lines":["step 1 ok","step 2 ERROR disk full","step 3 ok"]}}"#
            ),
        ]
    );
    // The final assistant message is the answer.
    assert_eq!(messages.last().unwrap().message.content, ANSWER);
}
