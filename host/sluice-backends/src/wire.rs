//! Pieces the HTTP codecs share: reading an event stream off a response, re-keying tool-call
//! ids a provider would refuse, minting ids a server left out, and cutting quoted text.

use std::collections::{HashMap, HashSet};
use std::time::{SystemTime, UNIX_EPOCH};

use sluice_protocol::{Message, Role};

use crate::BackendError;
use crate::http::{network, protocol};
use crate::sse::{SseEvent, SseParser};

/// The most bytes of a body kept to classify it when it turns out not to be an event stream
/// (old llama.cpp answers `200` with a plain JSON error to a streaming request).
const MAX_UNPARSED_BYTES: usize = 4 << 20;

/// The most characters of a server's text quoted in an error message.
const MAX_QUOTED_CHARS: usize = 300;

/// The response headers as `(name, value)` pairs (values that are not text are left out), for
/// [`classify`](crate::classify()).
pub(crate) fn header_pairs(headers: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(k, v)| {
            v.to_str()
                .ok()
                .map(|v| (k.as_str().to_string(), v.to_string()))
        })
        .collect()
}

/// A `BadRequest` error without a status (a configuration the backend cannot work with).
pub(crate) fn bad_request(message: impl Into<String>) -> BackendError {
    BackendError::new(crate::ErrorKind::BadRequest, message)
}

/// The `POST` of the JSON `body` to `url`, asking for server-sent events when `stream`;
/// `auth` adds the provider's own headers (its key, its API version).
///
/// # Errors
/// `BadRequest` when reqwest cannot build the request (a URL it cannot use).
pub(crate) fn json_post(
    client: &reqwest::Client,
    url: &str,
    body: &[u8],
    stream: bool,
    auth: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
) -> Result<reqwest::Request, BackendError> {
    let mut builder = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_vec());
    if stream {
        builder = builder.header(reqwest::header::ACCEPT, "text/event-stream");
    }
    auth(builder)
        .build()
        .map_err(|e| bad_request(format!("failed to build the request: {e}")))
}

/// The headers and text of a response that is not streamed, for a codec's `decode_body`.
///
/// # Errors
/// A network error when the body cannot be read.
pub(crate) async fn body_of(
    response: reqwest::Response,
) -> Result<(Vec<(String, String)>, String), BackendError> {
    let headers = header_pairs(response.headers());
    let text = response.text().await.map_err(|e| network(&e))?;
    Ok((headers, text))
}

/// `text` cut to a few hundred characters, for an error message.
pub(crate) fn quote(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(MAX_QUOTED_CHARS).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

/// How an event stream ended.
pub(crate) enum Ending {
    /// The decoder saw the provider's last event (`[DONE]`, `message_stop`).
    Terminal,
    /// The body ended without it.
    Eof {
        /// The whole body, when it held no event at all (then it is probably a plain JSON
        /// error or reply), with the response headers.
        unparsed: Option<(Vec<(String, String)>, String)>,
    },
}

/// Reads the event stream of `response`, handing each event to `on_event`, which returns
/// `Ok(true)` when the reply is complete (the rest of the body is not read) or an error,
/// which ends the read.
///
/// # Errors
/// What `on_event` returned; a transient error when the connection broke; a protocol error
/// for a line too long.
pub(crate) async fn read_sse(
    mut response: reqwest::Response,
    mut on_event: impl FnMut(SseEvent) -> Result<bool, BackendError>,
) -> Result<Ending, BackendError> {
    let headers = header_pairs(response.headers());
    let mut parser = SseParser::new();
    let mut raw: Option<Vec<u8>> = Some(Vec::new());
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(e) => return Err(network(&e)),
        };
        let events = parser
            .push(&chunk)
            .map_err(|e| protocol(format!("the model's event stream is malformed: {e}")))?;
        if let Some(kept) = raw.as_mut() {
            if events.is_empty() && kept.len() + chunk.len() <= MAX_UNPARSED_BYTES {
                kept.extend_from_slice(&chunk);
            } else {
                raw = None;
            }
        }
        for event in events {
            if on_event(event)? {
                return Ok(Ending::Terminal);
            }
        }
    }
    if let Some(event) = parser.finish() {
        raw = None;
        if on_event(event)? {
            return Ok(Ending::Terminal);
        }
    }
    Ok(Ending::Eof {
        unparsed: raw.map(|bytes| (headers, String::from_utf8_lossy(&bytes).into_owned())),
    })
}

/// True when an event stream's whole body held no event: only blank lines and comments (the
/// `: ping` keep-alives sse-starlette sends while a slow llama-cpp-python server loads a
/// model), or nothing at all.
pub(crate) fn holds_no_event(body: &str) -> bool {
    body.lines()
        .all(|line| line.trim().is_empty() || line.starts_with(':'))
}

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

/// Tool-call arguments as stored: the model's text, or `{}` when it sent none (an absent,
/// null or empty `arguments`: a call without parameters).
pub(crate) fn arguments_text(text: &str) -> String {
    if text.trim().is_empty() {
        "{}".to_string()
    } else {
        text.to_string()
    }
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

    #[test]
    fn a_body_of_comments_holds_no_event() {
        assert!(holds_no_event(""));
        assert!(holds_no_event("\r\n\n"));
        assert!(holds_no_event(
            ": ping - 2026-12-01 17:08:52.059345+00:00\r\n\r\n: ping - 2026-12-01 17:09:07.060913+00:00\r\n\r\n"
        ));
        assert!(!holds_no_event(": ping\n\n{\"error\":\"x\"}"));
        assert!(!holds_no_event("data: [DONE]\n\n"));
    }

    #[test]
    fn quotes_are_cut_on_characters() {
        assert_eq!(quote("short"), "short");
        let q = quote(&"é".repeat(400));
        assert_eq!(q.chars().count(), MAX_QUOTED_CHARS + 1);
        assert!(q.ends_with('…'));
        assert_eq!(arguments_text(" "), "{}");
        assert_eq!(arguments_text("{\"a\":1}"), "{\"a\":1}");
    }
}
