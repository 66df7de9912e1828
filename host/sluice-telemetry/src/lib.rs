//! Sluice's telemetry (docs/telemetry.md): the one place that turns the `tracing` spans and
//! events of every other crate into log lines (text or JSON, on stderr) and, when asked, into
//! OpenTelemetry spans sent over OTLP/HTTP. The other crates only emit: with telemetry off
//! their spans cost a filter check.
//!
//! ```no_run
//! use sluice_telemetry::{LogFormat, Logging, Traces};
//!
//! let logging = Logging {
//!     format: LogFormat::Json,
//!     filter: std::env::var("SLUICE_LOG").ok(),
//!     colour: false,
//!     quiet_targets: vec![("rmcp", true)],
//!     may_log: |_| true,
//! };
//! let traces = Traces { otlp_endpoint: Some("http://127.0.0.1:4318".into()), capture_content: false };
//! let telemetry = sluice_telemetry::install(&logging, &traces)?;
//! // … the command runs …
//! drop(telemetry); // flushes the spans still queued
//! # Ok::<(), sluice_telemetry::TelemetryError>(())
//! ```
//!
//! Content (prompts, the model's text, tool arguments, observations) is emitted as events
//! of [`CONTENT_TARGET`]: never logged unless `SLUICE_LOG` names that target, and exported
//! only with `telemetry.capture_content`. The crates that emit it need not know the flag.

mod filter;
pub mod metrics;
mod otlp;
mod propagation;

use std::str::FromStr;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Metadata;
use tracing_subscriber::filter::{FilterExt as _, LevelFilter};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _, Registry};

pub use filter::quiet;
pub use otlp::{MAX_QUEUED_SPANS, SPANS_DROPPED_METRIC};
pub use propagation::{continue_trace, traceparent};

/// The tracing target of content events: prompts, the model's text, tool arguments and
/// observations (`tracing::info!(target: "sluice::content", …)`). Exported only with
/// `telemetry.capture_content = true`; logged only when `SLUICE_LOG` names it.
pub const CONTENT_TARGET: &str = "sluice::content";

/// The environment variable that sets `--log-format`.
pub const ENV_LOG_FORMAT: &str = "SLUICE_LOG_FORMAT";

/// The log filter when `SLUICE_LOG` is unset or does not parse.
pub const DEFAULT_LOG_FILTER: &str = "warn";

/// The standard variables that turn the exporter on without `telemetry.otlp_endpoint`.
pub const OTEL_ENDPOINT_VARS: &[&str] = &[
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// The format of log lines on stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// tracing's human format: time, level, span context, message, fields (the default).
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, `fields` (`message` and the
    /// event's fields), `span` (the innermost span's name and fields) and `spans` (each span
    /// around the event, outermost first, with its fields).
    Json,
}

/// `--log-format`'s value is not `text` or `json`.
#[derive(Debug, thiserror::Error)]
#[error("--log-format must be text or json; got {0:?} (from --log-format or {ENV_LOG_FORMAT})")]
pub struct BadLogFormat(pub String);

impl FromStr for LogFormat {
    type Err = BadLogFormat;

    fn from_str(s: &str) -> Result<LogFormat, BadLogFormat> {
        match s.trim() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(BadLogFormat(other.to_string())),
        }
    }
}

/// How log lines are written and which are.
#[derive(Clone, Debug)]
pub struct Logging {
    /// Text or JSON lines.
    pub format: LogFormat,
    /// tracing's `EnvFilter` directives (`SLUICE_LOG`); `None`, or directives that do not
    /// parse, mean [`DEFAULT_LOG_FILTER`].
    pub filter: Option<String>,
    /// ANSI colours (text only): for a person at a terminal.
    pub colour: bool,
    /// Targets off unless the filter names them, each with whether a filter enabling debug
    /// or trace for everything shows it too (see [`quiet`]). [`CONTENT_TARGET`] is always
    /// one (never shown by a bare level).
    pub quiet_targets: Vec<(&'static str, bool)>,
    /// A last word on every span and event, of the log and the exporter alike (the
    /// runtime's `may_log`, which keeps what logs guests' arguments out).
    pub may_log: fn(&Metadata<'_>) -> bool,
}

/// Where spans are exported, if anywhere (`[telemetry]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Traces {
    /// `telemetry.otlp_endpoint`: the base URL of an OTLP/HTTP receiver. `None`: the
    /// standard [`OTEL_ENDPOINT_VARS`] decide, and without them nothing is exported.
    pub otlp_endpoint: Option<String>,
    /// `telemetry.capture_content`: export [`CONTENT_TARGET`]'s events.
    pub capture_content: bool,
}

impl Traces {
    /// True when spans are exported: an endpoint is configured, or one of
    /// [`OTEL_ENDPOINT_VARS`] is set (non-empty), and `OTEL_SDK_DISABLED` is not `true`
    /// nor `OTEL_TRACES_EXPORTER` `none`.
    pub fn enabled(&self, env: &dyn Fn(&str) -> Option<String>) -> bool {
        let set = |k: &str| env(k).is_some_and(|v| !v.trim().is_empty());
        let disabled = env("OTEL_SDK_DISABLED")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
            || env("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim().eq_ignore_ascii_case("none"));
        !disabled && (self.otlp_endpoint.is_some() || OTEL_ENDPOINT_VARS.iter().any(|k| set(k)))
    }
}

/// Telemetry cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// The OTLP exporter cannot be built (a bad `OTEL_EXPORTER_OTLP_*` value, the HTTP
    /// client).
    #[error(
        "the OTLP trace exporter cannot start: {0} (set by telemetry.otlp_endpoint, SLUICE_TELEMETRY_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT)"
    )]
    Exporter(String),
    /// A subscriber is already installed in this process.
    #[error("a log subscriber is already installed: {0}")]
    AlreadyInstalled(String),
}

/// The installed telemetry. Dropping it (or [`Telemetry::shutdown`]) exports the spans
/// still queued, waiting at most the export timeout; keep it until the command ends.
#[derive(Debug)]
#[must_use = "dropping it at once ends the export"]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// True when spans are exported.
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }

    /// Exports what is queued and stops the exporter.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(provider) = self.provider.take() {
            // A collector that is down loses these spans; nothing else to do at exit.
            let _ = provider.force_flush();
            let _ = provider.shutdown();
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Installs the process's subscriber: log lines on stderr as `logging` says, and spans
/// exported as `traces` says (when [`Traces::enabled`] by it and the process environment).
/// Call it once, outside any async runtime (the exporter's client has a runtime of its own).
///
/// # Errors
/// [`TelemetryError::Exporter`] when the exporter is asked for and cannot start;
/// [`TelemetryError::AlreadyInstalled`] on a second call.
pub fn install(logging: &Logging, traces: &Traces) -> Result<Telemetry, TelemetryError> {
    let may_log = logging.may_log;
    let mut spec = logging
        .filter
        .clone()
        .filter(|s| EnvFilter::try_new(s).is_ok())
        .unwrap_or_else(|| DEFAULT_LOG_FILTER.to_string());
    spec = quiet(&spec, CONTENT_TARGET, false);
    for (target, verbose_shows) in &logging.quiet_targets {
        spec = quiet(&spec, target, *verbose_shows);
    }
    let log_filter =
        EnvFilter::try_new(&spec).unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER));
    // Each filter states the most verbose level it can pass, so that `try_init` below gives
    // the `log` crate (Cranelift's and wasmtime's records) that level as its maximum: with no
    // hint it is `trace`, and every `log::trace!` of a compile went through this filter
    // (over four fifths of a component's compile time in a debug build).
    let log_hint = log_filter.max_level_hint().unwrap_or(LevelFilter::TRACE);
    let log_filter = log_filter
        .and(tracing_subscriber::filter::filter_fn(may_log).with_max_level_hint(log_hint));
    let log = match logging.format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(logging.colour)
            .with_filter(log_filter)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .with_writer(std::io::stderr)
            .with_filter(log_filter)
            .boxed(),
    };
    let env = |k: &str| std::env::var(k).ok();
    let provider = if traces.enabled(&env) {
        Some(otlp::provider(traces.otlp_endpoint.as_deref())?)
    } else {
        None
    };
    let export = provider.as_ref().map(|p| {
        let capture = traces.capture_content;
        tracing_opentelemetry::layer()
            .with_tracer(p.tracer("sluice"))
            .with_location(false)
            .with_threads(false)
            .with_filter(
                tracing_subscriber::filter::filter_fn(move |m| {
                    may_log(m) && filter::exported(m, capture)
                })
                .with_max_level_hint(filter::EXPORTED_LEVEL),
            )
            .boxed()
    });
    let layers: Vec<Box<dyn tracing_subscriber::Layer<Registry> + Send + Sync>> =
        std::iter::once(log).chain(export).collect();
    tracing_subscriber::registry()
        .with(layers)
        .try_init()
        .map_err(|e| TelemetryError::AlreadyInstalled(e.to_string()))?;
    Ok(Telemetry { provider })
}
