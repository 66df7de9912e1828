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
//! a `200` (old llama.cpp) goes through [`classify()`](crate::classify()).
//!
//! Streaming (server-sent events): `delta.content` is appended; `delta.tool_calls[]` fragments
//! are assembled per `index` (the id and name from the first fragment that has them, the
//! `arguments` text concatenated; a fragment without `index`, as some servers send whole calls,
//! is a new call when it brings a new id, else continues the last one); `usage` comes in a
//! last chunk without choices. `data: [DONE]` ends the reply; comment lines are ignored. An
//! error inside the `200` stream (a `data:` holding `{"error":…}`, an `error` event, an OpenAI
//! Responses-style `{"type":"error"}` / `response.failed` event, vLLM's `{"object":"error"}`,
//! or `finish_reason: "error"`) goes through
//! [`classify_stream_error`](crate::classify_stream_error). A body that ends
//! without `[DONE]` is complete if a `finish_reason` came, else a transient error (the
//! connection broke). A body with no event at all is read as a plain JSON reply or error.
//!
//! A call without `arguments` (or with an empty string) is stored with `{}`; a call without
//! an id gets one (`call_` + the time in hex + its position). Rate limits, overload and transient
//! failures, also inside the stream, are retried by [`Http::send_and_read`]; a context-window
//! rejection never is.

mod codec;
mod stream;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value, json};
use sluice_protocol::Role;

use self::stream::ChatStream;
use crate::backend::{Backend, ModelReply, ModelRequest};
use crate::config::{Provider, ProviderConfig, Secret, ToolChoice};
use crate::error::BackendError;
use crate::estimate::Estimator;
use crate::http::{Answer, Http, read_answer};
use crate::ids::IdMap;

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
            other => {
                return Err(BackendError::bad_request(format!(
                    "{other:?} is not an OpenAI provider"
                )));
            }
        };
        let base = match (&config.base_url, compatible) {
            (Some(base), _) => base.clone(),
            (None, false) => OPENAI_BASE_URL.to_string(),
            (None, true) => {
                return Err(BackendError::bad_request(
                    "an OpenAI-compatible server needs its base URL: set model.base_url (for example http://localhost:11434/v1 for Ollama, http://localhost:8080/v1 for llama.cpp server, http://localhost:8000/v1 for vLLM, https://openrouter.ai/api/v1 for OpenRouter)",
                ));
            }
        };
        let api_key = config.api_key.filter(|k| !k.expose().is_empty());
        if api_key.is_none() && !compatible {
            return Err(BackendError::bad_request(format!(
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

    /// The JSON body sent for `request` (see the module docs), streamed as
    /// [`streams`](OpenAiBackend::streams) says.
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
        let auth = |b: reqwest::RequestBuilder| match &self.api_key {
            Some(key) => b.bearer_auth(key.expose()),
            None => b,
        };
        http.post_json(
            &self.url,
            &self.body_for(request, stream),
            stream,
            auth,
            |response| read_answer::<ChatStream>(response, stream),
        )
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
            (Answer::Reply(reply), sent) => return Ok(reply.with_requests(sent)),
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
        let unpooled = self.unpooled().map_err(|e| e.with_requests(sent))?;
        let (answer, more) = match self.send(unpooled, request, false).await {
            Ok(answered) => answered,
            Err(error) => {
                let more = error.http_requests.unwrap_or(0);
                return Err(error.with_requests(sent + more));
            }
        };
        // An unstreamed request is never answered as a stream; should a server do it anyway,
        // its empty answer is an error like any empty body.
        let reply = answer
            .into_reply()
            .map_err(|e| e.with_requests(sent + more))?;
        if !self.unstreamable[shape].swap(true, Ordering::Relaxed) {
            tracing::warn!(
                model = %self.model,
                tools = shape == 1,
                "the server answered a streamed request with an empty 200 and the same request unstreamed with a reply; requests of this shape are sent unstreamed from now on"
            );
        }
        Ok(reply.with_requests(sent + more))
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

#[cfg(test)]
mod tests;
