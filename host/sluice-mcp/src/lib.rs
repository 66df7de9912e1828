//! Sluice's tools over the Model Context Protocol, for any MCP client (Claude Code, Codex,
//! goose, VS Code, …): the same sandboxed, paged, capped and key-scanned call path as
//! `sluice call`, built on the official Rust SDK, `rmcp`.
//!
//! - [`McpServer`]: `tools/list` (every tool the configuration grants, with its reflected
//!   `inputSchema` and annotations from its policy, a page at a time) and `tools/call` (one
//!   text block holding the observation `sluice call` prints, byte for byte), with progress
//!   and cancellation; protocol 2026-07-28 (stateless, `server/discover`) and the
//!   `initialize` revisions 2025-11-25 and 2025-06-18 ([`PROTOCOL_VERSIONS`]).
//! - [`serve_stdio`]: over stdin and stdout (`sluice mcp`).
//! - [`http::router`]: over Streamable HTTP (`POST /mcp`).
//!
//! Destructive tools (a `write` grant or `destructive = true`) are served only when
//! [`McpOptions::allow_destructive`] says so; they then run without Sluice's approval
//! pause, and their `destructiveHint` lets the client's own approval apply.
//!
//! ```no_run
//! use std::sync::Arc;
//! use sluice_mcp::{McpOptions, McpServer, StdioOptions, serve_stdio};
//! use sluice_runtime::{ComponentSpec, EngineOptions, Source, ToolEngine, ToolPolicy, Toolbox};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let engine = Arc::new(ToolEngine::new(EngineOptions::default())?);
//! let policy = ToolPolicy::read_only([("logs".to_string(), "/var/log".into())]);
//! let wasm = Arc::new(std::fs::read("read_file.wasm")?);
//! let source = Source::Bytes { name: "read_file.wasm".to_string(), wasm };
//! let toolbox = Toolbox::load(engine, &[ComponentSpec { source, policy }])?;
//! let server = McpServer::new(Arc::new(toolbox), McpOptions { cap: 40_000, ..McpOptions::default() });
//! serve_stdio(server, StdioOptions::default()).await?;
//! # Ok(()) }
//! ```

mod call;
mod catalog;
mod grant;
pub mod http;
pub mod logs;
mod progress;
mod rejection;
mod server;
mod spans;
pub mod stdio;

pub use catalog::{MAX_RESULT_SIZE_CHARS_KEY, TOOLS_TTL_MS};
pub use grant::ToolGrant;
pub use progress::{PROGRESS_FROM_START, PROGRESS_INTERVAL};
pub use server::{McpOptions, McpServer, PROTOCOL_VERSIONS, call_result};
pub use stdio::StdioOptions;

use rmcp::ServiceExt as _;
use rmcp::service::ServerInitializeError;

/// Why serving stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpServeError {
    /// The first message could not be served.
    #[error("the MCP session could not start: {0}")]
    Start(String),
    /// The service stopped on an error.
    #[error("the MCP server stopped: {0}")]
    Stopped(String),
}

/// Serves `server` over stdin and stdout until stdin ends (EOF), stdout closes, or the
/// client stops reading it for [`StdioOptions::write_timeout`]. A client that closes stdin
/// before its first message is a clean end too.
///
/// When the tools are replaced (live reload), a client that opened with `initialize`
/// (revisions 2025-11-25 and 2025-06-18) gets `notifications/tools/list_changed`; a
/// 2026-07-28 client gets it on its `subscriptions/listen` stream.
///
/// # Errors
/// [`McpServeError`] when the service fails.
pub async fn serve_stdio(server: McpServer, options: StdioOptions) -> Result<(), McpServeError> {
    let (reader, writer) = rmcp::transport::stdio_pipes();
    let reader = tokio::io::BufReader::with_capacity(64 * 1024, reader);
    let (transport, writer_task) = stdio::LineTransport::new(reader, writer, options);
    let revisions = server.tools().subscribe();
    let result = match server.serve(transport).await {
        Ok(running) => {
            let notifier = notify_initialized_client(running.peer().clone(), revisions);
            let result = running
                .waiting()
                .await
                .map(|_| ())
                .map_err(|e| McpServeError::Stopped(e.to_string()));
            notifier.abort();
            result
        }
        Err(ServerInitializeError::ConnectionClosed(_)) => Ok(()),
        Err(e) => Err(McpServeError::Start(e.to_string())),
    };
    writer_task.finish().await;
    result
}

/// Sends `notifications/tools/list_changed` to `peer` on every new revision, when the peer
/// opened with `initialize` at a revision before 2026-07-28 (which gets its notifications
/// on `subscriptions/listen` streams instead).
fn notify_initialized_client(
    peer: rmcp::Peer<rmcp::RoleServer>,
    mut revisions: tokio::sync::watch::Receiver<u64>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        revisions.mark_unchanged();
        while revisions.changed().await.is_ok() {
            let initialized = peer.peer_info().is_some_and(|info| {
                info.protocol_version != rmcp::model::ProtocolVersion::V_2026_07_28
            });
            if initialized && peer.notify_tool_list_changed().await.is_err() {
                break;
            }
        }
    })
}
