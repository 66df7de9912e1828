//! The span of each HTTP request the server answers (docs/telemetry.md#traces), after
//! OpenTelemetry's HTTP conventions: named `{METHOD} {route}` (`POST /sessions/{id}/prompt`;
//! the method alone for a request no route matched), kind server, with
//! `http.request.method`, `http.route`, `http.response.status_code` and, for a 5xx answer,
//! `error.type`. It continues the caller's trace from the `traceparent` (and `tracestate`)
//! header, and holds the guard's checks: a refused request is traced too.

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument as _;
use tracing::field::Empty;

/// Serves `request` inside its span (an axum `from_fn` middleware).
pub(crate) async fn traced(request: Request, next: Next) -> Response {
    let method = request.method().as_str().to_owned();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let name = match &route {
        Some(route) => format!("{method} {route}"),
        None => method.clone(),
    };
    let span = tracing::info_span!(
        "http request",
        otel.name = name,
        otel.kind = "server",
        http.request.method = method,
        http.route = route,
        http.response.status_code = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    );
    continue_from_headers(&span, request.headers());
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status();
    span.record("http.response.status_code", i64::from(status.as_u16()));
    if status.is_server_error() {
        span.record("error.type", status.as_str());
        span.record("otel.status_code", "ERROR");
    }
    response
}

/// Makes `span` a child of the caller's span named by the `traceparent` header, if any.
fn continue_from_headers(span: &tracing::Span, headers: &HeaderMap) {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(parent) = header("traceparent") {
        sluice_telemetry::continue_trace(span, parent, header("tracestate"));
    }
}
