//! A scripted turn with text and two tool calls, served by the fake in each wire format, as
//! JSON and as a stream (text and arguments in 5-character fragments, one event each, the
//! body in 7-byte pieces), decodes into exactly the same `ModelReply`.

use sluice_models::provider::Provider;
use sluice_models::{ErrorKind, ModelReply, Usage};
use sluice_protocol::ToolCall;

use crate::{CODECS, backend, config, prompt};
use sluice_test_support::fake_provider::{Fake, Turn};

/// Text with multi-byte characters, so that 7-byte pieces split UTF-8 sequences.
const TEXT: &str = "Looking — é✓ at two places.";
const ARGS_1: &str = r#"{"path":"notes/a.txt","lineCount":20}"#;
const ARGS_2: &str = r#"{"pattern":"TODO","path":"src","maxResults":5}"#;

fn ids(provider: Provider) -> (&'static str, &'static str) {
    match provider {
        Provider::Anthropic => ("toolu_01A09q90qw90lq917835lq9", "toolu_01B"),
        _ => ("call_8Xq1Ww2", "call_9Zr3"),
    }
}

#[tokio::test]
async fn text_and_two_tool_calls_decode_exactly_in_every_format() {
    for (provider, stream) in CODECS {
        let (id1, id2) = ids(provider);
        let fake = Fake::start(vec![Turn::Reply {
            content: TEXT.into(),
            tool_calls: vec![
                (id1.into(), "read_file".into(), ARGS_1.into()),
                (id2.into(), "grep_files".into(), ARGS_2.into()),
            ],
            usage: (120, 34),
        }])
        .await;
        let reply = backend(config(provider, &fake, stream))
            .complete(&prompt("look"))
            .await
            .unwrap();
        let expected = ModelReply {
            content: TEXT.into(),
            tool_calls: vec![
                ToolCall {
                    id: id1.into(),
                    name: "read_file".into(),
                    arguments: ARGS_1.into(),
                },
                ToolCall {
                    id: id2.into(),
                    name: "grep_files".into(),
                    arguments: ARGS_2.into(),
                },
            ],
            usage: Some(Usage {
                input_tokens: 120,
                output_tokens: 34,
            }),
            http_requests: Some(1),
        };
        assert_eq!(reply, expected, "{provider:?} stream={stream}");
        let requests = fake.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(
            requests[0].json().get("stream").cloned(),
            stream.then_some(serde_json::Value::Bool(true)),
            "{provider:?} stream={stream}"
        );
    }
}

#[tokio::test]
async fn a_text_only_reply_has_no_tool_calls() {
    for (provider, stream) in CODECS {
        let fake = Fake::start(vec![Turn::text("All done.")]).await;
        let reply = backend(config(provider, &fake, stream))
            .complete(&prompt("hi"))
            .await
            .unwrap();
        assert_eq!(
            reply,
            ModelReply {
                content: "All done.".into(),
                tool_calls: vec![],
                usage: Some(Usage {
                    input_tokens: 10,
                    output_tokens: 2
                }),
                http_requests: Some(1),
            },
            "{provider:?} stream={stream}"
        );
    }
}

#[tokio::test]
async fn a_script_past_its_end_is_a_bad_request_not_retried() {
    for (provider, stream) in CODECS {
        let fake = Fake::start(vec![]).await;
        let e = backend(config(provider, &fake, stream))
            .complete(&prompt("hi"))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::BadRequest, "{e:?}");
        assert_eq!(e.status, Some(418));
        assert_eq!(fake.requests().len(), 1);
    }
}
