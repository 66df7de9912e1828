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

use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use regex::Regex;
use serde_json::Value;

use crate::{BackendError, ErrorKind, overflow};

/// The longest `message` (in characters) taken from a body that carries no message field.
pub const MAX_FALLBACK_MESSAGE_CHARS: usize = 1000;

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
static OVERFLOW: LazyLock<Regex> = LazyLock::new(|| {
    let source = format!("(?i)(?:{})", OVERFLOW_WORDINGS.join("|"));
    // Infallible: the sources are constants, compiled by the `every_wording_compiles` test.
    Regex::new(&source).expect("the overflow wordings are valid regexes")
});

/// Bedrock `ValidationException` wordings that only count with that exception type.
static BEDROCK_OVERFLOW: LazyLock<Regex> = LazyLock::new(|| {
    // Infallible: a constant pattern, exercised by the Bedrock tests.
    Regex::new(r"(?i)too many tokens|expected maxLength:").expect("a valid regex")
});

/// Wordings that look like overflow but are not: rate limits counted in tokens, output caps,
/// per-item string caps.
static NOT_OVERFLOW: LazyLock<Regex> = LazyLock::new(|| {
    // Infallible: a constant pattern, exercised by the exclusion tests.
    Regex::new(r"(?i)tokens per minute|at most \d+ completion tokens|string too long")
        .expect("a valid regex")
});

/// A server error whose body says the request itself is invalid: a validation error
/// (pydantic's `N validation errors:` list, as llama-cpp-python's server sends with HTTP 500
/// for an assistant message whose `content` is null). Sending it again cannot succeed.
static INVALID_REQUEST: LazyLock<Regex> = LazyLock::new(|| {
    // Infallible: a constant pattern, exercised by the 5xx tests.
    Regex::new(r"(?i)\bvalidation errors?\b|input should be a valid|field required")
        .expect("a valid regex")
});

/// "tokens per minute": a rate limit whatever the status.
static TOKENS_PER_MINUTE: LazyLock<Regex> = LazyLock::new(|| {
    // Infallible: a constant pattern.
    Regex::new(r"(?i)tokens per minute").expect("a valid regex")
});

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

/// The kind an error's type or code name means when there is no HTTP status to go by
/// (stream errors, error bodies inside a `200`). Case-insensitive; `None` for names it does
/// not know. Examples: `rate_limit_error` → RateLimited, `overloaded_error` → Overloaded,
/// `authentication_error` → Auth, `api_error`/`server_error` → Transient,
/// `invalid_request_error` → BadRequest.
pub fn kind_for_type(name: &str) -> Option<ErrorKind> {
    let kind = match name.to_ascii_lowercase().as_str() {
        "rate_limit_error"
        | "rate_limit_exceeded"
        | "throttlingexception"
        | "too_many_requests"
        | "resource_exhausted"
        | "insufficient_quota"
        | "tokens"
        | "requests" => ErrorKind::RateLimited,
        "overloaded_error"
        | "server_is_overloaded"
        | "serviceunavailableexception"
        | "unavailable"
        | "slow_down" => ErrorKind::Overloaded,
        "authentication_error"
        | "permission_error"
        | "invalid_api_key"
        | "accessdeniedexception"
        | "unauthenticated"
        | "permission_denied"
        | "unauthorized" => ErrorKind::Auth,
        "api_error"
        | "server_error"
        | "internal_error"
        | "internal"
        | "internalserverexception"
        | "modelstreamerrorexception"
        | "modeltimeoutexception"
        | "timeout"
        | "deadline_exceeded" => ErrorKind::Transient,
        "invalid_request_error"
        | "not_found_error"
        | "validationexception"
        | "badrequesterror"
        | "invalid_argument"
        | "not_found"
        | "failed_precondition"
        | "string_above_max_length"
        | "invalid_prompt" => ErrorKind::BadRequest,
        _ => return None,
    };
    Some(kind)
}

/// Parses a `retry-after` header value: a number of seconds (`"30"`, also a decimal like
/// `"1.5"`) or an HTTP-date (IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850 or asctime),
/// which is turned into the wait from `now` (zero when the date is past). `None` when the value
/// is neither, negative or too large for a [`Duration`].
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return if seconds >= 0.0 {
            Duration::try_from_secs_f64(seconds).ok()
        } else {
            None
        };
    }
    let at = parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The wait a reply's headers ask for: `retry-after-ms` (milliseconds, OpenAI) first, then
/// `retry-after` (see [`parse_retry_after`]). `None` when neither is present and valid.
pub fn retry_after(headers: &[(String, String)], now: SystemTime) -> Option<Duration> {
    if let Some(ms) = header(headers, "retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok())
        && ms >= 0.0
        && let Ok(wait) = Duration::try_from_secs_f64(ms / 1000.0)
    {
        return Some(wait);
    }
    header(headers, "retry-after").and_then(|v| parse_retry_after(v, now))
}

/// Where an error came from: an HTTP reply or a stream event.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    Http,
    Stream,
}

/// What the body says, collected once.
#[derive(Debug, Default)]
struct Fields {
    /// `error.code` or top-level `code`, as text (integers included).
    code: Option<String>,
    /// The code when it is an integer HTTP status (400–599).
    code_status: Option<u16>,
    /// `error.type` or top-level `type` (except the envelope marker `error`).
    kind: Option<String>,
    /// Gemini's `error.status` (`INVALID_ARGUMENT`).
    status_name: Option<String>,
    /// The provider's message, in preference order.
    message: Option<String>,
    /// Other message texts (top-level messages when `error.message` exists).
    other_texts: Vec<String>,
    /// OpenRouter's `metadata.raw`.
    raw: Option<String>,
    /// Bedrock's exception name (`x-amzn-ErrorType` or `__type`, without a `…#` prefix or `:…` suffix).
    aws_type: Option<String>,
    /// llama.cpp's `n_prompt_tokens` and `n_ctx` (in `error` or at the top level).
    llama_sizes: Option<(u64, u64)>,
}

impl Fields {
    fn from_value(value: &Value) -> Fields {
        let value = match value {
            Value::Array(items) => items.first().unwrap_or(&Value::Null),
            other => other,
        };
        let mut fields = Fields::default();
        let mut texts = Vec::new();
        fields.llama_sizes = [value.get("error"), Some(value)]
            .into_iter()
            .flatten()
            .find_map(|v| {
                let number = |k: &str| v.get(k).and_then(Value::as_u64);
                Some((number("n_prompt_tokens")?, number("n_ctx")?))
            });
        match value.get("error") {
            Some(error @ Value::Object(_)) => {
                fields.set_code(error.get("code"));
                fields.kind = text_of(error.get("type"));
                fields.status_name = text_of(error.get("status"));
                texts.extend(text_of(error.get("message")));
                fields.raw = error.pointer("/metadata/raw").and_then(raw_text);
            }
            Some(Value::String(s)) => texts.push(s.clone()),
            _ => {}
        }
        if fields.code.is_none() {
            fields.set_code(value.get("code"));
        }
        if fields.kind.is_none() {
            fields.kind = text_of(value.get("type")).filter(|t| t != "error");
        }
        texts.extend(text_of(value.get("message")));
        texts.extend(text_of(value.get("Message")));
        if fields.raw.is_none() {
            fields.raw = value.pointer("/metadata/raw").and_then(raw_text);
        }
        fields.aws_type = text_of(value.get("__type")).map(|t| aws_name(&t));
        let mut texts = texts.into_iter().filter(|t| !t.trim().is_empty());
        fields.message = texts.next();
        fields.other_texts = texts.collect();
        fields
    }

    fn set_code(&mut self, code: Option<&Value>) {
        match code {
            Some(Value::String(s)) => self.code = Some(s.clone()),
            Some(Value::Number(n)) => {
                self.code = Some(n.to_string());
                self.code_status = n
                    .as_u64()
                    .and_then(|n| u16::try_from(n).ok())
                    .filter(|n| (400..=599).contains(n));
            }
            _ => {}
        }
    }

    /// Every text the wording checks look at.
    fn texts<'a>(&'a self, body: &'a str) -> Vec<&'a str> {
        let mut texts: Vec<&str> = self
            .message
            .iter()
            .chain(&self.other_texts)
            .chain(&self.raw)
            .map(String::as_str)
            .collect();
        if texts.is_empty() {
            texts.push(body);
        }
        texts
    }

    /// The names (code, type, status, exception) the type checks look at.
    fn names(&self) -> impl Iterator<Item = &str> {
        [&self.code, &self.kind, &self.status_name, &self.aws_type]
            .into_iter()
            .flatten()
            .map(String::as_str)
    }

    fn has_name(&self, wanted: &str) -> bool {
        self.names().any(|n| n.eq_ignore_ascii_case(wanted))
    }
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
    BackendError {
        kind,
        status,
        message: message(fields, body, status),
        retry_after,
        overflow,
        http_requests: None,
    }
}

/// The kind an HTTP error status means (step 6 of the recipe); `None` below 400 or above 599.
fn kind_for_status(status: u16) -> Option<ErrorKind> {
    Some(match status {
        429 => ErrorKind::RateLimited,
        503 | 529 => ErrorKind::Overloaded,
        401 | 403 => ErrorKind::Auth,
        408 | 500..=599 => ErrorKind::Transient,
        400..=499 => ErrorKind::BadRequest,
        _ => return None,
    })
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
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some(_) => {
            let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
            cut.push('…');
            cut
        }
    }
}

fn parse_json(text: &str) -> Option<Value> {
    serde_json::from_str(text.trim()).ok()
}

/// A string field, or a number's text.
fn text_of(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// OpenRouter's `metadata.raw`: a string, or any JSON shown compactly.
fn raw_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// A Bedrock exception payload in JSON form: `{"validationException":{"message":…}}`.
fn aws_exception(value: &Value) -> Option<(String, &Value)> {
    let object = value.as_object()?;
    if object.len() != 1 {
        return None;
    }
    let (name, inner) = object.iter().next()?;
    if !name.ends_with("Exception") || !inner.is_object() {
        return None;
    }
    let mut chars = name.chars();
    let first = chars.next()?.to_ascii_uppercase();
    Some((std::iter::once(first).chain(chars).collect(), inner))
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// An AWS error type name: `ValidationException:http://…` and
/// `com.amazon.coral.validate#ValidationException` both give `ValidationException`.
fn aws_name(value: &str) -> String {
    let value = value.split(':').next().unwrap_or(value);
    value.rsplit('#').next().unwrap_or(value).trim().to_string()
}

/// An HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, RFC 850 or asctime, always GMT.
fn parse_http_date(value: &str) -> Option<SystemTime> {
    let tokens: Vec<&str> = value.split_whitespace().collect();
    let (day, month, year, time) = match tokens.as_slice() {
        // Sun, 06 Nov 1994 08:49:37 GMT
        [weekday, day, month, year, time, "GMT"] if weekday.ends_with(',') => (
            day.parse().ok()?,
            month_number(month)?,
            year.parse().ok()?,
            *time,
        ),
        // Sunday, 06-Nov-94 08:49:37 GMT
        [weekday, date, time, "GMT"] if weekday.ends_with(',') => {
            let mut parts = date.split('-');
            let day = parts.next()?.parse().ok()?;
            let month = month_number(parts.next()?)?;
            let short: i64 = parts.next()?.parse().ok()?;
            let year = if short < 70 {
                2000 + short
            } else if short < 100 {
                1900 + short
            } else {
                short
            };
            (day, month, year, *time)
        }
        // Sun Nov  6 08:49:37 1994
        [_, month, day, time, year] => (
            day.parse().ok()?,
            month_number(month)?,
            year.parse().ok()?,
            *time,
        ),
        _ => return None,
    };
    let mut clock = time.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (clock.next()??, clock.next()??, clock.next()??);
    if !(1..=31).contains(&day)
        || !(0..24).contains(&h)
        || !(0..60).contains(&m)
        || !(0..=60).contains(&s)
    {
        return None;
    }
    let seconds = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s;
    let seconds = u64::try_from(seconds).ok()?;
    UNIX_EPOCH.checked_add(Duration::from_secs(seconds))
}

fn month_number(name: &str) -> Option<i64> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let position = MONTHS.iter().position(|m| name.eq_ignore_ascii_case(m))?;
    i64::try_from(position).ok().map(|p| p + 1)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Overflow;
    use crate::http::RetryPolicy;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    fn overflow(status: u16, headers: &[(&str, &str)], body: &str) -> BackendError {
        let e = classify(status, &h(headers), body);
        assert!(
            e.context_window_exceeded(),
            "expected overflow for {status} {body}: {e:?}"
        );
        assert_eq!(e.status, Some(status));
        e
    }

    fn not_overflow(
        status: u16,
        headers: &[(&str, &str)],
        body: &str,
        kind: ErrorKind,
    ) -> BackendError {
        let e = classify(status, &h(headers), body);
        assert!(
            !e.context_window_exceeded(),
            "expected no overflow for {status} {body}: {e:?}"
        );
        assert_eq!(e.kind, kind, "{body}");
        e
    }

    #[test]
    fn every_wording_compiles() {
        for source in OVERFLOW_WORDINGS {
            assert!(Regex::new(source).is_ok(), "{source}");
        }
        LazyLock::force(&OVERFLOW);
        LazyLock::force(&BEDROCK_OVERFLOW);
        LazyLock::force(&NOT_OVERFLOW);
        LazyLock::force(&TOKENS_PER_MINUTE);
    }

    // ---- The signature table of docs/agent-loop.md#detection, row by row. ----

    #[test]
    fn table_anthropic_prompt_is_too_long() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215000 tokens > 200000 maximum"},"request_id":"req_011CXyz"}"#;
        let e = overflow(400, &[("request-id", "req_011CXyz")], body);
        assert_eq!(
            e.message,
            "prompt is too long: 215000 tokens > 200000 maximum"
        );
    }

    #[test]
    fn table_anthropic_input_plus_max_tokens() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000, decrease input length or `max_tokens` and try again"}}"#;
        overflow(400, &[], body);
    }

    #[test]
    fn table_anthropic_413_request_too_large() {
        let body = r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}"#;
        let e = overflow(413, &[], body);
        assert_eq!(e.message, "Request exceeds the maximum size");
        // Without the top-level envelope marker too.
        overflow(
            413,
            &[],
            r#"{"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}"#,
        );
        // And the 2025 variant with invalid_request_error.
        overflow(
            413,
            &[],
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"Request size exceeds model context window"}}"#,
        );
    }

    #[test]
    fn table_openai_chat_context_length_exceeded() {
        let body = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let e = overflow(400, &[], body);
        assert!(
            e.message
                .starts_with("This model's maximum context length is 128000 tokens.")
        );
        // The code alone decides, whatever the wording.
        overflow(
            400,
            &[],
            r#"{"error":{"message":"too big","code":"context_length_exceeded"}}"#,
        );
    }

    #[test]
    fn table_openai_responses_stream_error() {
        let event = r#"{"type":"error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input","sequence_number":2}"#;
        let e = classify_stream_error(event);
        assert!(e.context_window_exceeded(), "{e:?}");
        assert_eq!(e.status, None);
        assert!(
            e.message
                .starts_with("Your input exceeds the context window")
        );

        let failed = r#"{"type":"response.failed","sequence_number":5,"response":{"id":"resp_1","object":"response","status":"failed","error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again."}}}"#;
        assert!(classify_stream_error(failed).context_window_exceeded());

        // The same event as a 400 body (non-streaming Responses).
        overflow(
            400,
            &[],
            r#"{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}"#,
        );
    }

    #[test]
    fn table_bedrock_input_is_too_long() {
        let headers = [(
            "x-amzn-ErrorType",
            "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/",
        )];
        let e = overflow(
            400,
            &headers,
            r#"{"message":"Input is too long for requested model."}"#,
        );
        assert_eq!(e.message, "Input is too long for requested model.");
        overflow(
            400,
            &headers,
            r#"{"message":"The model returned the following errors: Input is too long for requested model."}"#,
        );
    }

    #[test]
    fn table_bedrock_claude_prompt_is_too_long() {
        let headers = [("X-Amzn-ErrorType", "ValidationException")];
        overflow(
            400,
            &headers,
            r#"{"message":"The model returned the following errors: prompt is too long: 205000 tokens > 200000 maximum"}"#,
        );
        // Capitalised key, as some SDKs print it.
        overflow(
            400,
            &headers,
            r#"{"Message":"The model returned the following errors: prompt is too long: 205000 tokens > 200000 maximum"}"#,
        );
    }

    #[test]
    fn table_llama_cpp_exceed_context_size_error() {
        let body = r#"{"error":{"code":400,"message":"request (8193 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":8193,"n_ctx":8192}}"#;
        overflow(400, &[], body);
        // Sometimes 500: not transient.
        overflow(500, &[], &body.replace("\"code\":400", "\"code\":500"));
    }

    #[test]
    fn table_vllm_openrouter_deepseek_maximum_context_length_any_case() {
        for body in [
            r#"{"object":"error","message":"This model's maximum context length is 32768 tokens. However, your request has 40000 input tokens. Please reduce the length of the input messages.","type":"BadRequestError","param":null,"code":400}"#,
            r#"{"error":{"message":"This endpoint's maximum context length is 163840 tokens. However, you requested about 200000 tokens (190000 of text input, 2000 of tool input, 8000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400,"metadata":{"provider_name":"DeepInfra"}}}"#,
            r#"{"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 70000 tokens (62000 in the messages, 8000 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}"#,
            r#"{"error":{"message":"THIS MODEL'S MAXIMUM CONTEXT LENGTH IS 8192 TOKENS.","type":"BadRequestError","code":400}}"#,
        ] {
            overflow(400, &[], body);
        }
    }

    #[test]
    fn table_gemini_array_body() {
        let body = r#"[{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]"#;
        let e = overflow(400, &[], body);
        assert_eq!(
            e.message,
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
        );
    }

    #[test]
    fn table_last_row_429_tokens_per_minute_is_rate_limited() {
        let body = r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on tokens per minute (TPM): Limit 30000, Used 28000, Requested 6000. Please try again in 8s. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;
        let e = not_overflow(429, &[("retry-after", "8")], body, ErrorKind::RateLimited);
        assert_eq!(e.retry_after, Some(Duration::from_secs(8)));
        assert!(e.message.starts_with("Rate limit reached"));
    }

    // ---- Further wordings of OVERFLOW_WORDINGS, one provider each. ----

    #[test]
    fn other_overflow_wordings() {
        let cases: &[(u16, &str)] = &[
            // Azure / newer OpenAI models.
            (
                400,
                r#"{"error":{"message":"Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 300000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","code":null}}"#,
            ),
            // vLLM older decoder wording.
            (
                400,
                r#"{"object":"error","message":"The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens.","type":"BadRequestError","code":400}"#,
            ),
            // vLLM max_tokens form (input plus output over the window).
            (
                400,
                r#"{"error":{"message":"'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum context length is 8192 tokens and your request has 6000 input tokens (4096 > 8192 - 6000).","type":"BadRequestError","code":400}}"#,
            ),
            // llama.cpp older builds, any status.
            (
                500,
                r#"{"error":{"code":500,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"server_error"}}"#,
            ),
            (
                500,
                r#"{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}"#,
            ),
            // Ollama, JSON and plain text, and the older log wording.
            (
                400,
                r#"{"error":"prompt too long; exceeded max context length by 1024 tokens"}"#,
            ),
            (400, "prompt too long; exceeded context length by 12 tokens"),
            (500, r#"{"error":"input exceeds context length"}"#),
            // LM Studio.
            (
                400,
                r#"{"error":"Trying to keep the first 9000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"}"#,
            ),
            // Mistral, xAI, Moonshot, Together, Cerebras.
            (
                400,
                r#"{"object":"error","message":"Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length","type":"invalid_request_message_error","param":null,"code":"3051"}"#,
            ),
            (
                400,
                r#"{"code":"Client specified an invalid argument","error":"This model's maximum prompt length is 131072 but the request contains 140000 tokens."}"#,
            ),
            (
                400,
                r#"{"error":{"message":"Invalid request: Your request exceeded model token limit: 131072","type":"invalid_request_error"}}"#,
            ),
            (
                422,
                r#"{"error":{"message":"The input (40000 tokens) is longer than the model's context length (32768 tokens).","type":"invalid_request_error"}}"#,
            ),
            (
                400,
                r#"{"message":"Please reduce the length of the messages or completion. Current length is 9000 while limit is 8192","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}"#,
            ),
            // Bedrock, other wordings.
            (
                400,
                r#"{"message":"400 Bad Request: Too many input tokens. Max input tokens: 8192, request input token count: 9000"}"#,
            ),
            (
                400,
                r#"{"message":"prompt tokens (250000) exceed model maximum (200000)"}"#,
            ),
            // Odd local backend on 404.
            (
                404,
                r#"{"detail":"x","message":"This model's maximum context length is 4096 tokens."}"#,
            ),
        ];
        for (status, body) in cases {
            overflow(*status, &[], body);
        }
    }

    #[test]
    fn openrouter_metadata_raw_is_read_and_quoted() {
        let body = r#"{"error":{"message":"Provider returned error","code":400,"metadata":{"raw":"{\"error\":{\"message\":\"prompt is too long: 210000 tokens > 200000 maximum\"}}","provider_name":"Anthropic"}}}"#;
        let e = overflow(400, &[], body);
        assert!(
            e.message.starts_with("Provider returned error ("),
            "{}",
            e.message
        );
        assert!(e.message.contains("prompt is too long"));
    }

    #[test]
    fn bedrock_only_wordings_need_validation_exception() {
        let body = r#"{"message":"Malformed input request: expected maxLength: 50000, actual: 62000, please reformat your input and try again."}"#;
        overflow(400, &[("x-amzn-errortype", "ValidationException")], body);
        not_overflow(400, &[], body, ErrorKind::BadRequest);
        overflow(
            400,
            &[("x-amzn-errortype", "ValidationException")],
            r#"{"message":"Too many tokens in the request"}"#,
        );
        // And the JSON `__type` field.
        overflow(
            400,
            &[],
            r#"{"__type":"com.amazon.coral.validate#ValidationException","message":"too many tokens"}"#,
        );
    }

    #[test]
    fn bedrock_stream_exception_frame() {
        let e = classify_stream_error(
            r#"{"validationException":{"message":"Input is too long for requested model."}}"#,
        );
        assert!(e.context_window_exceeded());
        let e = classify_stream_error(
            r#"{"throttlingException":{"message":"Too many requests, please wait before trying again."}}"#,
        );
        assert_eq!(e.kind, ErrorKind::RateLimited);
        let e = classify_stream_error(
            r#"{"validationException":{"message":"Too many tokens, please wait"}}"#,
        );
        assert!(e.context_window_exceeded());
    }

    // ---- Not overflow. ----

    #[test]
    fn exclusions_are_not_overflow() {
        // Groq's TPM limit on a 413: a rate limit.
        not_overflow(
            413,
            &[],
            r#"{"error":{"message":"Request too large for model `llama3-70b-8192` in organization `org_01` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 7038, please reduce your message size and try again.","type":"tokens","code":"rate_limit_exceeded"}}"#,
            ErrorKind::RateLimited,
        );
        // An output cap.
        not_overflow(
            400,
            &[],
            r#"{"error":{"message":"max_tokens is too large: 100000. This model supports at most 16384 completion tokens, whereas you provided 100000.","type":"invalid_request_error","param":"max_tokens","code":null}}"#,
            ErrorKind::BadRequest,
        );
        // A per-item cap.
        not_overflow(
            400,
            &[],
            r#"{"error":{"message":"Invalid 'messages[3].content': string too long. Expected a string with maximum length 10485760, but got a string with length 12000000 instead.","type":"invalid_request_error","param":"messages[3].content","code":"string_above_max_length"}}"#,
            ErrorKind::BadRequest,
        );
        // A bare proxy 413.
        let e = not_overflow(
            413,
            &[],
            "<html><head><title>413 Request Entity Too Large</title></head><body><center><h1>413 Request Entity Too Large</h1></center><hr><center>nginx</center></body></html>",
            ErrorKind::BadRequest,
        );
        assert!(e.message.contains("413 Request Entity Too Large"));
        // 429 saying "too many tokens" or even quoting an overflow wording.
        not_overflow(
            429,
            &[],
            r#"{"message":"Too many tokens, please wait before trying again."}"#,
            ErrorKind::RateLimited,
        );
        not_overflow(
            429,
            &[],
            r#"{"error":{"message":"prompt is too long for your tier","code":"context_length_exceeded"}}"#,
            ErrorKind::RateLimited,
        );
    }

    /// llama-cpp-python 0.3.36's answer to an assistant message with `"content": null`
    /// (HTTP 500), as its server sent it (the venv path shortened).
    pub(crate) const LLAMA_CPP_PYTHON_NULL_CONTENT_500: &str = r#"{"error":{"message":"7 validation errors:\n  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestSystemMessage', 'role'), 'msg': \"Input should be 'system'\", 'input': 'assistant', 'ctx': {'expected': \"'system'\"}}\n  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestUserMessage', 'role'), 'msg': \"Input should be 'user'\", 'input': 'assistant', 'ctx': {'expected': \"'user'\"}}\n  {'type': 'string_type', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a valid string', 'input': None}\n  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestToolMessage', 'role'), 'msg': \"Input should be 'tool'\", 'input': 'assistant', 'ctx': {'expected': \"'tool'\"}}\n  {'type': 'missing', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestToolMessage', 'tool_call_id'), 'msg': 'Field required', 'input': {'role': 'assistant', 'content': None, 'tool_calls': [{'id': 'call_1', 'type': 'function', 'function': {'name': 'read_file', 'arguments': '{\"path\":\"a.txt\"}'}}]}}\n  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestFunctionMessage', 'role'), 'msg': \"Input should be 'function'\", 'input': 'assistant', 'ctx': {'expected': \"'function'\"}}\n  {'type': 'missing', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestFunctionMessage', 'name'), 'msg': 'Field required', 'input': {'role': 'assistant', 'content': None, 'tool_calls': [{'id': 'call_1', 'type': 'function', 'function': {'name': 'read_file', 'arguments': '{\"path\":\"a.txt\"}'}}]}}\n\n  File \"/opt/venv/lib/python3.11/site-packages/llama_cpp/server/app.py\", line 376, in create_chat_completion\n    POST /v1/chat/completions","type":"internal_server_error","param":null,"code":null}}"#;

    #[test]
    fn a_rejection_carries_the_sizes_it_states() {
        // llama-cpp-python 0.3.36, as its server sent it (2,048-token window, max_tokens 4096).
        let e = overflow(
            400,
            &[],
            r#"{"error":{"message":"This model's maximum context length is 2048 tokens. However, you requested 14791 tokens (10695 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        );
        let sized = |prompt_tokens, limit_tokens| {
            Some(Overflow {
                prompt_tokens,
                limit_tokens,
                estimated: false,
            })
        };
        assert_eq!(e.overflow, sized(10_695, 2048));
        // llama.cpp's structured numbers win over the wording.
        let e = overflow(
            400,
            &[],
            r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9001,"n_ctx":8192}}"#,
        );
        assert_eq!(e.overflow, sized(9001, 8192));
        let e = overflow(
            400,
            &[],
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        );
        assert_eq!(e.overflow, sized(210_000, 200_000));
        // No numbers, no sizes; and never on another kind of error.
        let e = overflow(
            400,
            &[],
            r#"{"message":"Input is too long for requested model."}"#,
        );
        assert_eq!(e.overflow, None);
        let e = classify(
            429,
            &[],
            "prompt is too long: 210000 tokens > 200000 maximum",
        );
        assert_eq!((e.kind, e.overflow), (ErrorKind::RateLimited, None));
    }

    #[test]
    fn a_5xx_validation_error_is_a_bad_request() {
        let e = not_overflow(
            500,
            &[],
            LLAMA_CPP_PYTHON_NULL_CONTENT_500,
            ErrorKind::BadRequest,
        );
        assert!(
            e.message
                .starts_with("7 validation errors:\n  {'type': 'literal_error'"),
            "{}",
            e.message
        );
        assert!(
            e.message
                .contains("'msg': 'Input should be a valid string', 'input': None")
        );
        assert!(!RetryPolicy::retries(e.kind));
        // Other wordings of the kind; a plain 500 stays transient.
        not_overflow(
            502,
            &[],
            r#"{"detail":"1 validation error for Request\nbody -> messages -> 1 -> content\n  field required"}"#,
            ErrorKind::BadRequest,
        );
        not_overflow(
            500,
            &[],
            r#"{"error":{"message":"'dict object' has no attribute 'content'","type":"internal_server_error","param":null,"code":null}}"#,
            ErrorKind::Transient,
        );
    }

    #[test]
    fn statuses_map_to_kinds() {
        let anthropic = |t: &str, m: &str| {
            format!(r#"{{"type":"error","error":{{"type":"{t}","message":"{m}"}}}}"#)
        };
        not_overflow(
            529,
            &[],
            &anthropic("overloaded_error", "Overloaded"),
            ErrorKind::Overloaded,
        );
        not_overflow(503, &[], "Service Unavailable", ErrorKind::Overloaded);
        not_overflow(
            401,
            &[],
            &anthropic("authentication_error", "invalid x-api-key"),
            ErrorKind::Auth,
        );
        not_overflow(
            403,
            &[],
            r#"{"message":"User is not authorized to perform: bedrock:InvokeModel"}"#,
            ErrorKind::Auth,
        );
        not_overflow(
            500,
            &[],
            &anthropic("api_error", "Internal server error"),
            ErrorKind::Transient,
        );
        not_overflow(502, &[], "", ErrorKind::Transient);
        not_overflow(
            408,
            &[],
            r#"{"message":"Model has timed out"}"#,
            ErrorKind::Transient,
        );
        not_overflow(
            400,
            &[],
            &anthropic("invalid_request_error", "messages: roles must alternate"),
            ErrorKind::BadRequest,
        );
        not_overflow(
            404,
            &[],
            &anthropic("not_found_error", "model: claude-9"),
            ErrorKind::BadRequest,
        );
        let e = not_overflow(502, &[], "", ErrorKind::Transient);
        assert_eq!(e.message, "HTTP 502 with an empty body");
        // An error body inside a 200 (old llama.cpp): the integer code decides.
        not_overflow(
            200,
            &[],
            r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#,
            ErrorKind::Overloaded,
        );
        not_overflow(200, &[], "not json at all", ErrorKind::Protocol);
    }

    #[test]
    fn stream_errors_map_by_type() {
        let e = classify_stream_error(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!(
            (e.kind, e.status, e.message.as_str()),
            (ErrorKind::Overloaded, None, "Overloaded")
        );
        let e = classify_stream_error(
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
        );
        assert_eq!(e.kind, ErrorKind::RateLimited);
        let e = classify_stream_error(
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 300000 tokens > 200000 maximum"}}"#,
        );
        assert!(e.context_window_exceeded());
        let e = classify_stream_error(
            r#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"The server had an error"}}}"#,
        );
        assert_eq!(e.kind, ErrorKind::Transient);
        let e = classify_stream_error(
            r#"{"error":{"message":"Rate limit reached on tokens per minute","code":"rate_limit_exceeded"}}"#,
        );
        assert_eq!(e.kind, ErrorKind::RateLimited);
        let e = classify_stream_error("garbage");
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::Transient, "garbage")
        );
    }

    #[test]
    fn long_bodies_are_cut_on_characters() {
        let body = "é".repeat(3000);
        let e = classify(400, &[], &body);
        assert_eq!(e.message.chars().count(), MAX_FALLBACK_MESSAGE_CHARS);
        assert!(e.message.ends_with('…'));
        assert_eq!(e.kind, ErrorKind::BadRequest);
    }

    // ---- retry-after. ----

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after("1.5", now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(parse_retry_after("-3", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Sunday, 06-Nov-94 08:49:47 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Sun Nov  6 08:49:40 1994", now),
            Some(Duration::from_secs(3))
        );
        // A past date means "now".
        assert_eq!(
            parse_retry_after("Sat, 05 Nov 1994 08:49:37 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 25:00:00 GMT", now),
            None
        );
        // A date in 2030.
        let d = parse_http_date("Tue, 01 Jan 2030 00:00:00 GMT")
            .map(|t| t.duration_since(UNIX_EPOCH).ok());
        assert_eq!(d, Some(Some(Duration::from_secs(1_893_456_000))));
    }

    #[test]
    fn retry_after_headers() {
        let e = classify(
            429,
            &h(&[("Retry-After", "7")]),
            r#"{"error":{"message":"slow"}}"#,
        );
        assert_eq!(
            (e.kind, e.retry_after),
            (ErrorKind::RateLimited, Some(Duration::from_secs(7)))
        );
        let e = classify(
            429,
            &h(&[("retry-after", "7"), ("retry-after-ms", "250")]),
            "",
        );
        assert_eq!(e.retry_after, Some(Duration::from_millis(250)));
        let e = classify(529, &h(&[("retry-after", "2")]), "");
        assert_eq!(
            (e.kind, e.retry_after),
            (ErrorKind::Overloaded, Some(Duration::from_secs(2)))
        );
        let e = classify(429, &[], "");
        assert_eq!(e.retry_after, None);
        let future = SystemTime::now() + Duration::from_secs(3600);
        let secs = future
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let date = format_http_date(secs);
        let e = classify(429, &h(&[("retry-after", &date)]), "");
        let wait = e.retry_after.unwrap_or_default();
        assert!(
            wait > Duration::from_secs(3500) && wait <= Duration::from_secs(3600),
            "{date} {wait:?}"
        );
    }

    /// IMF-fixdate of a Unix time, for the tests.
    fn format_http_date(secs: u64) -> String {
        const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
        const MONTHS: [&str; 12] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        let days = (secs / 86_400) as i64;
        let rem = secs % 86_400;
        // Inverse of days_from_civil (Hinnant).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        format!(
            "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
            DAYS[(days % 7) as usize],
            d,
            MONTHS[(m - 1) as usize],
            y,
            rem / 3600,
            rem / 60 % 60,
            rem % 60
        )
    }
}
