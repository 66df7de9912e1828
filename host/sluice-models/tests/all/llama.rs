//! What a real llama-cpp-python 0.3.36 server showed, reproduced by the fake
//! ([`Fake::like_llama_cpp_python`]) so that the default `cargo test` covers it: a tool-only
//! assistant turn sent as `""` (its 500 for `null` is not retried), an empty streamed `200`
//! sent once more unstreamed and remembered per request shape, a streamed overflow turned
//! into a sized context-window rejection, and the estimate calibrated by the reported usage.
//! The agent loop's recovery against the same fake (a session holding a 32 KB page, streamed
//! and not, and one that the 2,048-byte rule (docs/agent-loop.md#context-window-recovery)
//! alone would leave over the window) runs in `tests/all/agent_backends/llama.rs` of
//! `sluice-tests`, which links the agent loop.
//!
//! The same sessions run against the real server in `tests/llm` (`sluice-tests`).

use serde_json::{Value, json};
use sluice_models::openai::OpenAiBackend;
use sluice_models::provider::Provider;
use sluice_models::{Backend, ErrorKind, ModelRequest, estimate};
use sluice_protocol::{Message, ToolCall, ToolSpec};

use crate::{backend, config};
use sluice_test_support::fake_provider::{Fake, LlamaCppPython, Turn};

const T: &str = "2026-01-01T00:00:00Z";

fn read_file_spec() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Read a page of a file.".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }
}

fn read_call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "read_file".into(),
        arguments: r#"{"path":"notes.txt"}"#.into(),
    }
}

/// A history holding a tool-only assistant turn, then a new question.
fn tool_only_history(tools: bool) -> ModelRequest {
    ModelRequest {
        system: "You are a test agent.".into(),
        messages: vec![
            Message::user("Read notes.txt.", T),
            Message::assistant("", vec![read_call("call_1")], T),
            Message::tool("call_1", r#"{"ok":true,"result":{"content":"alpha\n"}}"#, T),
            Message::user("And what does it say?", T),
        ],
        tools: if tools {
            vec![read_file_spec()]
        } else {
            vec![]
        },
    }
}

#[tokio::test]
async fn a_tool_only_turn_is_sent_as_an_empty_string_and_null_is_a_500_not_retried() {
    // OpenAI-compatible: `""`, accepted.
    let fake = Fake::start(vec![Turn::text("It says alpha.")]).await;
    fake.like_llama_cpp_python(2048);
    let reply = backend(config(Provider::OpenAiCompatible, &fake, false))
        .complete(&tool_only_history(false))
        .await
        .unwrap();
    assert_eq!(reply.content, "It says alpha.");
    assert_eq!(fake.requests()[0].json()["messages"][2]["content"], "");

    // The same history with OpenAI's `null`: the server's 500 validation error is a bad
    // request, sent once (three retries would have followed a transient 500).
    let fake = Fake::start(vec![Turn::text("never")]).await;
    fake.like_llama_cpp_python(2048);
    let e = backend(config(Provider::OpenAi, &fake, false))
        .complete(&tool_only_history(false))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::BadRequest, "{e:?}");
    assert_eq!(e.status, Some(500));
    assert_eq!(e.http_requests, Some(1));
    assert!(
        e.message.starts_with(
            "7 validation errors:\n  {'type': 'literal_error', 'loc': ('body', 'messages', 2, "
        ),
        "{}",
        e.message
    );
    assert!(
        e.message
            .contains("'msg': 'Input should be a valid string', 'input': None")
    );
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn an_empty_streamed_200_is_sent_again_unstreamed_and_the_shape_is_remembered() {
    let fake = Fake::start(vec![
        Turn::Reply {
            content: String::new(),
            tool_calls: vec![(
                "call_9".into(),
                "read_file".into(),
                r#"{"path":"a"}"#.into(),
            )],
            usage: (0, 9),
        },
        Turn::text("second"),
        Turn::text("third"),
    ])
    .await;
    fake.like_llama_cpp_python(2048);
    let model = backend(config(Provider::OpenAiCompatible, &fake, true));

    // Tools offered with tool_choice "auto", streamed: an empty 200, then the same request
    // unstreamed: the reply.
    let first = model.complete(&tool_only_history(true)).await.unwrap();
    assert_eq!(first.tool_calls[0].name, "read_file");
    assert_eq!(first.http_requests, Some(2));
    // From now on requests offering tools go unstreamed at once…
    let second = model.complete(&tool_only_history(true)).await.unwrap();
    assert_eq!(
        (second.content.as_str(), second.http_requests),
        ("second", Some(1))
    );
    // …and the others are still streamed.
    let third = model.complete(&tool_only_history(false)).await.unwrap();
    assert_eq!(
        (third.content.as_str(), third.http_requests),
        ("third", Some(1))
    );

    let streamed: Vec<(bool, Option<Value>)> = fake
        .requests()
        .iter()
        .map(|r| {
            let body = r.json();
            (body["stream"] == true, body.get("tool_choice").cloned())
        })
        .collect();
    assert_eq!(
        streamed,
        [
            (true, Some(json!("auto"))),
            (false, Some(json!("auto"))),
            (false, Some(json!("auto"))),
            (true, None),
        ]
    );
    // The unstreamed re-send is the same request, without the stream fields.
    let mut resent = fake.requests()[1].json();
    let mut original = fake.requests()[0].json();
    let original = original.as_object_mut().unwrap();
    assert_eq!(original.remove("stream"), Some(json!(true)));
    assert_eq!(
        original.remove("stream_options"),
        Some(json!({"include_usage": true}))
    );
    assert_eq!(resent.as_object_mut().unwrap(), original);
}

#[tokio::test]
async fn a_streamed_overflow_comes_back_as_a_sized_rejection_and_is_not_remembered() {
    let fake = Fake::start(vec![Turn::text("small")]).await;
    fake.like_llama_cpp_python(100);
    let model = backend(config(Provider::OpenAiCompatible, &fake, true));
    let big = ModelRequest {
        system: "s".into(),
        messages: vec![Message::user("x".repeat(900), T)],
        tools: vec![],
    };
    let e = model.complete(&big).await.unwrap_err();
    assert!(e.context_window_exceeded(), "{e:?}");
    assert_eq!(e.status, Some(400));
    assert_eq!(e.http_requests, Some(2));
    // 901 bytes in two messages: 301 + 10 tokens, as the fake counts.
    assert_eq!(
        e.overflow
            .map(|o| (o.prompt_tokens, o.limit_tokens, o.estimated)),
        Some((311, 100, false))
    );
    assert_eq!(
        e.message,
        "This model's maximum context length is 100 tokens. However, you requested 4407 tokens (311 in the messages, 4096 in the completion). Please reduce the length of the messages or completion."
    );
    // Not a shape the server cannot stream: the next request streams.
    let reply = model.complete(&crate::prompt("hi")).await.unwrap();
    assert_eq!(reply.content, "small");
    let streamed: Vec<bool> = fake
        .requests()
        .iter()
        .map(|r| r.json()["stream"] == true)
        .collect();
    assert_eq!(streamed, [true, false, true]);
}

#[tokio::test]
async fn the_estimate_learns_the_ratio_from_the_reported_usage() {
    let fake = Fake::start(vec![Turn::text("one"), Turn::text("two")]).await;
    fake.like_llama_cpp_python(100_000);
    let mut c = config(Provider::OpenAiCompatible, &fake, false);
    c.context_window_tokens = Some(100_000);
    let model = OpenAiBackend::new(c).unwrap();
    let page = |n: usize| {
        format!(
            r#"{{"ok":true,"result":{{"content":"{}"}}}}"#,
            "line of the page\\n".repeat(n)
        )
    };
    let mut request = tool_only_history(false);
    request.messages[2].content = page(100);
    assert_eq!(model.estimator().calibration(), None);
    let before = model.estimator().tokens(&request);
    model.complete(&request).await.unwrap();
    let counted = LlamaCppPython::prompt_tokens(&fake.requests()[0].json());
    let calibration = model.estimator().calibration().unwrap();
    assert_eq!(
        (calibration.prompt_bytes, calibration.prompt_tokens),
        (estimate::prompt_bytes(&request), counted)
    );
    // Uncalibrated (2 bytes per token) the estimate was high; the next, larger request is
    // estimated within 15% of what the server counts.
    assert!(before > counted, "{before} vs {counted}");
    request
        .messages
        .push(Message::assistant("It is a list of lines.", vec![], T));
    request
        .messages
        .push(Message::user(format!("Compare it with {}", page(60)), T));
    let estimated = model.estimator().tokens(&request);
    model.complete(&request).await.unwrap();
    let counted = LlamaCppPython::prompt_tokens(&fake.requests()[1].json());
    let error = (estimated as f64 - counted as f64).abs() / counted as f64;
    assert!(error < 0.15, "estimated {estimated}, counted {counted}");
}
