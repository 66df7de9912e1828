//! The HTTP side every provider backend shares: one reqwest client (rustls), timeouts, and
//! retries with capped exponential backoff and jitter for rate limits, overload and
//! transient failures. A context-window rejection is never retried here: it is the agent
//! loop's to handle, and sending the same request again cannot succeed.

use std::time::Duration;

use crate::{BackendError, ErrorKind, classify};

/// How long to wait, in ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// To establish a connection (default 10,000 ms).
    pub connect_ms: u64,
    /// For a whole non-streaming request, or between two events of a stream (default
    /// 300,000 ms).
    pub request_ms: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect_ms: 10_000,
            request_ms: 300_000,
        }
    }
}

/// When to retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts after the first (default 3). 0 disables retries.
    pub max_retries: u32,
    /// The first backoff, in ms (default 500); it doubles each retry.
    pub base_delay_ms: u64,
    /// The longest wait, in ms, including a provider's `retry-after` (default 30,000).
    pub max_delay_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
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
            .map_err(|e| protocol(format!("failed to start the HTTP client: {e}")))?;
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
            .map_err(|e| protocol(format!("failed to start the HTTP client: {e}")))?;
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
            let request = make().map_err(|e| BackendError {
                http_requests: Some(attempt),
                ..e
            })?;
            let result = self.client.execute(request).await;
            attempt += 1;
            let error = match result {
                Ok(response) if response.status().is_success() => match read(response).await {
                    Ok(value) => return Ok((value, attempt)),
                    Err(error) => error,
                },
                Ok(response) => error_of(response).await,
                Err(e) => network(&e),
            };
            if attempt > self.retry.max_retries || !RetryPolicy::retries(error.kind) {
                return Err(BackendError {
                    http_requests: Some(attempt),
                    ..error
                });
            }
            let wait = self.retry.delay(attempt, error.retry_after);
            tracing::warn!(kind = ?error.kind, status = ?error.status, attempt, wait_ms = wait.as_millis() as u64, error = %crate::wire::quote(&error.message), "model request failed; retrying");
            tokio::time::sleep(wait).await;
        }
    }
}

/// The classified error of a non-2xx response.
pub async fn error_of(response: reqwest::Response) -> BackendError {
    let status = response.status().as_u16();
    let headers = crate::wire::header_pairs(response.headers());
    let body = response.text().await.unwrap_or_default();
    classify(status, &headers, &body)
}

/// A failure to reach the provider or to read its answer: transient.
pub fn network(e: &reqwest::Error) -> BackendError {
    BackendError {
        status: e.status().map(|s| s.as_u16()),
        ..BackendError::new(
            ErrorKind::Transient,
            format!("the model request failed: {e}"),
        )
    }
}

/// An answer that could not be understood.
pub fn protocol(message: impl Into<String>) -> BackendError {
    BackendError::new(ErrorKind::Protocol, message)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
