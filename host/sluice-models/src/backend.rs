//! What a model is asked and answers, and the [`Backend`] trait every model implements.

use sluice_protocol::{Message, ToolCall, ToolSpec};

use crate::error::BackendError;

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

impl ModelReply {
    /// The same reply, counting `sent` HTTP requests (see
    /// [`http_requests`](ModelReply::http_requests)).
    pub fn with_requests(self, sent: u32) -> ModelReply {
        ModelReply {
            http_requests: Some(sent),
            ..self
        }
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
/// [`ReplayModel`](crate::ReplayModel)'s recorded requests) while the agent loop holds another.
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
