//! W3C trace context: a request that carries a `traceparent` (an HTTP header, MCP's
//! `params._meta`) continues the caller's trace.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// Makes `span` a child of the remote span that `traceparent` names (W3C Trace Context,
/// `00-{32 hex trace id}-{16 hex span id}-{2 hex flags}`), with `tracestate` carried along.
/// Call it before the span is entered. Returns true when `traceparent` was valid and the
/// span now continues that trace; false (the span left as it was) for a malformed one, or
/// when no exporter is installed (then there is no trace to continue).
pub fn continue_trace(span: &tracing::Span, traceparent: &str, tracestate: Option<&str>) -> bool {
    let mut carrier = HashMap::with_capacity(2);
    carrier.insert("traceparent".to_string(), traceparent.trim().to_string());
    if let Some(state) = tracestate {
        carrier.insert("tracestate".to_string(), state.trim().to_string());
    }
    let cx = TraceContextPropagator::new().extract(&carrier);
    if !cx.span().span_context().is_valid() {
        return false;
    }
    span.set_parent(cx).is_ok()
}

/// The `traceparent` of `span` as a caller would send it on (`00-…-…-01`), or `None` when
/// the span is not exported (no exporter, or filtered out).
pub fn traceparent(span: &tracing::Span) -> Option<String> {
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        )
    })
}
