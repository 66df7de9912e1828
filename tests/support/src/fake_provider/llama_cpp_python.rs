//! What a real llama-cpp-python 0.3.36 server answers that other servers do not
//! ([`LlamaCppPython`]), for [`super::Fake::like_llama_cpp_python`].

use axum::body::Body;
use axum::response::Response;
use serde_json::{Value, json};

use super::respond;

/// What llama-cpp-python 0.3.36's server does that other servers do not, as seen against the
/// real server with SmolLM2-135M and `--n_ctx 2048`; each rule answers without using a turn:
///
/// - an assistant message whose `content` is `null` → HTTP 500 with its pydantic validation
///   error list; one without `content` → HTTP 500 `'dict object' has no attribute 'content'`;
/// - a streamed request offering tools with `tool_choice: "auto"` → HTTP 200,
///   `text/event-stream` and no event (the server logs "Automatic streaming tool choice is
///   not supported"; here with one `: ping` comment, as it sends while a model loads);
/// - a request whose prompt is over `window_tokens` → unstreamed, HTTP 400
///   `context_length_exceeded` "…However, you requested T tokens (N in the messages, K in the
///   completion)…"; streamed, the same empty 200;
/// - replies report `usage.prompt_tokens` as counted below; streamed replies carry no usage,
///   whatever `stream_options.include_usage` says.
///
/// Its prompt, like the model's own chat template: every message's text (tool results
/// included) and tool calls' names and arguments, 3 bytes a token rounded up, plus 5 tokens a
/// message; the tool definitions are not in the prompt.
#[derive(Clone, Copy, Debug)]
pub struct LlamaCppPython {
    /// The context window, in tokens (`--n_ctx`).
    pub window_tokens: u64,
}

impl LlamaCppPython {
    /// The prompt tokens of a request body (see the type's docs).
    pub fn prompt_tokens(request: &Value) -> u64 {
        let messages = request["messages"].as_array().cloned().unwrap_or_default();
        let bytes: usize = messages
            .iter()
            .map(|m| {
                m["content"].as_str().map_or(0, str::len)
                    + m["tool_calls"].as_array().map_or(0, |calls| {
                        calls
                            .iter()
                            .map(|c| {
                                c["function"]["name"].as_str().map_or(0, str::len)
                                    + c["function"]["arguments"].as_str().map_or(0, str::len)
                            })
                            .sum()
                    })
            })
            .sum();
        (bytes as u64).div_ceil(3) + 5 * messages.len() as u64
    }

    /// The answer the server gives instead of a reply, if any.
    pub(super) fn refusal(&self, request: &Value, stream: bool) -> Option<Response> {
        let messages = request["messages"].as_array().cloned().unwrap_or_default();
        for (i, m) in messages.iter().enumerate() {
            if m["role"] != "assistant" {
                continue;
            }
            match m.get("content") {
                Some(Value::Null) => {
                    return Some(respond(
                        500,
                        &[],
                        "application/json",
                        Body::from(null_content_body(i)),
                    ));
                }
                None => {
                    return Some(respond(
                        500,
                        &[],
                        "application/json",
                        Body::from(
                            r#"{"error":{"message":"'dict object' has no attribute 'content'","type":"internal_server_error","param":null,"code":null}}"#,
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        let auto_tools = request["tool_choice"] == "auto"
            && request["tools"].as_array().is_some_and(|t| !t.is_empty());
        let tokens = Self::prompt_tokens(request);
        let over = tokens > self.window_tokens;
        if stream && auto_tools {
            // What a slow server sends (sse-starlette's keep-alive while a model loads), then
            // the end of the body: no event.
            let ping = ": ping - 2026-12-01 17:08:52.059345+00:00\r\n\r\n";
            return Some(respond(
                200,
                &[],
                "text/event-stream; charset=utf-8",
                Body::from(ping),
            ));
        }
        if stream && over {
            return Some(respond(
                200,
                &[],
                "text/event-stream; charset=utf-8",
                Body::empty(),
            ));
        }
        if over {
            let completion = request["max_tokens"].as_u64().unwrap_or(0);
            let body = json!({"error": {
                "message": format!(
                    "This model's maximum context length is {} tokens. However, you requested {} tokens ({tokens} in the messages, {completion} in the completion). Please reduce the length of the messages or completion.",
                    self.window_tokens,
                    tokens + completion
                ),
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
            }});
            return Some(respond(
                400,
                &[],
                "application/json",
                Body::from(body.to_string()),
            ));
        }
        None
    }
}

/// llama-cpp-python's HTTP 500 body for an assistant message `index` whose content is null
/// (the real body's seven errors, its Python repr of the message shortened to `{…}`).
pub fn null_content_body(index: usize) -> String {
    let at = |variant: &str, field: &str| {
        format!("('body', 'messages', {index}, '{variant}', '{field}')")
    };
    let lines = [
        format!(
            "{{'type': 'literal_error', 'loc': {}, 'msg': \"Input should be 'system'\", 'input': 'assistant', 'ctx': {{'expected': \"'system'\"}}}}",
            at("ChatCompletionRequestSystemMessage", "role")
        ),
        format!(
            "{{'type': 'literal_error', 'loc': {}, 'msg': \"Input should be 'user'\", 'input': 'assistant', 'ctx': {{'expected': \"'user'\"}}}}",
            at("ChatCompletionRequestUserMessage", "role")
        ),
        format!(
            "{{'type': 'string_type', 'loc': {}, 'msg': 'Input should be a valid string', 'input': None}}",
            at("ChatCompletionRequestAssistantMessage", "content")
        ),
        format!(
            "{{'type': 'literal_error', 'loc': {}, 'msg': \"Input should be 'tool'\", 'input': 'assistant', 'ctx': {{'expected': \"'tool'\"}}}}",
            at("ChatCompletionRequestToolMessage", "role")
        ),
        format!(
            "{{'type': 'missing', 'loc': {}, 'msg': 'Field required', 'input': {{…}}}}",
            at("ChatCompletionRequestToolMessage", "tool_call_id")
        ),
        format!(
            "{{'type': 'literal_error', 'loc': {}, 'msg': \"Input should be 'function'\", 'input': 'assistant', 'ctx': {{'expected': \"'function'\"}}}}",
            at("ChatCompletionRequestFunctionMessage", "role")
        ),
        format!(
            "{{'type': 'missing', 'loc': {}, 'msg': 'Field required', 'input': {{…}}}}",
            at("ChatCompletionRequestFunctionMessage", "name")
        ),
    ];
    let message = format!(
        "7 validation errors:\n  {}\n\n  File \"/opt/venv/lib/python3.11/site-packages/llama_cpp/server/app.py\", line 376, in create_chat_completion\n    POST /v1/chat/completions",
        lines.join("\n  ")
    );
    json!({"error": {"message": message, "type": "internal_server_error", "param": null, "code": null}})
        .to_string()
}
