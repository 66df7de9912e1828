//! The Prometheus metrics of `sluice serve` and `sluice mcp` (docs/api.md#metrics): the
//! recorder installed when `[telemetry]` asks for metrics, `GET /metrics` behind the API's
//! guard (`telemetry.metrics`), and its own listener without a token
//! (`telemetry.metrics_listen`, which `sluice mcp` over stdio can have too).

use anyhow::Context as _;
use sluice_config::Config;
use sluice_server::metrics::Render;
use sluice_server::tls::ServerTls;

/// The certificate and key of `[server.tls]` (or `--tls-cert`, `--tls-key`), read and
/// checked; `None` without them. One [`ServerTls`] serves every listener of the process, so
/// the files are watched once.
///
/// # Errors
/// When a file cannot be read, is not PEM, or the key does not match the certificate (the
/// error names the file and why).
pub(crate) fn tls(config: &Config) -> anyhow::Result<Option<ServerTls>> {
    Ok(config
        .server
        .tls
        .as_ref()
        .map(ServerTls::load)
        .transpose()?)
}

/// Installs the recorder when `telemetry.metrics` or `telemetry.metrics_listen` is set, and
/// starts the `metrics_listen` listener (over HTTPS with `tls`; it serves until the process
/// ends). Returns what
/// `GET /metrics` behind the guard renders: `Some` with `telemetry.metrics` (which
/// `metrics_listen` implies).
pub(crate) async fn start(
    config: &Config,
    tls: Option<&ServerTls>,
) -> anyhow::Result<Option<Render>> {
    let telemetry = &config.telemetry;
    if !telemetry.metrics && telemetry.metrics_listen.is_none() {
        return Ok(None);
    }
    sluice_telemetry::metrics::install().context("failed to start the metrics")?;
    let render: Render = sluice_telemetry::metrics::render;
    if let Some(listen) = telemetry.metrics_listen {
        let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
        let limits = config.server.limits.clone();
        let scheme = sluice_server::tls::scheme(tls);
        let tls = tls.cloned();
        let serving = tokio::spawn(async move {
            sluice_server::metrics::serve_metrics(
                listen,
                &limits,
                tls.as_ref(),
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
                        "sluice: serving metrics on {scheme}://{addr}/metrics (telemetry.metrics_listen)"
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
