//! Which provider to talk to: the configuration types of [`config`](crate::config),
//! re-exported, and [`connect`], the backend a configuration asks for.

use std::sync::Arc;

use crate::anthropic::AnthropicBackend;
use crate::backend::Backend;
use crate::bedrock;
pub use crate::config::{Provider, ProviderConfig, Secret, ToolChoice};
use crate::error::BackendError;
use crate::openai::OpenAiBackend;

/// The backend for `config`: [`OpenAiBackend`] for OpenAI and OpenAI-compatible servers,
/// [`AnthropicBackend`] for Anthropic, [`bedrock::connect`] for Bedrock.
///
/// # Errors
/// A `BadRequest` error naming what is missing (a key and the variable to set, a base URL, a
/// region).
pub fn connect(config: ProviderConfig) -> Result<Arc<dyn Backend>, BackendError> {
    Ok(match config.provider {
        Provider::OpenAi | Provider::OpenAiCompatible => Arc::new(OpenAiBackend::new(config)?),
        Provider::Anthropic => Arc::new(AnthropicBackend::new(config)?),
        Provider::Bedrock => bedrock::connect(config)?,
    })
}
