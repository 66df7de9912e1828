//! Every tool-call id a backend makes: one minted for a call a server sent without an id, and
//! ids re-keyed to what a provider accepts.

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
