//! Reading requests: JSON bodies (within the body limit) and query flags, each refused with a
//! JSON error. What every request passes before that (host, token, origin, content type,
//! declared length) is [`crate::guard`].

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request};
use futures_util::StreamExt as _;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, bad_json};
use crate::guard::{DRAIN_MAX_BYTES, drain, too_large};
use crate::state::AppState;

/// A JSON body of type `T`, read up to the body limit (a body sent without a length is
/// measured as it is read). The guard has checked that a body is declared
/// `application/json`; an empty body reads as `{}`.
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
}
