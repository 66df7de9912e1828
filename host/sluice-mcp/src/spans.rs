//! The span of an MCP request (docs/telemetry.md#traces), after OpenTelemetry's MCP
//! conventions: `tools/call {name}` with `mcp.method.name`, `jsonrpc.request.id`,
//! `mcp.session.id` (over Streamable HTTP) and `gen_ai.tool.name`. It continues the
//! caller's trace from `params._meta.traceparent` (and `tracestate`), else from the HTTP
//! request's `traceparent` header. The runtime records the call's `sluice.*` fields on it.

use rmcp::RoleServer;
use rmcp::model::NumberOrString;
use rmcp::service::RequestContext;
use tracing::Span;
use tracing::field::Empty;

/// The span of `tools/call` of tool `name`, continuing the caller's trace.
pub(crate) fn tools_call(name: &str, context: &RequestContext<RoleServer>) -> Span {
    let id = match &context.id {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.to_string(),
    };
    let parts = context.extensions.get::<axum::http::request::Parts>();
    let header = |h: &str| {
        parts
            .and_then(|p| p.headers.get(h))
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let span = sluice_runtime::tool_call_span!(
        "tools/call",
        otel.name = format!("tools/call {name}"),
        otel.kind = "server",
        mcp.method.name = "tools/call",
        jsonrpc.request.id = id,
        mcp.session.id = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
    );
    if let Some(session) = header("mcp-session-id") {
        span.record("mcp.session.id", session.as_str());
    }
    let meta = |k: &str| {
        context
            .meta
            .get(k)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let continued = match meta("traceparent") {
        Some(parent) => {
            sluice_telemetry::continue_trace(&span, &parent, meta("tracestate").as_deref())
        }
        None => false,
    };
    if !continued && let Some(parent) = header("traceparent") {
        sluice_telemetry::continue_trace(&span, &parent, header("tracestate").as_deref());
    }
    span
}
