//! The typed failure of a model request: [`BackendError`], its [`ErrorKind`], and the one
//! place it is built: [`BackendError::new`] and its shapes (bad request, protocol, transient,
//! network failure), plus the `with_*` builders for a status, a `retry-after`, the sizes of a
//! context-window rejection and the HTTP request count; and [`quote`], which cuts a
//! provider's text for a message.

use std::time::Duration;

use crate::overflow::Overflow;

/// The most characters of a server's text quoted in an error message.
pub const MAX_QUOTED_CHARS: usize = 300;

/// What kind of failure a [`BackendError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request does not fit the model's context window.
    ContextWindowExceeded,
    /// Too many requests (HTTP 429); `retry_after` may say when to try again.
    RateLimited,
    /// The provider is overloaded or unavailable (HTTP 529, 503).
    Overloaded,
    /// The credentials were refused (HTTP 401, 403).
    Auth,
    /// The request was refused for another reason (HTTP 400 and others).
    BadRequest,
    /// The network failed or the provider had a server error; worth retrying.
    Transient,
    /// The reply could not be understood.
    Protocol,
}

/// A failed model request.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BackendError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
    /// The provider's own message (or ours, for network and protocol failures).
    pub message: String,
    /// When the provider asked to wait before retrying (`retry-after`).
    pub retry_after: Option<Duration>,
    /// For a context-window rejection: the prompt's size and the limit in tokens, when the
    /// provider's message states them or the backend's estimate knows them.
    pub overflow: Option<Overflow>,
    /// HTTP requests made before failing, retries included: `Some(0)` when the request was
    /// never sent (the pre-send estimate refused it); `None` for models that make none.
    pub http_requests: Option<u32>,
}

impl BackendError {
    /// An error of `kind` with `message`, without status, `retry-after`, sizes or count.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> BackendError {
        BackendError {
            kind,
            status: None,
            message: message.into(),
            retry_after: None,
            overflow: None,
            http_requests: None,
        }
    }

    /// A [`ErrorKind::BadRequest`] error without a status: a configuration the backend cannot
    /// work with, or a request reqwest cannot build.
    pub fn bad_request(message: impl Into<String>) -> BackendError {
        BackendError::new(ErrorKind::BadRequest, message)
    }

    /// A [`ErrorKind::Protocol`] error: an answer that could not be understood (or a request
    /// that could not be encoded, or an HTTP client that could not start).
    pub fn protocol(message: impl Into<String>) -> BackendError {
        BackendError::new(ErrorKind::Protocol, message)
    }

    /// A [`ErrorKind::Transient`] error: the model's answer broke off (a stream that ended
    /// before its last event); worth retrying.
    pub fn transient(message: impl Into<String>) -> BackendError {
        BackendError::new(ErrorKind::Transient, message)
    }

    /// A failure to reach the provider or to read its answer: [`ErrorKind::Transient`], with
    /// the status reqwest saw, if any.
    pub fn network(e: &reqwest::Error) -> BackendError {
        BackendError::transient(format!("the model request failed: {e}"))
            .with_status(e.status().map(|s| s.as_u16()))
    }

    /// The same error with the HTTP `status` it came with, if any.
    pub fn with_status(self, status: Option<u16>) -> BackendError {
        BackendError { status, ..self }
    }

    /// The same error with the wait the provider asked for (`retry-after`), if any.
    pub fn with_retry_after(self, retry_after: Option<Duration>) -> BackendError {
        BackendError {
            retry_after,
            ..self
        }
    }

    /// The same error with the sizes of a context-window rejection, if known.
    pub fn with_overflow(self, overflow: Option<Overflow>) -> BackendError {
        BackendError { overflow, ..self }
    }

    /// The same error, counting `sent` HTTP requests (see
    /// [`http_requests`](BackendError::http_requests)).
    pub fn with_requests(self, sent: u32) -> BackendError {
        BackendError {
            http_requests: Some(sent),
            ..self
        }
    }

    /// True when Sluice refused the request itself, without sending it (the pre-send
    /// estimate): the message is Sluice's, not the provider's.
    pub fn refused_locally(&self) -> bool {
        self.http_requests == Some(0)
    }

    /// True when the request did not fit the context window: the only signal the agent
    /// loop acts on to shrink observations.
    pub fn context_window_exceeded(&self) -> bool {
        self.kind == ErrorKind::ContextWindowExceeded
    }
}

/// `text` cut to [`MAX_QUOTED_CHARS`] characters (`…` appended when cut), for an error
/// message that quotes what a server sent.
pub fn quote(text: &str) -> String {
    sluice_text::cut_chars(text, MAX_QUOTED_CHARS).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_cut_on_characters() {
        assert_eq!(quote("short"), "short");
        let q = quote(&"é".repeat(400));
        assert_eq!(q.chars().count(), MAX_QUOTED_CHARS + 1);
        assert!(q.ends_with('…'));
    }
}
