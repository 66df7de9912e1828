//! Turning a provider's error reply into a typed [`BackendError`].
//!
//! [`classify`] takes what an HTTP error reply carries (status, headers, body) and decides the
//! [`ErrorKind`]; [`classify_stream_error`] does the same for an error that arrives inside a
//! `200` stream. The one decision that matters most is [`ErrorKind::ContextWindowExceeded`]:
//! the agent loop shrinks observations on it and on nothing else
//! (docs/agent-loop.md#context-window-recovery), so a false positive wastes a retry and a
//! false negative ends a run that could have recovered. docs/agent-loop.md#detection holds
//! the signature table every backend must flag.
//!
//! # The recipe (order matters)
//!
//! 1. **Read the body** as JSON, whether an object or an array (Gemini wraps its error in a
//!    one-element array; the first element is used). Collected fields: `error.code`,
//!    `error.type`, `error.message`, `error.status` (Gemini), `error.metadata.raw`
//!    (OpenRouter's relayed upstream body), top-level `code`/`type`/`message`/`Message`
//!    (vLLM's older envelope, Bedrock, OpenAI Responses stream events), `__type` and the
//!    `x-amzn-ErrorType` header (Bedrock; the name without a `…#` prefix or `:…` suffix). `error` may also be a
//!    plain string (Ollama's native API). A body that is not JSON is used as text.
//! 2. **429 is never an overflow** (docs/agent-loop.md#detection): it is
//!    [`ErrorKind::RateLimited`] whatever it says ("too many tokens" included).
//! 3. **Structured hits**: `code == context_length_exceeded` (OpenAI, Azure, DeepSeek),
//!    `type` or `code == exceed_context_size_error` (llama.cpp), `type == request_too_large`
//!    (Anthropic's 413 body cap).
//! 4. **Exclusions** before wording: a rate-limit code or type (`rate_limit_exceeded`,
//!    `rate_limit_error`, `ThrottlingException`), the words "tokens per minute" (Groq and
//!    OpenAI send those on 413s too), "at most N completion tokens" (an output cap: shrinking
//!    the input does not help), `string_above_max_length` (a per-item cap), and the statuses
//!    401/403.
//! 5. **Wording**: case-insensitive regexes over the provider's message texts (see
//!    [`OVERFLOW_WORDINGS`]), on any other status, including `400`, `413`, `422`, `500` and
//!    `404` from odd local servers and error bodies inside a `200`. Bedrock's
//!    `ValidationException` additionally counts "too many tokens" and "expected maxLength:".
//! 6. **Everything else by status**: 429 → [`ErrorKind::RateLimited`] (also a rate-limit code
//!    or the "tokens per minute" wording on another status), 529 and 503 →
//!    [`ErrorKind::Overloaded`], 401 and 403 → [`ErrorKind::Auth`], 408 and other 5xx →
//!    [`ErrorKind::Transient`], other 4xx → [`ErrorKind::BadRequest`]. A 5xx whose message
//!    says the request is invalid (a validation error: `N validation errors`, `Input should
//!    be a valid …`, `Field required`) is [`ErrorKind::BadRequest`], not retried:
//!    llama-cpp-python's server answers HTTP 500 to a request its request model refuses. A status below 400 (an
//!    error body inside a `200`) uses the body's integer `code` when it is an HTTP status
//!    (llama.cpp, Gemini, OpenRouter), else the error's type name (see [`kind_for_type`]),
//!    else [`ErrorKind::Protocol`].
//!
//! `retry-after-ms` (milliseconds) or `retry-after` (seconds, or an HTTP-date) sets
//! [`BackendError::retry_after`] on any status. The error's `message` is the provider's own
//! text (`error.message`, else the top-level message, else a string `error`; OpenRouter's
//! `metadata.raw` is appended in parentheses), else the body itself, cut to 1,000 characters.
//! A context-window rejection also carries the sizes it states ([`BackendError::overflow`]):
//! llama.cpp's `n_prompt_tokens` / `n_ctx`, else the numbers of the wordings
//! [`overflow::sizes_in`] reads.

mod body;
mod rules;
mod status;

use std::time::{Duration, SystemTime};

use regex::Regex;
use serde_json::Value;

use self::body::{Fields, aws_exception, aws_name, parse_json};
pub use self::rules::OVERFLOW_WORDINGS;
use self::rules::{BEDROCK_OVERFLOW, INVALID_REQUEST, NOT_OVERFLOW, OVERFLOW, TOKENS_PER_MINUTE};
use self::status::{header, kind_for_status};
pub use self::status::{kind_for_type, parse_retry_after, retry_after};
use crate::error::{BackendError, ErrorKind};
use crate::overflow;

/// The longest `message` (in characters) taken from a body that carries no message field.
pub const MAX_FALLBACK_MESSAGE_CHARS: usize = 1000;

/// Classifies an HTTP error reply.
///
/// `status` is the HTTP status; `headers` are `(name, value)` pairs (names matched
/// case-insensitively; `retry-after-ms`, `retry-after` and `x-amzn-ErrorType` are read);
/// `body` is the reply body as text (JSON or not). Never fails: an unreadable body is
/// classified by status and quoted (cut to [`MAX_FALLBACK_MESSAGE_CHARS`]) as the message.
/// See the module docs for the order of the checks. The returned error has
/// `status: Some(status)`.
pub fn classify(status: u16, headers: &[(String, String)], body: &str) -> BackendError {
    let mut fields = match parse_json(body) {
        Some(value) => Fields::from_value(&value),
        None => Fields::default(),
    };
    if let Some(value) = header(headers, "x-amzn-errortype") {
        fields.aws_type = Some(aws_name(value));
    }
    let retry_after = retry_after(headers, SystemTime::now());
    decide(Some(status), &fields, body, retry_after, Origin::Http)
}

/// Classifies an error that arrived inside a `200` stream: `event_json` is the event's data.
///
/// Understood shapes: OpenAI Responses `error` events (`{"type":"error","code":…,"message":…}`,
/// also with a nested `error` object), `response.failed` events (the error is
/// `response.error`), Anthropic `error` events (`{"type":"error","error":{"type":…,"message":…}}`),
/// OpenAI Chat / OpenRouter `{"error":{…}}` data lines, old llama.cpp error bodies, and
/// Bedrock exception payloads in their JSON form (`{"validationException":{"message":…}}`).
/// The kind comes from the same checks as [`classify`]; with no HTTP status, an integer
/// `code` that is an HTTP status is used, else the error's type name ([`kind_for_type`]),
/// else [`ErrorKind::Transient`]. The returned error has `status: None` and no `retry_after`.
pub fn classify_stream_error(event_json: &str) -> BackendError {
    let Some(value) = parse_json(event_json) else {
        return decide(None, &Fields::default(), event_json, None, Origin::Stream);
    };
    let fields = if value.get("type").and_then(Value::as_str) == Some("response.failed") {
        let error = value
            .pointer("/response/error")
            .cloned()
            .unwrap_or(Value::Null);
        let mut wrapped = serde_json::Map::new();
        wrapped.insert("error".to_string(), error);
        Fields::from_value(&Value::Object(wrapped))
    } else if let Some((name, inner)) = aws_exception(&value) {
        let mut fields = Fields::from_value(inner);
        fields.aws_type = Some(name);
        fields
    } else {
        Fields::from_value(&value)
    };
    decide(None, &fields, event_json, None, Origin::Stream)
}

/// Where an error came from: an HTTP reply or a stream event.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    Http,
    Stream,
}

/// Applies the recipe of the module docs.
fn decide(
    status: Option<u16>,
    fields: &Fields,
    body: &str,
    retry_after: Option<Duration>,
    origin: Origin,
) -> BackendError {
    let http_error = status.filter(|s| *s >= 400);
    let effective = http_error.or(fields.code_status);
    let texts = fields.texts(body);
    let any_text = |re: &Regex| texts.iter().any(|t| re.is_match(t));
    let rate_limit_name = [
        "rate_limit_exceeded",
        "rate_limit_error",
        "ThrottlingException",
    ]
    .into_iter()
    .any(|n| fields.has_name(n));

    // Step 3: structured hits.
    let structured = fields.code.as_deref() == Some("context_length_exceeded")
        || fields.has_name("exceed_context_size_error")
        || fields.kind.as_deref() == Some("request_too_large");
    // Step 4: exclusions.
    let excluded = rate_limit_name
        || fields.has_name("string_above_max_length")
        || matches!(effective, Some(401 | 403))
        || any_text(&NOT_OVERFLOW);
    // Step 5: wording.
    let bedrock_validation = fields
        .aws_type
        .as_deref()
        .is_some_and(|t| t.eq_ignore_ascii_case("ValidationException"));
    let worded = any_text(&OVERFLOW) || (bedrock_validation && any_text(&BEDROCK_OVERFLOW));

    // Step 2 first: a 429 is never an overflow.
    let kind = if effective == Some(429) {
        ErrorKind::RateLimited
    } else if structured || (!excluded && worded) {
        ErrorKind::ContextWindowExceeded
    } else if rate_limit_name || any_text(&TOKENS_PER_MINUTE) {
        ErrorKind::RateLimited
    } else if effective.is_some_and(|s| s >= 500) && any_text(&INVALID_REQUEST) {
        ErrorKind::BadRequest
    } else if let Some(kind) = effective.and_then(kind_for_status) {
        kind
    } else if let Some(kind) = fields.names().find_map(kind_for_type) {
        kind
    } else if origin == Origin::Stream {
        ErrorKind::Transient
    } else {
        ErrorKind::Protocol
    };

    let overflow = (kind == ErrorKind::ContextWindowExceeded)
        .then(|| {
            fields
                .llama_sizes
                .and_then(|(prompt, window)| overflow::sizes(prompt, window, 0))
                .or_else(|| texts.iter().find_map(|t| overflow::sizes_in(t)))
        })
        .flatten();
    BackendError::new(kind, message(fields, body, status))
        .with_status(status)
        .with_retry_after(retry_after)
        .with_overflow(overflow)
}

/// The provider's message, or the body cut to [`MAX_FALLBACK_MESSAGE_CHARS`].
fn message(fields: &Fields, body: &str, status: Option<u16>) -> String {
    let text = match (&fields.message, &fields.raw) {
        (Some(m), Some(raw)) if raw != m => format!("{m} ({raw})"),
        (Some(m), _) => m.clone(),
        (None, Some(raw)) => raw.clone(),
        (None, None) => {
            let body = body.trim();
            if body.is_empty() {
                return match status {
                    Some(s) => format!("HTTP {s} with an empty body"),
                    None => "an error event without a message".to_string(),
                };
            }
            body.to_string()
        }
    };
    cut_chars(&text, MAX_FALLBACK_MESSAGE_CHARS)
}

/// `text` cut to at most `max` characters, the last being `…` when cut.
fn cut_chars(text: &str, max: usize) -> String {
    if text.chars().nth(max).is_none() {
        return text.to_string();
    }
    sluice_text::cut_chars(text, max.saturating_sub(1)).into_owned()
}

#[cfg(test)]
mod tests;
