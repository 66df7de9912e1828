//! Model backends.
//!
//! A [`Backend`] turns a neutral [`ModelRequest`] (system prompt, transcript, tools) into a
//! [`ModelReply`] (text and tool calls) or a [`BackendError`]. Every backend reports
//! "the request does not fit the model's context window" the same way:
//! [`BackendError::context_window_exceeded`], set by [`classify()`] from the provider's
//! status and error body (structured fields first, wording second). The agent loop never
//! parses wording.
//!
//! The modules:
//!
//! - [`classify`](mod@classify): status, headers and body (or a stream error event) to a
//!   [`BackendError`], following the detection recipe of docs/agent-loop.md#detection;
//! - [`scripted`]: [`ScriptedModel`], the offline default (`--model scripted`), a documented,
//!   deterministic state machine over the transcript: **not an LLM**;
//! - [`replay`]: [`ReplayModel`], answers from a JSONL script (`--model replay:FILE`) and
//!   records every request;
//! - [`window`]: [`ContextWindow`], a simulated context window of N bytes in front of any
//!   backend (`--context-window-bytes N`), rejecting with a real provider's envelope;
//! - [`openai`]: OpenAI Chat Completions, for OpenAI and OpenAI-compatible servers (Ollama,
//!   llama.cpp server, vLLM, OpenRouter), JSON and streamed;
//! - [`anthropic`]: Anthropic Messages, JSON and streamed;
//! - [`sse`]: the server-sent-events parser both stream through;
//! - [`estimate`]: the token estimate of a request, calibrated from the usage the provider
//!   reports, and the local size check that refuses a request surely over the configured
//!   context window without sending it;
//! - [`overflow`]: the sizes a context-window rejection states (`N tokens > M`), which the
//!   agent loop uses to shrink enough for its one retry to fit.

use std::time::Duration;

use sluice_protocol::{Message, ToolCall, ToolSpec};

pub mod anthropic;
pub mod bedrock;
pub mod classify;
pub mod estimate;
pub mod http;
pub mod openai;
pub mod overflow;
pub mod provider;
pub mod replay;
pub mod scripted;
pub mod sse;
pub mod window;
mod wire;

pub use classify::{classify, classify_stream_error};
pub use overflow::Overflow;
pub use replay::ReplayModel;
pub use scripted::ScriptedModel;
pub use window::ContextWindow;

/// What a model is asked.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRequest {
    /// The system prompt, for the provider's system slot (never a message).
    pub system: String,
    /// The transcript so far.
    pub messages: Vec<Message>,
    /// The tools the model may call.
    pub tools: Vec<ToolSpec>,
}

impl ModelRequest {
    /// The size of the request in bytes, as its compact JSON: the measure simulated
    /// context windows and local estimates use.
    pub fn json_bytes(&self) -> usize {
        serde_json::to_vec(self)
            .map(|v| v.len())
            .unwrap_or(usize::MAX)
    }
}

/// Token counts a provider reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Tokens of the request.
    pub input_tokens: u64,
    /// Tokens of the reply.
    pub output_tokens: u64,
}

/// What a model answered.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelReply {
    /// The text of the reply (may be empty when it only calls tools).
    pub content: String,
    /// The tool calls it asks for, in order, each with an id.
    pub tool_calls: Vec<ToolCall>,
    /// Token counts, when the provider reports them. Streamed replies of servers that ignore
    /// `stream_options.include_usage` (llama-cpp-python's server) carry none.
    pub usage: Option<Usage>,
    /// HTTP requests this reply took, retries and the non-streamed re-send of an empty
    /// streamed answer included; `None` for models that make none (scripted, replay), which
    /// the agent loop counts as one request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_requests: Option<u32>,
}

/// What kind of failure a [`BackendError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request does not fit the model's context window.
    ContextWindowExceeded,
    /// Too many requests (HTTP 429); `retry_after` may say when to try again.
    RateLimited,
    /// The provider is overloaded or unavailable (HTTP 529, 503).
    Overloaded,
    /// The credentials were refused (HTTP 401, 403).
    Auth,
    /// The request was refused for another reason (HTTP 400 and others).
    BadRequest,
    /// The network failed or the provider had a server error; worth retrying.
    Transient,
    /// The reply could not be understood.
    Protocol,
}

/// A failed model request.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BackendError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
    /// The provider's own message (or ours, for network and protocol failures).
    pub message: String,
    /// When the provider asked to wait before retrying (`retry-after`).
    pub retry_after: Option<Duration>,
    /// For a context-window rejection: the prompt's size and the limit in tokens, when the
    /// provider's message states them or the backend's estimate knows them.
    pub overflow: Option<Overflow>,
    /// HTTP requests made before failing, retries included: `Some(0)` when the request was
    /// never sent (the pre-send estimate refused it); `None` for models that make none.
    pub http_requests: Option<u32>,
}

impl BackendError {
    /// An error of `kind` with `message`, without status, `retry-after`, sizes or count.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> BackendError {
        BackendError {
            kind,
            status: None,
            message: message.into(),
            retry_after: None,
            overflow: None,
            http_requests: None,
        }
    }

    /// True when Sluice refused the request itself, without sending it (the pre-send
    /// estimate): the message is Sluice's, not the provider's.
    pub fn refused_locally(&self) -> bool {
        self.http_requests == Some(0)
    }

    /// True when the request did not fit the context window: the only signal the agent
    /// loop acts on to shrink observations.
    pub fn context_window_exceeded(&self) -> bool {
        self.kind == ErrorKind::ContextWindowExceeded
    }
}

/// A model.
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// A short name for logs and transcripts (`scripted`, `openai:gpt-4.1-mini`).
    fn name(&self) -> String;

    /// Sends `request` and returns the reply. Dropping the future cancels the request.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, BackendError>;
}

/// A shared backend is a backend: tests keep an `Arc` to inspect a model (say, a
/// [`ReplayModel`]'s recorded requests) while the agent loop holds another.
#[async_trait::async_trait]
impl<B: Backend + ?Sized> Backend for std::sync::Arc<B> {
    fn name(&self) -> String {
        (**self).name()
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, BackendError> {
        (**self).complete(request).await
    }
}

/// A boxed backend is a backend (so `ContextWindow<Box<dyn Backend>>` works).
#[async_trait::async_trait]
impl<B: Backend + ?Sized> Backend for Box<B> {
    fn name(&self) -> String {
        (**self).name()
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, BackendError> {
        (**self).complete(request).await
    }
}
