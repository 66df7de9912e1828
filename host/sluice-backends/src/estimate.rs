//! The local size check made before a request is sent.
//!
//! Some servers do not refuse an over-long prompt: Ollama cuts it silently and answers `200`
//! about half a conversation. So when the model's context window is configured
//! (`context_window_tokens`), a provider backend estimates the size of the request body it is
//! about to send and, when the request *surely* does not fit, fails with
//! [`ErrorKind::ContextWindowExceeded`] without sending it, exactly as if the provider had
//! refused it; the agent loop then shrinks observations as it would after a real rejection.
//!
//! **The estimate** is deliberately crude and documented as such: one token per
//! [`BYTES_PER_TOKEN`] bytes of the request body as sent (its JSON, system prompt, messages
//! and tool schemas included), rounded up. "Surely" means the estimate is over the window by
//! more than [`SURE_MARGIN`] (10%): a request near the limit is sent and the provider decides.
//! The requested output cap (`max_tokens`) is not counted.

use crate::{BackendError, ErrorKind};

/// Bytes per token of the estimate.
pub const BYTES_PER_TOKEN: u64 = 4;

/// How far over the window the estimate must be before the request is refused locally:
/// estimate > window × 1.1.
pub const SURE_MARGIN: f64 = 1.1;

/// The estimated tokens of a request body of `body_bytes` bytes: bytes / 4, rounded up.
pub fn estimate_tokens(body_bytes: usize) -> u64 {
    (body_bytes as u64).div_ceil(BYTES_PER_TOKEN)
}

/// Refuses a request body of `body_bytes` bytes that surely exceeds a context window of
/// `window_tokens` tokens (no window: never refuses).
///
/// # Errors
/// A [`ErrorKind::ContextWindowExceeded`] error (no status) whose message says the request
/// was estimated locally and not sent.
pub fn check(body_bytes: usize, window_tokens: Option<u64>) -> Result<(), BackendError> {
    let Some(window) = window_tokens else {
        return Ok(());
    };
    let estimate = estimate_tokens(body_bytes);
    if (estimate as f64) > (window as f64) * SURE_MARGIN {
        return Err(BackendError {
            kind: ErrorKind::ContextWindowExceeded,
            status: None,
            message: format!(
                "the request was not sent: estimated locally at {estimate} tokens ({body_bytes} bytes / {BYTES_PER_TOKEN}), more than 10% over the model's context window of {window} tokens (model.context_window_tokens)"
            ),
            retry_after: None,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_only_when_surely_over() {
        assert_eq!(estimate_tokens(0), 0);
        assert_eq!(estimate_tokens(1), 1);
        assert_eq!(estimate_tokens(8), 2);
        assert_eq!(estimate_tokens(9), 3);
        assert!(check(usize::MAX / 2, None).is_ok());
        // Window 1000 tokens: up to 1100 estimated tokens (4400 bytes) are sent.
        assert!(check(4400, Some(1000)).is_ok());
        let e = check(4401, Some(1000)).unwrap_err();
        assert!(e.context_window_exceeded());
        assert_eq!(e.status, None);
        assert!(
            e.message.contains("estimated locally at 1101 tokens"),
            "{}",
            e.message
        );
        assert!(e.message.contains("not sent"));
    }
}
