//! The loop's metrics, through the `metrics` facade: nothing is recorded (and next to nothing
//! spent) until a process installs a recorder (`sluice_telemetry::metrics::install`), whose
//! table gives each metric's help text and unit (docs/api.md#metrics).
//!
//! - `sluice_runs_total{status}`: runs ended, by the session's status after the run
//!   (`completed`, `awaiting_approval`, `aborted`, `error`);
//! - `sluice_active_runs`: runs in progress in this process;
//! - `sluice_busy_refusals_total{what="session"}`: claims refused because the session has a
//!   run in progress (in any process sharing the store);
//! - `sluice_model_requests_total{provider,model,outcome}`, with `outcome` `ok`, `cancelled`
//!   or the error's kind (`context_window_exceeded`, `rate_limited`, `overloaded`, `auth`,
//!   `bad_request`, `transient`, `protocol`);
//! - `sluice_model_request_duration_seconds{provider,model}`: one model request as the loop
//!   waits for it, the backend's retries included;
//! - `sluice_model_tokens_total{provider,model,direction}`: tokens the replies reported,
//!   `direction` `input` or `output`;
//! - `sluice_context_window_rejections_total{provider,model}` and
//!   `sluice_context_window_recoveries_total{outcome}` ([`Recovery`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_models::{Backend, BackendError, ErrorKind, ModelReply, ModelRequest};
use sluice_protocol::SessionStatus;

/// Counts a run in progress for as long as it lives (`sluice_active_runs`).
pub(crate) struct ActiveRun(());

impl ActiveRun {
    /// One more run in progress, until the value is dropped.
    pub(crate) fn start() -> ActiveRun {
        metrics::gauge!("sluice_active_runs").increment(1.0);
        ActiveRun(())
    }
}

impl Drop for ActiveRun {
    fn drop(&mut self) {
        metrics::gauge!("sluice_active_runs").decrement(1.0);
    }
}

/// A run ended with the session in `status`.
pub(crate) fn run_ended(status: SessionStatus) {
    metrics::counter!("sluice_runs_total", "status" => status.as_str()).increment(1);
}

/// A claim was refused: the session has a run in progress.
pub(crate) fn session_busy() {
    metrics::counter!("sluice_busy_refusals_total", "what" => "session").increment(1);
}

/// The provider and model labels of a backend named `name` ([`Backend::name`]:
/// `openai:gpt-4.1-mini` is provider `openai`, model `gpt-4.1-mini`; a name without a colon,
/// such as `scripted`, is both).
pub(crate) fn provider_and_model(name: &str) -> (String, String) {
    match name.split_once(':') {
        Some((provider, model)) => (provider.to_string(), model.to_string()),
        None => (name.to_string(), name.to_string()),
    }
}

/// A backend whose requests are counted and timed: what the loop asks goes through it
/// ([`crate::Agent::new`] wraps the backend it is given).
pub(crate) struct Metered {
    inner: Arc<dyn Backend>,
    provider: String,
    model: String,
}

impl Metered {
    /// `inner`, counted under the labels of its name.
    pub(crate) fn new(inner: Arc<dyn Backend>) -> Metered {
        let (provider, model) = provider_and_model(&inner.name());
        Metered {
            inner,
            provider,
            model,
        }
    }

    /// A request ended as `outcome` after `elapsed`.
    fn record(&self, outcome: &'static str, elapsed: Duration) {
        let (provider, model) = (self.provider.clone(), self.model.clone());
        metrics::counter!(
            "sluice_model_requests_total",
            "provider" => provider.clone(),
            "model" => model.clone(),
            "outcome" => outcome,
        )
        .increment(1);
        metrics::histogram!(
            "sluice_model_request_duration_seconds",
            "provider" => provider,
            "model" => model,
        )
        .record(elapsed.as_secs_f64());
    }
}

/// A request in flight: dropped before [`InFlight::end`] (the loop cancelled the run), it
/// counts as `cancelled`.
struct InFlight<'a> {
    backend: &'a Metered,
    started: Instant,
    ended: bool,
}

impl InFlight<'_> {
    fn end(mut self, result: &Result<ModelReply, BackendError>) {
        self.ended = true;
        let backend = self.backend;
        let outcome = match result {
            Ok(_) => "ok",
            Err(e) => error_kind(e.kind),
        };
        backend.record(outcome, self.started.elapsed());
        match result {
            Ok(ModelReply {
                usage: Some(usage), ..
            }) => {
                for (direction, tokens) in [
                    ("input", usage.input_tokens),
                    ("output", usage.output_tokens),
                ] {
                    metrics::counter!(
                        "sluice_model_tokens_total",
                        "provider" => backend.provider.clone(),
                        "model" => backend.model.clone(),
                        "direction" => direction,
                    )
                    .increment(tokens);
                }
            }
            Err(e) if e.context_window_exceeded() => {
                metrics::counter!(
                    "sluice_context_window_rejections_total",
                    "provider" => backend.provider.clone(),
                    "model" => backend.model.clone(),
                )
                .increment(1);
            }
            _ => {}
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.ended {
            self.backend.record("cancelled", self.started.elapsed());
        }
    }
}

#[async_trait::async_trait]
impl Backend for Metered {
    fn name(&self) -> String {
        self.inner.name()
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, BackendError> {
        let in_flight = InFlight {
            backend: self,
            started: Instant::now(),
            ended: false,
        };
        let result = self.inner.complete(request).await;
        in_flight.end(&result);
        result
    }
}

/// The label of an error's kind: its snake_case name, as the API shows it.
fn error_kind(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ContextWindowExceeded => "context_window_exceeded",
        ErrorKind::RateLimited => "rate_limited",
        ErrorKind::Overloaded => "overloaded",
        ErrorKind::Auth => "auth",
        ErrorKind::BadRequest => "bad_request",
        ErrorKind::Transient => "transient",
        ErrorKind::Protocol => "protocol",
        _ => "error",
    }
}

/// How a context-window recovery ended (`sluice_context_window_recoveries_total{outcome}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recovery {
    /// Observations were shrunk and the retry was answered.
    Recovered,
    /// No observation could be shrunk: the run failed.
    NothingToShrink,
    /// The retry was rejected again for its size: the run failed.
    StillTooLong,
    /// The retry failed for another reason: the run failed.
    Failed,
    /// The run was cancelled before or during the retry.
    Cancelled,
}

impl Recovery {
    /// The `outcome` label.
    fn as_str(self) -> &'static str {
        match self {
            Recovery::Recovered => "recovered",
            Recovery::NothingToShrink => "nothing_to_shrink",
            Recovery::StillTooLong => "still_too_long",
            Recovery::Failed => "failed",
            Recovery::Cancelled => "cancelled",
        }
    }
}

/// A context-window recovery ended as `outcome`.
pub(crate) fn recovery(outcome: Recovery) {
    metrics::counter!("sluice_context_window_recoveries_total", "outcome" => outcome.as_str())
        .increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_and_model_split_at_the_first_colon() {
        assert_eq!(
            provider_and_model("openai-compatible:qwen2.5:7b"),
            ("openai-compatible".to_string(), "qwen2.5:7b".to_string())
        );
        assert_eq!(
            provider_and_model("scripted"),
            ("scripted".to_string(), "scripted".to_string())
        );
    }
}
