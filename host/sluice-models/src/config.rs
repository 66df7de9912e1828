//! Which provider to talk to, and how: the settings of `[model]` in `sluice.toml` and
//! `--model PROVIDER:NAME`, resolved by the caller (keys come from the environment or a
//! file the operator names, never from the configuration file itself). The codecs read these;
//! [`provider::connect`](crate::provider::connect) picks the codec.

use sluice_protocol::model::{DEFAULT_MAX_TOKENS, DEFAULT_STREAM};
pub use sluice_protocol::model::{Provider, ToolChoice};

use crate::http::{RetryPolicy, Timeouts};

/// A secret (an API key): never printed, never stored with the session.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret itself, for the request that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// Everything a provider backend needs.
#[derive(Clone, Debug)]
pub struct ProviderConfig {
    /// The wire format.
    pub provider: Provider,
    /// The model's name or id (`gpt-4.1-mini`, `claude-sonnet-4-5`, a Bedrock model id).
    pub model: String,
    /// Overrides the provider's default endpoint (required for OpenAI-compatible servers).
    pub base_url: Option<String>,
    /// The API key (Bedrock: an API key sent as a bearer token; without one, SigV4 with the
    /// standard AWS credentials).
    pub api_key: Option<Secret>,
    /// AWS region (Bedrock; default from `AWS_REGION` / `AWS_DEFAULT_REGION`).
    pub region: Option<String>,
    /// Most tokens of a reply (default 4,096).
    pub max_tokens: u32,
    /// The model's context window in tokens, when known: a request estimated to exceed it
    /// surely is treated as a context-window rejection without being sent.
    pub context_window_tokens: Option<u64>,
    /// Stream replies (default true where the provider streams).
    pub stream: bool,
    /// `model.tool_choice`; `None` is the provider's default (see [`ToolChoice`]).
    pub tool_choice: Option<ToolChoice>,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Retries.
    pub retry: RetryPolicy,
}

impl ProviderConfig {
    /// Defaults for `provider` and `model`.
    pub fn new(provider: Provider, model: impl Into<String>) -> ProviderConfig {
        ProviderConfig {
            provider,
            model: model.into(),
            base_url: None,
            api_key: None,
            region: None,
            max_tokens: DEFAULT_MAX_TOKENS,
            context_window_tokens: None,
            stream: DEFAULT_STREAM,
            tool_choice: None,
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
        }
    }
}
