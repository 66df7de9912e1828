//! Every tool-call id a backend makes: one minted for a call a server sent without an id
//! ([`mint_id`]), the numbered ids of the offline models ([`numbered_call_id`],
//! [`next_call_id`]), and ids re-keyed to what a provider accepts ([`IdMap`] by hash for
//! OpenAI and Anthropic, [`ToolUseIds`] by cleaning for Bedrock).

use std::collections::{HashMap, HashSet};
use std::time::{SystemTime, UNIX_EPOCH};

use sluice_protocol::{Message, Role};

/// A tool-call id for a call a server sent without one: `call_` + the time in hex + `_` + the
/// call's position (unique within a session in practice; not random).
pub(crate) fn mint_id(position: usize) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("call_{nanos:x}_{position}")
}

/// `call_<n>`: the id of the `n`th tool call of a replay script that gave none, and the form
/// of the scripted model's ids.
pub(crate) fn numbered_call_id(n: usize) -> String {
    format!("call_{n}")
}

/// `call_<n>`: one more than the tool calls in the transcript, skipping ids in use.
pub(crate) fn next_call_id(messages: &[Message]) -> String {
    let used: HashSet<&str> = messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .map(|c| c.id.as_str())
        .collect();
    let mut n = used.len() + 1;
    while used.contains(numbered_call_id(n).as_str()) {
        n += 1;
    }
    numbered_call_id(n)
}

/// Tool-call ids as one request sends them: ids the provider accepts unchanged, the others
/// replaced by `prefix` + 16 hex digits of a hash of the original (FNV-1a), the same in every
/// request and for the call and its result alike. A replacement that would clash with another
/// id of the request is hashed again.
pub(crate) struct IdMap {
    map: HashMap<String, String>,
}

impl IdMap {
    /// The map for `messages`: `keep` says which ids the provider accepts.
    pub(crate) fn new(messages: &[Message], prefix: &str, keep: impl Fn(&str) -> bool) -> IdMap {
        let mut ids: Vec<&str> = Vec::new();
        for m in messages {
            match m.role {
                Role::Assistant => ids.extend(m.tool_calls.iter().map(|c| c.id.as_str())),
                Role::Tool => ids.extend(m.tool_call_id.as_deref()),
                Role::User => {}
            }
        }
        let mut used: HashSet<String> = ids
            .iter()
            .filter(|id| keep(id))
            .map(|id| id.to_string())
            .collect();
        let mut map = HashMap::new();
        for id in ids {
            if keep(id) || map.contains_key(id) {
                continue;
            }
            let mut hash = fnv1a(id.as_bytes());
            let mut candidate = format!("{prefix}{hash:016x}");
            while used.contains(&candidate) {
                hash = fnv1a(candidate.as_bytes());
                candidate = format!("{prefix}{hash:016x}");
            }
            used.insert(candidate.clone());
            map.insert(id.to_string(), candidate);
        }
        IdMap { map }
    }

    /// The id to send for `id`.
    pub(crate) fn get<'a>(&'a self, id: &'a str) -> &'a str {
        self.map.get(id).map_or(id, String::as_str)
    }
}

/// 64-bit FNV-1a.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Tool-call ids re-keyed to `[a-zA-Z0-9_-]{1,64}`: every tool use gets a distinct id; a
/// result answers the latest tool use of its original id.
#[derive(Default)]
pub(crate) struct ToolUseIds {
    used: HashSet<String>,
    latest: HashMap<String, String>,
}

impl ToolUseIds {
    /// The id to send for a tool use whose id was `original`: `original` itself when it is
    /// valid and unused, else a cleaned (invalid characters to `_`, cut to 64) and, when
    /// taken, numbered (`_2`, `_3`, …) form.
    pub(crate) fn tool_use(&mut self, original: &str) -> String {
        let base: String = if is_valid_id(original) {
            original.to_string()
        } else {
            let cleaned: String = original
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .take(64)
                .collect();
            if cleaned.is_empty() {
                "call".to_string()
            } else {
                cleaned
            }
        };
        let mut id = base.clone();
        let mut n = 2u64;
        while self.used.contains(&id) {
            let suffix = format!("_{n}");
            let keep = 64usize.saturating_sub(suffix.len());
            id = format!("{}{suffix}", base.chars().take(keep).collect::<String>());
            n += 1;
        }
        self.used.insert(id.clone());
        self.latest.insert(original.to_string(), id.clone());
        id
    }

    /// The id of the latest tool use of `original`, for its result; `None` when no tool use
    /// had that id.
    pub(crate) fn result(&self, original: &str) -> Option<String> {
        self.latest.get(original).cloned()
    }
}

/// True for an id Bedrock accepts: `[a-zA-Z0-9_-]{1,64}`.
fn is_valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use sluice_protocol::ToolCall;

    use super::*;

    #[test]
    fn ids_are_rekeyed_consistently_and_without_clashes() {
        let long = "chatcmpl-tool-0123456789abcdef0123456789abcdef";
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: "{}".into(),
        };
        let messages = vec![
            Message::assistant("", vec![call(long), call("short")], "t"),
            Message::tool(long, "{}", "t"),
            Message::tool("short", "{}", "t"),
        ];
        let ids = IdMap::new(&messages, "call_", |id| id.chars().count() <= 40);
        let mapped = ids.get(long).to_string();
        assert_eq!(mapped.len(), 21);
        assert!(mapped.starts_with("call_"));
        assert_eq!(ids.get("short"), "short");
        // The same long id maps the same way in another request.
        let again = IdMap::new(&messages[..2], "call_", |id| id.chars().count() <= 40);
        assert_eq!(again.get(long), mapped);
        // A kept id equal to the replacement forces another hash.
        let messages = vec![
            Message::assistant("", vec![call(long), call(&mapped)], "t"),
            Message::tool(long, "{}", "t"),
        ];
        let ids = IdMap::new(&messages, "call_", |id| id.chars().count() <= 40);
        assert_ne!(ids.get(long), mapped);
        assert_eq!(ids.get(&mapped), mapped);
    }
}
