//! The Prometheus recorder: the one place the process's metrics are kept and rendered
//! (docs/api.md#metrics). The other crates emit through the `metrics` facade
//! (`metrics::counter!("sluice_runs_total", "status" => …)`), which does nothing until
//! [`install`] puts this recorder in place; `sluice serve` and `sluice mcp` install it when
//! `telemetry.metrics` or `telemetry.metrics_listen` is set, and serve [`render`]'s text at
//! `GET /metrics`.
//!
//! [`METRICS`] is the table of every metric: its name as rendered, kind, unit, help text and,
//! for a histogram, its buckets. Names are rendered as written (counters end in `_total`,
//! durations in `_seconds`); the exporter adds no suffix of its own.
//!
//! ```no_run
//! sluice_telemetry::metrics::install()?;
//! metrics::counter!("sluice_runs_total", "status" => "completed").increment(1);
//! assert!(sluice_telemetry::metrics::render().contains("sluice_runs_total{status=\"completed\"} 1"));
//! # Ok::<(), sluice_telemetry::metrics::MetricsError>(())
//! ```

use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use metrics::Unit;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// What a metric is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (rendered as a Prometheus counter).
    Counter,
    /// Goes up and down (a Prometheus gauge).
    Gauge,
    /// Observations counted in buckets (a Prometheus histogram: `_bucket`, `_sum`, `_count`).
    Histogram,
}

/// One metric of [`METRICS`].
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    /// The name as rendered.
    pub name: &'static str,
    /// Its kind.
    pub kind: Kind,
    /// Its unit (shown in no name: the names carry it).
    pub unit: Unit,
    /// The `# HELP` text, naming the labels and their values.
    pub help: &'static str,
    /// The upper bounds of a histogram's buckets, in its unit; empty for the other kinds.
    pub buckets: &'static [f64],
}

/// Tool calls, in seconds: a millisecond to the longest timeout.
const CALL_SECONDS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// Waits for a slot of the call pool, in seconds: none at all, to a busy pool's seconds.
const QUEUE_SECONDS: &[f64] = &[
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0,
];

/// Model requests, in seconds: an offline model's milliseconds to a slow provider's minutes
/// (retries included).
const MODEL_SECONDS: &[f64] = &[
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0,
];

/// Store appends, in seconds: SQLite's fraction of a millisecond to a loaded PostgreSQL's
/// second.
const APPEND_SECONDS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

const fn counter(name: &'static str, help: &'static str) -> Metric {
    Metric {
        name,
        kind: Kind::Counter,
        unit: Unit::Count,
        help,
        buckets: &[],
    }
}

const fn bytes(name: &'static str, help: &'static str) -> Metric {
    Metric {
        unit: Unit::Bytes,
        ..counter(name, help)
    }
}

const fn seconds(name: &'static str, help: &'static str, buckets: &'static [f64]) -> Metric {
    Metric {
        name,
        kind: Kind::Histogram,
        unit: Unit::Seconds,
        help,
        buckets,
    }
}

/// Every metric Sluice emits, by the crate that emits it.
pub const METRICS: &[Metric] = &[
    // The runtime (sluice-runtime): one tool call.
    counter(
        "sluice_tool_calls_total",
        "Tool calls, by tool and status (ok, tool_error, unknown_tool, key_material, cancelled).",
    ),
    seconds(
        "sluice_tool_call_duration_seconds",
        "Duration of a tool call, from the toolbox's call to its observation, by tool.",
        CALL_SECONDS,
    ),
    seconds(
        "sluice_tool_call_queue_wait_seconds",
        "Time a call waited for a slot of the call pool.",
        QUEUE_SECONDS,
    ),
    bytes(
        "sluice_observation_bytes_total",
        "Bytes of observations returned, by tool.",
    ),
    counter(
        "sluice_observation_pages_total",
        "Observations that were one page of more (a cursor to continue), by tool.",
    ),
    counter(
        "sluice_observation_cuts_total",
        "Observations cut at the cap, by tool.",
    ),
    bytes(
        "sluice_observation_cut_bytes_total",
        "Bytes cut from observations at the cap, by tool.",
    ),
    counter(
        "sluice_busy_refusals_total",
        "Requests refused as busy, by what was busy (calls: the call pool; session: a run in progress).",
    ),
    counter(
        "sluice_component_compiles_total",
        "Component compiles, by compiler (cranelift, winch) and outcome.",
    ),
    counter(
        "sluice_http_requests_total",
        "Outbound HTTP requests of components, by host and decision (allowed, denied).",
    ),
    // The agent loop (sluice-agent).
    counter(
        "sluice_runs_total",
        "Runs ended, by the session's status after the run (completed, awaiting_approval, aborted, error).",
    ),
    Metric {
        name: "sluice_active_runs",
        kind: Kind::Gauge,
        unit: Unit::Count,
        help: "Runs in progress in this process.",
        buckets: &[],
    },
    counter(
        "sluice_context_window_rejections_total",
        "Model requests rejected for not fitting the context window, by provider and model.",
    ),
    counter(
        "sluice_context_window_recoveries_total",
        "Context-window recoveries, by outcome (recovered, nothing_to_shrink, still_too_long, failed, cancelled).",
    ),
    counter(
        "sluice_model_requests_total",
        "Model requests, by provider, model and outcome (ok, cancelled, or the error's kind).",
    ),
    seconds(
        "sluice_model_request_duration_seconds",
        "Duration of a model request as the loop waits for it (retries included), by provider and model.",
        MODEL_SECONDS,
    ),
    counter(
        "sluice_model_tokens_total",
        "Tokens the model's replies reported, by provider, model and direction (input, output).",
    ),
    // The session store (sluice-store).
    seconds(
        "sluice_store_append_duration_seconds",
        "Duration of appending one message to a transcript, by store (sqlite, postgres).",
        APPEND_SECONDS,
    ),
    // Live reload (sluice-server).
    counter(
        "sluice_component_reloads_total",
        "Live reloads of the tools, by outcome (reloaded, unchanged, failed).",
    ),
    // The exporter (this crate).
    counter(
        crate::SPANS_DROPPED_METRIC,
        "Spans dropped because the OTLP export queue was full.",
    ),
];

/// How often histograms are drained into their buckets when nothing scrapes (their samples
/// wait in memory until then): 5 seconds.
pub const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// The recorder cannot be installed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsError {
    /// A histogram of [`METRICS`] has no buckets (a bug of the table).
    #[error("the metric {0} is a histogram without buckets")]
    NoBuckets(&'static str),
    /// Another recorder is installed in this process.
    #[error("another metrics recorder is installed in this process: {0}")]
    OtherRecorder(String),
    /// The upkeep thread cannot start.
    #[error("the metrics upkeep thread cannot start: {0}")]
    Upkeep(String),
}

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the Prometheus recorder as the process's recorder, with [`METRICS`]' buckets and
/// descriptions, and a thread that drains histograms every [`UPKEEP_INTERVAL`]. Once per
/// process: a second call does nothing.
///
/// # Errors
/// [`MetricsError::OtherRecorder`] when another recorder was installed;
/// [`MetricsError::NoBuckets`] and [`MetricsError::Upkeep`] as they say.
pub fn install() -> Result<(), MetricsError> {
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = INSTALLING.lock().unwrap_or_else(PoisonError::into_inner);
    if installed() {
        return Ok(());
    }
    build()
}

fn build() -> Result<(), MetricsError> {
    let mut builder = PrometheusBuilder::new();
    for metric in METRICS.iter().filter(|m| m.kind == Kind::Histogram) {
        builder = builder
            .set_buckets_for_metric(Matcher::Full(metric.name.to_string()), metric.buckets)
            .map_err(|_| MetricsError::NoBuckets(metric.name))?;
    }
    let recorder = builder.build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder)
        .map_err(|e| MetricsError::OtherRecorder(e.to_string()))?;
    for metric in METRICS {
        describe(metric);
    }
    let upkeep = handle.clone();
    std::thread::Builder::new()
        .name("sluice-metrics-upkeep".into())
        .spawn(move || {
            loop {
                std::thread::sleep(UPKEEP_INTERVAL);
                upkeep.run_upkeep();
            }
        })
        .map_err(|e| MetricsError::Upkeep(e.to_string()))?;
    let _ = HANDLE.set(handle);
    Ok(())
}

fn describe(metric: &Metric) {
    let (name, unit, help) = (metric.name, metric.unit, metric.help);
    match metric.kind {
        Kind::Counter => metrics::describe_counter!(name, unit, help),
        Kind::Gauge => metrics::describe_gauge!(name, unit, help),
        Kind::Histogram => metrics::describe_histogram!(name, unit, help),
    }
}

/// True once [`install`] has put the recorder in place.
pub fn installed() -> bool {
    HANDLE.get().is_some()
}

/// The metrics in the Prometheus text format (version 0.0.4): what `GET /metrics` answers.
/// Empty before [`install`]. A metric appears once it has been emitted.
pub fn render() -> String {
    HANDLE
        .get()
        .map(PrometheusHandle::render)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_histogram_has_rising_buckets_and_every_name_is_prometheus_shaped() {
        for metric in METRICS {
            assert!(
                metric
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{}",
                metric.name
            );
            assert!(metric.name.starts_with("sluice_"), "{}", metric.name);
            match metric.kind {
                Kind::Histogram => {
                    assert!(metric.name.ends_with("_seconds"), "{}", metric.name);
                    assert!(!metric.buckets.is_empty(), "{}", metric.name);
                    assert!(
                        metric.buckets.windows(2).all(|w| w[0] < w[1]),
                        "{}",
                        metric.name
                    );
                }
                Kind::Counter => {
                    assert!(metric.name.ends_with("_total"), "{}", metric.name);
                    assert!(metric.buckets.is_empty(), "{}", metric.name);
                }
                Kind::Gauge => assert!(metric.buckets.is_empty(), "{}", metric.name),
            }
        }
        let mut names: Vec<_> = METRICS.iter().map(|m| m.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), METRICS.len());
    }

    #[test]
    fn the_recorder_renders_help_buckets_and_labels() {
        install().unwrap();
        install().unwrap();
        metrics::counter!("sluice_runs_total", "status" => "completed").increment(2);
        metrics::histogram!("sluice_store_append_duration_seconds", "store" => "sqlite")
            .record(0.0003);
        let text = render();
        for line in [
            "# HELP sluice_runs_total Runs ended, by the session's status after the run (completed, awaiting_approval, aborted, error).",
            "# TYPE sluice_runs_total counter",
            "sluice_runs_total{status=\"completed\"} 2",
            "# TYPE sluice_store_append_duration_seconds histogram",
            "sluice_store_append_duration_seconds_bucket{store=\"sqlite\",le=\"0.00025\"} 0",
            "sluice_store_append_duration_seconds_bucket{store=\"sqlite\",le=\"0.0005\"} 1",
            "sluice_store_append_duration_seconds_bucket{store=\"sqlite\",le=\"+Inf\"} 1",
            "sluice_store_append_duration_seconds_count{store=\"sqlite\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} not in\n{text}");
        }
    }
}
