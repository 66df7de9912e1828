//! What a script did ([`ScriptRecord`]): its program and its tool calls, kept for the audit
//! beside the observation of its `run_script` call (docs/code-mode.md#the-audit).

use crate::call::status::CallStatus;

/// What a script did: its program and each tool call it made, for the audit (an operator
/// sees what it did; the transcript keeps only the script's observation).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ScriptRecord {
    /// The program (the `script` argument).
    pub program: String,
    /// Its tool calls, in order.
    pub calls: Vec<InnerCall>,
}

impl ScriptRecord {
    /// The record as JSON text: `{"program":…,"calls":[{"tool","arguments","status","bytes","truncated"}]}`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// One tool call of a script.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InnerCall {
    /// The tool called.
    pub tool: String,
    /// Its arguments, as the script gave them (JSON text).
    pub arguments: String,
    /// What the call came to.
    #[serde(serialize_with = "status_name")]
    pub status: CallStatus,
    /// The bytes of the observation the script got.
    pub bytes: usize,
    /// True when the inner cap cut it.
    pub truncated: bool,
}

fn status_name<S: serde::Serializer>(status: &CallStatus, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match status {
        CallStatus::Ok => "ok",
        CallStatus::ToolError => "tool-error",
        CallStatus::UnknownTool => "unknown-tool",
        CallStatus::KeyMaterial => "key-material",
        CallStatus::Cancelled => "cancelled",
    })
}
