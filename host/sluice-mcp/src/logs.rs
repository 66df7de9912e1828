//! What of rmcp's own logging an operator sees. rmcp logs every Streamable HTTP request's
//! session at info (`Service initialized as server peer_info=…`, the whole client info), a
//! client that leaves mid-answer at error (`failed to send pending response during
//! drain`) and an ordinary cancellation at warn: detail of the SDK, not events of the
//! server, which logs what matters itself. So rmcp's lines count as debug: they show only
//! when `SLUICE_LOG` enables debug (or trace) for everything, or names rmcp itself
//! (`SLUICE_LOG=warn,rmcp=info`). The binary hands [`RMCP_TARGET`] to the log subscriber
//! as a quiet target (`sluice_telemetry::quiet`).

/// The tracing target of rmcp's log lines (and of its modules, `rmcp::…`).
pub const RMCP_TARGET: &str = "rmcp";
