//! What every request goes through: the bearer token, the body size limit, JSON bodies and
//! query flags, each refused with a JSON error.

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, bad_json};
use crate::state::AppState;

/// Refuses requests without the configured bearer token (401). Without a configured token
/// (allowed only on a loopback address) every request passes.
pub(crate) async fn require_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let Some(expected) = state.token() else {
        return next.run(request).await;
    };
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.trim().split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then(|| token.trim().to_string())
        });
    match given {
        None => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "a bearer token is required: send `Authorization: Bearer <token>` with the token from SLUICE_SERVER_TOKEN or --token-file",
        )
        .into_response(),
        Some(token) if !same_secret(token.as_bytes(), expected.as_bytes()) => {
            ApiError::new(StatusCode::UNAUTHORIZED, "the bearer token is wrong").into_response()
        }
        Some(_) => next.run(request).await,
    }
}

/// Compares two secrets in time that depends on their lengths only.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Refuses a request whose `Content-Length` is over the body limit (413) before reading it.
/// A body without a length is measured as it is read ([`JsonBody`]).
pub(crate) async fn limit_body(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let limit = state.max_body_bytes();
    let length = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match length {
        Some(n) if n > limit as u64 => {
            if n <= DRAIN_MAX_BYTES {
                drain(request.into_body().into_data_stream(), DRAIN_MAX_BYTES).await;
            }
            too_large(limit).into_response()
        }
        _ => next.run(request).await,
    }
}

/// The most bytes of a refused body read (and dropped) before answering 413. A client
/// still sending when the server closes the connection may see a reset instead of the
/// answer; reading the rest of a moderately oversized body first lets it see the 413.
const DRAIN_MAX_BYTES: u64 = 16 << 20;

/// Reads and drops the rest of a body, up to `max` bytes.
async fn drain(mut stream: axum::body::BodyDataStream, max: u64) {
    let mut seen = 0u64;
    while let Some(Ok(chunk)) = stream.next().await {
        seen += chunk.len() as u64;
        if seen > max {
            break;
        }
    }
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "the request body is over the limit of {limit} bytes (sluice serve --max-body-bytes)"
        ),
    )
    .with("limitBytes", limit)
}

/// A JSON body of type `T`, read up to the body limit. Any content type is accepted (so
/// `curl -d` works); an empty body reads as `{}`.
pub(crate) struct JsonBody<T>(pub(crate) T);

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let bytes = read_body(request.into_body(), state.max_body_bytes()).await?;
        let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        serde_json::from_slice(text)
            .map(JsonBody)
            .map_err(|e| bad_json(&e))
    }
}

/// The whole body, refused with 413 as soon as it passes `limit` bytes.
async fn read_body(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let mut stream = body.into_data_stream();
    let mut buf = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|e| ApiError::bad_request(format!("failed to read the request body: {e}")))?;
        if buf.len() + chunk.len() > limit {
            drain(stream, DRAIN_MAX_BYTES).await;
            return Err(too_large(limit));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(buf))
}

/// The value of flag `name` in the query string: `?name`, `?name=true` or `?name=1` is
/// true; absent, `=false` or `=0` is false.
///
/// # Errors
/// 400 for any other value.
pub(crate) fn flag(query: Option<&str>, name: &str) -> Result<bool, ApiError> {
    match param(query, name) {
        None => Ok(false),
        Some(v) => match v.as_str() {
            "" | "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(ApiError::bad_request(format!(
                "query parameter {name} must be true or false; got {v:?}"
            ))
            .with("parameter", name)),
        },
    }
}

/// The value of query parameter `name` (the first), percent-decoded.
pub(crate) fn param(query: Option<&str>, name: &str) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (decode(k) == name).then(|| decode(v))
    })
}

/// Percent-decoding, with `+` as a space; invalid escapes are kept as written.
fn decode(s: &str) -> String {
    let hex = |b: u8| char::from(b).to_digit(16).map(|d| d as u8);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => match (
                bytes.get(i + 1).and_then(|&b| hex(b)),
                bytes.get(i + 2).and_then(|&b| hex(b)),
            ) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_flags() {
        assert!(flag(Some("wait=true"), "wait").unwrap());
        assert!(flag(Some("a=b&wait"), "wait").unwrap());
        assert!(flag(Some("wait=1"), "wait").unwrap());
        assert!(!flag(Some("wait=false"), "wait").unwrap());
        assert!(!flag(None, "wait").unwrap());
        assert!(flag(Some("wait=maybe"), "wait").is_err());
        assert_eq!(
            param(Some("runId=r-1%2Bx"), "runId").as_deref(),
            Some("r-1+x")
        );
        assert_eq!(param(Some("q=%zz%4"), "q").as_deref(), Some("%zz%4"));
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
    }
}
