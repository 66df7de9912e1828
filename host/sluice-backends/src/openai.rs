//! OpenAI Chat Completions (`POST {base}/chat/completions`), for OpenAI itself
//! ([`Provider::OpenAi`]) and for OpenAI-compatible servers ([`Provider::OpenAiCompatible`]:
//! Ollama, llama.cpp server, vLLM, OpenRouter) at a base URL.
//!
//! # The request
//!
//! - `Authorization: Bearer <key>` (OpenAI: required; compatible servers: sent when a key is
//!   configured);
//! - `messages`: the system prompt once, as the first `system` message (left out when empty);
//!   then the transcript in its order: `user` messages; `assistant` messages with their
//!   `tool_calls` (`{"id","type":"function","function":{"name","arguments"}}`, `arguments`
//!   being the model's JSON text as stored); one `tool` message per result with its
//!   `tool_call_id`. An assistant turn that only called tools has `"content": null` for
//!   OpenAI (its documented form) and `"content": ""` for compatible servers: llama-cpp-python
//!   requires a string there (`null`, or no `content` at all, is an HTTP 500), and `""` is
//!   what every compatible server accepts. The transcript stores the
//!   results right after the assistant turn that asked for them, in call order, which is the
//!   order the API demands; it is kept as is;
//! - tool-call ids longer than [`MAX_TOOL_CALL_ID_CHARS`] characters (vLLM mints 46) are
//!   re-keyed to `call_` + 16 hex digits of their hash, the same for the call and its result
//!   and in every request (OpenAI refuses longer ids; done for compatible servers too, as
//!   gateways forward to OpenAI);
//! - `tools`: `{"type":"function","function":{"name","description","parameters"}}`, left out
//!   when there are none; with them, `tool_choice` as configured ([`ToolChoice`]): by default
//!   `"auto"` for compatible servers, nothing for OpenAI;
//! - the output cap as `max_completion_tokens` for OpenAI (reasoning models refuse
//!   `max_tokens`) and `max_tokens` for compatible servers (which may not know the other);
//! - when streaming: `"stream": true` and `"stream_options": {"include_usage": true}`.
//!
//! Before sending, the request's estimated tokens are checked against the configured context
//! window, and every reply's usage calibrates the estimate ([`Estimator`]).
//!
//! # A streamed request answered by an empty `200`
//!
//! llama-cpp-python's server answers a streamed request it cannot serve with HTTP `200`,
//! `text/event-stream` and no event at all (the error is only in its log): a request over its
//! context window, and a request with `tool_choice: "auto"` (its function-calling format does
//! not stream that). Such an answer is sent once more without streaming, to learn the real
//! answer or error: a context-window rejection then reaches the agent loop as usual. When the
//! re-sent request succeeds, the backend remembers that the server cannot stream requests of
//! that shape (offering tools, or not) and sends them unstreamed from then on.
//!
//! # The reply
//!
//! JSON: `choices[0].message` (`content` as a string or text parts, `refusal` when there is no
//! content, `tool_calls`), `usage.prompt_tokens` / `completion_tokens`. An error object inside
//! a `200` (old llama.cpp) goes through [`classify()`].
//!
//! Streaming (server-sent events): `delta.content` is appended; `delta.tool_calls[]` fragments
//! are assembled per `index` (the id and name from the first fragment that has them, the
//! `arguments` text concatenated; a fragment without `index`, as some servers send whole calls,
//! is a new call when it brings a new id, else continues the last one); `usage` comes in a
//! last chunk without choices. `data: [DONE]` ends the reply; comment lines are ignored. An
//! error inside the `200` stream (a `data:` holding `{"error":…}`, an `error` event, an OpenAI
//! Responses-style `{"type":"error"}` / `response.failed` event, vLLM's `{"object":"error"}`,
//! or `finish_reason: "error"`) goes through [`classify_stream_error`]. A body that ends
//! without `[DONE]` is complete if a `finish_reason` came, else a transient error (the
//! connection broke). A body with no event at all is read as a plain JSON reply or error.
//!
//! A call without `arguments` (or with an empty string) is stored with `{}`; a call without
//! an id gets one (`call_` + the time in hex + its position). Rate limits, overload and transient
//! failures, also inside the stream, are retried by [`Http::send_and_read`]; a context-window
//! rejection never is.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value, json};
use sluice_protocol::{Role, ToolCall};

use crate::estimate::Estimator;
use crate::http::{Http, protocol};
use crate::provider::{Provider, ProviderConfig, Secret, ToolChoice};
use crate::sse::SseEvent;
use crate::wire::{
    Ending, IdMap, arguments_text, bad_request, body_of, holds_no_event, json_post, mint_id, quote,
    read_sse,
};
use crate::{
    Backend, BackendError, ErrorKind, ModelReply, ModelRequest, Usage, classify,
    classify_stream_error,
};

/// OpenAI's API base.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// The longest tool-call id OpenAI accepts, in characters.
pub const MAX_TOOL_CALL_ID_CHARS: usize = 40;

/// The environment variable the OpenAI key is usually read from.
pub const OPENAI_KEY_ENV: &str = "OPENAI_API_KEY";

/// A Chat Completions backend.
#[derive(Debug)]
pub struct OpenAiBackend {
    http: Http,
    url: String,
    api_key: Option<Secret>,
    model: String,
    max_tokens: u32,
    compatible: bool,
    stream: bool,
    tool_choice: ToolChoice,
    context_window_tokens: Option<u64>,
    estimator: Estimator,
    /// The server answered a streamed request of this shape with an empty `200` and the same
    /// request unstreamed with a reply: index 0 without tools, 1 with.
    unstreamable: [AtomicBool; 2],
    /// See [`OpenAiBackend::unpooled`]; made when first needed.
    unpooled: OnceLock<Http>,
}

/// What one successful response held.
enum Answer {
    Reply(ModelReply),
    /// A streamed request answered by an empty `200` (see the module docs).
    EmptyStream,
}

impl OpenAiBackend {
    /// The backend for `config` (provider [`Provider::OpenAi`] or
    /// [`Provider::OpenAiCompatible`]).
    ///
    /// # Errors
    /// A `BadRequest` error for OpenAI without a key (naming [`OPENAI_KEY_ENV`]), for a
    /// compatible server without a base URL, or for another provider; a `Protocol` error
    /// when the HTTP client cannot start.
    pub fn new(config: ProviderConfig) -> Result<OpenAiBackend, BackendError> {
        let compatible = match config.provider {
            Provider::OpenAi => false,
            Provider::OpenAiCompatible => true,
            other => return Err(bad_request(format!("{other:?} is not an OpenAI provider"))),
        };
        let base = match (&config.base_url, compatible) {
            (Some(base), _) => base.clone(),
            (None, false) => OPENAI_BASE_URL.to_string(),
            (None, true) => {
                return Err(bad_request(
                    "an OpenAI-compatible server needs its base URL: set model.base_url (for example http://localhost:11434/v1 for Ollama, http://localhost:8080/v1 for llama.cpp server, http://localhost:8000/v1 for vLLM, https://openrouter.ai/api/v1 for OpenRouter)",
                ));
            }
        };
        let api_key = config.api_key.filter(|k| !k.expose().is_empty());
        if api_key.is_none() && !compatible {
            return Err(bad_request(format!(
                "no API key for openai: set {OPENAI_KEY_ENV} (or model.api_key_env / model.api_key_file)"
            )));
        }
        Ok(OpenAiBackend {
            http: Http::new(config.timeouts, config.retry)?,
            url: format!("{}/chat/completions", base.trim_end_matches('/')),
            api_key,
            model: config.model,
            max_tokens: config.max_tokens,
            compatible,
            stream: config.stream,
            tool_choice: ToolChoice::resolve(config.tool_choice, config.provider),
            context_window_tokens: config.context_window_tokens,
            estimator: Estimator::new(),
            unstreamable: [AtomicBool::new(false), AtomicBool::new(false)],
            unpooled: OnceLock::new(),
        })
    }

    /// The endpoint requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The estimate this backend keeps, calibrated by its replies.
    pub fn estimator(&self) -> &Estimator {
        &self.estimator
    }

    /// True when `request` is sent streamed: streaming is configured and the server did not
    /// show that it cannot stream requests of this shape.
    pub fn streams(&self, request: &ModelRequest) -> bool {
        self.stream
            && !self.unstreamable[usize::from(!request.tools.is_empty())].load(Ordering::Relaxed)
    }

    /// The JSON body sent for `request` (see the module docs), streamed as [`streams`]
    /// (OpenAiBackend::streams) says.
    pub fn body(&self, request: &ModelRequest) -> Value {
        self.body_for(request, self.streams(request))
    }

    /// The JSON body for `request`, streamed or not.
    fn body_for(&self, request: &ModelRequest, stream: bool) -> Value {
        let ids = IdMap::new(&request.messages, "call_", |id| {
            id.chars().count() <= MAX_TOOL_CALL_ID_CHARS
        });
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if !request.system.is_empty() {
            messages.push(json!({"role": "system", "content": request.system}));
        }
        for m in &request.messages {
            messages.push(match m.role {
                Role::User => json!({"role": "user", "content": m.content}),
                Role::Assistant if m.tool_calls.is_empty() => {
                    json!({"role": "assistant", "content": m.content})
                }
                Role::Assistant => {
                    let calls: Vec<Value> = m
                        .tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": ids.get(&c.id),
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments},
                            })
                        })
                        .collect();
                    let content = if !m.content.is_empty() {
                        Value::from(m.content.as_str())
                    } else if self.compatible {
                        Value::from("")
                    } else {
                        Value::Null
                    };
                    json!({"role": "assistant", "content": content, "tool_calls": calls})
                }
                Role::Tool => json!({
                    "role": "tool",
                    "tool_call_id": ids.get(m.tool_call_id.as_deref().unwrap_or_default()),
                    "content": m.content,
                }),
            });
        }
        let mut body = Map::new();
        body.insert("model".into(), Value::from(self.model.as_str()));
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema,
                    }})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
            let choice = match self.tool_choice {
                ToolChoice::Auto => Some("auto"),
                ToolChoice::Required => Some("required"),
                ToolChoice::None => Some("none"),
                ToolChoice::Omit => None,
            };
            if let Some(choice) = choice {
                body.insert("tool_choice".into(), Value::from(choice));
            }
        }
        let cap = if self.compatible {
            "max_tokens"
        } else {
            "max_completion_tokens"
        };
        body.insert(cap.into(), Value::from(self.max_tokens));
        if stream {
            body.insert("stream".into(), Value::Bool(true));
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Value::Object(body)
    }

    /// Sends `request` once through the retry loop, streamed or not.
    /// `http` is the backend's client, or [`unpooled`](OpenAiBackend::unpooled) for the
    /// re-send after an empty streamed answer.
    async fn send(
        &self,
        http: &Http,
        request: &ModelRequest,
        stream: bool,
    ) -> Result<(Answer, u32), BackendError> {
        let body = serde_json::to_vec(&self.body_for(request, stream))
            .map_err(|e| protocol(format!("failed to encode the request: {e}")))?;
        let make = || {
            json_post(http.client(), &self.url, &body, stream, |b| {
                match &self.api_key {
                    Some(key) => b.bearer_auth(key.expose()),
                    None => b,
                }
            })
        };
        http.send_and_read(make, |response| read(response, stream))
            .await
    }

    /// A client that opens a new connection for every request, for the re-send after an
    /// empty streamed answer: llama-cpp-python's server closes the connection of such an
    /// answer just after it ends, and a pooled client would send the re-send on it and fail
    /// (a wasted attempt).
    fn unpooled(&self) -> Result<&Http, BackendError> {
        if let Some(http) = self.unpooled.get() {
            return Ok(http);
        }
        let http = self.http.unpooled()?;
        Ok(self.unpooled.get_or_init(|| http))
    }

    /// Sends `request`; an empty streamed `200` is sent once more unstreamed (module docs).
    async fn exchange(&self, request: &ModelRequest) -> Result<ModelReply, BackendError> {
        let stream = self.streams(request);
        let (first, sent) = match self.send(&self.http, request, stream).await? {
            (Answer::Reply(reply), sent) => {
                return Ok(ModelReply {
                    http_requests: Some(sent),
                    ..reply
                });
            }
            (Answer::EmptyStream, sent) => (stream, sent),
        };
        debug_assert!(
            first,
            "only a streamed request can be answered by an empty stream"
        );
        tracing::debug!(
            model = %self.model,
            "the server answered a streamed request with an empty 200; sending it again unstreamed"
        );
        let shape = usize::from(!request.tools.is_empty());
        let unpooled = self.unpooled().map_err(|e| BackendError {
            http_requests: Some(sent),
            ..e
        })?;
        match self.send(unpooled, request, false).await {
            Ok((Answer::Reply(reply), more)) => {
                if !self.unstreamable[shape].swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        model = %self.model,
                        tools = shape == 1,
                        "the server answered a streamed request with an empty 200 and the same request unstreamed with a reply; requests of this shape are sent unstreamed from now on"
                    );
                }
                Ok(ModelReply {
                    http_requests: Some(sent + more),
                    ..reply
                })
            }
            // An unstreamed request is never answered as a stream; should a server do it
            // anyway, its empty answer is an error like any empty body.
            Ok((Answer::EmptyStream, more)) => Err(BackendError {
                http_requests: Some(sent + more),
                ..classify(200, &[], "")
            }),
            Err(error) => Err(BackendError {
                http_requests: Some(sent + error.http_requests.unwrap_or(0)),
                ..error
            }),
        }
    }
}

/// Reads one successful response, streamed or not.
async fn read(response: reqwest::Response, streamed: bool) -> Result<Answer, BackendError> {
    if !streamed {
        let (headers, text) = body_of(response).await?;
        return decode_body(&headers, &text).map(Answer::Reply);
    }
    let mut stream = ChatStream::default();
    match read_sse(response, |event| stream.event(event)).await? {
        Ending::Terminal => Ok(Answer::Reply(stream.finish())),
        Ending::Eof {
            unparsed: Some((_, text)),
        } if !stream.seen && holds_no_event(&text) => Ok(Answer::EmptyStream),
        Ending::Eof {
            unparsed: Some((headers, text)),
        } if !stream.seen => decode_body(&headers, &text).map(Answer::Reply),
        Ending::Eof { .. } if stream.finished => Ok(Answer::Reply(stream.finish())),
        Ending::Eof { .. } => Err(BackendError::new(
            ErrorKind::Transient,
            "the model's stream ended before the reply was complete (no finish_reason, no [DONE])",
        )),
    }
}

#[async_trait::async_trait]
impl Backend for OpenAiBackend {
    /// `openai:MODEL` or `openai-compatible:MODEL`.
    fn name(&self) -> String {
        let provider = if self.compatible {
            "openai-compatible"
        } else {
            "openai"
        };
        format!("{provider}:{}", self.model)
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, BackendError> {
        self.estimator
            .around(request, self.context_window_tokens, self.exchange(request))
            .await
    }
}

/// A non-streamed `200` body: a reply, or an error object (classified as a `200`).
fn decode_body(headers: &[(String, String)], text: &str) -> Result<ModelReply, BackendError> {
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(_) => return Err(classify(200, headers, text)),
    };
    if value.get("choices").is_none() {
        return Err(classify(200, headers, text));
    }
    decode_reply(&value)
        .ok_or_else(|| protocol(format!("the model's reply has no message: {}", quote(text))))
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

/// `usage` with `prompt_tokens` and `completion_tokens`.
fn usage_of(usage: &Value) -> Option<Usage> {
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

/// A tool call being assembled from stream fragments.
#[derive(Debug, Default)]
struct CallSlot {
    id: String,
    name: String,
    arguments: String,
}

/// The state of one streamed reply.
#[derive(Debug, Default)]
struct ChatStream {
    content: String,
    refusal: String,
    calls: BTreeMap<u64, CallSlot>,
    usage: Option<Usage>,
    /// A chunk was read.
    seen: bool,
    /// A `finish_reason` came.
    finished: bool,
}

impl ChatStream {
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
            protocol(format!(
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
        self.seen = true;
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
    fn finish(self) -> ModelReply {
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

#[cfg(test)]
mod tests {
    use sluice_protocol::{Message, ToolSpec};

    use super::*;

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
    fn config_errors_name_what_is_missing() {
        let e = OpenAiBackend::new(ProviderConfig::new(Provider::OpenAi, "m")).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BadRequest);
        assert!(e.message.contains("OPENAI_API_KEY"), "{}", e.message);
        let e =
            OpenAiBackend::new(ProviderConfig::new(Provider::OpenAiCompatible, "m")).unwrap_err();
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
}
