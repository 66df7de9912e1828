//! Every row of the context-window signature table of `docs/agent-loop.md#detection`, served
//! by the fake with its status and body, comes back from the real backend of that provider (the
//! OpenAI-compatible one for llama.cpp, vLLM, OpenRouter, DeepSeek and Gemini; Bedrock's own
//! for the Bedrock rows) as `context_window_exceeded()`, after exactly one request, JSON and
//! streaming alike. The last row, a 429 "tokens per minute", is `RateLimited`, not overflow,
//! and is retried.
//!
//! Where the table gives the body, it is used as given (with numbers for N, M, K); where it
//! gives only the wording or the code, the envelope is that provider's own error shape, as
//! its API reference and public bug reports show it.

use serde_json::{Value, json};
use sluice_models::ErrorKind;
use sluice_models::provider::Provider;

use crate::{backend, config, prompt};
use sluice_test_support::fake_provider::{Fake, Turn};

/// One row: a label, the provider whose backend meets it, whether it only exists in a
/// stream, and the fake's answer.
struct Row {
    label: &'static str,
    provider: Provider,
    stream_only: bool,
    turn: Turn,
}

fn row(label: &'static str, provider: Provider, turn: Turn) -> Row {
    Row {
        label,
        provider,
        stream_only: false,
        turn,
    }
}

fn anthropic_error(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_011CTest"})
        .to_string()
}

fn rows() -> Vec<Row> {
    let validation = [(
        "x-amzn-errortype",
        "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/",
    )];
    vec![
        // The table: the body as given.
        row(
            "Anthropic 400 prompt is too long",
            Provider::Anthropic,
            Turn::error(
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            ),
        ),
        // The table's wording, in Anthropic's error envelope.
        row(
            "Anthropic 400 input length and max_tokens",
            Provider::Anthropic,
            Turn::error(
                400,
                &anthropic_error(
                    "invalid_request_error",
                    "input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000, decrease input length or `max_tokens` and try again",
                ),
            ),
        ),
        // The table's `request_too_large`, with Anthropic's message for it.
        row(
            "Anthropic 413 request_too_large",
            Provider::Anthropic,
            Turn::error(
                413,
                &anthropic_error("request_too_large", "Request exceeds the maximum size"),
            ),
        ),
        // Anthropic's 413 body sometimes lacks the top-level "type":"error".
        row(
            "Anthropic 413 request_too_large without the top-level type",
            Provider::Anthropic,
            Turn::error(
                413,
                r#"{"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}"#,
            ),
        ),
        // The table's code and wording, in OpenAI's error object.
        row(
            "OpenAI Chat 400 context_length_exceeded",
            Provider::OpenAi,
            Turn::error(
                400,
                r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
            ),
        ),
        // The table: a 200 stream, then an `error` event (OpenAI Responses' event shape), on the
        // OpenAI stream path.
        Row {
            label: "OpenAI Responses 200 stream then an error event",
            provider: Provider::OpenAi,
            stream_only: true,
            turn: Turn::StreamError {
                event: Some("error".into()),
                data: r#"{"type":"error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input","sequence_number":2}"#.into(),
            },
        },
        // OpenAI Responses: the same failure as a `response.failed` event.
        Row {
            label: "OpenAI Responses 200 stream then response.failed",
            provider: Provider::OpenAi,
            stream_only: true,
            turn: Turn::StreamError {
                event: Some("response.failed".into()),
                data: r#"{"type":"response.failed","sequence_number":3,"response":{"id":"resp_1","object":"response","status":"failed","error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again."}}}"#.into(),
            },
        },
        // Anthropic's mid-stream `error` event with the overflow wording.
        Row {
            label: "Anthropic 200 stream then an error event",
            provider: Provider::Anthropic,
            stream_only: true,
            turn: Turn::StreamError {
                event: Some("error".into()),
                data: anthropic_error(
                    "invalid_request_error",
                    "prompt is too long: 210000 tokens > 200000 maximum",
                ),
            },
        },
        // The table's wording with x-amzn-ErrorType, in Bedrock's `{"message"}` body.
        row(
            "Bedrock 400 ValidationException Input is too long",
            Provider::Bedrock,
            Turn::error_with(
                400,
                &validation,
                r#"{"message":"Input is too long for requested model."}"#,
            ),
        ),
        row(
            "Bedrock (Claude) 400 ValidationException prompt is too long",
            Provider::Bedrock,
            Turn::error_with(
                400,
                &validation,
                r#"{"message":"The model returned the following errors: prompt is too long: 210000 tokens > 200000 maximum"}"#,
            ),
        ),
        // The table's wording and type, in llama.cpp's body with its numbers.
        row(
            "llama.cpp 400 exceed_context_size_error",
            Provider::OpenAiCompatible,
            Turn::error(
                400,
                r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#,
            ),
        ),
        // The table's "(sometimes 500)": must not be retried as a server error.
        row(
            "llama.cpp 500 exceed_context_size_error",
            Provider::OpenAiCompatible,
            Turn::error(
                500,
                r#"{"error":{"code":500,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#,
            ),
        ),
        // The table's "maximum context length is M tokens" for vLLM (older top-level and newer
        // wrapped envelopes), OpenRouter, DeepSeek, and in other case.
        row(
            "vLLM 400 (top-level envelope)",
            Provider::OpenAiCompatible,
            Turn::error(
                400,
                r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. Please reduce the length of the input messages.","type":"BadRequestError","param":null,"code":400}"#,
            ),
        ),
        row(
            "vLLM 400 (wrapped envelope)",
            Provider::OpenAiCompatible,
            Turn::error(
                400,
                r#"{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}}"#,
            ),
        ),
        row(
            "OpenRouter 400",
            Provider::OpenAiCompatible,
            Turn::error(
                400,
                r#"{"error":{"message":"This endpoint's maximum context length is 131072 tokens. However, you requested about 140000 tokens (139000 of text input, 1000 of tool input, 0 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400,"metadata":{"provider_name":"DeepInfra"}}}"#,
            ),
        ),
        row(
            "DeepSeek 400",
            Provider::OpenAiCompatible,
            Turn::error(
                400,
                r#"{"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 70000 tokens (70000 in the messages, 0 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}"#,
            ),
        ),
        row(
            "maximum context length in upper case",
            Provider::OpenAiCompatible,
            Turn::error(
                400,
                r#"{"error":{"message":"THIS MODEL'S MAXIMUM CONTEXT LENGTH IS 8192 TOKENS.","type":"invalid_request_error"}}"#,
            ),
        ),
        // The table's wording and status, in Google's array-wrapped error.
        row(
            "Gemini 400 INVALID_ARGUMENT",
            Provider::OpenAiCompatible,
            Turn::error(
                400,
                r#"[{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]"#,
            ),
        ),
    ]
}

#[tokio::test]
async fn every_signature_is_a_context_window_rejection_sent_once() {
    let mut checked = 0;
    for row in rows() {
        for stream in [false, true] {
            if row.stream_only && !stream {
                continue;
            }
            let fake = Fake::start(vec![
                row.turn.clone(),
                sluice_test_support::fake_provider::Turn::text("no"),
            ])
            .await;
            let e = backend(config(row.provider, &fake, stream))
                .complete(&prompt("hi"))
                .await
                .unwrap_err();
            let label = format!("{} (stream={stream})", row.label);
            assert!(e.context_window_exceeded(), "{label}: {e:?}");
            // Never retried by backoff, whatever the status.
            assert_eq!(fake.requests().len(), 1, "{label}");
            assert!(!e.message.is_empty(), "{label}");
            checked += 1;
        }
    }
    assert_eq!(checked, 33);
}

/// The 429 of the last row, with `retry-after: 0`.
fn rate_limited() -> Turn {
    Turn::error_with(
        429,
        &[("retry-after", "0")],
        r#"{"error":{"message":"Rate limit reached for gpt-4.1 in organization org-test on tokens per minute (TPM): Limit 30000, Used 29000, Requested 5000. Please try again in 8s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#,
    )
}

#[tokio::test]
async fn the_429_row_is_a_rate_limit_retried_not_an_overflow() {
    for stream in [false, true] {
        // Every attempt refused: 1 + 3 retries, then the classified 429.
        let fake = Fake::start(vec![rate_limited(); 4]).await;
        let e = backend(config(Provider::OpenAi, &fake, stream))
            .complete(&prompt("hi"))
            .await
            .unwrap_err();
        assert!(!e.context_window_exceeded(), "{e:?}");
        assert_eq!(e.kind, ErrorKind::RateLimited);
        assert_eq!(e.status, Some(429));
        assert_eq!(e.retry_after, Some(std::time::Duration::ZERO));
        assert!(e.message.contains("tokens per minute"), "{}", e.message);
        assert_eq!(fake.requests().len(), 4);
        // The bodies sent again are the same bytes.
        let bodies: Vec<Value> = fake.requests().iter().map(|r| r.json()).collect();
        assert!(bodies.windows(2).all(|w| w[0] == w[1]));
    }
}
