//! Model backends.
//!
//! A [`Backend`] turns a neutral [`ModelRequest`] (system prompt, transcript, tools) into a
//! [`ModelReply`] (text and tool calls) or a [`BackendError`]. Every backend reports
//! "the request does not fit the model's context window" the same way:
//! [`BackendError::context_window_exceeded`], set by [`classify()`] from the provider's
//! status and error body (structured fields first, wording second). The agent loop never
//! parses wording.
//!
//! The modules, each importing only modules listed before it (no two import each other):
//!
//! - [`overflow`]: the sizes a context-window rejection states (`N tokens > M`), which the
//!   agent loop uses to shrink enough for its one retry to fit;
//! - [`error`](mod@error): [`BackendError`] and [`ErrorKind`], and the one place their
//!   common shapes are built;
//! - [`backend`]: [`ModelRequest`], [`ModelReply`], [`Usage`] and the [`Backend`] trait;
//! - [`sse`]: the server-sent-events parser the streamed replies go through;
//! - `ids` (private): every tool-call id a backend makes (minted, re-keyed);
//! - [`classify`](mod@classify): status, headers and body (or a stream error event) to a
//!   [`BackendError`], following the detection recipe of docs/agent-loop.md#detection;
//! - [`http`]: the transport every HTTP provider shares: one client, the request, retries,
//!   reading a JSON or an event-stream answer through a provider's decoder, classifying
//!   failures; it knows no provider;
//! - [`config`]: what a provider backend is configured with ([`config::ProviderConfig`]);
//! - [`estimate`]: the token estimate of a request, calibrated from the usage the provider
//!   reports, and the local size check that refuses a request surely over the configured
//!   context window without sending it;
//! - [`scripted`]: [`ScriptedModel`], the offline default (`--model scripted`), a documented,
//!   deterministic state machine over the transcript: **not an LLM**;
//! - [`replay`]: [`ReplayModel`], answers from a JSONL script (`--model replay:FILE`) and
//!   records every request;
//! - [`window`]: [`ContextWindow`], a simulated context window of N bytes in front of any
//!   backend (`--context-window-bytes N`), rejecting with a real provider's envelope;
//! - the provider codecs over [`http`], each encoding the neutral request in its wire format
//!   and decoding its replies and stream events: [`openai`] (OpenAI Chat Completions, for
//!   OpenAI and OpenAI-compatible servers: Ollama, llama.cpp server, vLLM, OpenRouter),
//!   [`anthropic`] (Anthropic Messages) and [`bedrock`] (AWS Bedrock Converse, its stream in
//!   AWS event-stream frames), each JSON and streamed;
//! - [`provider`]: [`provider::connect`], the backend a configuration asks for (and the
//!   configuration types, re-exported).

pub mod anthropic;
pub mod backend;
pub mod bedrock;
pub mod classify;
pub mod config;
pub mod error;
pub mod estimate;
pub mod http;
mod ids;
pub mod openai;
pub mod overflow;
pub mod provider;
pub mod replay;
pub mod scripted;
pub mod sse;
pub mod window;

pub use backend::{Backend, ModelReply, ModelRequest, Usage};
pub use classify::{classify, classify_stream_error};
pub use error::{BackendError, ErrorKind};
pub use overflow::Overflow;
pub use replay::ReplayModel;
pub use scripted::ScriptedModel;
pub use window::ContextWindow;
