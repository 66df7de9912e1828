//! Recovery from a context-window rejection (docs/agent-loop.md#context-window-recovery):
//! which observations to shrink, and the messages the run ends with when recovery is not
//! possible.
//!
//! **The rule of the contract** ([`shrink_targets`]), always applied: every observation over
//! [`SHRINK_ABOVE_BYTES`] in the newest contiguous group of tool messages that holds one is
//! shrunk to a head of at most that many bytes.
//!
//! **Sized recovery**, on top of it when the sizes are known (the provider's
//! message states the prompt's tokens and the limit, or the backend's estimate does; see
//! [`sluice_models::Overflow`]): the rule alone can free too little (two 2 KB pages under a
//! 4 KB cap were cut by 122 bytes in total, and the one retry failed). [`shrink_plan`] then
//! goes on, the newest groups first, as far as [`bytes_to_free`] says is needed for the
//! retry to fit:
//! 1. older groups too, each observation over [`SHRINK_ABOVE_BYTES`] to a head of that size;
//! 2. when that is not enough, again from the newest group, each observation over
//!    [`SHRINK_FURTHER_BYTES`] to a head of that size.
//!
//! A group is shrunk whole at each step, and the plan stops after the group that frees
//! enough. Still one retry, no tool runs again, and the audit keeps every original.

use std::ops::Range;

use sluice_models::{BackendError, Overflow};
use sluice_protocol::{Message, Role};
use sluice_store::StoredMessage;

/// Observations larger than this, in bytes, are shrunk to at most this size, marker
/// included: the 2,048-byte rule of docs/agent-loop.md#context-window-recovery.
pub const SHRINK_ABOVE_BYTES: usize = 2048;

/// The smaller head, in bytes, marker included, that sized recovery shrinks observations to
/// when [`SHRINK_ABOVE_BYTES`] heads do not free enough.
pub const SHRINK_FURTHER_BYTES: usize = 512;

/// The share of the provider's limit the retried prompt aims at: the rest leaves room for
/// the answer and for the estimate's error (the bytes freed are converted to tokens at the
/// rejected request's own ratio, but a shrunk page and its marker may tokenise differently).
pub const TARGET_SHARE_OF_LIMIT: f64 = 0.85;

/// One observation to shrink: message `seq`, to a head of at most `limit_bytes` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The tool message.
    pub seq: u64,
    /// The head's size, marker included: [`SHRINK_ABOVE_BYTES`] or [`SHRINK_FURTHER_BYTES`].
    pub limit_bytes: usize,
}

/// The prompt bytes a request must lose to fit: the request had `prompt_bytes` bytes
/// ([`sluice_models::estimate::prompt_bytes`]) and `overflow.prompt_tokens` tokens; at its
/// own bytes-per-token ratio, fitting [`TARGET_SHARE_OF_LIMIT`] of `overflow.limit_tokens`
/// means keeping `prompt_bytes × 0.85 × limit / prompt` bytes.
pub fn bytes_to_free(prompt_bytes: usize, overflow: &Overflow) -> usize {
    if overflow.prompt_tokens == 0 {
        return 0;
    }
    let keep = prompt_bytes as f64 * TARGET_SHARE_OF_LIMIT * overflow.limit_tokens as f64
        / overflow.prompt_tokens as f64;
    prompt_bytes.saturating_sub(keep.floor() as usize)
}

/// The positions of the observations to shrink: every tool message over
/// [`SHRINK_ABOVE_BYTES`] in the newest contiguous group of tool messages that holds at least
/// one. Empty when no tool message is that large.
pub fn shrink_targets(messages: &[StoredMessage]) -> Vec<u64> {
    let groups = groups(messages);
    groups
        .iter()
        .map(|g| over(&messages[g.clone()], SHRINK_ABOVE_BYTES))
        .find(|targets| !targets.is_empty())
        .unwrap_or_default()
}

/// What to shrink after a rejection: the 2,048-byte rule ([`shrink_targets`]), then, when `need`
/// (the bytes to free, see [`bytes_to_free`]) is known and not yet met, the steps of the
/// module docs. In message order; empty when nothing can be shrunk.
pub fn shrink_plan(messages: &[StoredMessage], need: Option<usize>) -> Vec<Cut> {
    let groups = groups(messages);
    let mut plan = Plan {
        size: messages.iter().map(|m| m.message.content.len()).collect(),
        cut: vec![None; messages.len()],
        freed: 0,
    };
    // The 2,048-byte rule (docs/agent-loop.md#context-window-recovery): the newest group
    // with an observation over 2,048 bytes.
    let first = groups
        .iter()
        .position(|g| plan.shrink(g.clone(), SHRINK_ABOVE_BYTES));
    if let Some(need) = need {
        let older = first.map_or(groups.len(), |i| i + 1);
        let steps = groups[older..]
            .iter()
            .map(|g| (g, SHRINK_ABOVE_BYTES))
            .chain(groups.iter().map(|g| (g, SHRINK_FURTHER_BYTES)));
        for (group, limit) in steps {
            if plan.freed >= need {
                break;
            }
            plan.shrink(group.clone(), limit);
        }
    }
    messages
        .iter()
        .zip(plan.cut)
        .filter_map(|(m, limit)| {
            limit.map(|limit_bytes| Cut {
                seq: m.seq,
                limit_bytes,
            })
        })
        .collect()
}

/// A plan being made: each message's planned size and head limit, and the bytes freed.
struct Plan {
    size: Vec<usize>,
    cut: Vec<Option<usize>>,
    freed: usize,
}

impl Plan {
    /// Plans every message of `range` over `limit` bytes down to `limit`; true if any was.
    fn shrink(&mut self, range: Range<usize>, limit: usize) -> bool {
        let mut any = false;
        for i in range {
            if self.size[i] > limit {
                self.freed += self.size[i] - limit;
                self.size[i] = limit;
                self.cut[i] = Some(limit);
                any = true;
            }
        }
        any
    }
}

/// The contiguous groups of tool messages, as index ranges, newest first.
fn groups(messages: &[StoredMessage]) -> Vec<Range<usize>> {
    let mut groups = Vec::new();
    let mut end = messages.len();
    while end > 0 {
        while end > 0 && messages[end - 1].message.role != Role::Tool {
            end -= 1;
        }
        let mut start = end;
        while start > 0 && messages[start - 1].message.role == Role::Tool {
            start -= 1;
        }
        if start < end {
            groups.push(start..end);
        }
        end = start;
    }
    groups
}

/// The positions of the messages over `limit` bytes.
fn over(messages: &[StoredMessage], limit: usize) -> Vec<u64> {
    messages
        .iter()
        .filter(|m| m.message.content.len() > limit)
        .map(|m| m.seq)
        .collect()
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
pub fn nothing_to_shrink(rejection: &BackendError) -> String {
    format!(
        "The request does not fit the model's context window, and no tool result over 2,048 bytes is left to shrink: shorten the prompt or start a new session. {}",
        who_said(rejection)
    )
}

/// `lastError` when the request still does not fit after shrinking.
pub fn still_too_long(rejection: &BackendError) -> String {
    format!(
        "The request still does not fit the model's context window after shrinking the newest tool results: start a new session. {}",
        who_said(rejection)
    )
}

/// The rejection's message and whose it is: the provider's, or Sluice's own when the
/// pre-send estimate refused the request (it was never sent, so the provider said nothing).
pub fn who_said(rejection: &BackendError) -> String {
    if rejection.refused_locally() {
        format!("Sluice's own estimate said: {}", rejection.message)
    } else {
        format!("The provider said: {}", rejection.message)
    }
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

/// The start of the audit reason of a result shrunk to recover from a context-window
/// rejection (the provider's message follows it).
pub const SHRINK_REASON: &str =
    "a request including this result exceeded the model's context window";

/// The result each shrunk message held before its first shrink, by `seq`, from the session's
/// `audit` (oldest first): the `original` of its first entry whose reason is a shrink
/// ([`SHRINK_REASON`]). Other entries are notes, not changes (a `run_script` observation's
/// program and calls, docs/code-mode.md#the-audit), and their `original` is no result.
pub fn results_before_shrinking(
    audit: Vec<sluice_store::AuditEntry>,
) -> std::collections::HashMap<u64, String> {
    let mut originals = std::collections::HashMap::new();
    for entry in audit
        .into_iter()
        .filter(|e| e.reason.starts_with(SHRINK_REASON))
    {
        originals.entry(entry.seq).or_insert(entry.original);
    }
    originals
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

    /// Groups, oldest first: [3 000] · [2 100, 2 100] · [1 500, 600, 100] (seqs 3; 5, 6;
    /// 8, 9, 10).
    fn three_groups() -> Vec<StoredMessage> {
        let t = "2026-11-30T00:00:00Z";
        let obs = |n: usize| "o".repeat(n);
        vec![
            stored(1, Message::user("q", t)),
            stored(2, Message::assistant("", vec![call("a")], t)),
            stored(3, Message::tool("a", obs(3000), t)),
            stored(4, Message::assistant("", vec![call("b"), call("c")], t)),
            stored(5, Message::tool("b", obs(2100), t)),
            stored(6, Message::tool("c", obs(2100), t)),
            stored(
                7,
                Message::assistant("", vec![call("d"), call("e"), call("f")], t),
            ),
            stored(8, Message::tool("d", obs(1500), t)),
            stored(9, Message::tool("e", obs(600), t)),
            stored(10, Message::tool("f", obs(100), t)),
        ]
    }

    fn cuts(plan: &[Cut]) -> Vec<(u64, usize)> {
        plan.iter().map(|c| (c.seq, c.limit_bytes)).collect()
    }

    #[test]
    fn without_sizes_the_plan_is_the_spec_rule() {
        let messages = three_groups();
        assert_eq!(cuts(&shrink_plan(&messages, None)), [(5, 2048), (6, 2048)]);
        assert_eq!(shrink_targets(&messages), [5, 6]);
        // What the rule frees is enough: the same plan.
        assert_eq!(
            cuts(&shrink_plan(&messages, Some(104))),
            [(5, 2048), (6, 2048)]
        );
    }

    #[test]
    fn with_sizes_the_plan_goes_as_far_as_needed_newest_first() {
        let messages = three_groups();
        // The rule frees 104 bytes; the older group at 2,048 frees 952 more.
        assert_eq!(
            cuts(&shrink_plan(&messages, Some(105))),
            [(3, 2048), (5, 2048), (6, 2048)]
        );
        // Then 512-byte heads, the newest group first: 988 + 88 from the newest group.
        assert_eq!(
            cuts(&shrink_plan(&messages, Some(1056 + 1076))),
            [(3, 2048), (5, 2048), (6, 2048), (8, 512), (9, 512)]
        );
        // One byte more takes the next group (2 × 1,536).
        assert_eq!(
            cuts(&shrink_plan(&messages, Some(1056 + 1076 + 1))),
            [(3, 2048), (5, 512), (6, 512), (8, 512), (9, 512)]
        );
        // More than everything: everything over 512 bytes, and no more.
        assert_eq!(
            cuts(&shrink_plan(&messages, Some(usize::MAX))),
            [(3, 512), (5, 512), (6, 512), (8, 512), (9, 512)]
        );
    }

    #[test]
    fn with_sizes_results_between_512_and_2048_bytes_can_shrink() {
        let t = "2026-11-30T00:00:00Z";
        let messages = vec![
            stored(1, Message::user("q", t)),
            stored(2, Message::assistant("", vec![call("a")], t)),
            stored(3, Message::tool("a", "o".repeat(1000), t)),
        ];
        assert!(shrink_plan(&messages, None).is_empty());
        assert_eq!(cuts(&shrink_plan(&messages, Some(10))), [(3, 512)]);
        assert!(shrink_plan(&messages[..2], Some(10)).is_empty());
    }

    #[test]
    fn bytes_to_free_keeps_85_percent_of_the_limit_at_the_requests_ratio() {
        let sizes = |prompt_tokens, limit_tokens| Overflow {
            prompt_tokens,
            limit_tokens,
            estimated: false,
        };
        // 30,000 bytes were 10,000 tokens; 0.85 × 2,048 tokens is 5,222 bytes' worth.
        assert_eq!(bytes_to_free(30_000, &sizes(10_000, 2048)), 30_000 - 5222);
        assert_eq!(bytes_to_free(1000, &sizes(100, 200)), 0);
        assert_eq!(bytes_to_free(1000, &sizes(0, 200)), 0);
    }

    #[test]
    fn who_said_it() {
        let provider = sluice_models::classify(
            400,
            &[],
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 9 tokens > 8 maximum"}}"#,
        );
        assert_eq!(
            who_said(&provider),
            "The provider said: prompt is too long: 9 tokens > 8 maximum"
        );
        let local = BackendError {
            http_requests: Some(0),
            ..BackendError::new(
                sluice_models::ErrorKind::ContextWindowExceeded,
                "the request was not sent: …",
            )
        };
        assert_eq!(
            who_said(&local),
            "Sluice's own estimate said: the request was not sent: …"
        );
        assert!(
            nothing_to_shrink(&local)
                .ends_with("Sluice's own estimate said: the request was not sent: …")
        );
        assert!(!still_too_long(&local).contains("provider said"));
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

    #[test]
    fn a_scripts_note_is_no_result_to_shrink_again() {
        let entry = |seq: u64, reason: &str, original: &str| sluice_store::AuditEntry {
            session_id: "s".into(),
            seq,
            changed_at: "2026-12-06T00:00:00.000Z".into(),
            reason: reason.into(),
            original: original.into(),
            replacement: String::new(),
        };
        let shrink = format!("{SHRINK_REASON}: prompt is too long");
        let originals = results_before_shrinking(vec![
            // A run_script observation's note, written when it ran.
            entry(
                3,
                "run_script: its program and its 0 tool calls (the transcript keeps only the script's observation)",
                "{\"program\":\"return 1\",\"calls\":[]}",
            ),
            // Message 5 shrunk twice: the first original is the result.
            entry(5, &shrink, "the whole result of 5"),
            entry(5, &shrink, "the first shrink of 5"),
        ]);
        assert_eq!(
            originals.get(&3),
            None,
            "the note is not message 3's result"
        );
        assert_eq!(
            originals.get(&5).map(String::as_str),
            Some("the whole result of 5")
        );
        assert_eq!(originals.len(), 1);
    }
}
