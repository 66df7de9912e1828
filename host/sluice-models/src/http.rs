//! The transport every HTTP provider shares: one reqwest client (rustls), timeouts, the
//! request ([`Http::post_json`]), retries with capped exponential backoff and jitter for rate
//! limits, overload and transient failures ([`Http::send_and_read`]), reading a successful
//! answer as JSON or as server-sent events (`read_answer`, driving a provider's
//! `Decoder`), and classifying a failed one ([`error_of`]). A context-window rejection is
//! never retried here: it is the agent loop's to handle, and sending the same request again
//! cannot succeed.
//!
//! The transport knows no provider: each provider is a codec that builds the JSON body and
//! implements `Decoder` for its answers.

use std::time::Duration;

use serde_json::Value;
use sluice_protocol::model;

use crate::backend::ModelReply;
use crate::classify::classify;
use crate::error::{BackendError, ErrorKind, quote};
use crate::sse::{SseEvent, SseParser};

/// The most bytes of a body kept to classify it when it turns out not to be an event stream
/// (old llama.cpp answers `200` with a plain JSON error to a streaming request).
const MAX_UNPARSED_BYTES: usize = 4 << 20;

/// How long to wait, in ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// To establish a connection (default
    /// [`DEFAULT_CONNECT_TIMEOUT_MS`](sluice_protocol::model::DEFAULT_CONNECT_TIMEOUT_MS)).
    pub connect_ms: u64,
    /// For a whole non-streaming request, or between two events of a stream (default
    /// [`DEFAULT_REQUEST_TIMEOUT_MS`](sluice_protocol::model::DEFAULT_REQUEST_TIMEOUT_MS)).
    pub request_ms: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect_ms: model::DEFAULT_CONNECT_TIMEOUT_MS,
            request_ms: model::DEFAULT_REQUEST_TIMEOUT_MS,
        }
    }
}

/// When to retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts after the first (default
    /// [`DEFAULT_MAX_RETRIES`](sluice_protocol::model::DEFAULT_MAX_RETRIES)). 0 disables
    /// retries.
    pub max_retries: u32,
    /// The first backoff, in ms (default 500); it doubles each retry.
    pub base_delay_ms: u64,
    /// The longest wait, in ms, including a provider's `retry-after` (default 30,000).
    pub max_delay_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: model::DEFAULT_MAX_RETRIES,
            base_delay_ms: 500,
            max_delay_ms: 30_000,
        }
    }
}

impl RetryPolicy {
    /// True when an error of this kind is worth sending again: rate limits, overload and
    /// transient failures (never a context-window rejection, a bad request or bad
    /// credentials).
    pub fn retries(kind: ErrorKind) -> bool {
        matches!(
            kind,
            ErrorKind::RateLimited | ErrorKind::Overloaded | ErrorKind::Transient
        )
    }

    /// The wait before retry number `attempt` (1-based): the provider's `retry-after` when
    /// it gave one, else `base × 2^(attempt-1)` with ±25% jitter; never more than
    /// `max_delay_ms`.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let cap = Duration::from_millis(self.max_delay_ms);
        if let Some(after) = retry_after {
            return after.min(cap);
        }
        let exp = self
            .base_delay_ms
            .saturating_mul(1u64 << attempt.saturating_sub(1).min(20));
        let jitter = 0.75 + 0.5 * unit_random();
        Duration::from_millis((exp as f64 * jitter) as u64).min(cap)
    }
}

/// A number in [0, 1), from the standard library's randomly keyed hasher (enough for
/// jitter; not for anything secret).
fn unit_random() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0);
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// An HTTP client for one provider.
#[derive(Clone, Debug)]
pub struct Http {
    client: reqwest::Client,
    retry: RetryPolicy,
    timeouts: Timeouts,
}

impl Http {
    /// A client with `timeouts` and `retry`.
    ///
    /// # Errors
    /// A `Protocol` error when the TLS stack cannot start.
    pub fn new(timeouts: Timeouts, retry: RetryPolicy) -> Result<Http, BackendError> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_millis(timeouts.connect_ms))
            .read_timeout(Duration::from_millis(timeouts.request_ms))
            .user_agent(concat!("sluice/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| BackendError::protocol(format!("failed to start the HTTP client: {e}")))?;
        Ok(Http {
            client,
            retry,
            timeouts,
        })
    }

    /// The same client settings without a connection pool: every request opens a new
    /// connection (for a request that must not go out on a connection the server may just
    /// have closed).
    ///
    /// # Errors
    /// A `Protocol` error when the TLS stack cannot start.
    pub fn unpooled(&self) -> Result<Http, BackendError> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_millis(self.timeouts.connect_ms))
            .read_timeout(Duration::from_millis(self.timeouts.request_ms))
            .user_agent(concat!("sluice/", env!("CARGO_PKG_VERSION")))
            .pool_max_idle_per_host(0)
            .build()
            .map_err(|e| BackendError::protocol(format!("failed to start the HTTP client: {e}")))?;
        Ok(Http {
            client,
            retry: self.retry,
            timeouts: self.timeouts,
        })
    }

    /// The underlying client, to build requests with.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// The timeouts.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// Sends the request `make` builds (called again for every attempt, so signatures and
    /// dates are fresh) and returns the response of the first attempt that succeeds (2xx),
    /// with the number of HTTP requests made (retries included).
    /// A non-2xx answer is classified from its status, headers and body ([`classify()`]);
    /// rate limits, overload and transient failures are retried by the [`RetryPolicy`].
    ///
    /// # Errors
    /// The classified error of the last attempt, with
    /// [`http_requests`](BackendError::http_requests) set.
    pub async fn send(
        &self,
        make: impl Fn() -> Result<reqwest::Request, BackendError>,
    ) -> Result<(reqwest::Response, u32), BackendError> {
        self.send_and_read(make, |response| async move { Ok(response) })
            .await
    }

    /// Like [`send`](Http::send), and also reads the successful response with `read` inside
    /// the same retry loop: an error `read` returns (a stream that broke off, an `overloaded`
    /// or rate-limit event inside a `200` stream) is retried by the same [`RetryPolicy`] and
    /// counts against the same retry budget. A context-window rejection is never retried,
    /// whether it came as a status or inside the stream. Returns the value with the number of
    /// HTTP requests made.
    ///
    /// # Errors
    /// The error of the last attempt: classified from the status, or what `read` returned,
    /// with [`http_requests`](BackendError::http_requests) set.
    pub async fn send_and_read<T, F, Fut>(
        &self,
        make: impl Fn() -> Result<reqwest::Request, BackendError>,
        read: F,
    ) -> Result<(T, u32), BackendError>
    where
        F: Fn(reqwest::Response) -> Fut,
        Fut: std::future::Future<Output = Result<T, BackendError>>,
    {
        let mut attempt = 0;
        loop {
            let request = make().map_err(|e| e.with_requests(attempt))?;
            let result = self.client.execute(request).await;
            attempt += 1;
            let error = match result {
                Ok(response) if response.status().is_success() => match read(response).await {
                    Ok(value) => return Ok((value, attempt)),
                    Err(error) => error,
                },
                Ok(response) => error_of(response).await,
                Err(e) => BackendError::network(&e),
            };
            if attempt > self.retry.max_retries || !RetryPolicy::retries(error.kind) {
                return Err(error.with_requests(attempt));
            }
            let wait = self.retry.delay(attempt, error.retry_after);
            tracing::warn!(kind = ?error.kind, status = ?error.status, attempt, wait_ms = wait.as_millis() as u64, error = %quote(&error.message), "model request failed; retrying");
            tokio::time::sleep(wait).await;
        }
    }

    /// `POST`s the JSON `body` to `url` through [`send_and_read`](Http::send_and_read),
    /// asking for server-sent events when `stream`; `auth` adds the provider's own headers
    /// (its key, its API version) to every attempt, and `read` reads each successful answer.
    ///
    /// # Errors
    /// A `Protocol` error when the body cannot be encoded; otherwise as
    /// [`send_and_read`](Http::send_and_read).
    pub async fn post_json<T, F, Fut>(
        &self,
        url: &str,
        body: &Value,
        stream: bool,
        auth: impl Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
        read: F,
    ) -> Result<(T, u32), BackendError>
    where
        F: Fn(reqwest::Response) -> Fut,
        Fut: std::future::Future<Output = Result<T, BackendError>>,
    {
        let body = serde_json::to_vec(body)
            .map_err(|e| BackendError::protocol(format!("failed to encode the request: {e}")))?;
        let make = || json_post(&self.client, url, &body, stream, &auth);
        self.send_and_read(make, read).await
    }
}

/// The classified error of a non-2xx response. A `404` also names the URL that was tried
/// ([`shown_url`]: no credentials, no query), since it usually means `model.base_url` points
/// at the wrong path.
pub async fn error_of(response: reqwest::Response) -> BackendError {
    let status = response.status().as_u16();
    let url = shown_url(response.url());
    let headers = header_pairs(response.headers());
    let body = response.text().await.unwrap_or_default();
    let error = classify(status, &headers, &body);
    if status == 404 {
        let message = format!(
            "{} (HTTP 404 from POST {url}: the server has no such endpoint or model there; check model.base_url and model.name)",
            error.message
        );
        BackendError { message, ..error }
    } else {
        error
    }
}

/// `url` as an error message shows it: scheme, host, port and path, without a user name, a
/// password, a query or a fragment (where keys are sometimes put).
pub fn shown_url(url: &reqwest::Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

/// The response headers as `(name, value)` pairs (values that are not text are left out), for
/// [`classify`](crate::classify()).
fn header_pairs(headers: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(k, v)| {
            v.to_str()
                .ok()
                .map(|v| (k.as_str().to_string(), v.to_string()))
        })
        .collect()
}

/// The `POST` of the JSON `body` to `url`, asking for server-sent events when `stream`;
/// `auth` adds the provider's own headers (its key, its API version).
///
/// # Errors
/// `BadRequest` when reqwest cannot build the request (a URL it cannot use).
fn json_post(
    client: &reqwest::Client,
    url: &str,
    body: &[u8],
    stream: bool,
    auth: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
) -> Result<reqwest::Request, BackendError> {
    let mut builder = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_vec());
    if stream {
        builder = builder.header(reqwest::header::ACCEPT, "text/event-stream");
    }
    auth(builder)
        .build()
        .map_err(|e| BackendError::bad_request(format!("failed to build the request: {e}")))
}

/// The headers and text of a response that is not streamed, for a decoder's [`Decoder::decode_body`].
///
/// # Errors
/// A network error when the body cannot be read.
async fn body_of(
    response: reqwest::Response,
) -> Result<(Vec<(String, String)>, String), BackendError> {
    let headers = header_pairs(response.headers());
    let text = response
        .text()
        .await
        .map_err(|e| BackendError::network(&e))?;
    Ok((headers, text))
}

/// How an event stream ended.
enum Ending {
    /// The decoder saw the provider's last event (`[DONE]`, `message_stop`).
    Terminal,
    /// The body ended without it.
    Eof {
        /// The whole body, when it held no event at all (then it is probably a plain JSON
        /// error or reply), with the response headers.
        unparsed: Option<(Vec<(String, String)>, String)>,
    },
}

/// Reads the event stream of `response`, handing each event to `on_event`, which returns
/// `Ok(true)` when the reply is complete (the rest of the body is not read) or an error,
/// which ends the read.
///
/// # Errors
/// What `on_event` returned; a transient error when the connection broke; a protocol error
/// for a line too long.
async fn read_sse(
    mut response: reqwest::Response,
    mut on_event: impl FnMut(SseEvent) -> Result<bool, BackendError>,
) -> Result<Ending, BackendError> {
    let headers = header_pairs(response.headers());
    let mut parser = SseParser::new();
    let mut raw: Option<Vec<u8>> = Some(Vec::new());
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(e) => return Err(BackendError::network(&e)),
        };
        let events = parser.push(&chunk).map_err(|e| {
            BackendError::protocol(format!("the model's event stream is malformed: {e}"))
        })?;
        if let Some(kept) = raw.as_mut() {
            if events.is_empty() && kept.len() + chunk.len() <= MAX_UNPARSED_BYTES {
                kept.extend_from_slice(&chunk);
            } else {
                raw = None;
            }
        }
        for event in events {
            if on_event(event)? {
                return Ok(Ending::Terminal);
            }
        }
    }
    if let Some(event) = parser.finish() {
        raw = None;
        if on_event(event)? {
            return Ok(Ending::Terminal);
        }
    }
    Ok(Ending::Eof {
        unparsed: raw.map(|bytes| (headers, String::from_utf8_lossy(&bytes).into_owned())),
    })
}

/// True when an event stream's whole body held no event: only blank lines and comments (the
/// `: ping` keep-alives sse-starlette sends while a slow llama-cpp-python server loads a
/// model), or nothing at all.
fn holds_no_event(body: &str) -> bool {
    body.lines()
        .all(|line| line.trim().is_empty() || line.starts_with(':'))
}

/// A provider's decoder of the answers [`read_answer`] reads: the codec side of the
/// transport.
pub(crate) trait Decoder: Default {
    /// True when a streamed request answered by a `200` whose body held no event at all
    /// (only comments, or nothing) is [`Answer::EmptyStream`], for the backend to send again
    /// unstreamed; false: such a body is decoded as a plain reply or error.
    const EMPTY_STREAM_IS_AN_ANSWER: bool = false;

    /// Decodes a body that is not an event stream: a reply, or an error body inside a `200`.
    fn decode_body(headers: &[(String, String)], text: &str) -> Result<ModelReply, BackendError>;

    /// Takes one event of a stream; `Ok(true)` when it was the reply's last (the rest of the
    /// body is not read).
    fn event(&mut self, event: SseEvent) -> Result<bool, BackendError>;

    /// The reply, once the stream has ended: `complete` when [`event`](Decoder::event) said
    /// the last event came, false when the body ended without it (an error unless the
    /// decoder knows the reply is whole).
    fn end(self, complete: bool) -> Result<ModelReply, BackendError>;
}

/// What one successful response held.
#[derive(Debug)]
pub(crate) enum Answer {
    /// A reply.
    Reply(ModelReply),
    /// A streamed request answered by an empty `200` (see
    /// [`Decoder::EMPTY_STREAM_IS_AN_ANSWER`]).
    EmptyStream,
}

impl Answer {
    /// The reply; an empty stream is an error like any empty body (classified as a `200`
    /// without a body), for a backend that does not send the request again.
    pub(crate) fn into_reply(self) -> Result<ModelReply, BackendError> {
        match self {
            Answer::Reply(reply) => Ok(reply),
            Answer::EmptyStream => Err(classify(200, &[], "")),
        }
    }
}

/// Reads one successful response with the decoder `D`: the whole body through
/// [`Decoder::decode_body`] when not `streamed`, else its events through a new `D`.
///
/// # Errors
/// What the decoder returned; a transient error when the connection broke; a protocol error
/// for a malformed event stream.
pub(crate) async fn read_answer<D: Decoder>(
    response: reqwest::Response,
    streamed: bool,
) -> Result<Answer, BackendError> {
    if !streamed {
        let (headers, text) = body_of(response).await?;
        return D::decode_body(&headers, &text).map(Answer::Reply);
    }
    let mut decoder = D::default();
    match read_sse(response, |event| decoder.event(event)).await? {
        Ending::Terminal => decoder.end(true).map(Answer::Reply),
        Ending::Eof {
            unparsed: Some((_, text)),
        } if D::EMPTY_STREAM_IS_AN_ANSWER && holds_no_event(&text) => Ok(Answer::EmptyStream),
        Ending::Eof {
            unparsed: Some((headers, text)),
        } => D::decode_body(&headers, &text).map(Answer::Reply),
        Ending::Eof { unparsed: None } => decoder.end(false).map(Answer::Reply),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_have_no_credentials_query_or_fragment() {
        let url = reqwest::Url::parse(
            "https://user:s3cret@gateway.example:8443/v1/chat/completions?key=s3cret#x",
        )
        .unwrap();
        assert_eq!(
            shown_url(&url),
            "https://gateway.example:8443/v1/chat/completions"
        );
    }

    #[test]
    fn backoff_doubles_with_jitter_and_honours_retry_after_within_the_cap() {
        let p = RetryPolicy::default();
        for attempt in 1..=4 {
            let d = p.delay(attempt, None).as_millis() as u64;
            let base = 500 << (attempt - 1);
            assert!(
                (base * 3 / 4..=base * 5 / 4).contains(&d),
                "attempt {attempt}: {d} ms"
            );
        }
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(700))),
            Duration::from_secs(30)
        );
        assert_eq!(p.delay(30, None), Duration::from_secs(30));
        assert!(!RetryPolicy::retries(ErrorKind::ContextWindowExceeded));
        assert!(!RetryPolicy::retries(ErrorKind::BadRequest));
        assert!(RetryPolicy::retries(ErrorKind::RateLimited));
    }

    #[test]
    fn a_body_of_comments_holds_no_event() {
        assert!(holds_no_event(""));
        assert!(holds_no_event("\r\n\n"));
        assert!(holds_no_event(
            ": ping - 2026-12-01 17:08:52.059345+00:00\r\n\r\n: ping - 2026-12-01 17:09:07.060913+00:00\r\n\r\n"
        ));
        assert!(!holds_no_event(": ping\n\n{\"error\":\"x\"}"));
        assert!(!holds_no_event("data: [DONE]\n\n"));
    }
}
