//! Recovery from a context-window rejection (docs/agent-loop.md#context-window-recovery):
//! which observations to shrink, and the messages the run ends with when recovery is not
//! possible.

use sluice_protocol::{Message, Role};
use sluice_store::StoredMessage;

/// Observations larger than this, in bytes, are shrunk to at most this size, marker
/// included.
pub const SHRINK_ABOVE_BYTES: usize = 2048;

/// The positions of the observations to shrink: every tool message over
/// [`SHRINK_ABOVE_BYTES`] in the newest contiguous group of tool messages that holds at least
/// one. Empty when no tool message is that large.
pub fn shrink_targets(messages: &[StoredMessage]) -> Vec<u64> {
    let mut end = messages.len();
    while end > 0 {
        // Skip to the end of the next group of tool messages, going back.
        while end > 0 && messages[end - 1].message.role != Role::Tool {
            end -= 1;
        }
        let mut start = end;
        while start > 0 && messages[start - 1].message.role == Role::Tool {
            start -= 1;
        }
        let targets: Vec<u64> = messages[start..end]
            .iter()
            .filter(|m| m.message.content.len() > SHRINK_ABOVE_BYTES)
            .map(|m| m.seq)
            .collect();
        if !targets.is_empty() {
            return targets;
        }
        end = start;
    }
    Vec::new()
}

/// The name of the tool that call `call_id` asked for, from the assistant messages.
pub fn tool_of_call<'a>(messages: &'a [StoredMessage], call_id: &str) -> Option<&'a str> {
    messages.iter().rev().find_map(|m| {
        m.message
            .tool_calls
            .iter()
            .find(|c| c.id == call_id)
            .map(|c| c.name.as_str())
    })
}

/// `lastError` when nothing is left to shrink.
pub fn nothing_to_shrink(provider_message: &str) -> String {
    format!(
        "The request does not fit the model's context window, and no tool result over 2,048 bytes is left to shrink: shorten the prompt or start a new session. The provider said: {provider_message}"
    )
}

/// `lastError` when the request still does not fit after shrinking.
pub fn still_too_long(provider_message: &str) -> String {
    format!(
        "The request still does not fit the model's context window after shrinking the newest tool results: start a new session. The provider said: {provider_message}"
    )
}

/// The tool calls of the last assistant message that have no observation yet, in order.
pub fn pending_calls(messages: &[StoredMessage]) -> Vec<sluice_protocol::ToolCall> {
    let Some(last_assistant) = messages
        .iter()
        .rposition(|m| m.message.role == Role::Assistant)
    else {
        return Vec::new();
    };
    let answered: Vec<&str> = messages[last_assistant + 1..]
        .iter()
        .filter_map(|m| m.message.tool_call_id.as_deref())
        .collect();
    messages[last_assistant]
        .message
        .tool_calls
        .iter()
        .filter(|c| !answered.contains(&c.id.as_str()))
        .cloned()
        .collect()
}

/// The transcript as sent to a model.
pub fn transcript(messages: &[StoredMessage]) -> Vec<Message> {
    messages.iter().map(|m| m.message.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_protocol::ToolCall;

    fn stored(seq: u64, message: Message) -> StoredMessage {
        StoredMessage { seq, message }
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn only_the_newest_group_with_a_large_result_is_shrunk() {
        let big = "x".repeat(10_000);
        let t = "2026-11-30T00:00:00Z";
        let messages = vec![
            stored(1, Message::user("q", t)),
            stored(2, Message::assistant("", vec![call("a")], t)),
            stored(3, Message::tool("a", big.clone(), t)),
            stored(4, Message::assistant("", vec![call("b"), call("c")], t)),
            stored(5, Message::tool("b", "small", t)),
            stored(6, Message::tool("c", big.clone(), t)),
            stored(7, Message::user("next", t)),
        ];
        assert_eq!(shrink_targets(&messages), [6]);
        // A newer group with only small results is passed over.
        let mut more = messages.clone();
        more.push(stored(8, Message::assistant("", vec![call("d")], t)));
        more.push(stored(9, Message::tool("d", "small", t)));
        assert_eq!(shrink_targets(&more), [6]);
        assert_eq!(shrink_targets(&messages[..2]), Vec::<u64>::new());
        assert_eq!(tool_of_call(&messages, "c"), Some("read_file"));
    }

    #[test]
    fn pending_calls_are_those_without_observations() {
        let t = "2026-11-30T00:00:00Z";
        let messages = vec![
            stored(1, Message::user("q", t)),
            stored(2, Message::assistant("", vec![call("a"), call("b")], t)),
            stored(3, Message::tool("a", "{}", t)),
        ];
        assert_eq!(pending_calls(&messages), [call("b")]);
        assert!(pending_calls(&messages[..1]).is_empty());
    }
}
