//! MCP over Streamable HTTP: `POST /mcp` inside `sluice serve`, and the same endpoint on
//! its own (`sluice mcp --listen`), both behind the operator API's [`Guard`]: `Host`
//! (403; DNS rebinding), the bearer token (401; required beyond loopback), `Origin` (403
//! for a cross-origin request without the token), the body limit (413) and
//! `Content-Type: application/json` (415). One guard decides for both routers; rmcp's own
//! `Host` and `Origin` checks are left off so that one allowlist applies.
//!
//! [`Guard`]: crate::guard::Guard

use std::future::Future;

use std::sync::Arc;

use axum::Router;
use sluice_config::Config;
use sluice_mcp::McpServer;
use sluice_mcp::http::HttpOptions;
use sluice_runtime::LiveToolbox;
use tokio_util::sync::CancellationToken;

use crate::{ServeOptions, ServerError};

/// The MCP server over `toolbox` (served live: a replacement applies to the next
/// request), as configured: the cap of `[agent]`, `[mcp]`'s `allow_destructive` and
/// `tools_per_page`.
pub fn mcp_server(config: &Config, toolbox: Arc<LiveToolbox>) -> McpServer {
    McpServer::live(
        toolbox,
        sluice_mcp::McpOptions {
            cap: config.agent.max_tool_result_bytes,
            allow_destructive: config.mcp.allow_destructive,
            tools_per_page: config.mcp.tools_per_page as usize,
        },
    )
}

/// The MCP endpoint's options behind the guard of `options`: its body limit, no `Host` or
/// `Origin` lists of its own (the guard checks both), and `shutdown` to end open streams.
pub fn http_options(options: &ServeOptions, shutdown: CancellationToken) -> HttpOptions {
    HttpOptions {
        max_body_bytes: options.max_body_bytes,
        allowed_hosts: Vec::new(),
        allowed_origins: Vec::new(),
        shutdown,
    }
}

/// The router of `/mcp` (and `/metrics` when `options.metrics` is set), behind the guard of
/// `options`.
pub fn guard_mcp(server: McpServer, options: &ServeOptions, shutdown: CancellationToken) -> Router {
    let router = sluice_mcp::http::router(server, &http_options(options, shutdown));
    let router = match options.metrics {
        Some(render) => router.merge(crate::metrics::router(render)),
        None => router,
    };
    let router = match &options.oauth {
        Some(verifier) => router.merge(crate::oauth::router(verifier.clone())),
        None => router,
    };
    options.guard().wrap(router)
}

/// Serves MCP alone at `http://{options.listen}/mcp` (`https://` with `options.tls`) until
/// `shutdown` completes; `bound` is told the address once listening. Connections are held
/// to `options.limits` ([`crate::listen`]), as `sluice serve`'s are.
///
/// # Errors
/// [`ServerError`] for a bad address/token pairing or allowed host, or a bind failure.
pub async fn serve_mcp(
    server: McpServer,
    options: ServeOptions,
    bound: impl FnOnce(std::net::SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    options.check()?;
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(|e| ServerError::Bind {
            listen: options.listen,
            reason: e.to_string(),
        })?;
    let local = listener.local_addr().map_err(|e| ServerError::Bind {
        listen: options.listen,
        reason: e.to_string(),
    })?;
    let stop = CancellationToken::new();
    let router = guard_mcp(server, &options, stop.clone());
    bound(local);
    let tls = options.tls.as_ref();
    if let Some(warning) = crate::tls::clear_text_warning(local, tls) {
        tracing::warn!("{warning}");
    }
    crate::listen::serve(listener, router, &options.limits, tls, async move {
        shutdown.await;
        stop.cancel();
    })
    .await;
    Ok(())
}
