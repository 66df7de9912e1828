//! `GET /metrics`: the process's metrics in the Prometheus text format (version 0.0.4),
//! behind the API's guard on `sluice serve` and `sluice mcp --listen`
//! (`telemetry.metrics = true`, [`ServeOptions::metrics`](crate::ServeOptions::metrics)), or
//! on a listener of its own without a token (`telemetry.metrics_listen`, [`serve_metrics`]).
//! The text comes from the recorder the binary installs (`sluice_telemetry::metrics`); this
//! crate only serves it, and counts its reloads (`sluice_component_reloads_total{outcome}`).

use std::future::Future;
use std::net::SocketAddr;

use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::routing::get;
use sluice_config::ServerLimits;

use crate::ServerError;

/// The path of the metrics.
pub const METRICS_PATH: &str = "/metrics";

/// The content type of the answer: Prometheus's text exposition format.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What renders the metrics' text (`sluice_telemetry::metrics::render`).
pub type Render = fn() -> String;

/// A router with `GET /metrics` alone, answered with `render`'s text.
pub fn router(render: Render) -> Router {
    Router::new().route(
        METRICS_PATH,
        get(move || std::future::ready(([(CONTENT_TYPE, METRICS_CONTENT_TYPE)], render()))),
    )
}

/// Serves `GET /metrics` alone on `listen`, without a token or a `Host` check (it answers
/// nothing but the metrics), over HTTPS with `tls`, until `shutdown` completes; `bound` is
/// told the address once listening. Connections are held to `limits` ([`crate::listen`]).
///
/// # Errors
/// [`ServerError::Bind`] when `listen` cannot be bound.
pub async fn serve_metrics(
    listen: SocketAddr,
    limits: &ServerLimits,
    tls: Option<&crate::tls::ServerTls>,
    render: Render,
    bound: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let bind_error = |e: std::io::Error| ServerError::Bind {
        listen,
        reason: e.to_string(),
    };
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(bind_error)?;
    bound(listener.local_addr().map_err(bind_error)?);
    crate::listen::serve(listener, router(render), limits, tls, shutdown).await;
    Ok(())
}

/// How a live reload ended, as `sluice_component_reloads_total{outcome}` counts it:
/// `reloaded` (the tools were replaced), `unchanged` (their files changed, not the tools),
/// `failed` (the current tools stay).
pub(crate) fn reload_ended<T, E>(outcome: &Result<Option<T>, E>) {
    let outcome = match outcome {
        Ok(Some(_)) => "reloaded",
        Ok(None) => "unchanged",
        Err(_) => "failed",
    };
    metrics::counter!("sluice_component_reloads_total", "outcome" => outcome).increment(1);
}
