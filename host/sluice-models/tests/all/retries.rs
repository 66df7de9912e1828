//! Retries by the real backends against the fake: a 429 honours `retry-after` (a zero wait
//! beats a backoff of a minute), a 529 or 503 overload is retried and then succeeds, an
//! overload or a cut inside a `200` stream is retried too, a context-window 400 is sent
//! exactly once; and the pre-send estimate refuses without sending anything.

use std::time::{Duration, Instant};

use sluice_models::provider::Provider;
use sluice_models::{ErrorKind, ModelRequest, Overflow};
use sluice_protocol::Message;

use crate::{CODECS, backend, config, prompt};
use sluice_test_support::fake_provider::{Fake, Turn};

fn anthropic_error(kind: &str, message: &str) -> String {
    serde_json::json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
}

#[tokio::test]
async fn a_429_honours_retry_after_over_the_backoff() {
    for (provider, stream) in CODECS {
        let fake = Fake::start(vec![
            Turn::error_with(
                429,
                &[("retry-after", "0")],
                &anthropic_error("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
            ),
            Turn::error_with(
                429,
                &[("retry-after", "0")],
                r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#,
            ),
            Turn::text("after the wait"),
        ])
        .await;
        let mut c = config(provider, &fake, stream);
        // Backoff alone would wait a minute; `retry-after: 0` says now.
        c.retry.base_delay_ms = 60_000;
        c.retry.max_delay_ms = 60_000;
        let started = Instant::now();
        let reply =
            tokio::time::timeout(Duration::from_secs(20), backend(c).complete(&prompt("hi")))
                .await
                .expect("retry-after was not honoured")
                .unwrap();
        assert_eq!(reply.content, "after the wait");
        assert_eq!(fake.requests().len(), 3, "{provider:?} stream={stream}");
        assert!(started.elapsed() < Duration::from_secs(20));
    }
}

#[tokio::test]
async fn an_overload_is_retried_then_succeeds() {
    for (provider, stream) in CODECS {
        let overloaded = match provider {
            Provider::Anthropic => {
                Turn::error(529, &anthropic_error("overloaded_error", "Overloaded"))
            }
            _ => Turn::error(
                503,
                r#"{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","code":null}}"#,
            ),
        };
        let fake = Fake::start(vec![overloaded, Turn::text("recovered")]).await;
        let reply = backend(config(provider, &fake, stream))
            .complete(&prompt("hi"))
            .await
            .unwrap();
        assert_eq!(reply.content, "recovered");
        assert_eq!(fake.requests().len(), 2, "{provider:?} stream={stream}");
    }
}

#[tokio::test]
async fn overload_and_cuts_inside_a_200_stream_are_retried() {
    let cases = [
        // Anthropic's mid-stream overloaded_error.
        (
            Provider::Anthropic,
            Turn::StreamError {
                event: Some("error".into()),
                data: anthropic_error("overloaded_error", "Overloaded"),
            },
        ),
        // A stream that ends before message_stop (a ping, then nothing).
        (
            Provider::Anthropic,
            Turn::StreamError {
                event: Some("ping".into()),
                data: r#"{"type":"ping"}"#.into(),
            },
        ),
        // OpenRouter's mid-stream error with finish_reason "error".
        (
            Provider::OpenAiCompatible,
            Turn::StreamError {
                event: None,
                data: r#"{"id":"gen-1","object":"chat.completion.chunk","error":{"code":502,"message":"Provider returned error"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}"#.into(),
            },
        ),
        // A stream that ends without finish_reason or [DONE].
        (
            Provider::OpenAi,
            Turn::StreamError {
                event: None,
                data: r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"par"},"finish_reason":null}]}"#.into(),
            },
        ),
    ];
    for (provider, turn) in cases {
        let fake = Fake::start(vec![turn.clone(), Turn::text("whole")]).await;
        let reply = backend(config(provider, &fake, true))
            .complete(&prompt("hi"))
            .await
            .unwrap();
        assert_eq!(reply.content, "whole", "{turn:?}");
        assert_eq!(fake.requests().len(), 2, "{turn:?}");
    }
}

#[tokio::test]
async fn a_context_window_rejection_is_sent_exactly_once() {
    for (provider, stream) in CODECS {
        let overflow = match provider {
            Provider::Anthropic => Turn::error(
                400,
                &anthropic_error(
                    "invalid_request_error",
                    "prompt is too long: 210000 tokens > 200000 maximum",
                ),
            ),
            _ => Turn::error(
                400,
                r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
            ),
        };
        let fake = Fake::start(vec![overflow, Turn::text("must not be reached")]).await;
        let e = backend(config(provider, &fake, stream))
            .complete(&prompt("hi"))
            .await
            .unwrap_err();
        assert!(e.context_window_exceeded(), "{e:?}");
        assert_eq!(e.status, Some(400));
        assert_eq!(fake.requests().len(), 1, "{provider:?} stream={stream}");
    }
}

#[tokio::test]
async fn the_pre_send_estimate_refuses_without_sending() {
    for (provider, stream) in CODECS {
        let fake = Fake::start(vec![Turn::text("small enough")]).await;
        let mut c = config(provider, &fake, stream);
        c.context_window_tokens = Some(1000);
        let model = backend(c);
        // 8,001 prompt bytes (the system prompt's 21 and 7,980 x) at the uncalibrated 2 bytes
        // per token: 4,001 tokens, surely over a 1,000-token window.
        let big = ModelRequest {
            system: "You are a test agent.".into(),
            messages: vec![Message::user("x".repeat(7980), "2026-01-01T00:00:00Z")],
            tools: vec![],
        };
        let e = model.complete(&big).await.unwrap_err();
        assert!(e.context_window_exceeded(), "{e:?}");
        assert_eq!(e.kind, ErrorKind::ContextWindowExceeded);
        assert_eq!(e.status, None);
        assert!(e.refused_locally());
        assert_eq!(e.http_requests, Some(0));
        assert_eq!(
            e.overflow,
            Some(Overflow {
                prompt_tokens: 4001,
                limit_tokens: 1000,
                estimated: true
            })
        );
        assert!(
            e.message.starts_with("the request was not sent: Sluice estimated it at 4001 tokens (8001 prompt bytes at 2.00 bytes per token"),
            "{}",
            e.message
        );
        assert_eq!(fake.requests().len(), 0, "{provider:?} stream={stream}");
        // Within 10% over the window it is sent: the server decides. 2,200 bytes are 1,100
        // tokens at 2 bytes per token.
        let near = ModelRequest {
            messages: vec![Message::user("x".repeat(2179), "2026-01-01T00:00:00Z")],
            ..big
        };
        let reply = model.complete(&near).await.unwrap();
        assert_eq!(reply.http_requests, Some(1));
        assert_eq!(fake.requests().len(), 1);
    }
}
