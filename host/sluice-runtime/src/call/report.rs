//! The one place a finished call is reported (`report`): its log line, the fields of the
//! caller's span, and its metrics (docs/telemetry.md).
//!
//! The runtime creates no span of its own: the caller's span of the call (`execute_tool`
//! in the agent loop, `tools/call` over MCP) declares the `sluice.*` fields, and
//! `report` records them on [`tracing::Span::current`]. Metrics go through the `metrics`
//! facade: without a recorder (no `/metrics`), they cost an atomic load.

use std::sync::OnceLock;
use std::time::Duration;

use crate::call::observation::Observation;
use crate::call::status::{CallStatus, STATUSES, status_name};

/// The target of a call's log line, as docs/telemetry.md#sandbox-facts names it for
/// `SLUICE_LOG` filters: the facts' module, where the line was written before `report`
/// moved here.
const LOG_TARGET: &str = "sluice_runtime::call::facts";

/// Reports a finished call of tool `tool` (`None` for a name no tool has) that took
/// `elapsed` in all: one log line (at `info` when it made HTTP requests or passed a host
/// limit, else at `debug`), the `sluice.*` fields of the current span, and the metrics
/// (the tool's handles in `metrics`).
pub(crate) fn report(
    tool: Option<&str>,
    metrics: &ToolMetricsCell,
    observation: &Observation,
    elapsed: Duration,
) {
    let facts = observation.facts();
    let status = status_name(observation.status());
    let bytes = observation.text().len();
    let full = observation.full_bytes();
    let name = tool.unwrap_or("unknown");
    // Numbers as i64: tracing-opentelemetry exports a u64 as text.
    let span = tracing::Span::current();
    span.record("sluice.observation.bytes", bytes as i64);
    span.record("sluice.observation.status", status);
    span.record("sluice.observation.paged", observation.paged());
    if observation.truncated() {
        span.record("sluice.observation.cut_from", full as i64);
    }
    if observation.status() != CallStatus::Ok {
        span.record("error.type", status);
    }
    span.record("sluice.guest.time_ms", facts.guest_us as f64 / 1000.0);
    span.record("sluice.queue.wait_ms", facts.queue_wait_us as f64 / 1000.0);
    span.record("sluice.memory.peak_bytes", facts.peak_memory_bytes as i64);
    span.record("sluice.descriptors", i64::from(facts.peak_descriptors));
    span.record("sluice.http.requests", i64::from(facts.http_requests));
    span.record("sluice.http.denied", i64::from(facts.http_denied));
    if !facts.digest.is_empty() {
        span.record("sluice.component.digest", facts.digest.as_str());
    }

    let ms = elapsed.as_secs_f64() * 1000.0;
    let outcome = facts.outcome.as_str();
    if facts.http_requests > 0 {
        tracing::info!(target: LOG_TARGET, tool = name, status, outcome, bytes, full_bytes = full, ms, http = %facts.http_summary, "tool call");
    } else if outcome == "resource-limit" {
        tracing::info!(
            target: LOG_TARGET,
            tool = name,
            status,
            outcome,
            bytes,
            full_bytes = full,
            ms,
            "tool call"
        );
    } else {
        tracing::debug!(target: LOG_TARGET, tool = name, status, outcome, bytes, full_bytes = full, ms, withheld = ?observation.withheld(), "tool call");
    }

    let metrics = metrics.get_or_init(|| ToolMetrics::new(name));
    metrics.call(observation.status()).increment(1);
    metrics.duration.record(elapsed.as_secs_f64());
    metrics.bytes.increment(bytes as u64);
    queue_wait().record(Duration::from_micros(facts.queue_wait_us).as_secs_f64());
    if observation.paged() {
        let pages = "sluice_observation_pages_total";
        metrics.lazy(&metrics.pages, pages).increment(1);
    }
    if observation.truncated() {
        let cuts = "sluice_observation_cuts_total";
        metrics.lazy(&metrics.cuts, cuts).increment(1);
        let cut_bytes = "sluice_observation_cut_bytes_total";
        (metrics.lazy(&metrics.cut_bytes, cut_bytes)).increment((full - bytes) as u64);
    }
}

/// The metric handles of one tool's calls, registered on its first call (a handle costs an
/// atomic add; naming a metric by its labels on every call costs a lookup).
pub(crate) struct ToolMetrics {
    tool: String,
    /// `sluice_tool_calls_total`, by [`CallStatus`] in the order of [`STATUSES`], each
    /// registered when first counted (a series appears once it has been counted).
    calls: [OnceLock<metrics::Counter>; STATUSES.len()],
    duration: metrics::Histogram,
    bytes: metrics::Counter,
    /// These three are registered when first counted, as `calls`.
    pages: OnceLock<metrics::Counter>,
    cuts: OnceLock<metrics::Counter>,
    cut_bytes: OnceLock<metrics::Counter>,
}

impl ToolMetrics {
    fn new(tool: &str) -> ToolMetrics {
        let tool = tool.to_string();
        ToolMetrics {
            calls: Default::default(),
            duration: metrics::histogram!("sluice_tool_call_duration_seconds", "tool" => tool.clone()),
            bytes: metrics::counter!("sluice_observation_bytes_total", "tool" => tool.clone()),
            pages: OnceLock::new(),
            cuts: OnceLock::new(),
            cut_bytes: OnceLock::new(),
            tool,
        }
    }

    /// The tool's counter `name` held in `cell`, registered on first use.
    fn lazy<'a>(
        &self,
        cell: &'a OnceLock<metrics::Counter>,
        name: &'static str,
    ) -> &'a metrics::Counter {
        cell.get_or_init(|| metrics::counter!(name, "tool" => self.tool.clone()))
    }

    /// The counter of calls that came to `status`.
    fn call(&self, status: CallStatus) -> &metrics::Counter {
        let at = STATUSES.iter().position(|s| *s == status).unwrap_or(0);
        self.calls[at].get_or_init(|| {
            metrics::counter!("sluice_tool_calls_total", "tool" => self.tool.clone(), "status" => status_name(status))
        })
    }
}

/// The handles of a tool's metrics, made on its first call: the recorder (`GET /metrics`) is
/// installed before any call runs.
pub(crate) type ToolMetricsCell = OnceLock<ToolMetrics>;

/// The metrics of calls of names no tool has (`tool="unknown"`).
pub(crate) fn unknown_tool_metrics() -> &'static ToolMetricsCell {
    static UNKNOWN: ToolMetricsCell = OnceLock::new();
    &UNKNOWN
}

/// `sluice_tool_call_queue_wait_seconds`.
fn queue_wait() -> &'static metrics::Histogram {
    static QUEUE_WAIT: OnceLock<metrics::Histogram> = OnceLock::new();
    QUEUE_WAIT.get_or_init(|| metrics::histogram!("sluice_tool_call_queue_wait_seconds"))
}

/// A span (at `INFO`) of one tool call named `$name`, with the caller's fields (each followed
/// by a comma) and every field `report` records on it when the call ends, `Empty` until
/// then: the one list of a tool call's span fields (`otel.status_code`, `error.type`,
/// `sluice.observation.*`, `sluice.guest.time_ms`, `sluice.queue.wait_ms`,
/// `sluice.memory.peak_bytes`, `sluice.descriptors`, `sluice.http.*`,
/// `sluice.component.digest`; docs/telemetry.md#sandbox-facts). The agent loop's
/// `execute_tool` and MCP's `tools/call` are made with it.
#[macro_export]
macro_rules! tool_call_span {
    ($name:expr, $($fields:tt)*) => {
        ::tracing::info_span!(
            $name,
            $($fields)*
            otel.status_code = ::tracing::field::Empty,
            error.type = ::tracing::field::Empty,
            sluice.observation.bytes = ::tracing::field::Empty,
            sluice.observation.status = ::tracing::field::Empty,
            sluice.observation.paged = ::tracing::field::Empty,
            sluice.observation.cut_from = ::tracing::field::Empty,
            sluice.guest.time_ms = ::tracing::field::Empty,
            sluice.queue.wait_ms = ::tracing::field::Empty,
            sluice.memory.peak_bytes = ::tracing::field::Empty,
            sluice.descriptors = ::tracing::field::Empty,
            sluice.http.requests = ::tracing::field::Empty,
            sluice.http.denied = ::tracing::field::Empty,
            sluice.component.digest = ::tracing::field::Empty,
        )
    };
}
