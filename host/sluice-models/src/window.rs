//! A simulated context window in front of any backend (`--context-window-bytes N`).
//!
//! [`ContextWindow`] measures each request as [`ModelRequest::json_bytes`] (its compact JSON).
//! A request of more than `N` bytes is rejected without reaching the inner backend, with
//! exactly what Anthropic sends for an over-long prompt: HTTP 400 and the body
//! `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: T tokens > M maximum"}}`,
//! run through [`classify`](crate::classify()) like any real reply, so the agent loop sees an
//! [`ErrorKind::ContextWindowExceeded`](crate::ErrorKind::ContextWindowExceeded) error made by
//! the real classifier. Tokens are estimated at 4 bytes each: `T` = request bytes / 4 rounded
//! up, `M` = `N` / 4 rounded down (rounding so that `T > M` always holds when the request is
//! over the window). A request of exactly `N` bytes is sent.
//!
//! It counts the requests it sent on and the ones it rejected, and keeps each request's size.

use std::sync::Mutex;

use crate::backend::{Backend, ModelReply, ModelRequest};
use crate::classify::classify;
use crate::error::BackendError;

/// A [`Backend`] wrapper that rejects requests over a byte budget, as a provider would.
#[derive(Debug)]
pub struct ContextWindow<B> {
    inner: B,
    limit_bytes: usize,
    log: Mutex<Vec<WindowRecord>>,
}

/// One request a [`ContextWindow`] received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowRecord {
    /// Its size, in bytes of compact JSON ([`ModelRequest::json_bytes`]).
    pub bytes: usize,
    /// True when it was over the window and rejected (the inner backend never saw it).
    pub rejected: bool,
}

impl<B: Backend> ContextWindow<B> {
    /// Wraps `inner` with a window of `limit_bytes` bytes (requests of at most that many bytes
    /// are sent on). A limit of 0 rejects every request.
    pub fn new(inner: B, limit_bytes: usize) -> Self {
        ContextWindow {
            inner,
            limit_bytes,
            log: Mutex::new(Vec::new()),
        }
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// The window, in bytes.
    pub fn limit_bytes(&self) -> usize {
        self.limit_bytes
    }

    /// Requests sent on to the inner backend (including ones that then failed or were
    /// cancelled there).
    pub fn sent(&self) -> usize {
        self.records().iter().filter(|r| !r.rejected).count()
    }

    /// Requests rejected as over the window.
    pub fn rejected(&self) -> usize {
        self.records().iter().filter(|r| r.rejected).count()
    }

    /// Every request received, in order: its size and whether it was rejected.
    pub fn records(&self) -> Vec<WindowRecord> {
        // A poisoned lock only means another thread panicked mid-push; the log is still valid.
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn record(&self, record: WindowRecord) {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(record);
    }
}

/// The Anthropic error body for a request of `request_bytes` bytes against a window of
/// `limit_bytes` bytes (tokens estimated at 4 bytes: request rounded up, limit rounded down).
pub fn rejection_body(request_bytes: usize, limit_bytes: usize) -> String {
    let message = format!(
        "prompt is too long: {} tokens > {} maximum",
        request_bytes.div_ceil(4),
        limit_bytes / 4
    );
    serde_json::json!({
        "type": "error",
        "error": {"type": "invalid_request_error", "message": message},
    })
    .to_string()
}

#[async_trait::async_trait]
impl<B: Backend> Backend for ContextWindow<B> {
    /// The inner backend's name (the window is a test and demo device, not another model).
    fn name(&self) -> String {
        self.inner.name()
    }

    /// Rejects a request over the window with the classified Anthropic 400 (the inner backend is
    /// not called); otherwise forwards it unchanged.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, BackendError> {
        let bytes = request.json_bytes();
        if bytes > self.limit_bytes {
            self.record(WindowRecord {
                bytes,
                rejected: true,
            });
            let headers = [("content-type".to_string(), "application/json".to_string())];
            return Err(classify(
                400,
                &headers,
                &rejection_body(bytes, self.limit_bytes),
            ));
        }
        self.record(WindowRecord {
            bytes,
            rejected: false,
        });
        self.inner.complete(request).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use sluice_protocol::Message;

    use super::*;
    use crate::error::ErrorKind;

    struct Counting(AtomicUsize);

    #[async_trait::async_trait]
    impl Backend for Counting {
        fn name(&self) -> String {
            "counting".into()
        }
        async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, BackendError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(ModelReply {
                content: "ok".into(),
                ..ModelReply::default()
            })
        }
    }

    fn request(text: &str) -> ModelRequest {
        ModelRequest {
            system: "s".into(),
            messages: vec![Message::user(text, "t")],
            tools: vec![],
        }
    }

    #[tokio::test]
    async fn over_the_window_is_a_classified_anthropic_rejection() {
        let small = request("hi");
        let big = request(&"x".repeat(1000));
        let limit = small.json_bytes() + 10;
        let window = ContextWindow::new(Counting(AtomicUsize::new(0)), limit);

        let reply = window.complete(&small).await;
        assert_eq!(reply.map(|r| r.content), Ok("ok".to_string()));

        let err = window.complete(&big).await.err();
        let err = err.as_ref();
        assert!(
            err.is_some_and(BackendError::context_window_exceeded),
            "{err:?}"
        );
        assert_eq!(
            err.map(|e| (e.kind, e.status)),
            Some((ErrorKind::ContextWindowExceeded, Some(400)))
        );
        let expected = format!(
            "prompt is too long: {} tokens > {} maximum",
            big.json_bytes().div_ceil(4),
            limit / 4
        );
        assert_eq!(err.map(|e| e.message.as_str()), Some(expected.as_str()));

        assert_eq!(
            window.inner().0.load(Ordering::SeqCst),
            1,
            "the inner backend saw only the small request"
        );
        assert_eq!((window.sent(), window.rejected()), (1, 1));
        assert_eq!(
            window.records(),
            vec![
                WindowRecord {
                    bytes: small.json_bytes(),
                    rejected: false
                },
                WindowRecord {
                    bytes: big.json_bytes(),
                    rejected: true
                }
            ]
        );
    }

    #[tokio::test]
    async fn exactly_the_window_is_sent() {
        let r = request("abc");
        let window = ContextWindow::new(Counting(AtomicUsize::new(0)), r.json_bytes());
        assert!(window.complete(&r).await.is_ok());
        let window = ContextWindow::new(Counting(AtomicUsize::new(0)), r.json_bytes() - 1);
        assert!(
            window
                .complete(&r)
                .await
                .is_err_and(|e| e.context_window_exceeded())
        );
        assert_eq!(window.inner().0.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn wraps_a_shared_dyn_backend() {
        let inner: std::sync::Arc<dyn Backend> =
            std::sync::Arc::new(crate::scripted::ScriptedModel::new());
        let window: std::sync::Arc<dyn Backend> =
            std::sync::Arc::new(ContextWindow::new(inner, 10));
        assert_eq!(window.name(), "scripted");
        let err = window.complete(&request("hello")).await.err();
        assert!(err.is_some_and(|e| e.context_window_exceeded()));
    }

    #[test]
    fn rejection_body_is_anthropics_envelope() {
        assert_eq!(
            rejection_body(101, 100),
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 26 tokens > 25 maximum"}}"#
        );
        for limit in 0..64 {
            let err = classify(400, &[], &rejection_body(limit + 1, limit));
            assert!(err.context_window_exceeded());
        }
    }
}
