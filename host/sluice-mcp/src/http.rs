//! MCP over Streamable HTTP: one endpoint (`POST /mcp`), answered as JSON, or as an SSE
//! stream when progress notifications precede the result; stateless (no `Mcp-Session-Id`),
//! as the 2026-07-28 revision is, and for the `initialize` clients of 2025-11-25 and
//! 2025-06-18 too. Closing the response stream cancels the call.
//!
//! rmcp's service checks what is MCP's own: the `MCP-Protocol-Version` header and its
//! match with the body (400), `Accept` (406), `Content-Type` (415), the body limit (413),
//! and, when [`HttpOptions`] lists them, `Host` against DNS rebinding and `Origin` (403).
//! `sluice-server` puts [`router`] behind the operator API's guard (Host, token, Origin,
//! body limit, Content-Type), which is then the one place that decides.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::McpServer;

/// The path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// What the HTTP endpoint accepts.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// The largest request body, in bytes (413 beyond).
    pub max_body_bytes: usize,
    /// `Host` values accepted (a name, or `name:port`); any other answers 403. Empty: any
    /// (only behind a guard that checks it).
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted (`scheme://host:port`, `:*` for any port); a request with
    /// any other `Origin` answers 403. Requests without `Origin` (non-browser clients) pass.
    /// Empty: not checked (only behind a guard that checks it).
    pub allowed_origins: Vec<String>,
    /// Fires when the server shuts down: open streams end.
    pub shutdown: CancellationToken,
}

impl HttpOptions {
    /// The options of a server listening on `listen`: the loopback names for a loopback
    /// address (`localhost`, `127.0.0.1`, `[::1]`), the address itself otherwise, plus
    /// `extra_hosts`; origins `http://` and `https://` of each, on any port.
    pub fn for_listen(listen: SocketAddr, extra_hosts: &[String], max_body_bytes: usize) -> Self {
        let mut hosts: Vec<String> = if listen.ip().is_loopback() {
            vec!["localhost".into(), "127.0.0.1".into(), "::1".into()]
        } else {
            vec![listen.ip().to_string()]
        };
        hosts.extend(extra_hosts.iter().cloned());
        let origins = hosts
            .iter()
            .flat_map(|h| {
                let host = if h.contains(':') && !h.starts_with('[') {
                    format!("[{h}]")
                } else {
                    h.clone()
                };
                [format!("http://{host}:*"), format!("https://{host}:*")]
            })
            .collect();
        HttpOptions {
            max_body_bytes,
            allowed_hosts: hosts,
            allowed_origins: origins,
            shutdown: CancellationToken::new(),
        }
    }
}

/// The MCP endpoint as a tower service (for `axum::Router::route_service`).
pub fn service(
    server: McpServer,
    options: &HttpOptions,
) -> StreamableHttpService<McpServer, NeverSessionManager> {
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_cancellation_token(options.shutdown.clone())
        .with_sse_keep_alive(None)
        .with_sse_retry(None);
    config = if options.allowed_origins.is_empty() {
        config.disable_allowed_origins()
    } else {
        config
            .with_allowed_origins(options.allowed_origins.clone())
            .enforce_origin_validation()
    };
    config = if options.allowed_hosts.is_empty() {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(options.allowed_hosts.clone())
    };
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

/// A router with the MCP endpoint at [`MCP_PATH`] (and nothing else).
pub fn router(server: McpServer, options: &HttpOptions) -> axum::Router {
    axum::Router::new().route_service(MCP_PATH, service(server, options))
}
