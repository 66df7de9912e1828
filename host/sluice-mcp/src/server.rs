//! The MCP server: rmcp's [`ServerHandler`] over Sluice's tools. The tools are known only
//! at run time (from the configuration), so `tools/list` and `tools/call` are implemented
//! here rather than with rmcp's `#[tool]` macros.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ErrorCode, Implementation, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use sluice_protocol::limits;
use sluice_runtime::call::observation::DEFAULT_HINT;
use sluice_runtime::{CallStatus, LiveToolbox, Observation, Toolbox};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::catalog::Catalog;
use crate::grant::ToolGrant;
use crate::progress::Ticker;

/// The protocol revisions served: 2026-07-28 (stateless, `server/discover`) and the two
/// before it, whose clients open with `initialize`.
pub const PROTOCOL_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// How the server is set up.
#[derive(Clone, Debug)]
pub struct McpOptions {
    /// The cap on every observation, in bytes (`agent.max_tool_result_bytes`).
    pub cap: u32,
    /// Serve destructive tools (`mcp.allow_destructive`); default false.
    pub allow_destructive: bool,
    /// Tools in one `tools/list` page (`mcp.tools_per_page`); default 100.
    pub tools_per_page: usize,
}

impl Default for McpOptions {
    fn default() -> Self {
        McpOptions {
            cap: limits::DEFAULT_MAX_TOOL_RESULT_BYTES,
            allow_destructive: false,
            tools_per_page: limits::DEFAULT_MCP_TOOLS_PER_PAGE as usize,
        }
    }
}

/// Sluice's tools as an MCP server. Cheap to clone: every clone serves the same tools.
#[derive(Clone)]
pub struct McpServer(Arc<Inner>);

struct Inner {
    live: Arc<LiveToolbox>,
    /// The catalog of the toolbox it was built from, rebuilt when the toolbox is replaced.
    catalog: Mutex<(Arc<Toolbox>, Arc<Catalog>)>,
    cap: u32,
    allow_destructive: bool,
    tools_per_page: usize,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("tools", &self.tool_names())
            .field("cap", &self.0.cap)
            .finish()
    }
}

impl McpServer {
    /// A server for the tools of `toolbox` under `options`.
    pub fn new(toolbox: Arc<Toolbox>, options: McpOptions) -> McpServer {
        McpServer::live(Arc::new(LiveToolbox::from_arc(toolbox)), options)
    }

    /// A server for the tools of `live`, whose replacements it serves from the next
    /// request on: `tools/list` lists the toolbox of the moment, a `tools/call` runs on the
    /// toolbox current when it arrived, and clients are told with
    /// `notifications/tools/list_changed` (on a `subscriptions/listen` stream for protocol
    /// 2026-07-28; see [`serve_stdio`](crate::serve_stdio) for the `initialize` revisions).
    pub fn live(live: Arc<LiveToolbox>, options: McpOptions) -> McpServer {
        let toolbox = live.current();
        let catalog = Catalog::new(
            toolbox.tools(),
            options.allow_destructive,
            options.tools_per_page,
            options.cap,
        );
        let hidden: Vec<&str> = toolbox
            .tools()
            .filter(|t| !catalog.serves(&t.name))
            .map(|t| t.name.as_str())
            .collect();
        if !hidden.is_empty() {
            tracing::info!(
                "not serving the destructive tools {} over MCP (set [mcp] allow_destructive = true or --allow-destructive to serve them)",
                hidden.join(", ")
            );
        }
        McpServer(Arc::new(Inner {
            live,
            catalog: Mutex::new((toolbox, Arc::new(catalog))),
            cap: options.cap,
            allow_destructive: options.allow_destructive,
            tools_per_page: options.tools_per_page,
        }))
    }

    /// The tools served, swapped live when the toolbox is replaced.
    pub fn tools(&self) -> &Arc<LiveToolbox> {
        &self.0.live
    }

    /// The toolbox of the moment and its catalog.
    fn snapshot(&self) -> (Arc<Toolbox>, Arc<Catalog>) {
        let toolbox = self.0.live.current();
        let mut cached = self
            .0
            .catalog
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !Arc::ptr_eq(&cached.0, &toolbox) {
            let catalog = Catalog::new(
                toolbox.tools(),
                self.0.allow_destructive,
                self.0.tools_per_page,
                self.0.cap,
            );
            *cached = (toolbox.clone(), Arc::new(catalog));
        }
        (toolbox, cached.1.clone())
    }

    /// The names of the tools served, in `tools/list` order.
    pub fn tool_names(&self) -> Vec<String> {
        self.snapshot()
            .1
            .all()
            .iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    /// Calls tool `name` with the JSON text `args` as `tools/call` does: the observation
    /// `sluice call` prints, or `None` when `cancel` fired first. A tool that is not served
    /// (unknown, or destructive without `allow_destructive`) gets the unknown-tool
    /// observation.
    pub async fn observe(
        &self,
        name: &str,
        args: String,
        cancel: &CancellationToken,
    ) -> Option<Observation> {
        let cap = self.0.cap;
        let (toolbox, catalog) = self.snapshot();
        if !catalog.serves(name) {
            if toolbox.tools().any(|t| t.name == name) {
                tracing::warn!(
                    tool = name,
                    "an MCP client called a destructive tool that is not served; set [mcp] allow_destructive = true to serve it"
                );
            }
            let served = catalog.all().iter().map(|t| t.name.as_ref());
            let unknown = Observation::unknown_tool_among(name, served);
            return Some(unknown.finish(name, cap as usize, DEFAULT_HINT));
        }
        crate::call::call(toolbox, name, args, (cap, self.0.allow_destructive), cancel).await
    }
}

/// The `tools/call` result of an observation: one text block holding the observation byte
/// for byte; `isError` unless the tool returned a result; `structuredContent` (the
/// observation as JSON) only when the observation is whole, never when the cap cut it. No
/// tool declares an `outputSchema`, since a cut observation conforms to none.
pub fn call_result(observation: Observation) -> CallToolResult {
    let structured = if observation.truncated() {
        None
    } else {
        serde_json::from_str::<serde_json::Value>(observation.text())
            .ok()
            .filter(serde_json::Value::is_object)
    };
    let content = vec![ContentBlock::text(observation.text())];
    let mut result = if observation.status() == CallStatus::Ok {
        CallToolResult::success(content)
    } else {
        CallToolResult::error(content)
    };
    result.structured_content = structured;
    result
}

/// The most characters of the server's `instructions`: Codex cuts them there.
pub(crate) const MAX_INSTRUCTIONS_CHARS: usize = 240;

/// The server's `instructions` under the cap `cap` (bytes): what the tools are for, in the
/// words a client's tool search matches, within [`MAX_INSTRUCTIONS_CHARS`] for any cap.
pub(crate) fn instructions(cap: u32) -> String {
    let text = format!(
        "Sandboxed tools to search (grep), read, tail and list (ls) files and logs. Each result is at most {cap} bytes; pass back nextOffset, nextLine or nextCursor for the next page. Paths are relative to the roots."
    );
    debug_assert!(text.chars().count() <= MAX_INSTRUCTIONS_CHARS);
    text
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(
            Implementation::new("sluice", env!("CARGO_PKG_VERSION")).with_title("Sluice"),
        )
        .with_instructions(instructions(self.0.cap))
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(PROTOCOL_VERSIONS)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        let mut page = self.snapshot().1.page(cursor)?;
        // A principal granted some tools sees only those (a page may come out shorter).
        if let Some(grant) = ToolGrant::of(&context) {
            page.tools.retain(|t| grant.allows(&t.name));
        }
        Ok(page)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let _ = requested;
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    /// A `subscriptions/listen` stream (protocol 2026-07-28): one
    /// `notifications/tools/list_changed` per replacement of the tools, until the client
    /// ends the stream.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let mut revisions = self.0.live.subscribe();
        revisions.mark_unchanged();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = revisions.changed() => {
                    if changed.is_err() {
                        context.cancelled().await;
                        return Ok(());
                    }
                    if let Err(e) = context.sink().notify_tool_list_changed().await {
                        tracing::debug!("could not send notifications/tools/list_changed: {e}");
                    }
                }
            }
        }
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // Arguments are checked by the call path itself (its errors are observations the
        // model reads), not by rmcp against the schema.
        let _ = name;
        None
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        Err(McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "unknown method {:?}: this server offers tools only (server/discover, initialize, ping, tools/list, tools/call)",
                request.method
            ),
            None,
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let args = request
            .arguments
            .map(|a| serde_json::Value::Object(a).to_string())
            .unwrap_or_default();
        let ticker = match context.meta.get_progress_token() {
            Some(token) if self.snapshot().1.serves(&name) => {
                Some(Ticker::start(context.peer.clone(), token, &name).await)
            }
            _ => None,
        };
        let span = crate::spans::tools_call(&name, &context);
        let observation = match ToolGrant::of(&context) {
            Some(grant) if !grant.allows(&name) => Some(
                Observation::error(&grant.refusal(&name), Some("not-granted")).finish(
                    &name,
                    self.0.cap as usize,
                    DEFAULT_HINT,
                ),
            ),
            _ => {
                self.observe(&name, args, &context.ct)
                    .instrument(span.clone())
                    .await
            }
        };
        if observation
            .as_ref()
            .is_some_and(|o| o.status() != CallStatus::Ok)
        {
            span.record("otel.status_code", "error");
        }
        if let Some(ticker) = ticker {
            ticker.stop().await;
        }
        match observation {
            Some(o) => Ok(call_result(o).into()),
            // Cancelled: rmcp sends nothing for a cancelled request.
            None => Err(McpError::internal_error("the request was cancelled", None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instructions_fit_what_codex_keeps_at_any_cap() {
        // Any cap, even one wider than the configuration allows (1,024 to 1,048,576).
        for cap in [
            1_024,
            limits::DEFAULT_MAX_TOOL_RESULT_BYTES,
            1_048_576,
            u32::MAX,
        ] {
            let text = instructions(cap);
            assert!(
                text.chars().count() <= MAX_INSTRUCTIONS_CHARS,
                "{} chars: {text}",
                text.chars().count()
            );
            assert!(text.contains(&format!("at most {cap} bytes")), "{text}");
        }
        let text = instructions(1_048_576);
        assert_eq!(text.chars().count(), 209);
        for word in ["search", "grep", "read", "tail", "ls", "files", "logs"] {
            assert!(text.contains(word), "{word}");
        }
    }
}
