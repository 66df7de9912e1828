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
    #[error("{file}:{line}: {message}")]
    Parse {
        /// The file, as given.
        file: String,
        /// The 1-based line.
        line: usize,
        /// What is wrong with it.
        message: String,
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
        let text = sluice_files::read_text(path, MAX_REPLAY_FILE_BYTES).map_err(|e| {
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
                parse_turn(line, index + 1, &mut calls).map_err(|message| ReplayError::Parse {
                    file: source.to_string(),
                    line: index + 1,
                    message,
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
fn parse_turn(line: &str, number: usize, calls: &mut usize) -> Result<ReplayTurn, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(object) = value else {
        return Err("a turn must be a JSON object".to_string());
    };
    check_keys(
        &object,
        &["content", "toolCalls", "usage", "delayMs", "error"],
        "a turn",
    )?;
    let delay = match object.get("delayMs") {
        None => Duration::ZERO,
        Some(v) => {
            Duration::from_millis(v.as_u64().ok_or("delayMs must be a non-negative integer")?)
        }
    };
    let action = if let Some(error) = object.get("error") {
        if let Some(key) = ["content", "toolCalls", "usage"]
            .into_iter()
            .find(|k| object.contains_key(*k))
        {
            return Err(format!("a turn with \"error\" cannot also have \"{key}\""));
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

fn parse_reply(object: &Map<String, Value>, calls: &mut usize) -> Result<ModelReply, String> {
    let content = match object.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("content must be a string".to_string()),
    };
    let mut tool_calls = Vec::new();
    match object.get("toolCalls") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                *calls += 1;
                tool_calls
                    .push(parse_call(item, *calls).map_err(|e| format!("toolCalls[{i}]: {e}"))?);
            }
        }
        Some(_) => return Err("toolCalls must be an array".to_string()),
    }
    let usage = match object.get("usage") {
        None | Some(Value::Null) => None,
        Some(Value::Object(u)) => {
            check_keys(u, &["inputTokens", "outputTokens"], "usage")?;
            let count = |key: &str| match u.get(key) {
                None => Ok(0),
                Some(v) => v
                    .as_u64()
                    .ok_or(format!("usage.{key} must be a non-negative integer")),
            };
            Some(Usage {
                input_tokens: count("inputTokens")?,
                output_tokens: count("outputTokens")?,
            })
        }
        Some(_) => return Err("usage must be an object".to_string()),
    };
    Ok(ModelReply {
        content,
        tool_calls,
        usage,
        http_requests: None,
    })
}

fn parse_call(item: &Value, ordinal: usize) -> Result<ToolCall, String> {
    let Value::Object(call) = item else {
        return Err("a tool call must be an object".to_string());
    };
    check_keys(call, &["name", "arguments", "id"], "a tool call")?;
    let name = call
        .get("name")
        .and_then(Value::as_str)
        .ok_or("name must be a string")?
        .to_string();
    let id = match call.get("id") {
        None | Some(Value::Null) => numbered_call_id(ordinal),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("id must be a string".to_string()),
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

fn parse_error(error: &Value) -> Result<TurnAction, String> {
    let Value::Object(error) = error else {
        return Err("error must be an object".to_string());
    };
    check_keys(
        error,
        &["status", "body", "headers", "event", "network"],
        "error",
    )?;
    if let Some(event) = error.get("event") {
        if error.len() != 1 {
            return Err("error.event cannot be combined with other keys".to_string());
        }
        return Ok(TurnAction::StreamError(as_text(event)));
    }
    if let Some(network) = error.get("network") {
        if error.len() != 1 {
            return Err("error.network cannot be combined with other keys".to_string());
        }
        let message = network.as_str().ok_or("error.network must be a string")?;
        return Ok(TurnAction::Network(message.to_string()));
    }
    let status = error
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .filter(|s| (100..=599).contains(s))
        .ok_or(
            "error needs a status (an integer from 100 to 599), an event or a network message",
        )?;
    let body = error.get("body").map(as_text).unwrap_or_default();
    let mut headers = Vec::new();
    match error.get("headers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(h)) => {
            for (name, value) in h {
                let value = match value {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => return Err(format!("error.headers.{name} must be a string or a number")),
                };
                headers.push((name.clone(), value));
            }
        }
        Some(_) => return Err("error.headers must be an object".to_string()),
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

fn check_keys(object: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<(), String> {
    match object.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(key) => Err(format!(
            "unknown key \"{key}\" in {what} (allowed: {})",
            allowed.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use sluice_protocol::Message;

    use super::*;
    use crate::error::ErrorKind;

    fn request(text: &str) -> ModelRequest {
        ModelRequest {
            system: "sys".into(),
            messages: vec![Message::user(text, "t")],
            tools: vec![],
        }
    }

    fn parse_err(text: &str) -> String {
        match ReplayModel::parse("s.jsonl", text) {
            Ok(_) => panic!("expected a parse error for {text}"),
            Err(e) => e.to_string(),
        }
    }

    const SCRIPT: &str = r#"{"content":"Let me look.","toolCalls":[{"name":"list_dir","arguments":{"path":"."}},{"name":"read_file","arguments":"{\"path\":"}]}

{"content":"","toolCalls":[{"id":"mine","name":"tail_file"}],"usage":{"inputTokens":12,"outputTokens":3}}
{"error":{"status":400,"body":{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 90 tokens > 80 maximum"}}}}
{"error":{"status":429,"body":"slow down","headers":{"retry-after":3}}}
{"error":{"event":{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}}}
{"error":{"network":"connection reset by peer"}}
{"content":"Done."}
"#;

    #[tokio::test]
    async fn replays_records_and_runs_out() {
        let model = ReplayModel::parse("s.jsonl", SCRIPT).map_err(|e| e.to_string());
        let model = model.as_ref().map_err(String::as_str);
        let Ok(model) = model else {
            panic!("{model:?}")
        };
        assert_eq!(model.name(), "replay:s.jsonl");
        assert_eq!(
            model.turns().iter().map(|t| t.line).collect::<Vec<_>>(),
            vec![1, 3, 4, 5, 6, 7, 8]
        );

        let first = model.complete(&request("one")).await;
        assert_eq!(
            first,
            Ok(ModelReply {
                content: "Let me look.".into(),
                tool_calls: vec![
                    ToolCall {
                        id: "call_1".into(),
                        name: "list_dir".into(),
                        arguments: r#"{"path":"."}"#.into()
                    },
                    ToolCall {
                        id: "call_2".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path":"#.into()
                    },
                ],
                usage: None,
                http_requests: None,
            })
        );
        let second = model.complete(&request("two")).await;
        assert_eq!(
            second,
            Ok(ModelReply {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "mine".into(),
                    name: "tail_file".into(),
                    arguments: "{}".into()
                }],
                usage: Some(Usage {
                    input_tokens: 12,
                    output_tokens: 3
                }),
                http_requests: None,
            })
        );
        let overflow = model.complete(&request("three")).await.err();
        assert_eq!(
            overflow
                .as_ref()
                .map(|e| (e.kind, e.status, e.message.as_str())),
            Some((
                ErrorKind::ContextWindowExceeded,
                Some(400),
                "prompt is too long: 90 tokens > 80 maximum"
            ))
        );
        let limited = model.complete(&request("four")).await.err();
        assert_eq!(
            limited.map(|e| (e.kind, e.retry_after, e.message)),
            Some((
                ErrorKind::RateLimited,
                Some(Duration::from_secs(3)),
                "slow down".to_string()
            ))
        );
        let stream = model.complete(&request("five")).await.err();
        assert_eq!(
            stream.map(|e| (e.kind, e.status)),
            Some((ErrorKind::Overloaded, None))
        );
        let network = model.complete(&request("six")).await.err();
        assert_eq!(
            network.map(|e| (e.kind, e.message)),
            Some((ErrorKind::Transient, "connection reset by peer".to_string()))
        );
        assert_eq!(
            model.complete(&request("seven")).await.map(|r| r.content),
            Ok("Done.".to_string())
        );
        assert_eq!(model.turns_left(), 0);

        let over = model.complete(&request("eight")).await.err();
        assert_eq!(
            over.map(|e| (e.kind, e.message)),
            Some((
                ErrorKind::Protocol,
                "the replay script has no more turns (7 used)".to_string()
            ))
        );

        let texts: Vec<String> = model
            .requests()
            .iter()
            .map(|r| r.messages[0].content.clone())
            .collect();
        assert_eq!(
            texts,
            [
                "one", "two", "three", "four", "five", "six", "seven", "eight"
            ]
        );
        let bytes = model.request_bytes();
        assert_eq!(bytes.len(), 8);
        assert_eq!(bytes[0], request("one").json_bytes());
        assert_eq!(model.turns_used(), 7);
    }

    #[tokio::test]
    async fn clones_share_state_and_a_cancelled_request_uses_its_turn() {
        let model = ReplayModel::parse(
            "d",
            "{\"content\":\"slow\",\"delayMs\":5000}\n{\"content\":\"fast\"}\n",
        )
        .map_err(|e| e.to_string());
        let Ok(model) = model else {
            panic!("{model:?}")
        };
        let observer = model.clone();
        let started = std::time::Instant::now();
        let cancelled =
            tokio::time::timeout(Duration::from_millis(50), model.complete(&request("a"))).await;
        assert!(cancelled.is_err(), "the delayed turn must still be pending");
        assert!(started.elapsed() < Duration::from_secs(4));
        assert_eq!(
            model.complete(&request("b")).await.map(|r| r.content),
            Ok("fast".to_string())
        );
        assert_eq!(observer.requests().len(), 2);
        assert_eq!(observer.turns_used(), 2);
        assert_eq!(observer.turns()[0].delay, Duration::from_secs(5));
    }

    /// A FIFO as the replay script is refused at once, naming the file and what it is.
    #[cfg(unix)]
    #[test]
    fn a_fifo_as_the_script_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("replay.jsonl");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let error = ReplayModel::from_file(&fifo).err().unwrap();
        assert!(matches!(error, ReplayError::Read { .. }), "{error:?}");
        assert_eq!(
            error.to_string(),
            format!(
                "cannot read the replay script {}: not a regular file (it is a FIFO); name a regular file",
                fifo.display()
            )
        );
    }

    #[test]
    fn parse_errors_name_the_file_and_line() {
        assert_eq!(
            parse_err("{\"content\":\"a\"}\n\n{\"content\":"),
            "s.jsonl:3: not valid JSON: EOF while parsing a value at line 1 column 11"
        );
        assert_eq!(parse_err("[1]"), "s.jsonl:1: a turn must be a JSON object");
        assert_eq!(
            parse_err(r#"{"tool_calls":[]}"#),
            "s.jsonl:1: unknown key \"tool_calls\" in a turn (allowed: content, toolCalls, usage, delayMs, error)"
        );
        assert_eq!(
            parse_err(r#"{"toolCalls":[{"arguments":{}}]}"#),
            "s.jsonl:1: toolCalls[0]: name must be a string"
        );
        assert_eq!(
            parse_err(r#"{"delayMs":-1}"#),
            "s.jsonl:1: delayMs must be a non-negative integer"
        );
        assert_eq!(
            parse_err(r#"{"error":{"status":700}}"#),
            "s.jsonl:1: error needs a status (an integer from 100 to 599), an event or a network message"
        );
        assert_eq!(
            parse_err(r#"{"content":"x","error":{"status":500}}"#),
            "s.jsonl:1: a turn with \"error\" cannot also have \"content\""
        );
        assert_eq!(
            parse_err(r#"{"error":{"status":500,"headers":{"a":[]}}}"#),
            "s.jsonl:1: error.headers.a must be a string or a number"
        );
    }

    #[test]
    fn from_file_reads_and_names_the_file() {
        let dir = tempfile::tempdir();
        let Ok(dir) = dir else { panic!("tempdir") };
        let path = dir.path().join("script.jsonl");
        let written = std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(b"{\"content\":\"hi\"}\n{oops}\n"));
        assert!(written.is_ok());
        let err = ReplayModel::from_file(&path)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with(&format!("{}:2: not valid JSON", path.display())),
            "{err}"
        );

        let missing = dir.path().join("missing.jsonl");
        let err = ReplayModel::from_file(&missing).err();
        assert!(matches!(err, Some(ReplayError::Read { .. })), "{err:?}");

        let ok = std::fs::write(&path, "{\"content\":\"hi\"}\n").map_err(|e| e.to_string());
        assert_eq!(ok, Ok(()));
        let model = ReplayModel::from_file(&path)
            .map(|m| m.turns().len())
            .map_err(|e| e.to_string());
        assert_eq!(model, Ok(1));
    }
}
