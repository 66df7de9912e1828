//! What a status, a type name and the `retry-after` headers say, whatever the body.

use std::time::{Duration, SystemTime};

use crate::error::ErrorKind;

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

/// The kind an HTTP error status means (step 6 of the recipe); `None` below 400 or above 599.
pub(super) fn kind_for_status(status: u16) -> Option<ErrorKind> {
    Some(match status {
        429 => ErrorKind::RateLimited,
        503 | 529 => ErrorKind::Overloaded,
        401 | 403 => ErrorKind::Auth,
        408 | 500..=599 => ErrorKind::Transient,
        400..=499 => ErrorKind::BadRequest,
        _ => return None,
    })
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

pub(super) fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// An HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, RFC 850 or asctime, always GMT, read by
/// `httpdate` (which also checks that the weekday fits the date); `None` for anything else.
pub(super) fn parse_http_date(value: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(value).ok()
}
