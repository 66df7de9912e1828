//! Which provider to talk to, and how: the settings of `[model]` in `sluice.toml` and
//! `--model PROVIDER:NAME`, resolved by the caller (keys come from the environment or a
//! file the operator names, never from the configuration file itself). The codecs read these;
//! [`provider::connect`](crate::provider::connect) picks the codec.

use crate::http::{RetryPolicy, Timeouts};

/// A provider's wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI Chat Completions (`https://api.openai.com/v1`).
    OpenAi,
    /// Anthropic Messages (`https://api.anthropic.com/v1`).
    Anthropic,
    /// AWS Bedrock Converse (`https://bedrock-runtime.{region}.amazonaws.com`).
    Bedrock,
    /// An OpenAI-compatible server at `base_url` (Ollama, llama.cpp server, vLLM,
    /// OpenRouter).
    OpenAiCompatible,
}

impl Provider {
    /// The provider called `name` in `--model NAME:MODEL` (`openai`, `anthropic`, `bedrock`,
    /// `openai-compatible`; also `ollama`, `llamacpp`, `vllm`, `openrouter` for the
    /// compatible servers).
    pub fn parse(name: &str) -> Option<Provider> {
        Some(match name {
            "openai" => Provider::OpenAi,
            "anthropic" => Provider::Anthropic,
            "bedrock" => Provider::Bedrock,
            "openai-compatible" | "ollama" | "llamacpp" | "vllm" | "openrouter" => {
                Provider::OpenAiCompatible
            }
            _ => return None,
        })
    }
}

/// Whether the model may, must or must not call the tools offered: `model.tool_choice`.
///
/// Left unset, each provider gets its default: `auto` for OpenAI-compatible servers (with
/// llama-cpp-python's function-calling chat format a request without `tool_choice` means
/// `none`, so the model could never call a tool), and nothing for OpenAI, Anthropic and
/// Bedrock, whose APIs already mean `auto` when tools are offered. Never sent on a request
/// that offers no tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ToolChoice {
    /// The model decides (`"auto"`; Anthropic `{"type":"auto"}`; Bedrock `{"auto":{}}`).
    Auto,
    /// The model must call a tool (`"required"`; Anthropic `{"type":"any"}`; Bedrock
    /// `{"any":{}}`).
    Required,
    /// The model must not call a tool (`"none"`; Anthropic `{"type":"none"}`; Bedrock has no
    /// such choice and refuses it at start).
    None,
    /// Nothing is sent: the server's own default.
    Omit,
}

impl ToolChoice {
    /// The names `model.tool_choice` accepts, in the order of the variants.
    pub const NAMES: [&'static str; 4] = ["auto", "required", "none", "omit"];

    /// The choice called `name` (one of [`ToolChoice::NAMES`]).
    pub fn parse(name: &str) -> Option<ToolChoice> {
        Some(match name {
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            "none" => ToolChoice::None,
            "omit" => ToolChoice::Omit,
            _ => return None,
        })
    }

    /// The choice sent to `provider` when `configured` is unset (see the type's docs).
    pub fn resolve(configured: Option<ToolChoice>, provider: Provider) -> ToolChoice {
        match (configured, provider) {
            (Some(choice), _) => choice,
            (None, Provider::OpenAiCompatible) => ToolChoice::Auto,
            (None, _) => ToolChoice::Omit,
        }
    }
}

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
            max_tokens: 4096,
            context_window_tokens: None,
            stream: true,
            tool_choice: None,
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
        }
    }
}
