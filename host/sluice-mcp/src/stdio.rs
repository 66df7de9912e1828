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
//! Well-formed JSON that is not a JSON-RPC message gets invalid request (-32600) with its
//! `id` when it has one. EOF on stdin ends the server once the answers in flight are
//! written.

use std::borrow::Cow;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Bytes of a request line at most, by default (1 MiB, the operator API's body limit).
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1 << 20;

/// How long one write to stdout may make no progress, by default (30,000 ms).
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Bytes kept from the start of an oversized line, to find its `id`.
const HEAD_BYTES: usize = 512;

/// Answers queued for stdout at most; a full queue makes the server wait for the client.
const QUEUE: usize = 64;

/// Limits of the stdio transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StdioOptions {
    /// The longest request line, in bytes (default [`DEFAULT_MAX_REQUEST_BYTES`]).
    pub max_request_bytes: usize,
    /// How long a write to stdout may make no progress (default [`DEFAULT_WRITE_TIMEOUT`]).
    pub write_timeout: Duration,
}

impl Default for StdioOptions {
    fn default() -> Self {
        StdioOptions {
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            write_timeout: DEFAULT_WRITE_TIMEOUT,
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
    out: mpsc::Sender<Vec<u8>>,
    /// Fires when the writer gave up (the client stopped reading or closed stdout).
    writer_gone: CancellationToken,
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
        let (out, mut queue) = mpsc::channel::<Vec<u8>>(QUEUE);
        let writer_gone = CancellationToken::new();
        let gone = writer_gone.clone();
        let timeout = options.write_timeout;
        let task = tokio::spawn(async move {
            while let Some(bytes) = queue.recv().await {
                let write = async {
                    writer.write_all(&bytes).await?;
                    writer.flush().await
                };
                match tokio::time::timeout(timeout, write).await {
                    Ok(Ok(())) => {}
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
            writer_gone,
        };
        (transport, Writer(task))
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

/// Queues an error answer on `out` (raw JSON-RPC, so `id` may be null).
async fn answer_error(out: &mpsc::Sender<Vec<u8>>, id: Value, code: i64, message: String) {
    let answer = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut bytes = answer.to_string().into_bytes();
    bytes.push(b'\n');
    let _ = out.send(bytes).await;
}

/// What a request is, for error messages.
const REQUEST_SHAPE: &str =
    "a request is {\"jsonrpc\":\"2.0\",\"id\":…,\"method\":…,\"params\":{…}}";

/// The message of the complete line `line`, or `None` after answering it on `out`.
async fn message(line: &[u8], out: &mpsc::Sender<Vec<u8>>) -> Option<RxJsonRpcMessage<RoleServer>> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(message) => Some(message),
        Err(e) if e.is_syntax() || e.is_eof() => {
            answer_error(out, Value::Null, -32700, format!("parse error: {e}")).await;
            None
        }
        Err(e) => {
            let value: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
            let id = value
                .get("id")
                .filter(|id| id.is_string() || id.is_number())
                .cloned();
            match id {
                // A message with an id is a request (or a response to one) the server
                // cannot take: say why.
                Some(id) => {
                    let message = format!("invalid request: {e}; {REQUEST_SHAPE}");
                    answer_error(out, id, -32600, message).await;
                }
                // A notification gets no answer, whatever is wrong with it.
                None if value.get("method").is_some() => {
                    tracing::debug!("ignoring a malformed notification: {e}");
                }
                None => {
                    let message = format!("invalid request: {e}; {REQUEST_SHAPE}");
                    answer_error(out, Value::Null, -32600, message).await;
                }
            }
            None
        }
    }
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
        async move {
            let mut bytes = serde_json::to_vec(&item).map_err(|_| Closed)?;
            bytes.push(b'\n');
            out.send(bytes).await.map_err(|_| Closed)
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let gone = self.writer_gone.clone();
            let read = tokio::select! {
                _ = gone.cancelled() => return None,
                read = self.read_line() => read,
            };
            let kind = match read {
                Ok(kind) => kind,
                Err(e) => {
                    tracing::info!("stdin failed ({e}); stopping");
                    return None;
                }
            };
            let message = match kind {
                Line::Eof => return None,
                Line::Complete => message(&self.line, &self.out).await,
                Line::Oversized => {
                    let id = id_from_head(&self.line);
                    let message = format!(
                        "the request is {} bytes, over the limit of {} bytes: send smaller arguments",
                        self.seen, self.max
                    );
                    answer_error(&self.out, id, -32600, message).await;
                    None
                }
            };
            self.line.clear();
            self.seen = 0;
            if message.is_some() {
                return message;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Closed> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
