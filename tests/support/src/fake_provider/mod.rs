//! A fake model provider for the tests: an HTTP server on `127.0.0.1:0`, started by the test
//! that needs it, speaking OpenAI Chat Completions (`POST …/chat/completions`) and Anthropic
//! Messages (`POST …/messages`), each as JSON and as server-sent events.
//!
//! It replays a script of [`Turn`]s, one per request, in order: a reply (text, tool calls,
//! usage) rendered in the wire format of the request's path, as JSON or as a stream depending
//! on the request's `"stream": true`; an HTTP error envelope (status, headers, body, whatever
//! the path); or a `200` stream that starts normally and then carries an error event. A
//! rejection rule ([`Fake::reject_over`]) answers every body over N bytes with a given
//! envelope without using a turn, as a provider with a context window would. Every request is
//! recorded (path, headers, body), whether answered, rejected or past the end of the script
//! (then the answer is a `418` saying so, which no backend retries).
//!
//! Streams are sent in pieces of [`PIECE_BYTES`] bytes, so SSE lines, JSON and UTF-8 sequences
//! arrive split across reads, and each text and tool-call argument is cut into fragments of
//! [`FRAGMENT_CHARS`] characters, one event each.
//!
//! [`Fake::like_llama_cpp_python`] adds what a real llama-cpp-python 0.3.36 server does (the
//! bodies are the ones it sent): see [`LlamaCppPython`].

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};
use sluice_models::Backend;
use sluice_models::http::RetryPolicy;
use sluice_models::provider::{Provider, ProviderConfig, Secret, connect};

mod llama_cpp_python;

pub use llama_cpp_python::{LlamaCppPython, null_content_body};

/// The model name each provider is configured with.
pub fn model(provider: Provider) -> &'static str {
    match provider {
        Provider::OpenAi => "gpt-4.1-mini",
        Provider::OpenAiCompatible => "qwen2.5:7b-instruct",
        Provider::Anthropic => "claude-sonnet-4-5",
        Provider::Bedrock => "anthropic.claude-3-5-sonnet-20240620-v1:0",
    }
}

/// A configuration for `provider` pointed at `fake`, with key `test-key`, streaming or not,
/// and retries that wait 1 ms (3 retries).
pub fn config(provider: Provider, fake: &Fake, stream: bool) -> ProviderConfig {
    let mut c = ProviderConfig::new(provider, model(provider));
    c.base_url = Some(fake.base_url());
    c.api_key = Some(Secret::new("test-key"));
    c.stream = stream;
    c.retry = RetryPolicy {
        max_retries: 3,
        base_delay_ms: 1,
        max_delay_ms: 50,
    };
    c
}

/// The real backend for `config`, through `provider::connect`.
pub fn backend(config: ProviderConfig) -> Arc<dyn Backend> {
    connect(config).unwrap()
}

/// The size of the body pieces a stream is sent in.
pub const PIECE_BYTES: usize = 7;

/// The length of the text and argument fragments of a stream.
pub const FRAGMENT_CHARS: usize = 5;

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Turn {
    /// A reply, in the request's wire format.
    Reply {
        /// Its text.
        content: String,
        /// Its tool calls: `(id, name, arguments as JSON text)`.
        tool_calls: Vec<(String, String, String)>,
        /// `(input, output)` tokens.
        usage: (u64, u64),
    },
    /// An HTTP error reply, sent as given.
    Error {
        /// The status.
        status: u16,
        /// Extra headers (`content-type: application/json` is added unless given).
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// A `200` stream: the wire format's usual first events, then an event named `event`
    /// (when given) whose data is `data`, then the end of the body. To a request that is not
    /// streamed, `data` is the whole `200` body.
    StreamError {
        /// The SSE event name (`error` for Anthropic and OpenAI Responses; none for a plain
        /// `data:` line).
        event: Option<String>,
        /// The event's data.
        data: String,
    },
}

impl Turn {
    /// A reply with text only.
    pub fn text(content: &str) -> Turn {
        Turn::Reply {
            content: content.into(),
            tool_calls: vec![],
            usage: (10, 2),
        }
    }

    /// An error envelope with a JSON (or any) body.
    pub fn error(status: u16, body: &str) -> Turn {
        Turn::Error {
            status,
            headers: vec![],
            body: body.into(),
        }
    }

    /// An error envelope with headers.
    pub fn error_with(status: u16, headers: &[(&str, &str)], body: &str) -> Turn {
        Turn::Error {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: body.into(),
        }
    }
}

/// One request the fake received.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The path (`/v1/chat/completions`, `/v1/messages`, …).
    pub path: String,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Recorded {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// The value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Script {
    turns: Vec<Turn>,
    next: usize,
    reject_over: Option<(usize, Turn)>,
    llama: Option<LlamaCppPython>,
    requests: Vec<Recorded>,
}

/// A running fake provider; it stops when dropped.
pub struct Fake {
    addr: std::net::SocketAddr,
    script: Arc<Mutex<Script>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Fake {
    /// Starts a fake on `127.0.0.1` (a free port) answering with `turns`.
    pub async fn start(turns: Vec<Turn>) -> Fake {
        let script = Arc::new(Mutex::new(Script {
            turns,
            ..Script::default()
        }));
        let app = Router::new().fallback(handle).with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Fake { addr, script, task }
    }

    /// Answers every request whose body is over `bytes` bytes with `turn` (no script turn is
    /// used). Used by row P12 in `sluice-tests` (`tests/agent_backends/p12.rs`), which
    /// shares this module; this crate's own tests do not need it.
    #[allow(dead_code)]
    pub fn reject_over(&self, bytes: usize, turn: Turn) {
        self.script.lock().unwrap().reject_over = Some((bytes, turn));
    }

    /// Behaves like llama-cpp-python 0.3.36's server with a window of `window_tokens` tokens
    /// (see [`LlamaCppPython`]).
    pub fn like_llama_cpp_python(&self, window_tokens: u64) {
        self.script.lock().unwrap().llama = Some(LlamaCppPython { window_tokens });
    }

    /// The base URL backends are given: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.script.lock().unwrap().requests.clone()
    }
}

/// Which wire format a path speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wire {
    OpenAi,
    Anthropic,
}

async fn handle(
    State(script): State<Arc<Mutex<Script>>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let recorded = Recorded {
        path: uri.path().to_string(),
        headers: headers
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
            .collect(),
        body: body.to_vec(),
    };
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let stream = request["stream"] == json!(true);
    let llama = {
        let mut s = script.lock().unwrap();
        s.requests.push(recorded);
        s.llama
    };
    if let Some(refusal) = llama.and_then(|l| l.refusal(&request, stream)) {
        return refusal;
    }
    let turn = {
        let mut s = script.lock().unwrap();
        match &s.reject_over {
            Some((limit, turn)) if body.len() > *limit => Some(turn.clone()),
            _ => {
                let turn = s.turns.get(s.next).cloned();
                if turn.is_some() {
                    s.next += 1;
                }
                turn
            }
        }
    };
    let Some(turn) = turn else {
        return respond(
            418,
            &[],
            "text/plain",
            Body::from("the fake provider's script has no more turns"),
        );
    };
    let model = request["model"].as_str().unwrap_or("fake").to_string();
    let wire = if uri.path().ends_with("/messages") {
        Wire::Anthropic
    } else {
        Wire::OpenAi
    };
    match turn {
        Turn::Error {
            status,
            headers,
            body,
        } => {
            let headers: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            respond(status, &headers, "application/json", Body::from(body))
        }
        Turn::Reply {
            content,
            tool_calls,
            usage,
        } => {
            let usage = match llama {
                Some(_) => (LlamaCppPython::prompt_tokens(&request), usage.1),
                None => usage,
            };
            let reply = Reply {
                model,
                content,
                tool_calls,
                usage,
                include_usage: request["stream_options"]["include_usage"] == json!(true)
                    && llama.is_none(),
            };
            match (wire, stream) {
                (Wire::OpenAi, false) => json_response(reply.openai_json()),
                (Wire::OpenAi, true) => sse_response(reply.openai_sse()),
                (Wire::Anthropic, false) => json_response(reply.anthropic_json()),
                (Wire::Anthropic, true) => sse_response(reply.anthropic_sse()),
            }
        }
        Turn::StreamError { event, data } => {
            if !stream {
                return respond(200, &[], "application/json", Body::from(data));
            }
            let mut text = match wire {
                Wire::OpenAi => sse(
                    None,
                    &json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
                        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]}),
                ),
                Wire::Anthropic => {
                    sse(
                        Some("message_start"),
                        &json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message",
                            "role": "assistant", "content": [], "model": model, "stop_reason": null,
                            "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
                    ) + &sse(Some("ping"), &json!({"type": "ping"}))
                }
            };
            if let Some(event) = &event {
                text.push_str(&format!("event: {event}\n"));
            }
            text.push_str(&format!("data: {data}\n\n"));
            sse_response(text)
        }
    }
}

fn respond(status: u16, headers: &[(&str, &str)], content_type: &str, body: Body) -> Response {
    let mut builder = Response::builder().status(StatusCode::from_u16(status).unwrap());
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    {
        builder = builder.header("content-type", content_type);
    }
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    builder.body(body).unwrap()
}

fn json_response(value: Value) -> Response {
    respond(200, &[], "application/json", Body::from(value.to_string()))
}

/// A `200` event stream sent in pieces of [`PIECE_BYTES`] bytes.
fn sse_response(text: String) -> Response {
    let pieces: Vec<Result<Bytes, std::io::Error>> = text
        .into_bytes()
        .chunks(PIECE_BYTES)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    respond(
        200,
        &[("cache-control", "no-cache")],
        "text/event-stream",
        Body::from_stream(futures_util::stream::iter(pieces)),
    )
}

/// One SSE event.
fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// `text` cut into fragments of [`FRAGMENT_CHARS`] characters (none for an empty text).
fn fragments(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(FRAGMENT_CHARS)
        .map(|c| c.iter().collect())
        .collect()
}

struct Reply {
    model: String,
    content: String,
    tool_calls: Vec<(String, String, String)>,
    usage: (u64, u64),
    include_usage: bool,
}

impl Reply {
    fn openai_finish(&self) -> &'static str {
        if self.tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        }
    }

    fn openai_usage(&self) -> Value {
        json!({"prompt_tokens": self.usage.0, "completion_tokens": self.usage.1,
            "total_tokens": self.usage.0 + self.usage.1})
    }

    fn openai_json(&self) -> Value {
        let mut message = json!({"role": "assistant", "content": self.content, "refusal": null});
        if !self.tool_calls.is_empty() {
            if self.content.is_empty() {
                message["content"] = Value::Null;
            }
            message["tool_calls"] = self
                .tool_calls
                .iter()
                .map(|(id, name, args)| {
                    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
                })
                .collect();
        }
        json!({
            "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": self.model,
            "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": self.openai_finish()}],
            "usage": self.openai_usage(),
        })
    }

    fn openai_sse(&self) -> String {
        let chunk = |delta: Value, finish: Value| {
            sse(
                None,
                &json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                    "model": self.model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
            )
        };
        let mut text = chunk(
            json!({"role": "assistant", "content": "", "refusal": null}),
            Value::Null,
        );
        text.push_str(": keep-alive comment\n\n");
        for piece in fragments(&self.content) {
            text.push_str(&chunk(json!({"content": piece}), Value::Null));
        }
        for (i, (id, name, args)) in self.tool_calls.iter().enumerate() {
            text.push_str(&chunk(
                json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                Value::Null,
            ));
            for piece in fragments(args) {
                text.push_str(&chunk(
                    json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                    Value::Null,
                ));
            }
        }
        text.push_str(&chunk(json!({}), Value::from(self.openai_finish())));
        if self.include_usage {
            text.push_str(&sse(
                None,
                &json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                    "model": self.model, "choices": [], "usage": self.openai_usage()}),
            ));
        }
        text.push_str("data: [DONE]\n\n");
        text
    }

    fn anthropic_stop(&self) -> &'static str {
        if self.tool_calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        }
    }

    fn anthropic_json(&self) -> Value {
        let mut content = Vec::new();
        if !self.content.is_empty() {
            content.push(json!({"type": "text", "text": self.content}));
        }
        for (id, name, args) in &self.tool_calls {
            let input: Value = serde_json::from_str(args).unwrap();
            content.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
        }
        json!({
            "id": "msg_fake", "type": "message", "role": "assistant", "model": self.model,
            "content": content, "stop_reason": self.anthropic_stop(), "stop_sequence": null,
            "usage": {"input_tokens": self.usage.0, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0, "output_tokens": self.usage.1},
        })
    }

    fn anthropic_sse(&self) -> String {
        let mut text = sse(
            Some("message_start"),
            &json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message",
                "role": "assistant", "content": [], "model": self.model, "stop_reason": null,
                "stop_sequence": null, "usage": {"input_tokens": self.usage.0,
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}}}),
        );
        let mut index = 0;
        if !self.content.is_empty() {
            text.push_str(&sse(
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "text", "text": ""}}),
            ));
            text.push_str(&sse(Some("ping"), &json!({"type": "ping"})));
            for piece in fragments(&self.content) {
                text.push_str(&sse(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": piece}}),
                ));
            }
            text.push_str(&sse(
                Some("content_block_stop"),
                &json!({"type": "content_block_stop", "index": index}),
            ));
            index += 1;
        }
        for (id, name, args) in &self.tool_calls {
            text.push_str(&sse(
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
            ));
            for piece in fragments(args) {
                text.push_str(&sse(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece}}),
                ));
            }
            text.push_str(&sse(
                Some("content_block_stop"),
                &json!({"type": "content_block_stop", "index": index}),
            ));
            index += 1;
        }
        text.push_str(&sse(
            Some("message_delta"),
            &json!({"type": "message_delta", "delta": {"stop_reason": self.anthropic_stop(),
                "stop_sequence": null}, "usage": {"output_tokens": self.usage.1}}),
        ));
        text.push_str(&sse(Some("message_stop"), &json!({"type": "message_stop"})));
        text
    }
}
