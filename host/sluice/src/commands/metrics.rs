//! The Prometheus metrics of `sluice serve` and `sluice mcp` (docs/api.md#metrics): the
//! recorder installed when `[telemetry]` asks for metrics, `GET /metrics` behind the API's
//! guard (`telemetry.metrics`), and its own listener without a token
//! (`telemetry.metrics_listen`, which `sluice mcp` over stdio can have too).

use anyhow::Context as _;
use sluice_config::Config;
use sluice_server::metrics::Render;

/// Installs the recorder when `telemetry.metrics` or `telemetry.metrics_listen` is set, and
/// starts the `metrics_listen` listener (it serves until the process ends). Returns what
/// `GET /metrics` behind the guard renders: `Some` with `telemetry.metrics` (which
/// `metrics_listen` implies).
pub(crate) async fn start(config: &Config) -> anyhow::Result<Option<Render>> {
    let telemetry = &config.telemetry;
    if !telemetry.metrics && telemetry.metrics_listen.is_none() {
        return Ok(None);
    }
    sluice_telemetry::metrics::install().context("failed to start the metrics")?;
    let render: Render = sluice_telemetry::metrics::render;
    if let Some(listen) = telemetry.metrics_listen {
        let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
        let limits = config.server.limits.clone();
        let serving = tokio::spawn(async move {
            sluice_server::metrics::serve_metrics(
                listen,
                &limits,
                render,
                |addr| {
                    let _ = bound_tx.send(addr);
                },
                std::future::pending(),
            )
            .await
        });
        match bound_rx.await {
            Ok(addr) => {
                #[allow(clippy::print_stderr)]
                {
                    eprintln!(
                        "sluice: serving metrics on http://{addr}/metrics (telemetry.metrics_listen)"
                    );
                }
            }
            // The listener ended before it was bound: its error says why.
            Err(_) => {
                serving
                    .await
                    .context("the metrics listener stopped")?
                    .context("telemetry.metrics_listen")?;
            }
        }
    }
    Ok(telemetry.metrics.then_some(render))
}
