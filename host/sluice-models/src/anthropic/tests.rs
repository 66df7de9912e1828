use sluice_protocol::Message;

use super::*;
use crate::error::ErrorKind;

fn backend() -> AnthropicBackend {
    let mut config = ProviderConfig::new(Provider::Anthropic, "claude");
    config.api_key = Some(Secret::new("k"));
    config.stream = false;
    AnthropicBackend::new(config).unwrap()
}

fn events(events: &[(&str, &str)]) -> Result<(bool, ModelReply), BackendError> {
    let mut s = MessageStream::default();
    let mut done = false;
    for (name, data) in events {
        done = s.event(SseEvent {
            event: Some(name.to_string()),
            data: data.to_string(),
        })?;
    }
    Ok((done, s.finish()))
}

#[test]
fn config_errors_name_what_is_missing() {
    let e = AnthropicBackend::new(ProviderConfig::new(Provider::Anthropic, "m")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::BadRequest);
    assert!(e.message.contains("ANTHROPIC_API_KEY"), "{}", e.message);
    assert_eq!(backend().url(), "https://api.anthropic.com/v1/messages");
    assert_eq!(backend().name(), "anthropic:claude");
}

#[test]
fn the_base_url_is_taken_with_or_without_v1_and_trailing_slashes() {
    for base in [
        "http://127.0.0.1:8000",
        "http://127.0.0.1:8000/",
        "http://127.0.0.1:8000/v1",
        "http://127.0.0.1:8000/v1/",
        "http://127.0.0.1:8000/v1//",
    ] {
        assert_eq!(
            messages_url(base),
            "http://127.0.0.1:8000/v1/messages",
            "{base}"
        );
    }
    // A gateway under a path prefix, as ANTHROPIC_BASE_URL names one.
    assert_eq!(
        messages_url("https://gateway.example/anthropic"),
        "https://gateway.example/anthropic/v1/messages"
    );
    assert_eq!(
        messages_url("https://gateway.example/anthropic/v1"),
        "https://gateway.example/anthropic/v1/messages"
    );
}

#[test]
fn odd_transcripts_still_make_valid_turns() {
    let call = |id: &str, args: &str| ToolCall {
        id: id.into(),
        name: "t".into(),
        arguments: args.into(),
    };
    let request = ModelRequest {
        system: String::new(),
        messages: vec![
            Message::user("a", "t"),
            Message::user("", "t"),
            Message::user("b", "t"),
            Message::assistant("", vec![call("call:1", "[1]"), call("c2", "{bad")], "t"),
            Message::user("interjection", "t"),
            Message::tool("call:1", r#"{"ok":false,"error":"x"}"#, "t"),
            Message::tool("c2", r#"{"ok":true,"result":1}"#, "t"),
            Message::assistant("", vec![], "t"),
        ],
        tools: vec![],
    };
    let body = backend().body(&request);
    let rekeyed = body["messages"][1]["content"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        rekeyed.starts_with("toolu_") && valid_id(&rekeyed),
        "{rekeyed}"
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
            {"role":"assistant","content":[
                {"type":"tool_use","id":rekeyed,"name":"t","input":{}},
                {"type":"tool_use","id":"c2","name":"t","input":{}}]},
            {"role":"user","content":[
                {"type":"tool_result","tool_use_id":rekeyed,"content":"{\"ok\":false,\"error\":\"x\"}","is_error":true},
                {"type":"tool_result","tool_use_id":"c2","content":"{\"ok\":true,\"result\":1}"},
                {"type":"text","text":"interjection"}]}
        ])
    );
    assert_eq!(body.get("system"), None);
    assert_eq!(body.get("tools"), None);
}

#[test]
fn json_replies_and_errors_in_a_200() {
    let r = decode_body(&[], r#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"a"},{"type":"tool_use","id":"toolu_1","name":"t","input":{"b":1,"a":2}},{"type":"text","text":"b"}],"stop_reason":"model_context_window_exceeded","usage":{"input_tokens":5,"cache_creation_input_tokens":10,"cache_read_input_tokens":100,"output_tokens":7}}"#).unwrap();
    assert_eq!(r.content, "ab");
    assert_eq!(r.tool_calls[0].arguments, r#"{"b":1,"a":2}"#);
    assert_eq!(
        r.usage,
        Some(Usage {
            input_tokens: 115,
            output_tokens: 7
        })
    );
    let e = decode_body(
        &[],
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Overloaded);
    assert_eq!(
        decode_body(&[], r#"{"type":"message"}"#).unwrap_err().kind,
        ErrorKind::Protocol
    );
}

#[test]
fn stream_edge_cases() {
    // Empty partial JSON means {}; invalid JSON is kept as sent; unknown events and
    // thinking deltas are ignored.
    let (done, r) = events(&[
            ("message_start", r#"{"type":"message_start","message":{"usage":{"input_tokens":3,"output_tokens":1}}}"#),
            ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#),
            ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}"#),
            ("content_block_start", r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"t","input":{}}}"#),
            ("content_block_start", r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_b","name":"u","input":{}}}"#),
            ("content_block_delta", r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"x\": "}}"#),
            ("future_event", r#"{"type":"future_event"}"#),
            ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}"#),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ])
        .unwrap();
    assert!(done);
    assert_eq!(r.content, "");
    let calls: Vec<(&str, &str)> = r
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(calls, [("toolu_a", "{}"), ("toolu_b", r#"{"x": "#)]);
    assert_eq!(
        r.usage,
        Some(Usage {
            input_tokens: 3,
            output_tokens: 9
        })
    );
    let e = events(&[(
        "error",
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    )])
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Overloaded);
    let e = events(&[("ping", "not json")]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Protocol);
}
