//! MCP over stdio: newline-delimited JSON-RPC on stdin and stdout; stdout carries nothing
//! else (logs go to stderr).
//!
//! rmcp's own stdio transport is wrapped by this narrow one because three kinds of bad
//! input must get an answer or a clean exit, never a hang:
//! - a line that is not JSON: rmcp ignores it (rust-sdk#938); here it gets JSON-RPC's
//!   parse error (-32700, `id` null), as JSON-RPC 2.0 asks;
//! - a line over [`StdioOptions::max_request_bytes`]: rmcp drops it silently, so its caller
//!   would wait for ever; here it gets invalid request (-32600) with the request's `id`
//!   when its first bytes name one, and the rest of the line is skipped unread into memory;
//! - a client that stops reading stdout: every write must make progress within
//!   [`StdioOptions::write_timeout`], else the server stops (the client is gone or stuck),
//!   instead of queueing answers for ever.
//!
//! Well-formed JSON that is not a JSON-RPC message gets invalid request (-32600), or
//! invalid params (-32602) for `params` that are not an object (see
//! `docs/mcp.md#malformed-input`). EOF on stdin ends the server once the answers in flight
//! are written.
//!
//! A client that writes requests and does not read the answers meets backpressure: at most
//! [`StdioOptions::max_unanswered`] requests may wait for their answer to be written; while
//! that many do, no further request is read from stdin (its pipe fills, and the client's
//! writes block), so the server's memory stays bounded whatever the client sends.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::rejection::{self, INVALID_REQUEST, Rejection};

/// Bytes of a request line at most, by default (1 MiB, the operator API's body limit).
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1 << 20;

/// How long one write to stdout may make no progress, by default (30,000 ms).
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Bytes kept from the start of an oversized line, to find its `id`.
const HEAD_BYTES: usize = 512;

/// Requests whose answers are not written yet, at most, by default (64): with the cap at
/// most 1 MiB, at most 64 MiB of answers wait.
pub const DEFAULT_MAX_UNANSWERED: usize = 64;

/// Answers queued for stdout at most; a full queue makes the server wait for the client.
const QUEUE: usize = 64;

/// Limits of the stdio transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StdioOptions {
    /// The longest request line, in bytes (default [`DEFAULT_MAX_REQUEST_BYTES`]).
    pub max_request_bytes: usize,
    /// How long a write to stdout may make no progress (default [`DEFAULT_WRITE_TIMEOUT`]).
    pub write_timeout: Duration,
    /// Requests read whose answers are not written yet, at most (at least 1; default
    /// [`DEFAULT_MAX_UNANSWERED`]); while that many wait, stdin is not read.
    pub max_unanswered: usize,
}

impl Default for StdioOptions {
    fn default() -> Self {
        StdioOptions {
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            max_unanswered: DEFAULT_MAX_UNANSWERED,
        }
    }
}

/// Why the transport cannot send.
#[derive(Debug, thiserror::Error)]
#[error("the MCP client's stdout is closed or stopped reading")]
pub struct Closed;

/// A line-delimited JSON-RPC transport over a reader and a writer.
pub struct LineTransport<R> {
    reader: R,
    line: Vec<u8>,
    /// Bytes of the current line seen so far (kept or not).
    seen: usize,
    max: usize,
    out: mpsc::Sender<Outgoing>,
    /// An error answer of this transport's own not yet queued (queued before the next read).
    backlog: Option<Vec<u8>>,
    unanswered: Arc<Unanswered>,
    /// Fires when the writer gave up (the client stopped reading or closed stdout).
    writer_gone: CancellationToken,
}

/// A line to write, and the request it answers, if any.
struct Outgoing {
    answers: Option<String>,
    bytes: Vec<u8>,
}

/// The requests read whose answers are not written yet, by `id` (as JSON text; a request
/// that reuses the `id` of one waiting counts once).
struct Unanswered {
    ids: Mutex<HashSet<String>>,
    max: usize,
    /// Told when an id leaves the set.
    freed: Notify,
}

impl Unanswered {
    fn key(id: &RequestId) -> String {
        serde_json::to_string(id).unwrap_or_default()
    }

    fn ids(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn add(&self, id: &RequestId) {
        self.ids().insert(Self::key(id));
    }

    fn remove(&self, key: &str) {
        if self.ids().remove(key) {
            self.freed.notify_one();
        }
    }

    /// Waits until fewer than `max` requests wait (cancel-safe).
    async fn room(&self) {
        loop {
            if self.ids().len() < self.max {
                return;
            }
            self.freed.notified().await;
        }
    }
}

/// The writer's half: ends when every sender is dropped, or when a write stalls.
pub struct Writer(JoinHandle<()>);

impl Writer {
    /// Waits until everything queued is written (or the writer gave up).
    pub async fn finish(self) {
        let _ = self.0.await;
    }
}

enum Line {
    Complete,
    Oversized,
    Eof,
}

impl<R: AsyncBufRead + Unpin + Send> LineTransport<R> {
    /// A transport reading requests from `reader` and writing answers to `writer`.
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(
        reader: R,
        mut writer: W,
        options: StdioOptions,
    ) -> (Self, Writer) {
        let (out, mut queue) = mpsc::channel::<Outgoing>(QUEUE);
        let writer_gone = CancellationToken::new();
        let gone = writer_gone.clone();
        let timeout = options.write_timeout;
        let unanswered = Arc::new(Unanswered {
            ids: Mutex::new(HashSet::new()),
            max: options.max_unanswered.max(1),
            freed: Notify::new(),
        });
        let written = unanswered.clone();
        let task = tokio::spawn(async move {
            while let Some(Outgoing { answers, bytes }) = queue.recv().await {
                let write = async {
                    writer.write_all(&bytes).await?;
                    writer.flush().await
                };
                match tokio::time::timeout(timeout, write).await {
                    Ok(Ok(())) => {
                        if let Some(key) = answers {
                            written.remove(&key);
                        }
                    }
                    Ok(Err(e)) => {
                        tracing::info!("stdout is closed ({e}); stopping");
                        break;
                    }
                    Err(_) => {
                        tracing::warn!(
                            "the MCP client has not read its stdout for {} ms; stopping",
                            timeout.as_millis()
                        );
                        break;
                    }
                }
            }
            gone.cancel();
        });
        let transport = LineTransport {
            reader,
            line: Vec::new(),
            seen: 0,
            max: options.max_request_bytes,
            out,
            backlog: None,
            unanswered,
            writer_gone,
        };
        (transport, Writer(task))
    }

    /// The next message to serve, answering the lines that are none; `None` at EOF or when
    /// stdin fails. Waits first until an answer of this transport's own is queued and
    /// fewer than `max_unanswered` requests wait for their answers. Cancel-safe: a line
    /// read is served or answered by this call or the next.
    async fn next_message(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if self.backlog.is_some() {
                let permit = self.out.reserve().await.ok()?;
                let bytes = self.backlog.take().unwrap_or_default();
                permit.send(Outgoing {
                    answers: None,
                    bytes,
                });
            }
            self.unanswered.room().await;
            let kind = match self.read_line().await {
                Ok(kind) => kind,
                Err(e) => {
                    tracing::info!("stdin failed ({e}); stopping");
                    return None;
                }
            };
            let line = std::mem::take(&mut self.line);
            let seen = std::mem::replace(&mut self.seen, 0);
            let answer = match kind {
                Line::Eof => return None,
                Line::Complete => match message(&line) {
                    Ok(message) => {
                        match &message {
                            JsonRpcMessage::Request(r) => self.unanswered.add(&r.id),
                            // rmcp sends nothing for a cancelled request.
                            JsonRpcMessage::Notification(n) => {
                                if let ClientNotification::CancelledNotification(c) =
                                    &n.notification
                                    && let Some(id) = &c.params.request_id
                                {
                                    self.unanswered.remove(&Unanswered::key(id));
                                }
                            }
                            _ => {}
                        }
                        return Some(message);
                    }
                    Err(answer) => answer,
                },
                Line::Oversized => Some(error_line(&Rejection {
                    id: id_from_head(&line),
                    code: INVALID_REQUEST,
                    message: format!(
                        "the request is {seen} bytes, over the limit of {} bytes: send smaller arguments",
                        self.max
                    ),
                })),
            };
            self.backlog = answer;
        }
    }

    /// Reads up to the next `\n` (cancel-safe: a partial line stays in `self.line`).
    async fn read_line(&mut self) -> std::io::Result<Line> {
        loop {
            let buf = self.reader.fill_buf().await?;
            if buf.is_empty() {
                // A last line without `\n` is incomplete: nothing to answer.
                return Ok(Line::Eof);
            }
            let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], true),
                None => (buf, false),
            };
            let used = chunk.len() + usize::from(done);
            let keep = if self.seen + chunk.len() <= self.max {
                chunk.len()
            } else {
                HEAD_BYTES.saturating_sub(self.line.len()).min(chunk.len())
            };
            self.line.extend_from_slice(&chunk[..keep]);
            self.seen += chunk.len();
            self.reader.consume(used);
            if done {
                return Ok(if self.seen > self.max {
                    Line::Oversized
                } else {
                    Line::Complete
                });
            }
        }
    }
}

/// An error answer as the line to write.
fn error_line(rejection: &Rejection) -> Vec<u8> {
    let mut bytes = rejection.to_json().to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

/// The message of the complete line `line`, or the error line to answer it with (`None`:
/// nothing to answer).
fn message(line: &[u8]) -> Result<RxJsonRpcMessage<RoleServer>, Option<Vec<u8>>> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Err(None);
    }
    serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line)
        .map_err(|e| rejection::reject(line, &e).as_ref().map(error_line))
}

/// The `id` of a JSON-RPC message from its first bytes (`"id"` as a top-level key before
/// `params`, as clients write it), or null.
fn id_from_head(head: &[u8]) -> Value {
    let text = String::from_utf8_lossy(head);
    let Some(at) = text.find("\"id\"") else {
        return Value::Null;
    };
    if text.find("\"params\"").is_some_and(|p| p < at) {
        return Value::Null;
    }
    let rest = text[at + 4..].trim_start();
    let Some(rest) = rest.strip_prefix(':') else {
        return Value::Null;
    };
    let rest = rest.trim_start();
    let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
    match stream.next() {
        Some(Ok(v)) if v.is_string() || v.is_number() => v,
        _ => Value::Null,
    }
}

impl<R: AsyncBufRead + Unpin + Send + 'static> Transport<RoleServer> for LineTransport<R> {
    type Error = Closed;

    fn name() -> Cow<'static, str> {
        "sluice-stdio".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Closed>> + Send + 'static {
        let out = self.out.clone();
        let answers = match &item {
            JsonRpcMessage::Response(r) => Some(Unanswered::key(&r.id)),
            JsonRpcMessage::Error(e) => e.id.as_ref().map(Unanswered::key),
            _ => None,
        };
        async move {
            let mut bytes = serde_json::to_vec(&item).map_err(|_| Closed)?;
            bytes.push(b'\n');
            out.send(Outgoing { answers, bytes })
                .await
                .map_err(|_| Closed)
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let gone = self.writer_gone.clone();
        tokio::select! {
            _ = gone.cancelled() => None,
            message = self.next_message() => message,
        }
    }

    async fn close(&mut self) -> Result<(), Closed> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_id_of_an_oversized_request_comes_from_its_head() {
        assert_eq!(
            id_from_head(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"#),
            json!(7)
        );
        assert_eq!(
            id_from_head(br#"{"id" : "a-1", "jsonrpc":"2.0","method":"x""#),
            json!("a-1")
        );
        assert_eq!(
            id_from_head(br#"{"jsonrpc":"2.0","method":"tools/call","params":{"id":3"#),
            Value::Null
        );
        assert_eq!(id_from_head(br#"{"jsonrpc":"2.0","id":"#), Value::Null);
        assert_eq!(id_from_head(b"garbage"), Value::Null);
    }
}
