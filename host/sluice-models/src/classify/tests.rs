//! Every row of the signature table, the exclusions, the statuses, stream errors and
//! `retry-after`.

use std::sync::LazyLock;
use std::time::UNIX_EPOCH;

use super::rules::{BEDROCK_OVERFLOW, NOT_OVERFLOW, OVERFLOW, TOKENS_PER_MINUTE};
use super::status::parse_http_date;
use super::*;
use crate::http::RetryPolicy;
use crate::overflow::Overflow;

fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

fn overflow(status: u16, headers: &[(&str, &str)], body: &str) -> BackendError {
    let e = classify(status, &h(headers), body);
    assert!(
        e.context_window_exceeded(),
        "expected overflow for {status} {body}: {e:?}"
    );
    assert_eq!(e.status, Some(status));
    e
}

fn not_overflow(
    status: u16,
    headers: &[(&str, &str)],
    body: &str,
    kind: ErrorKind,
) -> BackendError {
    let e = classify(status, &h(headers), body);
    assert!(
        !e.context_window_exceeded(),
        "expected no overflow for {status} {body}: {e:?}"
    );
    assert_eq!(e.kind, kind, "{body}");
    e
}

#[test]
fn every_wording_compiles() {
    for source in OVERFLOW_WORDINGS {
        assert!(Regex::new(source).is_ok(), "{source}");
    }
    LazyLock::force(&OVERFLOW);
    LazyLock::force(&BEDROCK_OVERFLOW);
    LazyLock::force(&NOT_OVERFLOW);
    LazyLock::force(&TOKENS_PER_MINUTE);
}

// ---- The signature table of docs/agent-loop.md#detection, row by row. ----

#[test]
fn table_anthropic_prompt_is_too_long() {
    let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215000 tokens > 200000 maximum"},"request_id":"req_011CXyz"}"#;
    let e = overflow(400, &[("request-id", "req_011CXyz")], body);
    assert_eq!(
        e.message,
        "prompt is too long: 215000 tokens > 200000 maximum"
    );
}

#[test]
fn table_anthropic_input_plus_max_tokens() {
    let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000, decrease input length or `max_tokens` and try again"}}"#;
    overflow(400, &[], body);
}

#[test]
fn table_anthropic_413_request_too_large() {
    let body = r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}"#;
    let e = overflow(413, &[], body);
    assert_eq!(e.message, "Request exceeds the maximum size");
    // Without the top-level envelope marker too.
    overflow(
        413,
        &[],
        r#"{"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}"#,
    );
    // And the 2025 variant with invalid_request_error.
    overflow(
        413,
        &[],
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"Request size exceeds model context window"}}"#,
    );
}

#[test]
fn table_openai_chat_context_length_exceeded() {
    let body = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let e = overflow(400, &[], body);
    assert!(
        e.message
            .starts_with("This model's maximum context length is 128000 tokens.")
    );
    // The code alone decides, whatever the wording.
    overflow(
        400,
        &[],
        r#"{"error":{"message":"too big","code":"context_length_exceeded"}}"#,
    );
}

#[test]
fn table_openai_responses_stream_error() {
    let event = r#"{"type":"error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input","sequence_number":2}"#;
    let e = classify_stream_error(event);
    assert!(e.context_window_exceeded(), "{e:?}");
    assert_eq!(e.status, None);
    assert!(
        e.message
            .starts_with("Your input exceeds the context window")
    );

    let failed = r#"{"type":"response.failed","sequence_number":5,"response":{"id":"resp_1","object":"response","status":"failed","error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again."}}}"#;
    assert!(classify_stream_error(failed).context_window_exceeded());

    // The same event as a 400 body (non-streaming Responses).
    overflow(
        400,
        &[],
        r#"{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}"#,
    );
}

#[test]
fn table_bedrock_input_is_too_long() {
    let headers = [(
        "x-amzn-ErrorType",
        "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/",
    )];
    let e = overflow(
        400,
        &headers,
        r#"{"message":"Input is too long for requested model."}"#,
    );
    assert_eq!(e.message, "Input is too long for requested model.");
    overflow(
        400,
        &headers,
        r#"{"message":"The model returned the following errors: Input is too long for requested model."}"#,
    );
}

#[test]
fn table_bedrock_claude_prompt_is_too_long() {
    let headers = [("X-Amzn-ErrorType", "ValidationException")];
    overflow(
        400,
        &headers,
        r#"{"message":"The model returned the following errors: prompt is too long: 205000 tokens > 200000 maximum"}"#,
    );
    // Capitalised key, as some SDKs print it.
    overflow(
        400,
        &headers,
        r#"{"Message":"The model returned the following errors: prompt is too long: 205000 tokens > 200000 maximum"}"#,
    );
}

#[test]
fn table_llama_cpp_exceed_context_size_error() {
    let body = r#"{"error":{"code":400,"message":"request (8193 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":8193,"n_ctx":8192}}"#;
    overflow(400, &[], body);
    // Sometimes 500: not transient.
    overflow(500, &[], &body.replace("\"code\":400", "\"code\":500"));
}

#[test]
fn table_vllm_openrouter_deepseek_maximum_context_length_any_case() {
    for body in [
        r#"{"object":"error","message":"This model's maximum context length is 32768 tokens. However, your request has 40000 input tokens. Please reduce the length of the input messages.","type":"BadRequestError","param":null,"code":400}"#,
        r#"{"error":{"message":"This endpoint's maximum context length is 163840 tokens. However, you requested about 200000 tokens (190000 of text input, 2000 of tool input, 8000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400,"metadata":{"provider_name":"DeepInfra"}}}"#,
        r#"{"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 70000 tokens (62000 in the messages, 8000 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}"#,
        r#"{"error":{"message":"THIS MODEL'S MAXIMUM CONTEXT LENGTH IS 8192 TOKENS.","type":"BadRequestError","code":400}}"#,
    ] {
        overflow(400, &[], body);
    }
}

#[test]
fn table_gemini_array_body() {
    let body = r#"[{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]"#;
    let e = overflow(400, &[], body);
    assert_eq!(
        e.message,
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
    );
}

#[test]
fn table_last_row_429_tokens_per_minute_is_rate_limited() {
    let body = r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on tokens per minute (TPM): Limit 30000, Used 28000, Requested 6000. Please try again in 8s. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;
    let e = not_overflow(429, &[("retry-after", "8")], body, ErrorKind::RateLimited);
    assert_eq!(e.retry_after, Some(Duration::from_secs(8)));
    assert!(e.message.starts_with("Rate limit reached"));
}

// ---- Further wordings of OVERFLOW_WORDINGS, one provider each. ----

#[test]
fn other_overflow_wordings() {
    let cases: &[(u16, &str)] = &[
        // Azure / newer OpenAI models.
        (
            400,
            r#"{"error":{"message":"Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 300000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","code":null}}"#,
        ),
        // vLLM older decoder wording.
        (
            400,
            r#"{"object":"error","message":"The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens.","type":"BadRequestError","code":400}"#,
        ),
        // vLLM max_tokens form (input plus output over the window).
        (
            400,
            r#"{"error":{"message":"'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum context length is 8192 tokens and your request has 6000 input tokens (4096 > 8192 - 6000).","type":"BadRequestError","code":400}}"#,
        ),
        // llama.cpp older builds, any status.
        (
            500,
            r#"{"error":{"code":500,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"server_error"}}"#,
        ),
        (
            500,
            r#"{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}"#,
        ),
        // Ollama, JSON and plain text, and the older log wording.
        (
            400,
            r#"{"error":"prompt too long; exceeded max context length by 1024 tokens"}"#,
        ),
        (400, "prompt too long; exceeded context length by 12 tokens"),
        (500, r#"{"error":"input exceeds context length"}"#),
        // LM Studio.
        (
            400,
            r#"{"error":"Trying to keep the first 9000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"}"#,
        ),
        // Mistral, xAI, Moonshot, Together, Cerebras.
        (
            400,
            r#"{"object":"error","message":"Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length","type":"invalid_request_message_error","param":null,"code":"3051"}"#,
        ),
        (
            400,
            r#"{"code":"Client specified an invalid argument","error":"This model's maximum prompt length is 131072 but the request contains 140000 tokens."}"#,
        ),
        (
            400,
            r#"{"error":{"message":"Invalid request: Your request exceeded model token limit: 131072","type":"invalid_request_error"}}"#,
        ),
        (
            422,
            r#"{"error":{"message":"The input (40000 tokens) is longer than the model's context length (32768 tokens).","type":"invalid_request_error"}}"#,
        ),
        (
            400,
            r#"{"message":"Please reduce the length of the messages or completion. Current length is 9000 while limit is 8192","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}"#,
        ),
        // Bedrock, other wordings.
        (
            400,
            r#"{"message":"400 Bad Request: Too many input tokens. Max input tokens: 8192, request input token count: 9000"}"#,
        ),
        (
            400,
            r#"{"message":"prompt tokens (250000) exceed model maximum (200000)"}"#,
        ),
        // Odd local backend on 404.
        (
            404,
            r#"{"detail":"x","message":"This model's maximum context length is 4096 tokens."}"#,
        ),
    ];
    for (status, body) in cases {
        overflow(*status, &[], body);
    }
}

#[test]
fn openrouter_metadata_raw_is_read_and_quoted() {
    let body = r#"{"error":{"message":"Provider returned error","code":400,"metadata":{"raw":"{\"error\":{\"message\":\"prompt is too long: 210000 tokens > 200000 maximum\"}}","provider_name":"Anthropic"}}}"#;
    let e = overflow(400, &[], body);
    assert!(
        e.message.starts_with("Provider returned error ("),
        "{}",
        e.message
    );
    assert!(e.message.contains("prompt is too long"));
}

#[test]
fn bedrock_only_wordings_need_validation_exception() {
    let body = r#"{"message":"Malformed input request: expected maxLength: 50000, actual: 62000, please reformat your input and try again."}"#;
    overflow(400, &[("x-amzn-errortype", "ValidationException")], body);
    not_overflow(400, &[], body, ErrorKind::BadRequest);
    overflow(
        400,
        &[("x-amzn-errortype", "ValidationException")],
        r#"{"message":"Too many tokens in the request"}"#,
    );
    // And the JSON `__type` field.
    overflow(
        400,
        &[],
        r#"{"__type":"com.amazon.coral.validate#ValidationException","message":"too many tokens"}"#,
    );
}

#[test]
fn bedrock_stream_exception_frame() {
    let e = classify_stream_error(
        r#"{"validationException":{"message":"Input is too long for requested model."}}"#,
    );
    assert!(e.context_window_exceeded());
    let e = classify_stream_error(
        r#"{"throttlingException":{"message":"Too many requests, please wait before trying again."}}"#,
    );
    assert_eq!(e.kind, ErrorKind::RateLimited);
    let e = classify_stream_error(
        r#"{"validationException":{"message":"Too many tokens, please wait"}}"#,
    );
    assert!(e.context_window_exceeded());
}

// ---- Not overflow. ----

#[test]
fn exclusions_are_not_overflow() {
    // Groq's TPM limit on a 413: a rate limit.
    not_overflow(
        413,
        &[],
        r#"{"error":{"message":"Request too large for model `llama3-70b-8192` in organization `org_01` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 7038, please reduce your message size and try again.","type":"tokens","code":"rate_limit_exceeded"}}"#,
        ErrorKind::RateLimited,
    );
    // An output cap.
    not_overflow(
        400,
        &[],
        r#"{"error":{"message":"max_tokens is too large: 100000. This model supports at most 16384 completion tokens, whereas you provided 100000.","type":"invalid_request_error","param":"max_tokens","code":null}}"#,
        ErrorKind::BadRequest,
    );
    // A per-item cap.
    not_overflow(
        400,
        &[],
        r#"{"error":{"message":"Invalid 'messages[3].content': string too long. Expected a string with maximum length 10485760, but got a string with length 12000000 instead.","type":"invalid_request_error","param":"messages[3].content","code":"string_above_max_length"}}"#,
        ErrorKind::BadRequest,
    );
    // A bare proxy 413.
    let e = not_overflow(
        413,
        &[],
        "<html><head><title>413 Request Entity Too Large</title></head><body><center><h1>413 Request Entity Too Large</h1></center><hr><center>nginx</center></body></html>",
        ErrorKind::BadRequest,
    );
    assert!(e.message.contains("413 Request Entity Too Large"));
    // 429 saying "too many tokens" or even quoting an overflow wording.
    not_overflow(
        429,
        &[],
        r#"{"message":"Too many tokens, please wait before trying again."}"#,
        ErrorKind::RateLimited,
    );
    not_overflow(
        429,
        &[],
        r#"{"error":{"message":"prompt is too long for your tier","code":"context_length_exceeded"}}"#,
        ErrorKind::RateLimited,
    );
}

/// llama-cpp-python 0.3.36's answer to an assistant message with `"content": null`
/// (HTTP 500), as its server sent it (the venv path shortened).
pub(crate) const LLAMA_CPP_PYTHON_NULL_CONTENT_500: &str = r#"{"error":{"message":"7 validation errors:\n  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestSystemMessage', 'role'), 'msg': \"Input should be 'system'\", 'input': 'assistant', 'ctx': {'expected': \"'system'\"}}\n  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestUserMessage', 'role'), 'msg': \"Input should be 'user'\", 'input': 'assistant', 'ctx': {'expected': \"'user'\"}}\n  {'type': 'string_type', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a valid string', 'input': None}\n  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestToolMessage', 'role'), 'msg': \"Input should be 'tool'\", 'input': 'assistant', 'ctx': {'expected': \"'tool'\"}}\n  {'type': 'missing', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestToolMessage', 'tool_call_id'), 'msg': 'Field required', 'input': {'role': 'assistant', 'content': None, 'tool_calls': [{'id': 'call_1', 'type': 'function', 'function': {'name': 'read_file', 'arguments': '{\"path\":\"a.txt\"}'}}]}}\n  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestFunctionMessage', 'role'), 'msg': \"Input should be 'function'\", 'input': 'assistant', 'ctx': {'expected': \"'function'\"}}\n  {'type': 'missing', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestFunctionMessage', 'name'), 'msg': 'Field required', 'input': {'role': 'assistant', 'content': None, 'tool_calls': [{'id': 'call_1', 'type': 'function', 'function': {'name': 'read_file', 'arguments': '{\"path\":\"a.txt\"}'}}]}}\n\n  File \"/opt/venv/lib/python3.11/site-packages/llama_cpp/server/app.py\", line 376, in create_chat_completion\n    POST /v1/chat/completions","type":"internal_server_error","param":null,"code":null}}"#;

#[test]
fn a_rejection_carries_the_sizes_it_states() {
    // llama-cpp-python 0.3.36, as its server sent it (2,048-token window, max_tokens 4096).
    let e = overflow(
        400,
        &[],
        r#"{"error":{"message":"This model's maximum context length is 2048 tokens. However, you requested 14791 tokens (10695 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    );
    let sized = |prompt_tokens, limit_tokens| {
        Some(Overflow {
            prompt_tokens,
            limit_tokens,
            estimated: false,
        })
    };
    assert_eq!(e.overflow, sized(10_695, 2048));
    // llama.cpp's structured numbers win over the wording.
    let e = overflow(
        400,
        &[],
        r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9001,"n_ctx":8192}}"#,
    );
    assert_eq!(e.overflow, sized(9001, 8192));
    let e = overflow(
        400,
        &[],
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
    );
    assert_eq!(e.overflow, sized(210_000, 200_000));
    // No numbers, no sizes; and never on another kind of error.
    let e = overflow(
        400,
        &[],
        r#"{"message":"Input is too long for requested model."}"#,
    );
    assert_eq!(e.overflow, None);
    let e = classify(
        429,
        &[],
        "prompt is too long: 210000 tokens > 200000 maximum",
    );
    assert_eq!((e.kind, e.overflow), (ErrorKind::RateLimited, None));
}

#[test]
fn a_5xx_validation_error_is_a_bad_request() {
    let e = not_overflow(
        500,
        &[],
        LLAMA_CPP_PYTHON_NULL_CONTENT_500,
        ErrorKind::BadRequest,
    );
    assert!(
        e.message
            .starts_with("7 validation errors:\n  {'type': 'literal_error'"),
        "{}",
        e.message
    );
    assert!(
        e.message
            .contains("'msg': 'Input should be a valid string', 'input': None")
    );
    assert!(!RetryPolicy::retries(e.kind));
    // Other wordings of the kind; a plain 500 stays transient.
    not_overflow(
        502,
        &[],
        r#"{"detail":"1 validation error for Request\nbody -> messages -> 1 -> content\n  field required"}"#,
        ErrorKind::BadRequest,
    );
    not_overflow(
        500,
        &[],
        r#"{"error":{"message":"'dict object' has no attribute 'content'","type":"internal_server_error","param":null,"code":null}}"#,
        ErrorKind::Transient,
    );
}

#[test]
fn statuses_map_to_kinds() {
    let anthropic = |t: &str, m: &str| {
        format!(r#"{{"type":"error","error":{{"type":"{t}","message":"{m}"}}}}"#)
    };
    not_overflow(
        529,
        &[],
        &anthropic("overloaded_error", "Overloaded"),
        ErrorKind::Overloaded,
    );
    not_overflow(503, &[], "Service Unavailable", ErrorKind::Overloaded);
    not_overflow(
        401,
        &[],
        &anthropic("authentication_error", "invalid x-api-key"),
        ErrorKind::Auth,
    );
    not_overflow(
        403,
        &[],
        r#"{"message":"User is not authorized to perform: bedrock:InvokeModel"}"#,
        ErrorKind::Auth,
    );
    not_overflow(
        500,
        &[],
        &anthropic("api_error", "Internal server error"),
        ErrorKind::Transient,
    );
    not_overflow(502, &[], "", ErrorKind::Transient);
    not_overflow(
        408,
        &[],
        r#"{"message":"Model has timed out"}"#,
        ErrorKind::Transient,
    );
    not_overflow(
        400,
        &[],
        &anthropic("invalid_request_error", "messages: roles must alternate"),
        ErrorKind::BadRequest,
    );
    not_overflow(
        404,
        &[],
        &anthropic("not_found_error", "model: claude-9"),
        ErrorKind::BadRequest,
    );
    let e = not_overflow(502, &[], "", ErrorKind::Transient);
    assert_eq!(e.message, "HTTP 502 with an empty body");
    // An error body inside a 200 (old llama.cpp): the integer code decides.
    not_overflow(
        200,
        &[],
        r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#,
        ErrorKind::Overloaded,
    );
    not_overflow(200, &[], "not json at all", ErrorKind::Protocol);
}

#[test]
fn stream_errors_map_by_type() {
    let e = classify_stream_error(
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    );
    assert_eq!(
        (e.kind, e.status, e.message.as_str()),
        (ErrorKind::Overloaded, None, "Overloaded")
    );
    let e = classify_stream_error(
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
    );
    assert_eq!(e.kind, ErrorKind::RateLimited);
    let e = classify_stream_error(
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 300000 tokens > 200000 maximum"}}"#,
    );
    assert!(e.context_window_exceeded());
    let e = classify_stream_error(
        r#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"The server had an error"}}}"#,
    );
    assert_eq!(e.kind, ErrorKind::Transient);
    let e = classify_stream_error(
        r#"{"error":{"message":"Rate limit reached on tokens per minute","code":"rate_limit_exceeded"}}"#,
    );
    assert_eq!(e.kind, ErrorKind::RateLimited);
    let e = classify_stream_error("garbage");
    assert_eq!(
        (e.kind, e.message.as_str()),
        (ErrorKind::Transient, "garbage")
    );
}

#[test]
fn long_bodies_are_cut_on_characters() {
    let body = "é".repeat(3000);
    let e = classify(400, &[], &body);
    assert_eq!(e.message.chars().count(), MAX_FALLBACK_MESSAGE_CHARS);
    assert!(e.message.ends_with('…'));
    assert_eq!(e.kind, ErrorKind::BadRequest);
}

// ---- retry-after. ----

#[test]
fn retry_after_seconds_and_dates() {
    let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
    assert_eq!(
        parse_retry_after("120", now),
        Some(Duration::from_secs(120))
    );
    assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
    assert_eq!(
        parse_retry_after("1.5", now),
        Some(Duration::from_millis(1500))
    );
    assert_eq!(parse_retry_after("-3", now), None);
    assert_eq!(parse_retry_after("soon", now), None);
    assert_eq!(
        parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now),
        Some(Duration::from_secs(30))
    );
    assert_eq!(
        parse_retry_after("Sunday, 06-Nov-94 08:49:47 GMT", now),
        Some(Duration::from_secs(10))
    );
    assert_eq!(
        parse_retry_after("Sun Nov  6 08:49:40 1994", now),
        Some(Duration::from_secs(3))
    );
    // A past date means "now".
    assert_eq!(
        parse_retry_after("Sat, 05 Nov 1994 08:49:37 GMT", now),
        Some(Duration::ZERO)
    );
    assert_eq!(
        parse_retry_after("Sun, 06 Nov 1994 25:00:00 GMT", now),
        None
    );
    // A date in 2030.
    let d =
        parse_http_date("Tue, 01 Jan 2030 00:00:00 GMT").map(|t| t.duration_since(UNIX_EPOCH).ok());
    assert_eq!(d, Some(Some(Duration::from_secs(1_893_456_000))));
}

#[test]
fn retry_after_headers() {
    let e = classify(
        429,
        &h(&[("Retry-After", "7")]),
        r#"{"error":{"message":"slow"}}"#,
    );
    assert_eq!(
        (e.kind, e.retry_after),
        (ErrorKind::RateLimited, Some(Duration::from_secs(7)))
    );
    let e = classify(
        429,
        &h(&[("retry-after", "7"), ("retry-after-ms", "250")]),
        "",
    );
    assert_eq!(e.retry_after, Some(Duration::from_millis(250)));
    let e = classify(529, &h(&[("retry-after", "2")]), "");
    assert_eq!(
        (e.kind, e.retry_after),
        (ErrorKind::Overloaded, Some(Duration::from_secs(2)))
    );
    let e = classify(429, &[], "");
    assert_eq!(e.retry_after, None);
    let future = SystemTime::now() + Duration::from_secs(3600);
    let secs = future
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let date = format_http_date(secs);
    let e = classify(429, &h(&[("retry-after", &date)]), "");
    let wait = e.retry_after.unwrap_or_default();
    assert!(
        wait > Duration::from_secs(3500) && wait <= Duration::from_secs(3600),
        "{date} {wait:?}"
    );
}

/// IMF-fixdate of a Unix time, for the tests.
fn format_http_date(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Inverse of days_from_civil (Hinnant).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        d,
        MONTHS[(m - 1) as usize],
        y,
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}
