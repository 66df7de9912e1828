//! The transcript of a session and the words the agent, the store and the backends share
//! (docs/agent-loop.md#transcript). Types only: serde shapes with explicit names, no
//! behaviour beyond trivial accessors.
//!
//! A transcript is a list of [`Message`]s: `{role, content, toolCalls?, toolCallId?,
//! createdAt}`. The system prompt is never a message: each request carries it in the
//! provider's system slot.

use serde::{Deserialize, Serialize};

pub mod access;
pub mod limits;
pub mod model;

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The operator's prompt.
    User,
    /// The model's reply, possibly asking for tool calls.
    Assistant,
    /// One tool call's observation.
    Tool,
}

impl Role {
    /// `user`, `assistant` or `tool`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// The role called `s`, if any.
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "tool" => Some(Role::Tool),
            _ => None,
        }
    }
}

/// A tool call the model asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The call's id, as the provider minted it (tool messages answer it).
    pub id: String,
    /// The tool's name, as the model wrote it.
    pub name: String,
    /// The arguments as the model wrote them: JSON text, possibly invalid.
    pub arguments: String,
}

/// One message of a transcript.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// The text: the prompt, the model's words, or the observation (compact JSON, capped).
    pub content: String,
    /// For an assistant message: the calls it asks for, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// When it was stored, RFC 3339 UTC.
    pub created_at: String,
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>, created_at: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            created_at: created_at.into(),
        }
    }

    /// An assistant message.
    pub fn assistant(
        content: impl Into<String>,
        tool_calls: Vec<ToolCall>,
        created_at: impl Into<String>,
    ) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
            tool_calls,
            tool_call_id: None,
            created_at: created_at.into(),
        }
    }

    /// A tool message answering call `call_id`.
    pub fn tool(
        call_id: impl Into<String>,
        observation: impl Into<String>,
        created_at: impl Into<String>,
    ) -> Self {
        Message {
            role: Role::Tool,
            content: observation.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
            created_at: created_at.into(),
        }
    }
}

/// Where a session stands (docs/agent-loop.md#statuses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// Created, never run.
    Idle,
    /// A run is in progress.
    Running,
    /// A destructive tool call waits for the operator.
    AwaitingApproval,
    /// The last run ended with a final answer (or at `maxTurns`, with `lastError`).
    Completed,
    /// The last run was cancelled.
    Aborted,
    /// The last run failed; `lastError` says why.
    Error,
}

impl SessionStatus {
    /// Every status, in the order of the type.
    pub const ALL: [SessionStatus; 6] = [
        SessionStatus::Idle,
        SessionStatus::Running,
        SessionStatus::AwaitingApproval,
        SessionStatus::Completed,
        SessionStatus::Aborted,
        SessionStatus::Error,
    ];

    /// The stored name: `idle`, `running`, `awaiting_approval`, `completed`, `aborted`,
    /// `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Idle => "idle",
            SessionStatus::Running => "running",
            SessionStatus::AwaitingApproval => "awaiting_approval",
            SessionStatus::Completed => "completed",
            SessionStatus::Aborted => "aborted",
            SessionStatus::Error => "error",
        }
    }

    /// The status stored as `s`, if any.
    pub fn parse(s: &str) -> Option<SessionStatus> {
        Some(match s {
            "idle" => SessionStatus::Idle,
            "running" => SessionStatus::Running,
            "awaiting_approval" => SessionStatus::AwaitingApproval,
            "completed" => SessionStatus::Completed,
            "aborted" => SessionStatus::Aborted,
            "error" => SessionStatus::Error,
            _ => return None,
        })
    }
}

/// The longest tool name, in bytes: 64, what OpenAI, Anthropic and Bedrock accept for a
/// function name (and within MCP's 1 to 64).
pub const MAX_TOOL_NAME_BYTES: usize = 64;

/// What a tool name may be, in words: what [`valid_tool_name`] accepts.
pub const TOOL_NAME_RULE: &str = "1 to 64 characters of A-Z, a-z, 0-9, `_` and `-`";

/// True when `name` can name a tool for every model API Sluice talks to and for MCP:
/// 1 to [`MAX_TOOL_NAME_BYTES`] characters of `A-Z a-z 0-9 _ -` (OpenAI's and Anthropic's
/// `^[a-zA-Z0-9_-]{1,64}$`; MCP also allows `.`, which those APIs refuse).
pub fn valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_BYTES).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// What the model is told about one tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON schema of its arguments.
    pub input_schema: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_shape() {
        let m = Message::assistant(
            "",
            vec![ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            }],
            "2026-11-30T00:00:00Z",
        );
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"role":"assistant","content":"","toolCalls":[{"id":"c1","name":"read_file","arguments":"{}"}],"createdAt":"2026-11-30T00:00:00Z"}"#
        );
        let t = Message::tool("c1", "{\"ok\":true,\"result\":1}", "2026-11-30T00:00:01Z");
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            r#"{"role":"tool","content":"{\"ok\":true,\"result\":1}","toolCallId":"c1","createdAt":"2026-11-30T00:00:01Z"}"#
        );
        for s in SessionStatus::ALL {
            assert_eq!(SessionStatus::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }
}
