//! The Converse wire format: the neutral request as a Converse body (see the
//! [module docs](super) for the mapping) and a Converse reply back; the HTTP status an
//! event-stream exception stands for.

use serde_json::{Map, Value, json};
use sluice_protocol::{Role, ToolCall};

use crate::backend::{ModelReply, ModelRequest, Usage};
use crate::error::{BackendError, quote};
use crate::ids::ToolUseIds;

/// The text of the user turn put first when a transcript does not start with one.
pub(super) const LEADING_USER_PLACEHOLDER: &str = "(continuing the conversation)";

/// A content block before serialisation.
#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        id: String,
        text: String,
        error: bool,
    },
}

/// Bedrock's roles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    User,
    Assistant,
}

/// True when an observation reports a failure: it starts with `{"ok":false` (whitespace
/// allowed between the tokens).
pub(super) fn is_error_observation(text: &str) -> bool {
    let rest = text.trim_start();
    let Some(rest) = rest.strip_prefix('{') else {
        return false;
    };
    let Some(rest) = rest.trim_start().strip_prefix("\"ok\"") else {
        return false;
    };
    let Some(rest) = rest.trim_start().strip_prefix(':') else {
        return false;
    };
    rest.trim_start().starts_with("false")
}

/// A tool call's arguments as the JSON object Bedrock wants; anything else is `{}`.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => Value::Object(Map::new()),
    }
}

/// Appends `blocks` to the last turn when it has the same side, else as a new turn.
fn push_turn(turns: &mut Vec<(Side, Vec<Block>)>, side: Side, blocks: Vec<Block>) {
    if blocks.is_empty() {
        return;
    }
    match turns.last_mut() {
        Some((last, existing)) if *last == side => existing.extend(blocks),
        _ => turns.push((side, blocks)),
    }
}

/// The Converse request body for `request` (see the [module docs](super) for the mapping), with
/// `inferenceConfig.maxTokens` = `max_tokens`.
pub fn request_body(request: &ModelRequest, max_tokens: u32) -> Value {
    let mut ids = ToolUseIds::default();
    let mut turns: Vec<(Side, Vec<Block>)> = Vec::new();
    for message in &request.messages {
        match message.role {
            Role::User => {
                let mut blocks = Vec::new();
                if !message.content.trim().is_empty() {
                    blocks.push(Block::Text(message.content.clone()));
                }
                push_turn(&mut turns, Side::User, blocks);
            }
            Role::Assistant => {
                let mut blocks = Vec::new();
                if !message.content.trim().is_empty() {
                    blocks.push(Block::Text(message.content.clone()));
                }
                for call in &message.tool_calls {
                    blocks.push(Block::ToolUse {
                        id: ids.tool_use(&call.id),
                        name: call.name.clone(),
                        input: tool_input(&call.arguments),
                    });
                }
                push_turn(&mut turns, Side::Assistant, blocks);
            }
            Role::Tool => {
                let text = if message.content.is_empty() {
                    "(no output)".to_string()
                } else {
                    message.content.clone()
                };
                let original = message.tool_call_id.clone().unwrap_or_default();
                let block = match ids.result(&original) {
                    Some(id) => Block::ToolResult {
                        error: is_error_observation(&text),
                        id,
                        text,
                    },
                    None => Block::Text(orphan_result_text(&original, &text)),
                };
                push_turn(&mut turns, Side::User, vec![block]);
            }
        }
    }
    let turns = pair_tool_blocks(turns);

    let mut used_tools: Vec<String> = Vec::new();
    let mut has_tool_blocks = false;
    let messages: Vec<Value> = turns
        .iter()
        .map(|(side, blocks)| {
            let content: Vec<Value> = blocks
                .iter()
                .map(|block| match block {
                    Block::Text(text) => json!({"text": text}),
                    Block::ToolUse { id, name, input } => {
                        has_tool_blocks = true;
                        if !used_tools.contains(name) {
                            used_tools.push(name.clone());
                        }
                        json!({"toolUse": {"toolUseId": id, "name": name, "input": input}})
                    }
                    Block::ToolResult { id, text, error } => {
                        has_tool_blocks = true;
                        json!({"toolResult": {
                            "toolUseId": id,
                            "content": [{"text": text}],
                            "status": if *error { "error" } else { "success" },
                        }})
                    }
                })
                .collect();
            let role = match side {
                Side::User => "user",
                Side::Assistant => "assistant",
            };
            json!({"role": role, "content": content})
        })
        .collect();

    let mut body = Map::new();
    if !request.system.trim().is_empty() {
        body.insert("system".into(), json!([{"text": request.system}]));
    }
    body.insert("messages".into(), Value::Array(messages));
    let specs: Vec<Value> = if request.tools.is_empty() {
        used_tools
            .iter()
            .map(|name| {
                json!({"toolSpec": {
                    "name": name,
                    "description": "A tool used earlier in this conversation; not offered now.",
                    "inputSchema": {"json": {"type": "object"}},
                }})
            })
            .collect()
    } else {
        request
            .tools
            .iter()
            .map(|tool| {
                let description = if tool.description.trim().is_empty() {
                    tool.name.clone()
                } else {
                    tool.description.clone()
                };
                json!({"toolSpec": {
                    "name": tool.name,
                    "description": description,
                    "inputSchema": {"json": tool.input_schema},
                }})
            })
            .collect()
    };
    if !specs.is_empty() && (has_tool_blocks || !request.tools.is_empty()) {
        body.insert("toolConfig".into(), json!({"tools": specs}));
    }
    body.insert("inferenceConfig".into(), json!({"maxTokens": max_tokens}));
    Value::Object(body)
}

/// A tool result that answers no tool use, as text.
fn orphan_result_text(id: &str, text: &str) -> String {
    if id.is_empty() {
        format!("[tool result]\n{text}")
    } else {
        format!("[result of tool call {id}]\n{text}")
    }
}

/// Makes the turns acceptable to Bedrock: the first turn is a user turn; every tool use is
/// answered by a result in the user turn right after it (missing results are added as errors,
/// results that answer nothing there become text, results come before text).
fn pair_tool_blocks(turns: Vec<(Side, Vec<Block>)>) -> Vec<(Side, Vec<Block>)> {
    let mut out: Vec<(Side, Vec<Block>)> = Vec::new();
    if turns
        .first()
        .is_none_or(|(side, _)| *side == Side::Assistant)
    {
        out.push((
            Side::User,
            vec![Block::Text(LEADING_USER_PLACEHOLDER.to_string())],
        ));
    }
    let mut open: Vec<String> = Vec::new();
    for (side, blocks) in turns {
        match side {
            Side::Assistant => {
                if !open.is_empty() {
                    // An assistant turn right after another with unanswered tool uses cannot
                    // happen (turns alternate); keep the invariant anyway.
                    out.push((Side::User, missing_results(&open)));
                }
                open = blocks
                    .iter()
                    .filter_map(|b| match b {
                        Block::ToolUse { id, .. } => Some(id.clone()),
                        _ => None,
                    })
                    .collect();
                out.push((side, blocks));
            }
            Side::User => {
                let mut results = Vec::new();
                let mut texts = Vec::new();
                for block in blocks {
                    match block {
                        Block::ToolResult { id, text, error } => {
                            if let Some(at) = open.iter().position(|o| *o == id) {
                                open.remove(at);
                                results.push(Block::ToolResult { id, text, error });
                            } else {
                                texts.push(Block::Text(orphan_result_text(&id, &text)));
                            }
                        }
                        other => texts.push(other),
                    }
                }
                results.extend(missing_results(&open));
                open.clear();
                results.extend(texts);
                out.push((Side::User, results));
            }
        }
    }
    if !open.is_empty() {
        out.push((Side::User, missing_results(&open)));
    }
    out
}

fn missing_results(ids: &[String]) -> Vec<Block> {
    ids.iter()
        .map(|id| Block::ToolResult {
            id: id.clone(),
            text: r#"{"ok":false,"error":"no result was recorded for this tool call"}"#.to_string(),
            error: true,
        })
        .collect()
}

/// Decodes a Converse response body.
pub(super) fn parse_converse(bytes: &[u8]) -> Result<ModelReply, BackendError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        BackendError::protocol(format!(
            "the Bedrock reply is not JSON ({e}): {}",
            snippet(bytes)
        ))
    })?;
    let content = value
        .pointer("/output/message/content")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            BackendError::protocol(format!(
                "the Bedrock reply has no output.message.content: {}",
                snippet(bytes)
            ))
        })?;
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for block in content {
        if let Some(text) = block.get("text").and_then(Value::as_str) {
            texts.push(text.to_string());
        } else if let Some(tool) = block.get("toolUse") {
            let id = tool.get("toolUseId").and_then(Value::as_str);
            let name = tool.get("name").and_then(Value::as_str);
            let (Some(id), Some(name)) = (id, name) else {
                return Err(BackendError::protocol(format!(
                    "a Bedrock toolUse block lacks toolUseId or name: {tool}"
                )));
            };
            let input = tool
                .get("input")
                .cloned()
                .unwrap_or(Value::Object(Map::new()));
            tool_calls.push(ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: input.to_string(),
            });
        }
    }
    if let Some(reason) = value.get("stopReason").and_then(Value::as_str) {
        tracing::debug!(stop_reason = reason, "Bedrock reply");
    }
    Ok(ModelReply {
        content: join_texts(texts),
        tool_calls,
        usage: value.get("usage").and_then(usage_of),
        http_requests: None,
    })
}

pub(super) fn usage_of(usage: &Value) -> Option<Usage> {
    let input = usage.get("inputTokens").and_then(Value::as_u64);
    let output = usage.get("outputTokens").and_then(Value::as_u64);
    if input.is_none() && output.is_none() {
        return None;
    }
    Some(Usage {
        input_tokens: input.unwrap_or(0),
        output_tokens: output.unwrap_or(0),
    })
}

/// Non-empty texts joined with `\n`.
pub(super) fn join_texts(texts: Vec<String>) -> String {
    texts
        .into_iter()
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `bytes` as text, quoted for an error message ([`quote`]).
pub(super) fn snippet(bytes: &[u8]) -> String {
    quote(&String::from_utf8_lossy(bytes))
}

/// The HTTP status an event-stream exception type stands for (Bedrock's error map):
/// `validationException` 400, `accessDeniedException` 403, `resourceNotFoundException` 404,
/// `modelTimeoutException` 408, `modelStreamErrorException` and `modelErrorException` 424,
/// `throttlingException` and `modelNotReadyException` 429, `internalServerException` 500,
/// `serviceUnavailableException` 503; anything else 400. Case-insensitive.
pub fn exception_status(exception_type: &str) -> u16 {
    match exception_type.to_ascii_lowercase().as_str() {
        "accessdeniedexception" => 403,
        "resourcenotfoundexception" => 404,
        "modeltimeoutexception" => 408,
        "modelstreamerrorexception" | "modelerrorexception" => 424,
        "throttlingexception" | "modelnotreadyexception" => 429,
        "internalserverexception" => 500,
        "serviceunavailableexception" => 503,
        _ => 400,
    }
}
