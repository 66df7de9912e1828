//! A streamed Chat Completions reply: its server-sent events assembled into a reply.

use std::collections::BTreeMap;

use serde_json::Value;
use sluice_protocol::ToolCall;

use super::codec::{arguments_text, decode_body, usage_of};
use crate::backend::{ModelReply, Usage};
use crate::classify::classify_stream_error;
use crate::error::{BackendError, quote};
use crate::http::Decoder;
use crate::ids::mint_id;
use crate::sse::SseEvent;

/// A tool call being assembled from stream fragments.
#[derive(Debug, Default)]
struct CallSlot {
    id: String,
    name: String,
    arguments: String,
}

/// The state of one streamed reply.
#[derive(Debug, Default)]
pub(super) struct ChatStream {
    content: String,
    refusal: String,
    calls: BTreeMap<u64, CallSlot>,
    usage: Option<Usage>,
    /// A `finish_reason` came.
    finished: bool,
}

impl Decoder for ChatStream {
    const EMPTY_STREAM_IS_AN_ANSWER: bool = true;

    fn decode_body(headers: &[(String, String)], text: &str) -> Result<ModelReply, BackendError> {
        decode_body(headers, text)
    }

    /// Takes one event; `Ok(true)` at `[DONE]`.
    fn event(&mut self, event: SseEvent) -> Result<bool, BackendError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            BackendError::protocol(format!(
                "a stream event from the model is not JSON ({e}): {}",
                quote(data)
            ))
        })?;
        let is_error = event.event.as_deref() == Some("error")
            || value.get("error").is_some_and(|e| !e.is_null())
            || matches!(
                value.get("type").and_then(Value::as_str),
                Some("error" | "response.failed")
            )
            || value.get("object").and_then(Value::as_str) == Some("error");
        if is_error {
            return Err(classify_stream_error(data));
        }
        if let Some(usage) = value.get("usage").and_then(usage_of) {
            self.usage = Some(usage);
        }
        let Some(choice) = value
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| choices.first())
        else {
            return Ok(false);
        };
        if let Some(delta) = choice.get("delta") {
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                self.content.push_str(text);
            }
            if let Some(text) = delta.get("refusal").and_then(Value::as_str) {
                self.refusal.push_str(text);
            }
            if let Some(fragments) = delta.get("tool_calls").and_then(Value::as_array) {
                for fragment in fragments {
                    self.fragment(fragment);
                }
            }
        }
        match choice.get("finish_reason").and_then(Value::as_str) {
            Some("error") => Err(classify_stream_error(data)),
            Some(_) => {
                self.finished = true;
                Ok(false)
            }
            None => Ok(false),
        }
    }

    /// The assembled reply: at `[DONE]`, or at the end of a body that had a `finish_reason`
    /// (else the stream broke off: a transient error).
    fn end(self, complete: bool) -> Result<ModelReply, BackendError> {
        if complete || self.finished {
            Ok(self.finish())
        } else {
            Err(BackendError::transient(
                "the model's stream ended before the reply was complete (no finish_reason, no [DONE])",
            ))
        }
    }
}

impl ChatStream {
    /// One `delta.tool_calls[]` fragment.
    fn fragment(&mut self, fragment: &Value) {
        let id = fragment
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let index = match fragment.get("index").and_then(Value::as_u64) {
            Some(index) => index,
            None => {
                let last = self.calls.last_key_value();
                match (id, last) {
                    (_, None) => 0,
                    (Some(id), Some((&k, slot))) if slot.id != id => k + 1,
                    (_, Some((&k, _))) => k,
                }
            }
        };
        let slot = self.calls.entry(index).or_default();
        if let Some(id) = id
            && slot.id.is_empty()
        {
            slot.id = id.to_string();
        }
        if let Some(function) = fragment.get("function") {
            if let Some(name) = function.get("name").and_then(Value::as_str)
                && slot.name.is_empty()
            {
                slot.name = name.to_string();
            }
            match function.get("arguments") {
                Some(Value::String(s)) => slot.arguments.push_str(s),
                Some(Value::Null) | None => {}
                Some(other) => slot.arguments = other.to_string(),
            }
        }
    }

    /// The assembled reply.
    pub(super) fn finish(self) -> ModelReply {
        let content = if self.content.is_empty() {
            self.refusal
        } else {
            self.content
        };
        let tool_calls = self
            .calls
            .into_values()
            .enumerate()
            .map(|(i, slot)| ToolCall {
                id: if slot.id.is_empty() {
                    mint_id(i)
                } else {
                    slot.id
                },
                name: slot.name,
                arguments: arguments_text(&slot.arguments),
            })
            .collect();
        ModelReply {
            content,
            tool_calls,
            usage: self.usage,
            http_requests: None,
        }
    }
}
