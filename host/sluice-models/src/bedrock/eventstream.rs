//! The AWS event-stream frames of a `converse-stream` reply (decoded by
//! `aws-smithy-eventstream`), assembled into a reply.

use std::collections::BTreeMap;

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use serde_json::{Map, Value, json};
use sluice_protocol::ToolCall;

use super::codec::{exception_status, join_texts, snippet, usage_of};
use crate::backend::{ModelReply, Usage};
use crate::classify::classify;
use crate::error::BackendError;

/// The largest event-stream frame accepted, in bytes (AWS caps a message at 16 MiB).
pub const MAX_FRAME_BYTES: usize = 24 * 1024 * 1024;

/// One decoded event-stream frame: its string headers and its payload.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Frame {
    headers: Vec<(String, String)>,
    pub(super) payload: Vec<u8>,
}

impl Frame {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The bytes of a frame's prelude: total length (u32 BE), headers length (u32 BE), and the
/// CRC32 of those 8 bytes.
const PRELUDE_BYTES: usize = 12;

/// An incremental decoder of AWS event-stream frames. `aws-smithy-eventstream` decodes and
/// checks each frame (both CRCs, the lengths, every header type); before a frame is buffered,
/// its prelude is checked here too, so that a corrupt or hostile length is refused at once
/// rather than waited for (and a frame over [`MAX_FRAME_BYTES`] is refused).
#[derive(Debug, Default)]
pub(super) struct FrameDecoder {
    /// Bytes not yet handed to `decoder`.
    buffer: Vec<u8>,
    decoder: MessageFrameDecoder,
    /// `decoder` holds the prelude of a frame whose rest has not all arrived.
    in_frame: bool,
}

impl FrameDecoder {
    pub(super) fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete frame, `None` when more bytes are needed.
    pub(super) fn next_frame(&mut self) -> Result<Option<Frame>, BackendError> {
        if !self.in_frame && self.buffer.len() >= PRELUDE_BYTES {
            check_prelude(&self.buffer[..PRELUDE_BYTES])?;
        }
        let mut rest: &[u8] = &self.buffer;
        let decoded = self.decoder.decode_frame(&mut rest).map_err(|e| {
            BackendError::protocol(format!(
                "a Bedrock event-stream frame is malformed (a bad CRC, length or header): {e}"
            ))
        });
        let consumed = self.buffer.len() - rest.len();
        self.buffer.drain(..consumed);
        match decoded? {
            DecodedFrame::Incomplete => {
                self.in_frame |= consumed > 0;
                Ok(None)
            }
            DecodedFrame::Complete(message) => {
                self.in_frame = false;
                let headers = message
                    .headers()
                    .iter()
                    .filter_map(|h| {
                        let value = h.value().as_string().ok()?;
                        Some((h.name().as_str().to_string(), value.as_str().to_string()))
                    })
                    .collect();
                Ok(Some(Frame {
                    headers,
                    payload: message.payload().to_vec(),
                }))
            }
        }
    }

    /// True when no byte of a frame is waiting.
    pub(super) fn is_empty(&self) -> bool {
        self.buffer.is_empty() && !self.in_frame
    }
}

/// Checks a frame's prelude: its CRC, and a total length that can hold a frame and is at most
/// [`MAX_FRAME_BYTES`].
fn check_prelude(prelude: &[u8]) -> Result<(), BackendError> {
    let word = |at: usize| {
        let mut bytes = [0u8; 4];
        bytes.copy_from_slice(&prelude[at..at + 4]);
        u32::from_be_bytes(bytes)
    };
    if crc32fast::hash(&prelude[..8]) != word(8) {
        return Err(BackendError::protocol(
            "a Bedrock event-stream frame has a bad prelude CRC",
        ));
    }
    let total = word(0) as usize;
    if !(PRELUDE_BYTES + 4..=MAX_FRAME_BYTES).contains(&total) {
        return Err(BackendError::protocol(format!(
            "a Bedrock event-stream frame has an impossible length: {total} bytes (at most {MAX_FRAME_BYTES})"
        )));
    }
    Ok(())
}

/// A content block being streamed.
#[derive(Debug)]
enum StreamBlock {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        input: String,
    },
}

/// Assembles a `converse-stream` reply from its bytes.
#[derive(Debug, Default)]
pub(super) struct StreamReader {
    decoder: FrameDecoder,
    blocks: BTreeMap<u64, StreamBlock>,
    usage: Option<Usage>,
    stopped: bool,
}

impl StreamReader {
    /// Feeds bytes and handles every frame they complete.
    pub(super) fn push(&mut self, bytes: &[u8]) -> Result<(), BackendError> {
        self.decoder.push(bytes);
        while let Some(frame) = self.decoder.next_frame()? {
            self.frame(frame)?;
        }
        Ok(())
    }

    fn frame(&mut self, frame: Frame) -> Result<(), BackendError> {
        match frame.header(":message-type") {
            Some("event") => {}
            Some("exception") => {
                let kind = frame.header(":exception-type").unwrap_or("exception");
                let headers = [("x-amzn-ErrorType".to_string(), kind.to_string())];
                let body = String::from_utf8_lossy(&frame.payload);
                return Err(classify(exception_status(kind), &headers, &body));
            }
            Some("error") => {
                let code = frame.header(":error-code").unwrap_or("error");
                let message = frame.header(":error-message").unwrap_or("");
                let headers = [("x-amzn-ErrorType".to_string(), code.to_string())];
                let body = json!({ "message": message }).to_string();
                return Err(classify(exception_status(code), &headers, &body));
            }
            other => {
                return Err(BackendError::protocol(format!(
                    "a Bedrock event-stream frame has an unknown :message-type {other:?}"
                )));
            }
        }
        let event = frame.header(":event-type").unwrap_or("");
        let payload: Value = if frame.payload.is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_slice(&frame.payload).map_err(|e| {
                BackendError::protocol(format!(
                    "a Bedrock {event} event is not JSON ({e}): {}",
                    snippet(&frame.payload)
                ))
            })?
        };
        let index = payload
            .get("contentBlockIndex")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        match event {
            "contentBlockStart" => {
                if let Some(tool) = payload.pointer("/start/toolUse") {
                    let id = tool.get("toolUseId").and_then(Value::as_str);
                    let name = tool.get("name").and_then(Value::as_str);
                    let (Some(id), Some(name)) = (id, name) else {
                        return Err(BackendError::protocol(format!(
                            "a Bedrock toolUse start lacks toolUseId or name: {tool}"
                        )));
                    };
                    self.blocks.insert(
                        index,
                        StreamBlock::ToolUse {
                            id: id.to_string(),
                            name: name.to_string(),
                            input: String::new(),
                        },
                    );
                }
            }
            "contentBlockDelta" => {
                let Some(delta) = payload.get("delta") else {
                    return Ok(());
                };
                if let Some(text) = delta.get("text").and_then(Value::as_str) {
                    match self
                        .blocks
                        .entry(index)
                        .or_insert_with(|| StreamBlock::Text(String::new()))
                    {
                        StreamBlock::Text(existing) => existing.push_str(text),
                        StreamBlock::ToolUse { .. } => {
                            return Err(BackendError::protocol(format!(
                                "Bedrock sent text into tool-use block {index}"
                            )));
                        }
                    }
                } else if let Some(fragment) = delta.pointer("/toolUse/input") {
                    let fragment = match fragment {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    match self.blocks.get_mut(&index) {
                        Some(StreamBlock::ToolUse { input, .. }) => input.push_str(&fragment),
                        _ => {
                            return Err(BackendError::protocol(format!(
                                "Bedrock sent tool input for block {index}, which did not start as a tool use"
                            )));
                        }
                    }
                }
            }
            "messageStop" => {
                self.stopped = true;
                if let Some(reason) = payload.get("stopReason").and_then(Value::as_str) {
                    tracing::debug!(stop_reason = reason, "Bedrock stream stopped");
                }
            }
            "metadata" => {
                if let Some(usage) = payload.get("usage").and_then(usage_of) {
                    self.usage = Some(usage);
                }
            }
            // messageStart, contentBlockStop and events added later carry nothing we need.
            _ => {}
        }
        Ok(())
    }

    /// The reply, once the stream has ended.
    pub(super) fn finish(self) -> Result<ModelReply, BackendError> {
        if !self.decoder.is_empty() {
            return Err(BackendError::transient(
                "the Bedrock stream ended in the middle of a frame",
            ));
        }
        if !self.stopped {
            return Err(BackendError::transient(
                "the Bedrock stream ended before messageStop",
            ));
        }
        let mut texts = Vec::new();
        let mut tool_calls = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                StreamBlock::Text(text) => texts.push(text),
                StreamBlock::ToolUse { id, name, input } => {
                    let arguments = if input.trim().is_empty() {
                        "{}".to_string()
                    } else {
                        match serde_json::from_str::<Value>(&input) {
                            Ok(value) => value.to_string(),
                            Err(_) => input,
                        }
                    };
                    tool_calls.push(ToolCall {
                        id,
                        name,
                        arguments,
                    });
                }
            }
        }
        Ok(ModelReply {
            content: join_texts(texts),
            tool_calls,
            usage: self.usage,
            http_requests: None,
        })
    }
}
