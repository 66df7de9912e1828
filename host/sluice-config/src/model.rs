//! `[model]`: which model the agent talks to. Keys are never in the file: `api_key_env`
//! names an environment variable, `api_key_file` a file holding the key.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use sluice_protocol::model::{
    DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_MAX_RETRIES, DEFAULT_MAX_TOKENS,
    DEFAULT_REQUEST_TIMEOUT_MS, DEFAULT_STREAM,
};
pub use sluice_protocol::model::{ProviderName, ToolChoice};

use crate::ConfigError;
use crate::file::Raw;

/// The model settings, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelConfig {
    /// The provider ([`ProviderName::ALL`]); `scripted` (the offline default) when nothing is
    /// configured.
    pub provider: ProviderName,
    /// The model name (for `replay`, the script file).
    pub name: String,
    /// The endpoint, overriding the provider's default (required for OpenAI-compatible
    /// servers).
    pub base_url: Option<String>,
    /// The environment variable holding the API key (default per provider:
    /// `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `AWS_BEARER_TOKEN_BEDROCK`, `OPENROUTER_API_KEY`).
    pub api_key_env: Option<String>,
    /// A file holding the API key (its first line), instead of an environment variable.
    pub api_key_file: Option<PathBuf>,
    /// AWS region (Bedrock).
    pub region: Option<String>,
    /// Most tokens of a reply (1 to 1,000,000; default
    /// [`DEFAULT_MAX_TOKENS`](sluice_protocol::model::DEFAULT_MAX_TOKENS)).
    pub max_tokens: u32,
    /// The model's context window, in tokens, for the local estimate before sending.
    pub context_window_tokens: Option<u64>,
    /// Stream replies (default [`DEFAULT_STREAM`](sluice_protocol::model::DEFAULT_STREAM)).
    pub stream: bool,
    /// Connection timeout, in ms (1 to 600,000; default
    /// [`DEFAULT_CONNECT_TIMEOUT_MS`](sluice_protocol::model::DEFAULT_CONNECT_TIMEOUT_MS)).
    pub connect_timeout_ms: u64,
    /// Request (or stream idle) timeout, in ms (1 to 3,600,000; default
    /// [`DEFAULT_REQUEST_TIMEOUT_MS`](sluice_protocol::model::DEFAULT_REQUEST_TIMEOUT_MS)).
    pub request_timeout_ms: u64,
    /// Retries of rate-limited, overloaded or transient failures (0 to 10; default
    /// [`DEFAULT_MAX_RETRIES`](sluice_protocol::model::DEFAULT_MAX_RETRIES)).
    pub max_retries: u32,
    /// Whether the model may call the tools offered ([`ToolChoice::NAMES`]); `None` (the
    /// default) leaves it to the provider ([`ToolChoice::resolve`]).
    pub tool_choice: Option<ToolChoice>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileModel {
    provider: Option<String>,
    name: Option<String>,
    base_url: Option<String>,
    api_key_env: Option<String>,
    api_key_file: Option<String>,
    region: Option<String>,
    max_tokens: Option<Raw>,
    context_window_tokens: Option<Raw>,
    stream: Option<bool>,
    connect_timeout_ms: Option<Raw>,
    request_timeout_ms: Option<Raw>,
    max_retries: Option<Raw>,
    tool_choice: Option<Raw>,
}

impl FileModel {
    /// Resolves `[model]`, with `flag` (`--model PROVIDER:NAME`) overriding provider and
    /// name. `base` resolves a relative `api_key_file` or replay script.
    pub(crate) fn resolve(
        &self,
        flag: Option<&str>,
        base: &Path,
        origin: &str,
    ) -> Result<ModelConfig, ConfigError> {
        // A script named on the command line is relative to the working directory.
        let base = if flag.is_some() { Path::new(".") } else { base };
        let err = |key: &str, value: String, allowed: String, origin: &str| ConfigError::Value {
            key: format!("model.{key}"),
            value,
            allowed,
            origin: origin.to_string(),
        };
        let (provider, name, from) = match flag {
            Some(f) => {
                let (p, n) = f.split_once(':').unwrap_or((f, ""));
                (p.to_string(), n.to_string(), "--model")
            }
            None => (
                self.provider
                    .clone()
                    .unwrap_or_else(|| ProviderName::Scripted.as_str().into()),
                self.name.clone().unwrap_or_default(),
                origin,
            ),
        };
        let Some(provider_name) = ProviderName::parse(&provider) else {
            let names: Vec<_> = ProviderName::ALL.iter().map(|p| p.as_str()).collect();
            return Err(err(
                "provider",
                format!("{provider:?}"),
                format!("one of {}", names.join(", ")),
                from,
            ));
        };
        if provider_name.needs_model_name() && name.is_empty() {
            return Err(err(
                "name",
                "nothing".into(),
                format!("a model name (`--model {provider}:NAME`)"),
                from,
            ));
        }
        let name = if provider_name == ProviderName::Replay {
            base.join(&name).display().to_string()
        } else {
            name
        };
        let int = |key: &str, v: &Option<Raw>, default: u64, min: u64, max: u64, unit: &str| match v
        {
            None => Ok(default),
            Some(raw) => match raw {
                Raw::Integer(digits) => digits.parse::<u64>().ok(),
                _ => None,
            }
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| {
                err(
                    key,
                    raw.shown(),
                    format!("an integer from {min} to {max}{unit}"),
                    origin,
                )
            }),
        };
        if let Some(url) = &self.base_url
            && !valid_base_url(url)
        {
            return Err(err(
                "base_url",
                format!("{url:?}"),
                BASE_URL_RULE.into(),
                origin,
            ));
        }
        Ok(ModelConfig {
            provider: provider_name,
            name,
            base_url: self.base_url.clone(),
            api_key_env: self.api_key_env.clone(),
            api_key_file: self.api_key_file.as_ref().map(|f| base.join(f)),
            region: self.region.clone(),
            max_tokens: int(
                "max_tokens",
                &self.max_tokens,
                u64::from(DEFAULT_MAX_TOKENS),
                1,
                1_000_000,
                " (tokens)",
            )? as u32,
            context_window_tokens: match &self.context_window_tokens {
                None => None,
                v => Some(int(
                    "context_window_tokens",
                    v,
                    0,
                    1,
                    100_000_000,
                    " (tokens)",
                )?),
            },
            stream: self.stream.unwrap_or(DEFAULT_STREAM),
            connect_timeout_ms: int(
                "connect_timeout_ms",
                &self.connect_timeout_ms,
                DEFAULT_CONNECT_TIMEOUT_MS,
                1,
                600_000,
                " (ms)",
            )?,
            request_timeout_ms: int(
                "request_timeout_ms",
                &self.request_timeout_ms,
                DEFAULT_REQUEST_TIMEOUT_MS,
                1,
                3_600_000,
                " (ms)",
            )?,
            max_retries: int(
                "max_retries",
                &self.max_retries,
                u64::from(DEFAULT_MAX_RETRIES),
                0,
                10,
                "",
            )? as u32,
            tool_choice: match &self.tool_choice {
                None => None,
                Some(Raw::String(v)) if ToolChoice::parse(v).is_some() => ToolChoice::parse(v),
                Some(other) => {
                    return Err(err(
                        "tool_choice",
                        other.shown(),
                        format!("one of {}", ToolChoice::NAMES.join(", ")),
                        origin,
                    ));
                }
            },
        })
    }
}

/// What `model.base_url` may be.
const BASE_URL_RULE: &str =
    "an http:// or https:// URL with a host, like http://127.0.0.1:11434/v1";

/// Whether `url` is an absolute `http` or `https` URL with a host (what the model's HTTP
/// client can send to), without a query or fragment (the provider's path is appended).
fn valid_base_url(url: &str) -> bool {
    url::Url::parse(url).is_ok_and(|u| {
        matches!(u.scheme(), "http" | "https")
            && u.host_str().is_some_and(|h| !h.is_empty())
            && u.query().is_none()
            && u.fragment().is_none()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        for ok in [
            "http://127.0.0.1:11434/v1",
            "https://openrouter.ai/api/v1",
            "http://[::1]:8000",
            "http://llm.lan",
        ] {
            assert!(valid_base_url(ok), "{ok}");
        }
        for bad in [
            "not a url",
            "127.0.0.1:11434/v1",
            "ftp://x/v1",
            "http://",
            "file:///v1",
            "http://x/v1?key=1",
            "",
        ] {
            assert!(!valid_base_url(bad), "{bad}");
        }
    }
}
