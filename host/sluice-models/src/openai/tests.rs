//! The Chat Completions codec: configuration errors, request bodies, replies and streams.

use sluice_protocol::{Message, ToolSpec};

use super::codec::{arguments_text, decode_body};
use super::stream::ChatStream;
use super::*;
use crate::backend::Usage;
use crate::error::ErrorKind;
use crate::http::Decoder;
use crate::sse::SseEvent;

fn backend(provider: Provider, stream: bool) -> OpenAiBackend {
    let mut config = ProviderConfig::new(provider, "m");
    config.api_key = Some(Secret::new("k"));
    config.base_url = Some("http://127.0.0.1:9/v1/".into());
    config.stream = stream;
    OpenAiBackend::new(config).unwrap()
}

fn events(texts: &[&str]) -> Result<(bool, ModelReply), BackendError> {
    let mut s = ChatStream::default();
    let mut done = false;
    for t in texts {
        done = s.event(SseEvent {
            event: None,
            data: t.to_string(),
        })?;
    }
    Ok((done, s.finish()))
}

#[test]
fn absent_arguments_are_stored_as_an_empty_object() {
    assert_eq!(arguments_text(" "), "{}");
    assert_eq!(arguments_text("{\"a\":1}"), "{\"a\":1}");
}

#[test]
fn config_errors_name_what_is_missing() {
    let e = OpenAiBackend::new(ProviderConfig::new(Provider::OpenAi, "m")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::BadRequest);
    assert!(e.message.contains("OPENAI_API_KEY"), "{}", e.message);
    let e = OpenAiBackend::new(ProviderConfig::new(Provider::OpenAiCompatible, "m")).unwrap_err();
    assert!(e.message.contains("model.base_url"), "{}", e.message);
    let mut config = ProviderConfig::new(Provider::OpenAiCompatible, "m");
    config.base_url = Some("http://localhost:11434/v1".into());
    let b = OpenAiBackend::new(config).unwrap();
    assert_eq!(b.url(), "http://localhost:11434/v1/chat/completions");
    assert_eq!(b.name(), "openai-compatible:m");
    assert_eq!(
        backend(Provider::OpenAi, true).url(),
        "http://127.0.0.1:9/v1/chat/completions"
    );
}

#[test]
fn body_caps_and_stream_options() {
    let request = ModelRequest {
        system: String::new(),
        messages: vec![Message::user("hi", "t")],
        tools: vec![],
    };
    let b = backend(Provider::OpenAi, false).body(&request);
    assert_eq!(
        b,
        json!({"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":4096})
    );
    let b = backend(Provider::OpenAiCompatible, true).body(&ModelRequest {
        system: "sys".into(),
        tools: vec![ToolSpec {
            name: "t".into(),
            description: "d".into(),
            input_schema: json!({"type":"object"}),
        }],
        ..request
    });
    assert_eq!(
        b,
        json!({"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"hi"}],
            "tools":[{"type":"function","function":{"name":"t","description":"d","parameters":{"type":"object"}}}],
            "tool_choice":"auto","max_tokens":4096,"stream":true,"stream_options":{"include_usage":true}})
    );
}

#[test]
fn tool_only_turns_and_tool_choice_per_provider() {
    let call = sluice_protocol::ToolCall {
        id: "c1".into(),
        name: "t".into(),
        arguments: "{}".into(),
    };
    let request = ModelRequest {
        system: String::new(),
        messages: vec![
            Message::user("hi", "t"),
            Message::assistant("", vec![call], "t"),
            Message::tool("c1", "{}", "t"),
        ],
        tools: vec![ToolSpec {
            name: "t".into(),
            description: "d".into(),
            input_schema: json!({"type":"object"}),
        }],
    };
    let sent = |provider, choice| {
        let mut config = ProviderConfig::new(provider, "m");
        config.api_key = Some(Secret::new("k"));
        config.base_url = Some("http://127.0.0.1:9/v1".into());
        config.tool_choice = choice;
        let body = OpenAiBackend::new(config).unwrap().body(&request);
        (
            body["messages"][1]["content"].clone(),
            body.get("tool_choice").cloned(),
        )
    };
    // OpenAI: its documented null, and no tool_choice (its default is auto).
    assert_eq!(sent(Provider::OpenAi, None), (Value::Null, None));
    // Compatible servers: "" (llama-cpp-python refuses null with a 500), and "auto".
    assert_eq!(
        sent(Provider::OpenAiCompatible, None),
        (json!(""), Some(json!("auto")))
    );
    for (choice, wire) in [
        (ToolChoice::Auto, Some(json!("auto"))),
        (ToolChoice::Required, Some(json!("required"))),
        (ToolChoice::None, Some(json!("none"))),
        (ToolChoice::Omit, None),
    ] {
        assert_eq!(sent(Provider::OpenAi, Some(choice)).1, wire, "{choice:?}");
    }
    // No tools offered, no tool_choice.
    let mut config = ProviderConfig::new(Provider::OpenAiCompatible, "m");
    config.base_url = Some("http://127.0.0.1:9/v1".into());
    let bare = ModelRequest {
        tools: vec![],
        ..request
    };
    assert_eq!(
        OpenAiBackend::new(config)
            .unwrap()
            .body(&bare)
            .get("tool_choice"),
        None
    );
}

#[test]
fn json_replies() {
    let r = decode_body(&[], r#"{"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"tool_calls":[{"id":"","type":"function","function":{"name":"t","arguments":{"x":1}}},{"id":"c2","function":{"name":"u"}}]}}]}"#).unwrap();
    assert_eq!(r.content, "ab");
    assert!(r.tool_calls[0].id.starts_with("call_"));
    assert_eq!(r.tool_calls[0].arguments, r#"{"x":1}"#);
    assert_eq!(
        (
            r.tool_calls[1].id.as_str(),
            r.tool_calls[1].arguments.as_str()
        ),
        ("c2", "{}")
    );
    assert_eq!(r.usage, None);
    let r = decode_body(&[], r#"{"choices":[{"message":{"content":null,"refusal":"no"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#).unwrap();
    assert_eq!(r.content, "no");
    assert_eq!(
        r.usage,
        Some(Usage {
            input_tokens: 3,
            output_tokens: 1
        })
    );
    // An error inside a 200 (old llama.cpp), and garbage.
    let e = decode_body(&[], r#"{"error":{"code":500,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"server_error"}}"#).unwrap_err();
    assert!(e.context_window_exceeded());
    let e = decode_body(&[], "<html>").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Protocol);
    let e = decode_body(&[], r#"{"choices":[]}"#).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Protocol);
}

#[test]
fn stream_fragments_without_index_and_errors() {
    // Whole calls without `index` (some servers), each with its own id.
    let (done, r) = events(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"t","arguments":"{\"x\":"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"u","arguments":{"y":2}}}]},"finish_reason":"tool_calls"}]}"#,
        "[DONE]",
    ])
    .unwrap();
    assert!(done);
    let calls: Vec<(&str, &str, &str)> = r
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(calls, [("a", "t", r#"{"x":1}"#), ("b", "u", r#"{"y":2}"#)]);
    // OpenRouter's mid-stream error, a finish_reason "error", garbage.
    let e = events(&[
        r#"{"choices":[{"delta":{"content":"hi"}}]}"#,
        r#"{"error":{"code":502,"message":"Provider disconnected"},"choices":[{"delta":{"content":""},"finish_reason":"error"}]}"#,
    ])
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Transient);
    let e = events(&[r#"{"choices":[{"delta":{},"finish_reason":"error"}]}"#]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Transient);
    let e = events(&["{not json"]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Protocol);
    let e = events(&[
        r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens.","type":"BadRequestError","param":null,"code":400}"#,
    ])
    .unwrap_err();
    assert!(e.context_window_exceeded());
}
