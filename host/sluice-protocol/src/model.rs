//! The words `[model]` in `sluice.toml` and the provider backends share, each written once:
//! the providers an operator may name, the wire format each one speaks, the variable its API
//! key is read from by default, `model.tool_choice`, and the defaults of the model settings
//! (docs/models.md#models). The configuration parses these names; the backends act on
//! them.

/// A provider an operator may name in `model.provider` or `--model PROVIDER:NAME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProviderName {
    /// `scripted`: the offline model built in (the default).
    Scripted,
    /// `replay`: replies read from a JSONL script.
    Replay,
    /// `openai`: OpenAI Chat Completions.
    OpenAi,
    /// `anthropic`: Anthropic Messages.
    Anthropic,
    /// `bedrock`: AWS Bedrock Converse.
    Bedrock,
    /// `openai-compatible`: any OpenAI-compatible server at `base_url`.
    OpenAiCompatible,
    /// `ollama`: Ollama's OpenAI-compatible endpoint.
    Ollama,
    /// `llamacpp`: llama.cpp's server.
    LlamaCpp,
    /// `vllm`: vLLM's server.
    Vllm,
    /// `openrouter`: OpenRouter.
    OpenRouter,
}

impl ProviderName {
    /// Every provider, in the order the error messages list them.
    pub const ALL: [ProviderName; 10] = [
        ProviderName::Scripted,
        ProviderName::Replay,
        ProviderName::OpenAi,
        ProviderName::Anthropic,
        ProviderName::Bedrock,
        ProviderName::OpenAiCompatible,
        ProviderName::Ollama,
        ProviderName::LlamaCpp,
        ProviderName::Vllm,
        ProviderName::OpenRouter,
    ];

    /// The name as written in the configuration (`openai-compatible`, `llamacpp`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderName::Scripted => "scripted",
            ProviderName::Replay => "replay",
            ProviderName::OpenAi => "openai",
            ProviderName::Anthropic => "anthropic",
            ProviderName::Bedrock => "bedrock",
            ProviderName::OpenAiCompatible => "openai-compatible",
            ProviderName::Ollama => "ollama",
            ProviderName::LlamaCpp => "llamacpp",
            ProviderName::Vllm => "vllm",
            ProviderName::OpenRouter => "openrouter",
        }
    }

    /// The provider called `name` (one of [`ProviderName::ALL`]'s names), if any.
    pub fn parse(name: &str) -> Option<ProviderName> {
        ProviderName::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// The wire format it speaks; `None` for the offline models (`scripted`, `replay`).
    pub fn wire(self) -> Option<Provider> {
        Some(match self {
            ProviderName::Scripted | ProviderName::Replay => return None,
            ProviderName::OpenAi => Provider::OpenAi,
            ProviderName::Anthropic => Provider::Anthropic,
            ProviderName::Bedrock => Provider::Bedrock,
            ProviderName::OpenAiCompatible
            | ProviderName::Ollama
            | ProviderName::LlamaCpp
            | ProviderName::Vllm
            | ProviderName::OpenRouter => Provider::OpenAiCompatible,
        })
    }

    /// The environment variable the API key is read from when `model.api_key_env` and
    /// `model.api_key_file` are unset: `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
    /// `AWS_BEARER_TOKEN_BEDROCK` (Bedrock's API keys; without one, SigV4 with the standard
    /// AWS credentials) or `OPENROUTER_API_KEY`; `None` for the others (local servers usually
    /// need no key).
    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            ProviderName::OpenAi => Some("OPENAI_API_KEY"),
            ProviderName::Anthropic => Some("ANTHROPIC_API_KEY"),
            ProviderName::Bedrock => Some("AWS_BEARER_TOKEN_BEDROCK"),
            ProviderName::OpenRouter => Some("OPENROUTER_API_KEY"),
            _ => None,
        }
    }

    /// Whether `model.name` is required (every provider but `scripted`).
    pub fn needs_model_name(self) -> bool {
        self != ProviderName::Scripted
    }
}

impl std::fmt::Display for ProviderName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    /// The wire format of the provider called `name` in `--model NAME:MODEL`; `None` for an
    /// unknown name and for the offline models.
    pub fn parse(name: &str) -> Option<Provider> {
        ProviderName::parse(name)?.wire()
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

/// Default of `model.max_tokens`: most tokens of a reply.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Default of `model.stream`: replies are streamed where the provider streams.
pub const DEFAULT_STREAM: bool = true;

/// Default of `model.connect_timeout_ms`: 10 s to connect.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 10_000;

/// Default of `model.request_timeout_ms`: 300 s for a request (or between two events of a
/// stream).
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 300_000;

/// Default of `model.max_retries`: retries of rate-limited, overloaded or transient failures.
pub const DEFAULT_MAX_RETRIES: u32 = 3;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_and_maps_to_its_wire_format() {
        for p in ProviderName::ALL {
            assert_eq!(ProviderName::parse(p.as_str()), Some(p));
        }
        assert_eq!(ProviderName::parse("OpenAI"), None);
        assert_eq!(Provider::parse("scripted"), None);
        assert_eq!(
            Provider::parse("llamacpp"),
            Some(Provider::OpenAiCompatible)
        );
        assert_eq!(Provider::parse("bedrock"), Some(Provider::Bedrock));
        assert_eq!(
            ProviderName::Bedrock.default_key_env(),
            Some("AWS_BEARER_TOKEN_BEDROCK")
        );
        assert_eq!(ProviderName::Ollama.default_key_env(), None);
    }

    #[test]
    fn tool_choice_names_follow_the_variants() {
        let parsed: Vec<_> = ToolChoice::NAMES
            .iter()
            .map(|n| ToolChoice::parse(n))
            .collect();
        assert_eq!(
            parsed,
            [
                Some(ToolChoice::Auto),
                Some(ToolChoice::Required),
                Some(ToolChoice::None),
                Some(ToolChoice::Omit)
            ]
        );
    }
}
