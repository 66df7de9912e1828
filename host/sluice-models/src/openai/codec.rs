//! Chat Completions replies: a non-streamed body, and the pieces a streamed one shares with
//! it (text parts, arguments, usage).

use serde_json::Value;
use sluice_protocol::ToolCall;

use crate::backend::{ModelReply, Usage};
use crate::classify::classify;
use crate::error::{BackendError, quote};
use crate::ids::mint_id;

/// A non-streamed `200` body: a reply, or an error object (classified as a `200`).
pub(super) fn decode_body(
    headers: &[(String, String)],
    text: &str,
) -> Result<ModelReply, BackendError> {
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(_) => return Err(classify(200, headers, text)),
    };
    if value.get("choices").is_none() {
        return Err(classify(200, headers, text));
    }
    decode_reply(&value).ok_or_else(|| {
        BackendError::protocol(format!("the model's reply has no message: {}", quote(text)))
    })
}

/// `choices[0].message` and `usage` of a reply; `None` when there is no message.
fn decode_reply(value: &Value) -> Option<ModelReply> {
    let message = value.pointer("/choices/0/message")?;
    let mut content = text_of(message.get("content"));
    if content.is_empty() {
        content = text_of(message.get("refusal"));
    }
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .enumerate()
                .map(|(i, call)| ToolCall {
                    id: call
                        .get("id")
                        .and_then(Value::as_str)
                        .filter(|id| !id.is_empty())
                        .map_or_else(|| mint_id(i), str::to_string),
                    name: call
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    arguments: arguments_of(call.pointer("/function/arguments")),
                })
                .collect()
        })
        .unwrap_or_default();
    Some(ModelReply {
        content,
        tool_calls,
        usage: value.get("usage").and_then(usage_of),
        http_requests: None,
    })
}

/// A `content` that is a string or a list of text parts.
fn text_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// `function.arguments`: JSON text, or (Ollama's native shape) an object, serialized.
fn arguments_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => arguments_text(s),
        None | Some(Value::Null) => arguments_text(""),
        Some(other) => other.to_string(),
    }
}

/// Tool-call arguments as stored: the model's text, or `{}` when it sent none (an absent,
/// null or empty `arguments`: a call without parameters).
pub(super) fn arguments_text(text: &str) -> String {
    if text.trim().is_empty() {
        "{}".to_string()
    } else {
        text.to_string()
    }
}

/// `usage` with `prompt_tokens` and `completion_tokens`.
pub(super) fn usage_of(usage: &Value) -> Option<Usage> {
    let input = usage.get("prompt_tokens").and_then(Value::as_u64);
    let output = usage.get("completion_tokens").and_then(Value::as_u64);
    if input.is_none() && output.is_none() {
        return None;
    }
    Some(Usage {
        input_tokens: input.unwrap_or(0),
        output_tokens: output.unwrap_or(0),
    })
}
