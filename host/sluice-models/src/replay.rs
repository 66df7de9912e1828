//! The replay model (`--model replay:FILE`): answers requests from a JSONL script.
//!
//! Each non-blank line of the script is one turn, used by one request, in order. A turn is a
//! JSON object, either a reply:
//!
//! ```json
//! {"content":"Looking.","toolCalls":[{"name":"read_file","arguments":{"path":"a.txt"}}],"usage":{"inputTokens":10,"outputTokens":3}}
//! ```
//!
//! - `content`: the text (default `""`);
//! - `toolCalls`: each `{"name", "arguments"?, "id"?}`. `arguments` given as a string is used
//!   verbatim (so a script can send invalid JSON); any other JSON value is serialized compactly;
//!   absent means `{}`. An absent `id` becomes `call_<n>`, `n` being the call's 1-based position
//!   among all the script's tool calls (the first call of a script is `call_1`);
//! - `usage`: optional `{"inputTokens", "outputTokens"}`;
//!
//! or a failure:
//!
//! ```json
//! {"error":{"status":400,"body":{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 9 tokens > 8 maximum"}},"headers":{"request-id":"req_1"}}}
//! {"error":{"event":{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}}}
//! {"error":{"network":"connection reset by peer"}}
//! ```
//!
//! - `status` + `body` (a string, or JSON sent as its compact text; default empty) + `headers`
//!   (an object of string or number values): an HTTP error reply, turned into a
//!   [`BackendError`] by the real [`classify()`] when the turn is used (so a `retry-after` date is
//!   measured from that moment);
//! - `event`: an error inside a `200` stream, through [`classify_stream_error`];
//! - `network`: a transport failure ([`ErrorKind::Transient`](crate::ErrorKind::Transient), no status).
//!
//! Either kind of turn may carry `"delayMs": N`: the model sleeps N milliseconds (with
//! `tokio::time::sleep`) before answering, so a test can cancel a request in flight. Unknown
//! keys are errors (a misspelt `tool_calls` would otherwise pass silently). Parse errors name
//! the file and the 1-based line.
//!
//! A turn is consumed when its request arrives, before the delay: a cancelled request used its
//! turn, and request `k` always meets line `k`. When the script has run out, a request fails
//! with [`ErrorKind::Protocol`](crate::ErrorKind::Protocol): "the replay script has no more turns (N used)". Every request
//! received (answered, failed, cancelled or past the end) is recorded: see
//! [`ReplayModel::requests`] and [`ReplayModel::request_bytes`].

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Map, Value};
use sluice_protocol::ToolCall;

use crate::backend::{Backend, ModelReply, ModelRequest, Usage};
use crate::classify::{classify, classify_stream_error};
use crate::error::BackendError;
use crate::ids::numbered_call_id;

/// A model that replays a script. Clones share the script position and the recorded requests.
#[derive(Clone, Debug)]
pub struct ReplayModel {
    source: String,
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    turns: Vec<ReplayTurn>,
    next: usize,
    requests: Vec<ModelRequest>,
}

/// One turn of a script.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayTurn {
    /// The 1-based line of the script it came from (0 for turns built in code).
    pub line: usize,
    /// How long to wait before answering (`delayMs`; default zero).
    pub delay: Duration,
    /// What to answer.
    pub action: TurnAction,
}

/// What a turn answers.
#[derive(Clone, Debug, PartialEq)]
pub enum TurnAction {
    /// A reply.
    Reply(ModelReply),
    /// An HTTP error reply, classified by [`classify()`] when used.
    Http {
        /// The HTTP status (100–599).
        status: u16,
        /// Header `(name, value)` pairs.
        headers: Vec<(String, String)>,
        /// The body text.
        body: String,
    },
    /// An error event inside a `200` stream (its JSON text), classified by
    /// [`classify_stream_error`] when used.
    StreamError(String),
    /// A network failure with this message: [`ErrorKind::Transient`](crate::ErrorKind::Transient), no status.
    Network(String),
}

/// A script that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The file could not be read.
    #[error("cannot read the replay script {file}: {source}")]
    Read {
        /// The file, as given.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not a valid turn.
    #[error("{file}:{line}: {source}")]
    Parse {
        /// The file, as given.
        file: String,
        /// The 1-based line.
        line: usize,
        /// What is wrong with it.
        source: TurnError,
    },
}

/// What is wrong with one line of a replay script (the module docs give the format).
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// The line is not JSON.
    #[error("not valid JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// A rule of the format that the line breaks, as one sentence.
    #[error("{0}")]
    Rule(&'static str),
    /// An object holds a key its kind does not allow.
    #[error("unknown key \"{key}\" in {what} (allowed: {allowed})")]
    UnknownKey {
        /// The key.
        key: String,
        /// The object: `a turn`, `usage`, `a tool call`, `error`.
        what: &'static str,
        /// The keys it allows, comma-separated.
        allowed: String,
    },
    /// A failure (`"error"`) that also has this key of a reply.
    #[error("a turn with \"error\" cannot also have \"{0}\"")]
    ErrorWithReply(&'static str),
    /// A value of the wrong kind at a place named at run time.
    #[error("{place} must be {expected}")]
    Value {
        /// Where: `usage.inputTokens`, `error.headers.retry-after`.
        place: String,
        /// What it must be: `a non-negative integer`.
        expected: &'static str,
    },
    /// One tool call of `toolCalls` is wrong.
    #[error("toolCalls[{index}]: {source}")]
    ToolCall {
        /// Its 0-based position in `toolCalls`.
        index: usize,
        /// What is wrong with it.
        source: Box<TurnError>,
    },
}

/// The most bytes read from a replay script: 64 MiB.
pub const MAX_REPLAY_FILE_BYTES: u64 = 64 << 20;

impl ReplayModel {
    /// Reads and parses the script at `path` (see the module docs for the format).
    ///
    /// Errors: [`ReplayError::Read`] when the file cannot be read, is not a regular file or
    /// holds more than [`MAX_REPLAY_FILE_BYTES`], [`ReplayError::Parse`] (with
    /// the file and line) for the first invalid line.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ReplayError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        // Opened without blocking and read only when regular (a FIFO would hang the run).
        let text = sluice_operator_files::read_text(path, MAX_REPLAY_FILE_BYTES).map_err(|e| {
            ReplayError::Read {
                file: file.clone(),
                source: std::io::Error::other(e),
            }
        })?;
        Self::parse(&file, &text)
    }

    /// Parses a script held in memory; `source` names it in errors and in [`Backend::name`].
    ///
    /// Errors: [`ReplayError::Parse`] for the first invalid line. Blank lines are skipped.
    pub fn parse(source: &str, text: &str) -> Result<Self, ReplayError> {
        let mut turns = Vec::new();
        let mut calls = 0usize;
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let turn =
                parse_turn(line, index + 1, &mut calls).map_err(|error| ReplayError::Parse {
                    file: source.to_string(),
                    line: index + 1,
                    source: error,
                })?;
            turns.push(turn);
        }
        Ok(Self::new(source, turns))
    }

    /// A model over turns built in code; `source` names it.
    pub fn new(source: &str, turns: Vec<ReplayTurn>) -> Self {
        ReplayModel {
            source: source.to_string(),
            state: Arc::new(Mutex::new(State {
                turns,
                next: 0,
                requests: Vec::new(),
            })),
        }
    }

    /// The script's turns.
    pub fn turns(&self) -> Vec<ReplayTurn> {
        self.lock().turns.clone()
    }

    /// How many turns requests have used so far.
    pub fn turns_used(&self) -> usize {
        self.lock().next
    }

    /// How many turns are left.
    pub fn turns_left(&self) -> usize {
        let state = self.lock();
        state.turns.len() - state.next
    }

    /// Every request received so far, in order (including cancelled ones and ones past the end
    /// of the script).
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.lock().requests.clone()
    }

    /// The size of each request received, as [`ModelRequest::json_bytes`], in order.
    pub fn request_bytes(&self) -> Vec<usize> {
        self.lock()
            .requests
            .iter()
            .map(ModelRequest::json_bytes)
            .collect()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a thread panicked while holding it; the state stays valid
        // (every update is a single push or increment).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait::async_trait]
impl Backend for ReplayModel {
    /// `replay:<source>`.
    fn name(&self) -> String {
        format!("replay:{}", self.source)
    }

    /// Records the request, takes the next turn, sleeps its delay and answers it; see the
    /// module docs.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, BackendError> {
        let turn = {
            let mut state = self.lock();
            state.requests.push(request.clone());
            match state.turns.get(state.next).cloned() {
                Some(turn) => {
                    state.next += 1;
                    turn
                }
                None => {
                    return Err(BackendError::protocol(format!(
                        "the replay script has no more turns ({} used)",
                        state.next
                    )));
                }
            }
        };
        if !turn.delay.is_zero() {
            tokio::time::sleep(turn.delay).await;
        }
        match turn.action {
            TurnAction::Reply(reply) => Ok(reply),
            TurnAction::Http {
                status,
                headers,
                body,
            } => Err(classify(status, &headers, &body)),
            TurnAction::StreamError(event) => Err(classify_stream_error(&event)),
            TurnAction::Network(message) => Err(BackendError::transient(message)),
        }
    }
}

/// Parses one line; `calls` counts the script's tool calls so far (for `call_<n>` ids).
fn parse_turn(line: &str, number: usize, calls: &mut usize) -> Result<ReplayTurn, TurnError> {
    let value: Value = serde_json::from_str(line).map_err(TurnError::Json)?;
    let Value::Object(object) = value else {
        return Err(TurnError::Rule("a turn must be a JSON object"));
    };
    check_keys(
        &object,
        &["content", "toolCalls", "usage", "delayMs", "error"],
        "a turn",
    )?;
    let delay = match object.get("delayMs") {
        None => Duration::ZERO,
        Some(v) => Duration::from_millis(
            v.as_u64()
                .ok_or(TurnError::Rule("delayMs must be a non-negative integer"))?,
        ),
    };
    let action = if let Some(error) = object.get("error") {
        if let Some(key) = ["content", "toolCalls", "usage"]
            .into_iter()
            .find(|k| object.contains_key(*k))
        {
            return Err(TurnError::ErrorWithReply(key));
        }
        parse_error(error)?
    } else {
        TurnAction::Reply(parse_reply(&object, calls)?)
    };
    Ok(ReplayTurn {
        line: number,
        delay,
        action,
    })
}

fn parse_reply(object: &Map<String, Value>, calls: &mut usize) -> Result<ModelReply, TurnError> {
    let content = match object.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(TurnError::Rule("content must be a string")),
    };
    let mut tool_calls = Vec::new();
    match object.get("toolCalls") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                *calls += 1;
                tool_calls.push(parse_call(item, *calls).map_err(|e| TurnError::ToolCall {
                    index: i,
                    source: Box::new(e),
                })?);
            }
        }
        Some(_) => return Err(TurnError::Rule("toolCalls must be an array")),
    }
    let usage = match object.get("usage") {
        None | Some(Value::Null) => None,
        Some(Value::Object(u)) => {
            check_keys(u, &["inputTokens", "outputTokens"], "usage")?;
            let count = |key: &str| match u.get(key) {
                None => Ok(0),
                Some(v) => v.as_u64().ok_or_else(|| TurnError::Value {
                    place: format!("usage.{key}"),
                    expected: "a non-negative integer",
                }),
            };
            Some(Usage {
                input_tokens: count("inputTokens")?,
                output_tokens: count("outputTokens")?,
            })
        }
        Some(_) => return Err(TurnError::Rule("usage must be an object")),
    };
    Ok(ModelReply {
        content,
        tool_calls,
        usage,
        http_requests: None,
    })
}

fn parse_call(item: &Value, ordinal: usize) -> Result<ToolCall, TurnError> {
    let Value::Object(call) = item else {
        return Err(TurnError::Rule("a tool call must be an object"));
    };
    check_keys(call, &["name", "arguments", "id"], "a tool call")?;
    let name = call
        .get("name")
        .and_then(Value::as_str)
        .ok_or(TurnError::Rule("name must be a string"))?
        .to_string();
    let id = match call.get("id") {
        None | Some(Value::Null) => numbered_call_id(ordinal),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(TurnError::Rule("id must be a string")),
    };
    let arguments = match call.get("arguments") {
        None => "{}".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    Ok(ToolCall {
        id,
        name,
        arguments,
    })
}

fn parse_error(error: &Value) -> Result<TurnAction, TurnError> {
    let Value::Object(error) = error else {
        return Err(TurnError::Rule("error must be an object"));
    };
    check_keys(
        error,
        &["status", "body", "headers", "event", "network"],
        "error",
    )?;
    if let Some(event) = error.get("event") {
        if error.len() != 1 {
            return Err(TurnError::Rule(
                "error.event cannot be combined with other keys",
            ));
        }
        return Ok(TurnAction::StreamError(as_text(event)));
    }
    if let Some(network) = error.get("network") {
        if error.len() != 1 {
            return Err(TurnError::Rule(
                "error.network cannot be combined with other keys",
            ));
        }
        let message = network
            .as_str()
            .ok_or(TurnError::Rule("error.network must be a string"))?;
        return Ok(TurnAction::Network(message.to_string()));
    }
    let status = error
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .filter(|s| (100..=599).contains(s))
        .ok_or(TurnError::Rule(
            "error needs a status (an integer from 100 to 599), an event or a network message",
        ))?;
    let body = error.get("body").map(as_text).unwrap_or_default();
    let mut headers = Vec::new();
    match error.get("headers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(h)) => {
            for (name, value) in h {
                let value = match value {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => {
                        return Err(TurnError::Value {
                            place: format!("error.headers.{name}"),
                            expected: "a string or a number",
                        });
                    }
                };
                headers.push((name.clone(), value));
            }
        }
        Some(_) => return Err(TurnError::Rule("error.headers must be an object")),
    }
    Ok(TurnAction::Http {
        status,
        headers,
        body,
    })
}

/// A string as is; any other JSON as its compact text.
fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn check_keys(
    object: &Map<String, Value>,
    allowed: &[&str],
    what: &'static str,
) -> Result<(), TurnError> {
    match object.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(key) => Err(TurnError::UnknownKey {
            key: key.clone(),
            what,
            allowed: allowed.join(", "),
        }),
    }
}

#[cfg(test)]
mod tests;
