//! What a tool call came to ([`CallStatus`]), and its name in metrics and spans
//! ([`status_name`]).

/// What a tool call came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallStatus {
    /// The tool returned a result.
    Ok,
    /// The tool (or the host, for bad arguments and limits) returned a tool error.
    ToolError,
    /// No tool has the name the model asked for.
    UnknownTool,
    /// The result held PEM private-key armor and was replaced by a refusal.
    KeyMaterial,
    /// The call was cancelled before the tool finished: a tool error of kind `cancelled`.
    Cancelled,
}

/// Every [`CallStatus`], in the order of a tool's call counters.
pub(crate) const STATUSES: [CallStatus; 5] = [
    CallStatus::Ok,
    CallStatus::ToolError,
    CallStatus::UnknownTool,
    CallStatus::KeyMaterial,
    CallStatus::Cancelled,
];

/// The label and span value of each [`CallStatus`].
pub fn status_name(status: CallStatus) -> &'static str {
    match status {
        CallStatus::Ok => "ok",
        CallStatus::ToolError => "tool_error",
        CallStatus::UnknownTool => "unknown_tool",
        CallStatus::KeyMaterial => "key_material",
        CallStatus::Cancelled => "cancelled",
    }
}
