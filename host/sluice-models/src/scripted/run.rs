//! The current run, read from the transcript: the prompt, the tool calls made since and what
//! their observations say.

use serde_json::Value;
use sluice_protocol::{Message, Role};

/// The current run: the prompt and the tool calls made since, with their observations.
pub(super) struct Run<'a> {
    pub(super) prompt: &'a str,
    pub(super) calls: Vec<Call<'a>>,
}

/// One tool call of the run.
pub(super) struct Call<'a> {
    pub(super) tool: &'a str,
    /// The arguments as sent (`Null` if they are not JSON).
    pub(super) args: Value,
    pub(super) obs: Obs,
}

impl Call<'_> {
    pub(super) fn path_arg(&self) -> Option<&str> {
        self.args.get("path").and_then(Value::as_str)
    }
}

/// What a tool message says.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Obs {
    /// `{"ok":true,"result":…}`: the result.
    Ok(Value),
    /// `{"ok":false,"error":…}`: the error text.
    Failed(String),
    /// Not an observation we can read; why.
    Unreadable(&'static str),
    /// No tool message answers the call.
    Missing,
}

impl Obs {
    fn parse(content: &str) -> Obs {
        let Ok(value) = serde_json::from_str::<Value>(content) else {
            return Obs::Unreadable(if content.contains("…[truncated; full result is") {
                "it was cut to fit the observation cap and is no longer valid JSON"
            } else if content.contains("…[cut from") {
                "it was shrunk after a context-window rejection and is no longer valid JSON"
            } else {
                "it is not valid JSON"
            });
        };
        match (
            value.get("ok").and_then(Value::as_bool),
            value.get("result"),
            value.get("error"),
        ) {
            (Some(true), Some(result), _) => Obs::Ok(result.clone()),
            (Some(false), _, Some(error)) => {
                let error = error
                    .as_str()
                    .map_or_else(|| error.to_string(), str::to_string);
                match value.get("name").and_then(Value::as_str) {
                    Some(name) if error == "unknown_tool" => {
                        Obs::Failed(format!("unknown tool `{name}`"))
                    }
                    _ => Obs::Failed(error),
                }
            }
            _ => Obs::Unreadable("it does not have the {\"ok\", \"result\" | \"error\"} shape"),
        }
    }

    pub(super) fn ok(&self) -> Option<&Value> {
        match self {
            Obs::Ok(v) => Some(v),
            _ => None,
        }
    }
}

impl<'a> Run<'a> {
    pub(super) fn from_transcript(messages: &'a [Message]) -> Run<'a> {
        let start = messages.iter().rposition(|m| m.role == Role::User);
        let prompt = start.map_or("", |i| messages[i].content.as_str());
        let rest = start.map_or(messages, |i| &messages[i + 1..]);
        let mut calls = Vec::new();
        for (i, message) in rest.iter().enumerate() {
            for call in &message.tool_calls {
                let answer = rest[i + 1..].iter().find(|m| {
                    m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call.id.as_str())
                });
                calls.push(Call {
                    tool: call.name.as_str(),
                    args: serde_json::from_str(&call.arguments).unwrap_or(Value::Null),
                    obs: answer.map_or(Obs::Missing, |m| Obs::parse(&m.content)),
                });
            }
        }
        Run { prompt, calls }
    }

    pub(super) fn first(&self, tool: &str) -> Option<&Call<'a>> {
        self.calls.iter().find(|c| c.tool == tool)
    }
}
