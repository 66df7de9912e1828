//! MCP over Streamable HTTP: one endpoint (`POST /mcp`), answered as JSON, or as an SSE
//! stream when progress notifications precede the result; stateless (no `Mcp-Session-Id`),
//! as the 2026-07-28 revision is, and for the `initialize` clients of 2025-11-25 and
//! 2025-06-18 too. Closing the response stream cancels the call.
//!
//! rmcp's service checks what is MCP's own: the `MCP-Protocol-Version` header and its
//! match with the body (400), `Accept` (406), `Content-Type` (415), the body limit (413),
//! and, when [`HttpOptions`] lists them, `Host` against DNS rebinding and `Origin` (403).
//! A body that is not a JSON-RPC message gets a JSON-RPC error here (rmcp answers it with a
//! bare 415). `sluice-server` puts [`router`] behind the operator API's guard (Host, token,
//! Origin, body limit, Content-Type), which is then the one place that decides.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::McpServer;
use crate::rejection::{self, INVALID_REQUEST, REQUEST_SHAPE, Rejection};

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
    let limit = options.max_body_bytes;
    axum::Router::new()
        .route_service(MCP_PATH, service(server, options))
        .layer(axum::middleware::from_fn(move |request, next| {
            json_rpc_body(request, next, limit)
        }))
}

/// Answers a POST body that is not a JSON-RPC message with a JSON-RPC error (HTTP 400), as
/// stdio answers such a line (`crate::rejection`): parse error (-32700, `id` null) for text
/// that is not JSON, invalid params (-32602) for `params` that are not an object, invalid
/// request (-32600, with the message's `id` when it is a string or a number) for JSON of
/// another shape. rmcp's service answers all of them with a bare `415` text, which a
/// client cannot match to its request.
async fn json_rpc_body(request: Request, next: Next, limit: usize) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        let message = format!("the request body is over the limit of {limit} bytes");
        let rejection = Rejection {
            id: Value::Null,
            code: INVALID_REQUEST,
            message,
        };
        return error(StatusCode::PAYLOAD_TOO_LARGE, rejection);
    };
    match serde_json::from_slice::<ClientJsonRpcMessage>(&bytes) {
        Ok(_) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Err(e) => {
            // HTTP answers every POST: a malformed notification gets -32600 too.
            let rejection = rejection::reject(&bytes, &e).unwrap_or_else(|| Rejection {
                id: Value::Null,
                code: INVALID_REQUEST,
                message: format!("invalid request: {e}; {REQUEST_SHAPE}"),
            });
            error(StatusCode::BAD_REQUEST, rejection)
        }
    }
}

/// A JSON-RPC error answer with HTTP status `status`.
fn error(status: StatusCode, rejection: Rejection) -> Response {
    (status, axum::Json(rejection.to_json())).into_response()
}
