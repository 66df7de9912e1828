//! The wordings and names that decide a kind: the context-window wordings
//! ([`OVERFLOW_WORDINGS`]), and the wordings that look like an overflow but are not.

use std::sync::LazyLock;

use regex::Regex;

/// The wordings that mean "the request does not fit the context window", as regex sources.
/// They are matched case-insensitively against each of the provider's message texts. Sources:
/// the providers' own error replies, as their API references and public bug reports show
/// them (the signature table of docs/agent-loop.md#detection), plus the Bedrock Mantle, LM
/// Studio, older Ollama and Anthropic 413 "Request size exceeds model context window"
/// wordings.
pub const OVERFLOW_WORDINGS: &[&str] = &[
    // Anthropic, Bedrock (Claude).
    r"prompt is too long",
    // Anthropic, input plus `max_tokens`.
    r"exceed context limit",
    // Bedrock.
    r"input is too long",
    r"too many input tokens",
    // OpenAI Chat, vLLM, OpenRouter, DeepSeek.
    r"maximum context length is \d+",
    // OpenAI Responses.
    r"exceeds the context window",
    // Anthropic 413 variant.
    r"request size exceeds model context window",
    // OpenAI newer models / Azure.
    r"input tokens exceed the configured limit",
    // Gemini.
    r"input token count.*exceeds the maximum",
    // llama.cpp.
    r"exceeds the available context size",
    r"context size has been exceeded",
    // vLLM, older.
    r"maximum model length",
    // Ollama.
    r"prompt too long; exceeded (?:max )?context length",
    r"input exceeds context length",
    // xAI.
    r"maximum prompt length is \d+",
    // Moonshot.
    r"exceeded model token limit",
    // Mistral.
    r"too large for model with \d+ maximum context length",
    // Together.
    r"longer than the model's context length",
    // Cerebras.
    r"current length is .* while limit is",
    // Bedrock Mantle.
    r"prompt tokens \(\d+\) exceed model maximum \(\d+\)",
    // LM Studio.
    r"context the overflows",
    r"greater than the context length",
    // Any relayed body that names the code.
    r"context_length_exceeded",
];

/// [`OVERFLOW_WORDINGS`] as one case-insensitive alternation.
#[allow(clippy::expect_used)] // A constant pattern: see the comment inside.
pub(super) static OVERFLOW: LazyLock<Regex> = LazyLock::new(|| {
    let source = format!("(?i)(?:{})", OVERFLOW_WORDINGS.join("|"));
    // Infallible: the sources are constants, compiled by the `every_wording_compiles` test.
    Regex::new(&source).expect("the overflow wordings are valid regexes")
});

/// Bedrock `ValidationException` wordings that only count with that exception type.
#[allow(clippy::expect_used)] // A constant pattern: see the comment inside.
pub(super) static BEDROCK_OVERFLOW: LazyLock<Regex> = LazyLock::new(|| {
    // Infallible: a constant pattern, exercised by the Bedrock tests.
    Regex::new(r"(?i)too many tokens|expected maxLength:").expect("a valid regex")
});

/// Wordings that look like overflow but are not: rate limits counted in tokens, output caps,
/// per-item string caps.
#[allow(clippy::expect_used)] // A constant pattern: see the comment inside.
pub(super) static NOT_OVERFLOW: LazyLock<Regex> = LazyLock::new(|| {
    // Infallible: a constant pattern, exercised by the exclusion tests.
    Regex::new(r"(?i)tokens per minute|at most \d+ completion tokens|string too long")
        .expect("a valid regex")
});

/// A server error whose body says the request itself is invalid: a validation error
/// (pydantic's `N validation errors:` list, as llama-cpp-python's server sends with HTTP 500
/// for an assistant message whose `content` is null). Sending it again cannot succeed.
#[allow(clippy::expect_used)] // A constant pattern: see the comment inside.
pub(super) static INVALID_REQUEST: LazyLock<Regex> = LazyLock::new(|| {
    // Infallible: a constant pattern, exercised by the 5xx tests.
    Regex::new(r"(?i)\bvalidation errors?\b|input should be a valid|field required")
        .expect("a valid regex")
});

/// "tokens per minute": a rate limit whatever the status.
#[allow(clippy::expect_used)] // A constant pattern: see the comment inside.
pub(super) static TOKENS_PER_MINUTE: LazyLock<Regex> = LazyLock::new(|| {
    // Infallible: a constant pattern.
    Regex::new(r"(?i)tokens per minute").expect("a valid regex")
});
