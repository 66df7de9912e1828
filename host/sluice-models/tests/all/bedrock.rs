//! The Bedrock Converse backend against a fake Bedrock on 127.0.0.1: JSON and event-stream
//! replies, classified errors and retries, the request body, both kinds of authentication,
//! and the pre-send window estimate.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use sluice_models::bedrock::{AwsCredentials, Bedrock, SigV4, connect};
use sluice_models::http::RetryPolicy;
use sluice_models::provider::{Provider, ProviderConfig, Secret};
use sluice_models::{Backend, ErrorKind, ModelReply, ModelRequest, Usage};
use sluice_protocol::{Message, ToolCall, ToolSpec};
use sluice_test_support::event_stream::{crc32, event, exception, pieces};
use sluice_test_support::fake_bedrock::{Canned, Fake, Seen, fake};

const MODEL: &str = "anthropic.claude-3-5-sonnet-20240620-v1:0";
const MODEL_PATH: &str = "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0";

fn config(fake: &Fake, stream: bool) -> ProviderConfig {
    let mut config = ProviderConfig::new(Provider::Bedrock, MODEL);
    config.base_url = Some(format!("{}/", fake.url));
    config.region = Some("us-east-1".into());
    config.stream = stream;
    config.max_tokens = 1024;
    config.retry = RetryPolicy {
        max_retries: 2,
        base_delay_ms: 1,
        max_delay_ms: 10,
    };
    config
}

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name: &str| map.get(name).cloned()
}

fn aws_env() -> impl Fn(&str) -> Option<String> {
    env_of(&[
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        (
            "AWS_SECRET_ACCESS_KEY",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        ),
        ("AWS_SESSION_TOKEN", "session-token"),
    ])
}

/// A SigV4 backend (env credentials with a session token) talking to `fake`.
fn signed(fake: &Fake, stream: bool) -> Bedrock {
    Bedrock::new(config(fake, stream), &aws_env(), None).unwrap()
}

fn prompt(text: &str) -> ModelRequest {
    ModelRequest {
        system: "You are terse.".into(),
        messages: vec![Message::user(text, "2026-01-01T00:00:00Z")],
        tools: vec![],
    }
}

/// `YYYYMMDDTHHMMSSZ` as a time.
fn amz_date(text: &str) -> SystemTime {
    let n = |range: std::ops::Range<usize>| text[range].parse::<i64>().unwrap();
    let (y, m, d) = (n(0..4), n(4..6), n(6..8));
    let (hh, mm, ss) = (n(9..11), n(11..13), n(13..15));
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    UNIX_EPOCH + Duration::from_secs((days * 86_400 + hh * 3600 + mm * 60 + ss) as u64)
}

/// Checks that a received request carries a SigV4 signature over exactly what arrived: the
/// signature recomputed from the received path, `host`, `content-type`, body and
/// `x-amz-date` equals the received `authorization`.
fn assert_signed_as_received(seen: &Seen) {
    let date = &seen.headers["x-amz-date"];
    assert_eq!(seen.headers["x-amz-security-token"], "session-token");
    let signer = SigV4 {
        credentials: AwsCredentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            Some("session-token".into()),
        ),
        region: "us-east-1".into(),
        service: "bedrock".into(),
        content_sha256: false,
    };
    let host = &seen.headers["host"];
    let url = format!("http://{host}{}", seen.path);
    let expected = signer
        .sign(
            "POST",
            &url,
            &[
                ("host", host),
                ("content-type", &seen.headers["content-type"]),
            ],
            &seen.body,
            amz_date(date),
        )
        .unwrap();
    let authorization = expected
        .iter()
        .find(|(n, _)| n == "authorization")
        .map(|(_, v)| v.as_str());
    assert_eq!(authorization, Some(seen.headers["authorization"].as_str()));
    assert!(
        seen.headers["authorization"].contains(
            "/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, "
        ),
        "{}",
        seen.headers["authorization"]
    );
}

// ---------------------------------------------------------------------------------------
// Tests.

#[test]
fn crc32_helper_matches_the_standard_check_value() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
}

#[tokio::test]
async fn json_converse_decodes_text_and_tool_use() {
    let fake = fake(vec![Canned::json(
        200,
        json!({
            "output": {"message": {"role": "assistant", "content": [
                {"text": "Let me look."},
                {"toolUse": {"toolUseId": "tooluse_abc-1", "name": "read_file",
                             "input": {"path": "notes.txt", "limit": 5}}},
            ]}},
            "stopReason": "tool_use",
            "usage": {"inputTokens": 321, "outputTokens": 45, "totalTokens": 366},
            "metrics": {"latencyMs": 812},
        }),
    )])
    .await;
    let backend = signed(&fake, false);
    assert_eq!(backend.name(), format!("bedrock:{MODEL}"));
    let reply = backend.complete(&prompt("read notes.txt")).await.unwrap();
    assert_eq!(
        reply,
        ModelReply {
            content: "Let me look.".into(),
            tool_calls: vec![ToolCall {
                id: "tooluse_abc-1".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"notes.txt","limit":5}"#.into(),
            }],
            usage: Some(Usage {
                input_tokens: 321,
                output_tokens: 45,
            }),
            http_requests: Some(1),
        }
    );
    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, format!("{MODEL_PATH}/converse"));
    assert_eq!(seen[0].headers["content-type"], "application/json");
    assert_signed_as_received(&seen[0]);
}

#[tokio::test]
async fn converse_stream_frames_decode_with_tool_input_split_across_deltas() {
    let frames = vec![
        event("messageStart", json!({"role": "assistant", "p": "abcdef"})),
        event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "Let me "}}),
        ),
        event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "look."}}),
        ),
        event("contentBlockStop", json!({"contentBlockIndex": 0})),
        event(
            "contentBlockStart",
            json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "read_file"}}}),
        ),
        event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"path\": \"no"}}}),
        ),
        event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "tes.txt\"}"}}}),
        ),
        event("contentBlockStop", json!({"contentBlockIndex": 1})),
        event(
            "contentBlockStart",
            json!({"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tooluse_2", "name": "list_dir"}}}),
        ),
        event("contentBlockStop", json!({"contentBlockIndex": 2})),
        event("messageStop", json!({"stopReason": "tool_use"})),
        event(
            "metadata",
            json!({"usage": {"inputTokens": 100, "outputTokens": 20, "totalTokens": 120}, "metrics": {"latencyMs": 5}}),
        ),
    ];
    let fake = fake(vec![Canned::stream(pieces(&frames, 37))]).await;
    let reply = signed(&fake, true)
        .complete(&prompt("read notes.txt"))
        .await
        .unwrap();
    assert_eq!(
        reply,
        ModelReply {
            content: "Let me look.".into(),
            tool_calls: vec![
                ToolCall {
                    id: "tooluse_1".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"notes.txt"}"#.into(),
                },
                ToolCall {
                    id: "tooluse_2".into(),
                    name: "list_dir".into(),
                    arguments: "{}".into(),
                },
            ],
            usage: Some(Usage {
                input_tokens: 100,
                output_tokens: 20,
            }),
            http_requests: Some(1),
        }
    );
    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, format!("{MODEL_PATH}/converse-stream"));
    assert_eq!(
        seen[0].headers["accept"],
        "application/vnd.amazon.eventstream"
    );
    assert_signed_as_received(&seen[0]);
}

#[tokio::test]
async fn a_validation_exception_frame_mid_stream_is_a_context_window_rejection() {
    let frames = vec![
        event("messageStart", json!({"role": "assistant"})),
        event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "Hel"}}),
        ),
        exception(
            "validationException",
            "Input is too long for requested model.",
        ),
    ];
    let fake = fake(vec![Canned::stream(pieces(&frames, 50))]).await;
    let error = signed(&fake, true)
        .complete(&prompt("long"))
        .await
        .unwrap_err();
    assert!(error.context_window_exceeded(), "{error:?}");
    assert_eq!(error.message, "Input is too long for requested model.");
    assert_eq!(fake.seen().len(), 1, "an overflow is never retried");
}

#[tokio::test]
async fn a_throttling_exception_frame_is_a_rate_limit() {
    let frames = vec![exception(
        "throttlingException",
        "Too many tokens, please wait.",
    )];
    let fake = fake(vec![Canned::stream(pieces(&frames, 1000))]).await;
    let error = signed(&fake, true)
        .complete(&prompt("hi"))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::RateLimited, "{error:?}");
}

#[tokio::test]
async fn a_frame_with_a_bad_crc_is_a_protocol_error() {
    let mut bad = event(
        "contentBlockDelta",
        json!({"contentBlockIndex": 0, "delta": {"text": "hi"}}),
    );
    let last = bad.len() - 1;
    bad[last] ^= 0xFF;
    let frames = vec![event("messageStart", json!({"role": "assistant"})), bad];
    let fake = fake(vec![Canned::stream(pieces(&frames, 1000))]).await;
    let error = signed(&fake, true)
        .complete(&prompt("hi"))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::Protocol, "{error:?}");
}

#[tokio::test]
async fn a_400_validation_exception_prompt_too_long_is_a_context_window_rejection() {
    let fake = fake(vec![Canned::error(
        400,
        "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/",
        "The model returned the following errors: prompt is too long: 215000 tokens > 200000 maximum",
    )])
    .await;
    let error = signed(&fake, false)
        .complete(&prompt("long"))
        .await
        .unwrap_err();
    assert!(error.context_window_exceeded(), "{error:?}");
    assert_eq!(error.status, Some(400));
    assert_eq!(fake.seen().len(), 1, "an overflow is never retried");
}

#[tokio::test]
async fn a_429_throttling_exception_is_rate_limited_and_retried_with_a_fresh_signature() {
    let ok = Canned::json(
        200,
        json!({"output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}},
               "stopReason": "end_turn", "usage": {"inputTokens": 3, "outputTokens": 1}}),
    );
    let throttled = Canned::error(
        429,
        "ThrottlingException",
        "Too many requests, please wait before trying again.",
    );
    let fake_ok = fake(vec![throttled.clone(), ok]).await;
    let reply = signed(&fake_ok, false)
        .complete(&prompt("hi"))
        .await
        .unwrap();
    assert_eq!(reply.content, "hi");
    let seen = fake_ok.seen();
    assert_eq!(seen.len(), 2);
    for attempt in &seen {
        assert_signed_as_received(attempt);
    }

    let fake_never = fake(vec![throttled]).await;
    let error = signed(&fake_never, false)
        .complete(&prompt("hi"))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::RateLimited, "{error:?}");
    assert_eq!(error.status, Some(429));
    assert_eq!(
        fake_never.seen().len(),
        3,
        "the first attempt and two retries"
    );
}

#[tokio::test]
async fn the_request_body_has_system_once_paired_tool_blocks_and_tool_config() {
    let fake = fake(vec![Canned::json(
        200,
        json!({"output": {"message": {"role": "assistant", "content": [{"text": "done"}]}}}),
    )])
    .await;
    let at = "2026-01-01T00:00:00Z";
    let request = ModelRequest {
        system: "You are a careful agent.".into(),
        messages: vec![
            Message::user("Summarise notes.txt and list the directory.", at),
            Message::assistant(
                "I'll read both.",
                vec![
                    ToolCall {
                        id: "call_1|fc_9".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path":"notes.txt"}"#.into(),
                    },
                    ToolCall {
                        id: "call_2".into(),
                        name: "list_dir".into(),
                        arguments: "{not json".into(),
                    },
                ],
                at,
            ),
            Message::tool("call_1|fc_9", r#"{"ok":true,"content":"hello"}"#, at),
            Message::tool(
                "call_2",
                r#"{"ok":false,"error":"bad arguments","kind":"invalid-argument"}"#,
                at,
            ),
            Message::assistant("The file says hello.", vec![], at),
            Message::user("Thanks.", at),
            Message::user("Anything else?", at),
        ],
        tools: vec![
            ToolSpec {
                name: "read_file".into(),
                description: "Reads a file.".into(),
                input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            },
            ToolSpec {
                name: "list_dir".into(),
                description: "Lists a directory.".into(),
                input_schema: json!({"type": "object", "properties": {}}),
            },
        ],
    };
    signed(&fake, false).complete(&request).await.unwrap();
    let seen = fake.seen();
    let body: Value = serde_json::from_slice(&seen[0].body).unwrap();
    insta::assert_json_snapshot!("bedrock_request_body", body);
}

#[tokio::test]
async fn a_bearer_key_is_sent_as_is_and_nothing_is_signed() {
    let fake = fake(vec![Canned::json(
        200,
        json!({"output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}}}),
    )])
    .await;
    let mut with_key = config(&fake, false);
    with_key.api_key = Some(Secret::new("bedrock-api-key-123"));
    // AWS credentials in the environment too: the key wins.
    let backend = Bedrock::new(with_key, &aws_env(), None).unwrap();
    assert!(!backend.signs());
    backend.complete(&prompt("hi")).await.unwrap();

    // The key from AWS_BEARER_TOKEN_BEDROCK, with no region needed for a base URL.
    let mut from_env = config(&fake, false);
    from_env.region = None;
    let env = env_of(&[("AWS_BEARER_TOKEN_BEDROCK", "env-key")]);
    Bedrock::new(from_env, &env, None)
        .unwrap()
        .complete(&prompt("hi"))
        .await
        .unwrap();

    let seen = fake.seen();
    assert_eq!(seen.len(), 2);
    for (request, key) in seen.iter().zip(["bedrock-api-key-123", "env-key"]) {
        assert_eq!(request.headers["authorization"], format!("Bearer {key}"));
        for absent in ["x-amz-date", "x-amz-security-token", "x-amz-content-sha256"] {
            assert!(!request.headers.contains_key(absent), "{absent}");
        }
    }
}

#[tokio::test]
async fn connect_builds_the_backend_the_provider_layer_asks_for() {
    let fake = fake(vec![Canned::json(
        200,
        json!({"output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}}}),
    )])
    .await;
    let mut config = config(&fake, false);
    config.api_key = Some(Secret::new("k"));
    let backend = connect(config).unwrap();
    assert_eq!(backend.name(), format!("bedrock:{MODEL}"));
    assert_eq!(backend.complete(&prompt("hi")).await.unwrap().content, "hi");
}

#[tokio::test]
async fn the_pre_send_estimate_refuses_without_sending() {
    let fake = fake(vec![Canned::json(200, json!({}))]).await;
    let mut small = config(&fake, true);
    small.context_window_tokens = Some(100);
    let backend = Bedrock::new(small, &aws_env(), None).unwrap();
    let error = backend
        .complete(&prompt(&"x".repeat(1000)))
        .await
        .unwrap_err();
    assert!(error.context_window_exceeded(), "{error:?}");
    assert_eq!(error.status, None);
    assert!(fake.seen().is_empty(), "nothing was sent");
}
