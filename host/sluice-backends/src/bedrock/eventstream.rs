//! The AWS event-stream frames of a `converse-stream` reply, decoded and assembled into a
//! reply.

use std::collections::BTreeMap;

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

/// An incremental decoder of AWS event-stream frames: prelude (total length u32 BE, headers
/// length u32 BE, CRC32 of those 8 bytes), headers, payload, CRC32 of everything before it.
#[derive(Debug, Default)]
pub(super) struct FrameDecoder {
    buffer: Vec<u8>,
}

impl FrameDecoder {
    pub(super) fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete frame, `None` when more bytes are needed.
    pub(super) fn next_frame(&mut self) -> Result<Option<Frame>, BackendError> {
        if self.buffer.len() < 12 {
            return Ok(None);
        }
        let total = be_u32(&self.buffer[0..4]) as usize;
        let headers_len = be_u32(&self.buffer[4..8]) as usize;
        let prelude_crc = be_u32(&self.buffer[8..12]);
        if crc32fast::hash(&self.buffer[0..8]) != prelude_crc {
            return Err(BackendError::protocol(
                "a Bedrock event-stream frame has a bad prelude CRC",
            ));
        }
        if total < 16 || headers_len > total - 16 || total > MAX_FRAME_BYTES {
            return Err(BackendError::protocol(format!(
                "a Bedrock event-stream frame has impossible lengths (total {total}, headers {headers_len})"
            )));
        }
        if self.buffer.len() < total {
            return Ok(None);
        }
        let frame: Vec<u8> = self.buffer.drain(..total).collect();
        let message_crc = be_u32(&frame[total - 4..]);
        if crc32fast::hash(&frame[..total - 4]) != message_crc {
            return Err(BackendError::protocol(
                "a Bedrock event-stream frame has a bad message CRC",
            ));
        }
        let headers = parse_headers(&frame[12..12 + headers_len])?;
        let payload = frame[12 + headers_len..total - 4].to_vec();
        Ok(Some(Frame { headers, payload }))
    }

    pub(super) fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }
}

fn be_u32(bytes: &[u8]) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[..4]);
    u32::from_be_bytes(word)
}

/// The frame's headers: `name_len u8, name, type u8, value`; string (7) values are kept,
/// the other types skipped by their sizes.
fn parse_headers(mut bytes: &[u8]) -> Result<Vec<(String, String)>, BackendError> {
    let bad = || BackendError::protocol("a Bedrock event-stream frame has malformed headers");
    let take = |bytes: &mut &[u8], n: usize| -> Result<Vec<u8>, BackendError> {
        if bytes.len() < n {
            return Err(bad());
        }
        let (head, rest) = bytes.split_at(n);
        *bytes = rest;
        Ok(head.to_vec())
    };
    let mut headers = Vec::new();
    while !bytes.is_empty() {
        let name_len = usize::from(take(&mut bytes, 1)?[0]);
        let name = String::from_utf8(take(&mut bytes, name_len)?).map_err(|_| bad())?;
        let kind = take(&mut bytes, 1)?[0];
        let size = match kind {
            0 | 1 => 0,
            2 => 1,
            3 => 2,
            4 => 4,
            5 | 8 => 8,
            9 => 16,
            6 | 7 => {
                let len = take(&mut bytes, 2)?;
                usize::from(u16::from_be_bytes([len[0], len[1]]))
            }
            _ => return Err(bad()),
        };
        let value = take(&mut bytes, size)?;
        if kind == 7 {
            headers.push((name, String::from_utf8(value).map_err(|_| bad())?));
        }
    }
    Ok(headers)
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
