//! The request bodies each backend sends, as the fake received them, snapshotted with insta
//! (nothing is normalised: the bodies hold nothing random), plus the rules checked one by one:
//! the system prompt exactly once and in the system slot; tool results paired with their calls
//! in the order each API demands; Anthropic's merged turns and results-before-text; re-keyed
//! long ids; the auth headers.

use serde_json::{Value, json};
use sluice_models::ModelRequest;
use sluice_models::provider::Provider;
use sluice_protocol::{Message, ToolCall, ToolSpec};

use crate::{backend, config};
use sluice_test_support::fake_provider::{Fake, Recorded, Turn};

const SYSTEM: &str = "You are a test agent. SYSTEM-PROMPT-MARKER: cite files.";

/// A 46-character id, as vLLM mints them (over OpenAI's 40).
const LONG_ID: &str = "chatcmpl-tool-7c1e4d0b2f3a4e6b9d8c7a6b5e4f3a2b";

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

/// A transcript with two rounds of tool calls: the first with text, two calls (one with a
/// long id) and an error result; the second with one call whose arguments are invalid JSON;
/// then a user message right after the last result (a run that stopped at maxTurns).
fn transcript() -> ModelRequest {
    let t = "2026-01-01T00:00:00Z";
    ModelRequest {
        system: SYSTEM.into(),
        messages: vec![
            Message::user("Find the TODOs in src and read notes/a.txt.", t),
            Message::assistant(
                "I will look.",
                vec![
                    call("call_1", "read_file", r#"{"path":"notes/a.txt"}"#),
                    call(LONG_ID, "grep_files", r#"{"pattern":"TODO","path":"src"}"#),
                ],
                t,
            ),
            Message::tool(
                "call_1",
                r#"{"ok":true,"result":{"path":"notes/a.txt","content":"alpha\n"}}"#,
                t,
            ),
            Message::tool(
                LONG_ID,
                r#"{"ok":false,"error":"no such directory: src"}"#,
                t,
            ),
            Message::assistant("", vec![call("call_3", "list_dir", r#"{"path": "."#)], t),
            Message::tool(
                "call_3",
                r#"{"ok":true,"result":{"entries":[{"name":"notes","kind":"dir"}]}}"#,
                t,
            ),
            Message::user("Thanks. Now check lib/.", t),
        ],
        tools: vec![
            ToolSpec {
                name: "read_file".into(),
                description: "Read a page of a file.".into(),
                input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            },
            ToolSpec {
                name: "grep_files".into(),
                description: "Search files.".into(),
                input_schema: json!({"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}),
            },
        ],
    }
}

/// The one request `provider` sends for [`transcript`].
async fn sent(provider: Provider, stream: bool, key: bool) -> Recorded {
    let fake = Fake::start(vec![Turn::text("ok")]).await;
    let mut c = config(provider, &fake, stream);
    if !key {
        c.api_key = None;
    }
    backend(c).complete(&transcript()).await.unwrap();
    let mut requests = fake.requests();
    assert_eq!(requests.len(), 1);
    requests.remove(0)
}

/// The system prompt appears exactly once in the raw body.
fn system_once(r: &Recorded) {
    let raw = String::from_utf8(r.body.clone()).unwrap();
    assert_eq!(raw.matches("SYSTEM-PROMPT-MARKER").count(), 1, "{raw}");
}

/// OpenAI: a `system` message first, each assistant's `tool_calls` followed at once by one
/// `tool` message per call, in call order, with matching ids of at most 40 characters; the
/// tool-only assistant turn's `content` is `tool_only_content`.
fn openai_rules(body: &Value, tool_only_content: Value) {
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "tool",
            "user"
        ]
    );
    assert_eq!(messages[0]["content"], SYSTEM);
    for (i, m) in messages.iter().enumerate() {
        let Some(calls) = m["tool_calls"].as_array() else {
            continue;
        };
        for (k, c) in calls.iter().enumerate() {
            let id = c["id"].as_str().unwrap();
            assert!(id.chars().count() <= 40, "{id}");
            assert_eq!(messages[i + 1 + k]["role"], "tool");
            assert_eq!(messages[i + 1 + k]["tool_call_id"], id);
        }
    }
    // The long id is re-keyed, the short ones are kept; arguments go as stored (strings).
    let first = &messages[2]["tool_calls"];
    assert_eq!(first[0]["id"], "call_1");
    assert_ne!(first[1]["id"], LONG_ID);
    assert_eq!(
        messages[5]["tool_calls"][0]["function"]["arguments"],
        r#"{"path": "."#
    );
    assert_eq!(messages[5]["content"], tool_only_content);
}

/// Anthropic: top-level `system`, alternating turns, each `tool_use` turn followed by a user
/// turn that starts with the results in call order, before any text.
fn anthropic_rules(body: &Value) {
    assert_eq!(body["system"], SYSTEM);
    assert!(body["max_tokens"].as_u64().is_some());
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
    for (i, m) in messages.iter().enumerate() {
        let uses: Vec<&Value> = m["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .collect();
        if uses.is_empty() {
            continue;
        }
        let next = messages[i + 1]["content"].as_array().unwrap();
        for (k, u) in uses.iter().enumerate() {
            assert_eq!(next[k]["type"], "tool_result");
            assert_eq!(next[k]["tool_use_id"], u["id"]);
        }
        assert!(
            next[uses.len()..]
                .iter()
                .all(|b| b["type"] != "tool_result")
        );
    }
    // The error result is flagged; the invalid arguments went as {}; the last user turn is
    // the merged [result, text].
    assert_eq!(messages[2]["content"][1]["is_error"], true);
    assert_eq!(messages[2]["content"][0].get("is_error"), None);
    assert_eq!(messages[3]["content"][0]["input"], json!({}));
    let last: Vec<&str> = messages[4]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(last, ["tool_result", "text"]);
}

#[tokio::test]
async fn openai_body() {
    let r = sent(Provider::OpenAi, true, true).await;
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some("Bearer test-key"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("accept"), Some("text/event-stream"));
    system_once(&r);
    let body = r.json();
    // OpenAI's documented form of a tool-only turn; no tool_choice (its default is auto).
    openai_rules(&body, Value::Null);
    assert_eq!(body.get("tool_choice"), None);
    assert_eq!(body["max_completion_tokens"], 4096);
    assert_eq!(body.get("max_tokens"), None);
    insta::assert_json_snapshot!("openai_chat_stream", body);
}

#[tokio::test]
async fn openai_compatible_body() {
    let r = sent(Provider::OpenAiCompatible, false, false).await;
    assert_eq!(r.path, "/v1/chat/completions");
    // No key configured: no Authorization header (Ollama, llama.cpp need none).
    assert_eq!(r.header("authorization"), None);
    system_once(&r);
    let body = r.json();
    // A string where llama-cpp-python requires one, and tool_choice "auto" (without it, its
    // function-calling format never offers the tools).
    openai_rules(&body, json!(""));
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body.get("max_completion_tokens"), None);
    assert_eq!(body.get("stream"), None);
    insta::assert_json_snapshot!("openai_compatible_json", body);
    // With a key, it is sent as a bearer token.
    let r = sent(Provider::OpenAiCompatible, true, true).await;
    assert_eq!(r.header("authorization"), Some("Bearer test-key"));
}

#[tokio::test]
async fn anthropic_body() {
    let r = sent(Provider::Anthropic, true, true).await;
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some("test-key"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("authorization"), None);
    system_once(&r);
    let body = r.json();
    anthropic_rules(&body);
    insta::assert_json_snapshot!("anthropic_messages_stream", body);
    // The JSON mode sends the same body without `stream`.
    let mut json_mode = sent(Provider::Anthropic, false, true).await.json();
    let mut streamed = body;
    streamed.as_object_mut().unwrap().remove("stream");
    assert_eq!(json_mode.as_object_mut().unwrap().remove("stream"), None);
    assert_eq!(json_mode, streamed);
}

#[tokio::test]
async fn an_empty_system_prompt_and_no_tools_are_left_out() {
    let request = ModelRequest {
        system: String::new(),
        tools: vec![],
        ..transcript()
    };
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let fake = Fake::start(vec![Turn::text("ok")]).await;
        backend(config(provider, &fake, false))
            .complete(&request)
            .await
            .unwrap();
        let body = fake.requests()[0].json();
        assert_eq!(body.get("tools"), None, "{provider:?}");
        assert_eq!(body.get("system"), None, "{provider:?}");
        assert_ne!(body["messages"][0]["role"], "system", "{provider:?}");
    }
}

/// A session whose history holds a tool-only assistant turn (tool calls, no text), as each
/// provider is sent it: OpenAI `"content": null` (its documented form), OpenAI-compatible
/// servers `"content": ""` (llama-cpp-python answers `null` with HTTP 500), Anthropic and
/// Bedrock only the tool-use block (both refuse empty text blocks). One snapshot per provider,
/// of the messages only.
#[tokio::test]
async fn a_tool_only_assistant_turn_per_provider() {
    let t = "2026-01-01T00:00:00Z";
    let request = ModelRequest {
        system: SYSTEM.into(),
        messages: vec![
            Message::user("Read notes/a.txt.", t),
            Message::assistant(
                "",
                vec![call("call_1", "read_file", r#"{"path":"notes/a.txt"}"#)],
                t,
            ),
            Message::tool("call_1", r#"{"ok":true,"result":{"content":"alpha\n"}}"#, t),
        ],
        tools: transcript().tools,
    };
    for (provider, name) in [
        (Provider::OpenAi, "tool_only_turn_openai"),
        (
            Provider::OpenAiCompatible,
            "tool_only_turn_openai_compatible",
        ),
        (Provider::Anthropic, "tool_only_turn_anthropic"),
    ] {
        let fake = Fake::start(vec![Turn::text("ok")]).await;
        backend(config(provider, &fake, false))
            .complete(&request)
            .await
            .unwrap();
        let body = fake.requests()[0].json();
        insta::assert_json_snapshot!(name, body["messages"]);
    }
    let bedrock = sluice_models::bedrock::request_body(&request, 4096);
    insta::assert_json_snapshot!("tool_only_turn_bedrock", bedrock["messages"]);
}
