//! Anthropic Messages (`POST {base}/v1/messages`, base `https://api.anthropic.com`; a base
//! that already ends in `/v1` is taken as well: [`messages_url`]).
//!
//! # The request
//!
//! - headers `x-api-key`, `anthropic-version: 2023-06-01`, `content-type: application/json`;
//! - `system`: the system prompt, top level, once (left out when empty); never a message;
//! - `max_tokens` (required by the API): the configured output cap;
//! - `messages`: roles `user` and `assistant` only, every content a list of blocks, adjacent
//!   turns of the same role merged into one (the API wants them alternating):
//!   - a user message is a `text` block;
//!   - an assistant message is a `text` block (when it has text) and one `tool_use` block per
//!     call (`id`, `name`, `input` = the parsed arguments; arguments that are not a JSON
//!     object, invalid JSON included, are sent as `{}`: the call stays paired with its
//!     result and the run goes on);
//!   - a tool message is a `tool_result` block (`tool_use_id`, `content`, and
//!     `is_error: true` when the observation starts with `{"ok":false`) in a user turn; in
//!     every user turn the `tool_result` blocks come first, before any text, as the API
//!     demands;
//!   - empty texts are left out (the API refuses empty text blocks), and a turn left with no
//!     block disappears;
//!   - tool-call ids outside `[A-Za-z0-9_-]` (ids minted by other providers) are re-keyed to
//!     `toolu_` + 16 hex digits of their hash, consistently within and across requests;
//! - `tools`: `{"name","description","input_schema"}`, left out when there are none; with
//!   them, `tool_choice` when configured (`{"type":"auto"|"any"|"none"}`; by default nothing,
//!   which the API takes as `auto`);
//! - `"stream": true` when streaming.
//!
//! Before sending, the request's estimated tokens are checked against the configured context
//! window, and every reply's usage calibrates the estimate ([`Estimator`]).
//!
//! # The reply
//!
//! JSON: `content` blocks (`text` appended in order, `tool_use` → a tool call whose arguments
//! are `input` as compact JSON; other blocks, such as `thinking`, ignored), `usage` (input =
//! `input_tokens` + `cache_creation_input_tokens` + `cache_read_input_tokens`, output =
//! `output_tokens`). `stop_reason: model_context_window_exceeded` is a successful, truncated
//! reply and is returned as such. An error body inside a `200` goes through [`classify()`].
//!
//! Streaming (named server-sent events): `message_start` (input usage),
//! `content_block_start` (a `text` or `tool_use` block at `index`), `content_block_delta`
//! (`text_delta` appended; `input_json_delta.partial_json` concatenated per block and parsed
//! at the end: empty means `{}`, valid JSON is stored compact, exactly as in JSON mode, and
//! invalid text is stored as sent), `content_block_stop`, `message_delta` (cumulative
//! `output_tokens`), `message_stop` (the end), `ping` and unknown events (ignored), and
//! `error` (for example `overloaded_error` mid-stream) through [`classify_stream_error`]. A
//! body that ends before `message_stop` is a transient error; a body with no event at all is
//! read as a plain JSON reply or error.
//!
//! Rate limits, overload and transient failures, also inside the stream, are retried by
//! [`Http::send_and_read`]; a context-window rejection never is.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use sluice_protocol::{Role, ToolCall};

use crate::backend::{Backend, ModelReply, ModelRequest, Usage};
use crate::classify::{classify, classify_stream_error};
use crate::config::{Provider, ProviderConfig, Secret, ToolChoice};
use crate::error::{BackendError, quote};
use crate::estimate::Estimator;
use crate::http::{Decoder, Http, read_answer};
use crate::ids::{IdMap, mint_id};
use crate::sse::SseEvent;

/// Anthropic's API base, as the Anthropic SDKs and Claude Code take it
/// (`ANTHROPIC_BASE_URL`): the host, without `/v1`.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The Messages endpoint under `base` (`model.base_url`): `{base}/v1/messages`, the SDKs'
/// convention (`http://HOST` → `http://HOST/v1/messages`), or `{base}/messages` when `base`
/// already ends in `/v1` (`http://HOST/v1` → the same URL). Trailing slashes are ignored.
pub fn messages_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}

/// The `anthropic-version` header sent.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The environment variable the Anthropic key is usually read from.
pub const ANTHROPIC_KEY_ENV: &str = "ANTHROPIC_API_KEY";

/// A Messages backend.
#[derive(Debug)]
pub struct AnthropicBackend {
    http: Http,
    url: String,
    api_key: Secret,
    model: String,
    max_tokens: u32,
    stream: bool,
    context_window_tokens: Option<u64>,
    tool_choice: ToolChoice,
    estimator: Estimator,
}

impl AnthropicBackend {
    /// The backend for `config` (provider [`Provider::Anthropic`]).
    ///
    /// # Errors
    /// A `BadRequest` error without a key (naming [`ANTHROPIC_KEY_ENV`]) or for another
    /// provider; a `Protocol` error when the HTTP client cannot start.
    pub fn new(config: ProviderConfig) -> Result<AnthropicBackend, BackendError> {
        if config.provider != Provider::Anthropic {
            return Err(BackendError::bad_request(format!(
                "{:?} is not the Anthropic provider",
                config.provider
            )));
        }
        let Some(api_key) = config.api_key.filter(|k| !k.expose().is_empty()) else {
            return Err(BackendError::bad_request(format!(
                "no API key for anthropic: set {ANTHROPIC_KEY_ENV} (or model.api_key_env / model.api_key_file)"
            )));
        };
        let base = config.base_url.as_deref().unwrap_or(ANTHROPIC_BASE_URL);
        Ok(AnthropicBackend {
            http: Http::new(config.timeouts, config.retry)?,
            url: messages_url(base),
            api_key,
            model: config.model,
            max_tokens: config.max_tokens,
            stream: config.stream,
            context_window_tokens: config.context_window_tokens,
            tool_choice: ToolChoice::resolve(config.tool_choice, config.provider),
            estimator: Estimator::new(),
        })
    }

    /// The endpoint requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The JSON body sent for `request` (see the module docs).
    pub fn body(&self, request: &ModelRequest) -> Value {
        let ids = IdMap::new(&request.messages, "toolu_", valid_id);
        let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
        for m in &request.messages {
            let (role, blocks) = match m.role {
                Role::User => ("user", text_block(&m.content).into_iter().collect()),
                Role::Assistant => {
                    let mut blocks: Vec<Value> = text_block(&m.content).into_iter().collect();
                    blocks.extend(m.tool_calls.iter().map(|c| {
                        json!({
                            "type": "tool_use",
                            "id": ids.get(&c.id),
                            "name": c.name,
                            "input": input_of(&c.arguments),
                        })
                    }));
                    ("assistant", blocks)
                }
                Role::Tool => {
                    let mut block = json!({
                        "type": "tool_result",
                        "tool_use_id": ids.get(m.tool_call_id.as_deref().unwrap_or_default()),
                        "content": m.content,
                    });
                    if m.content.starts_with(r#"{"ok":false"#) {
                        block["is_error"] = Value::Bool(true);
                    }
                    ("user", vec![block])
                }
            };
            if blocks.is_empty() {
                continue;
            }
            match turns.last_mut() {
                Some((last, existing)) if *last == role => existing.extend(blocks),
                _ => turns.push((role, blocks)),
            }
        }
        let messages: Vec<Value> = turns
            .into_iter()
            .map(|(role, blocks)| {
                // Results first, before any text; otherwise the order is kept.
                let (mut ordered, rest): (Vec<Value>, Vec<Value>) =
                    blocks.into_iter().partition(|b| b["type"] == "tool_result");
                ordered.extend(rest);
                json!({"role": role, "content": ordered})
            })
            .collect();
        let mut body = Map::new();
        body.insert("model".into(), Value::from(self.model.as_str()));
        body.insert("max_tokens".into(), Value::from(self.max_tokens));
        if !request.system.is_empty() {
            body.insert("system".into(), Value::from(request.system.as_str()));
        }
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name,
                        "description": t.description,
                        "input_schema": t.input_schema,
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
            let choice = match self.tool_choice {
                ToolChoice::Auto => Some("auto"),
                ToolChoice::Required => Some("any"),
                ToolChoice::None => Some("none"),
                ToolChoice::Omit => None,
            };
            if let Some(choice) = choice {
                body.insert("tool_choice".into(), json!({"type": choice}));
            }
        }
        if self.stream {
            body.insert("stream".into(), Value::Bool(true));
        }
        Value::Object(body)
    }
}

#[async_trait::async_trait]
impl Backend for AnthropicBackend {
    /// `anthropic:MODEL`.
    fn name(&self) -> String {
        format!("anthropic:{}", self.model)
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, BackendError> {
        self.estimator
            .around(request, self.context_window_tokens, self.exchange(request))
            .await
    }
}

impl AnthropicBackend {
    /// Sends `request` through the retry loop.
    async fn exchange(&self, request: &ModelRequest) -> Result<ModelReply, BackendError> {
        let auth = |b: reqwest::RequestBuilder| {
            b.header("x-api-key", self.api_key.expose())
                .header("anthropic-version", ANTHROPIC_VERSION)
        };
        let stream = self.stream;
        let (answer, sent) = self
            .http
            .post_json(&self.url, &self.body(request), stream, auth, |response| {
                read_answer::<MessageStream>(response, stream)
            })
            .await?;
        Ok(answer.into_reply()?.with_requests(sent))
    }
}

/// True for an id Anthropic accepts (`^[a-zA-Z0-9_-]+$`).
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A text block, unless `text` is empty.
fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

/// A call's `input`: its arguments when they are a JSON object, else `{}`.
fn input_of(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => Value::Object(Map::new()),
    }
}

/// A non-streamed `200` body: a message, or an error object (classified as a `200`).
fn decode_body(headers: &[(String, String)], text: &str) -> Result<ModelReply, BackendError> {
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(_) => return Err(classify(200, headers, text)),
    };
    let Some(blocks) = value.get("content").and_then(Value::as_array) else {
        if value.get("type").and_then(Value::as_str) == Some("error")
            || value.get("error").is_some()
        {
            return Err(classify(200, headers, text));
        }
        return Err(BackendError::protocol(format!(
            "the model's reply has no content: {}",
            quote(text)
        )));
    };
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                content.push_str(block.get("text").and_then(Value::as_str).unwrap_or(""))
            }
            Some("tool_use") => {
                let position = tool_calls.len();
                tool_calls.push(ToolCall {
                    id: string_at(block, "id").unwrap_or_else(|| mint_id(position)),
                    name: string_at(block, "name").unwrap_or_default(),
                    arguments: match block.get("input") {
                        Some(input @ Value::Object(_)) => input.to_string(),
                        _ => "{}".to_string(),
                    },
                });
            }
            _ => {}
        }
    }
    let mut usage = None;
    if let Some(u) = value.get("usage") {
        add_usage(&mut usage, u);
    }
    Ok(ModelReply {
        content,
        tool_calls,
        usage,
        http_requests: None,
    })
}

/// A non-empty string field.
fn string_at(value: &Value, key: &str) -> Option<String> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Sets the counts `usage` reports (in a message, `message_start` or `message_delta`):
/// input = input + cache creation + cache read tokens, output = output tokens. Counts absent
/// from `u` are left as they were.
fn add_usage(usage: &mut Option<Usage>, u: &Value) {
    let count = |key: &str| u.get(key).and_then(Value::as_u64);
    let input = [
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    ]
    .iter()
    .filter_map(|k| count(k))
    .reduce(|a, b| a + b);
    let output = count("output_tokens");
    if input.is_none() && output.is_none() {
        return;
    }
    let current = usage.get_or_insert_with(Usage::default);
    if let Some(input) = input {
        current.input_tokens = input;
    }
    if let Some(output) = output {
        current.output_tokens = output;
    }
}

/// A content block being assembled from stream events.
#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

/// The state of one streamed message.
#[derive(Debug, Default)]
struct MessageStream {
    blocks: BTreeMap<u64, Block>,
    usage: Option<Usage>,
}

impl Decoder for MessageStream {
    fn decode_body(headers: &[(String, String)], text: &str) -> Result<ModelReply, BackendError> {
        decode_body(headers, text)
    }

    /// The reply at `message_stop`; a body that ended before it broke off (transient).
    fn end(self, complete: bool) -> Result<ModelReply, BackendError> {
        if complete {
            Ok(self.finish())
        } else {
            Err(BackendError::transient(
                "the model's stream ended before message_stop",
            ))
        }
    }

    /// Takes one event; `Ok(true)` at `message_stop`.
    fn event(&mut self, event: SseEvent) -> Result<bool, BackendError> {
        let data = event.data.trim();
        let value: Value = serde_json::from_str(data).map_err(|e| {
            BackendError::protocol(format!(
                "a stream event from the model is not JSON ({e}): {}",
                quote(data)
            ))
        })?;
        let kind = event
            .event
            .as_deref()
            .or_else(|| value.get("type").and_then(Value::as_str))
            .unwrap_or_default();
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "error" => return Err(classify_stream_error(data)),
            "message_start" => {
                if let Some(u) = value.pointer("/message/usage") {
                    add_usage(&mut self.usage, u);
                }
            }
            "content_block_start" => {
                let block = value.get("content_block").unwrap_or(&Value::Null);
                let started = match block.get("type").and_then(Value::as_str) {
                    Some("text") => Block::Text(
                        block
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                    ),
                    Some("tool_use") => Block::ToolUse {
                        id: string_at(block, "id").unwrap_or_default(),
                        name: string_at(block, "name").unwrap_or_default(),
                        json: match block.get("input") {
                            Some(Value::Object(o)) if !o.is_empty() => {
                                Value::Object(o.clone()).to_string()
                            }
                            _ => String::new(),
                        },
                    },
                    _ => Block::Other,
                };
                self.blocks.insert(index, started);
            }
            "content_block_delta" => {
                let delta = value.get("delta").unwrap_or(&Value::Null);
                let text = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
                match (
                    delta.get("type").and_then(Value::as_str),
                    self.blocks.get_mut(&index),
                ) {
                    (Some("text_delta"), Some(Block::Text(s))) => s.push_str(text("text")),
                    (Some("text_delta"), None) => {
                        self.blocks
                            .insert(index, Block::Text(text("text").to_string()));
                    }
                    (Some("input_json_delta"), Some(Block::ToolUse { json, .. })) => {
                        json.push_str(text("partial_json"));
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(u) = value.get("usage") {
                    add_usage(&mut self.usage, u);
                }
            }
            "message_stop" => return Ok(true),
            // content_block_stop, ping, and events added later.
            _ => {}
        }
        Ok(false)
    }
}

impl MessageStream {
    /// The assembled reply.
    fn finish(self) -> ModelReply {
        let mut content = String::new();
        let mut tool_calls = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                Block::Text(text) => content.push_str(&text),
                Block::ToolUse { id, name, json } => {
                    let position = tool_calls.len();
                    let arguments = if json.trim().is_empty() {
                        "{}".to_string()
                    } else {
                        serde_json::from_str::<Value>(&json).map_or(json, |value| value.to_string())
                    };
                    tool_calls.push(ToolCall {
                        id: if id.is_empty() { mint_id(position) } else { id },
                        name,
                        arguments,
                    });
                }
                Block::Other => {}
            }
        }
        ModelReply {
            content,
            tool_calls,
            usage: self.usage,
            http_requests: None,
        }
    }
}

#[cfg(test)]
mod tests;
