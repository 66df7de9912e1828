//! The Bedrock backend's own pieces: SigV4 test vectors, credentials, request mapping,
//! event-stream frames.

use std::collections::HashMap;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{Value, json};
use sluice_protocol::{Message, ToolCall, ToolSpec};

use super::codec::{LEADING_USER_PLACEHOLDER, is_error_observation};
use super::eventstream::{FrameDecoder, StreamReader};
use super::*;
use crate::error::ErrorKind;

/// 2015-08-30T12:36:00Z, the time of the AWS SigV4 test suite.
fn suite_time() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_440_938_160)
}

fn suite_signer(session_token: Option<&str>, content_sha256: bool) -> SigV4 {
    SigV4 {
        credentials: AwsCredentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            session_token.map(str::to_string),
        ),
        region: "us-east-1".into(),
        service: "service".into(),
        content_sha256,
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

// The AWS SigV4 test suite (aws-c-auth tests/aws-signing-test-suite/v4, as vendored in
// the aws-sigv4 crate): `get-vanilla`.
#[test]
fn sigv4_matches_the_get_vanilla_test_vector() {
    let headers = suite_signer(None, false)
        .sign(
            "GET",
            "https://example.amazonaws.com/",
            &[("host", "example.amazonaws.com")],
            b"",
            suite_time(),
        )
        .unwrap();
    assert_eq!(
        header(&headers, "authorization"),
        Some(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, \
             Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        )
    );
    assert_eq!(header(&headers, "x-amz-date"), Some("20150830T123600Z"));
    assert_eq!(header(&headers, "x-amz-security-token"), None);
}

// Same suite: `get-vanilla-with-session-token`.
#[test]
fn sigv4_matches_the_session_token_test_vector() {
    let token = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267";
    let headers = suite_signer(Some(token), false)
        .sign(
            "GET",
            "https://example.amazonaws.com/",
            &[("host", "example.amazonaws.com")],
            b"",
            suite_time(),
        )
        .unwrap();
    assert_eq!(
        header(&headers, "authorization"),
        Some(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date;x-amz-security-token, \
             Signature=07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8"
        )
    );
    assert_eq!(header(&headers, "x-amz-security-token"), Some(token));
}

// Same suite: `post-x-www-form-urlencoded` (body signed, x-amz-content-sha256 sent).
#[test]
fn sigv4_matches_the_post_form_test_vector() {
    let headers = suite_signer(None, true)
        .sign(
            "POST",
            "https://example.amazonaws.com/",
            &[
                ("content-type", "application/x-www-form-urlencoded"),
                ("host", "example.amazonaws.com"),
                ("content-length", "13"),
            ],
            b"Param1=value1",
            suite_time(),
        )
        .unwrap();
    assert_eq!(
        header(&headers, "authorization"),
        Some(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date, \
             Signature=d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b"
        )
    );
    assert_eq!(
        header(&headers, "x-amz-content-sha256"),
        Some("9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e")
    );
}

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name: &str| map.get(name).cloned()
}

#[test]
fn credentials_come_from_the_environment_first() {
    let env = env_of(&[
        ("AWS_ACCESS_KEY_ID", "AKIAENV"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_SESSION_TOKEN", "token"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let creds = AwsCredentials::resolve(&env, Some(home.path())).unwrap();
    assert_eq!(
        creds,
        AwsCredentials::new("AKIAENV", "secret", Some("token".into()))
    );
    assert!(!format!("{creds:?}").contains("secret\""));
}

#[test]
fn credentials_come_from_the_profile_file() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".aws")).unwrap();
    std::fs::write(
        home.path().join(".aws/credentials"),
        "# comment\n[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key=s1\n\n\
         [work]\n; another\naws_access_key_id = AKIAWORK\naws_secret_access_key = s2\n\
         aws_session_token = t2\n",
    )
    .unwrap();
    let none = env_of(&[]);
    let creds = AwsCredentials::resolve(&none, Some(home.path())).unwrap();
    assert_eq!(creds, AwsCredentials::new("AKIADEFAULT", "s1", None));
    let work = env_of(&[("AWS_PROFILE", "work")]);
    let creds = AwsCredentials::resolve(&work, Some(home.path())).unwrap();
    assert_eq!(
        creds,
        AwsCredentials::new("AKIAWORK", "s2", Some("t2".into()))
    );
    // Half the env pair does not win over the file.
    let half = env_of(&[("AWS_ACCESS_KEY_ID", "AKIAHALF")]);
    let creds = AwsCredentials::resolve(&half, Some(home.path())).unwrap();
    assert_eq!(creds.access_key_id, "AKIADEFAULT");
    let missing = env_of(&[("AWS_PROFILE", "nope")]);
    let error = AwsCredentials::resolve(&missing, Some(home.path())).unwrap_err();
    assert_eq!(error.kind, ErrorKind::BadRequest);
    assert!(error.message.contains("[nope]"), "{}", error.message);
}

/// A FIFO as the credentials file is refused at once (a plain read would wait for a writer
/// for ever), naming the file and what it is.
#[cfg(unix)]
#[test]
fn a_fifo_as_the_credentials_file_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("credentials");
    sluice_operator_files::make_fifo(&fifo).unwrap();
    let env = env_of(&[("AWS_SHARED_CREDENTIALS_FILE", fifo.to_str().unwrap())]);
    let error = AwsCredentials::resolve(&env, None).unwrap_err();
    assert_eq!(error.kind, ErrorKind::BadRequest);
    let why = format!(
        "cannot read {}: not a regular file (it is a FIFO); name a regular file",
        fifo.display()
    );
    assert!(error.message.contains(&why), "{}", error.message);
}

#[test]
fn missing_credentials_and_region_name_what_to_set() {
    let home = tempfile::tempdir().unwrap();
    let mut config = ProviderConfig::new(crate::config::Provider::Bedrock, "m");
    let error = Bedrock::new(config.clone(), &env_of(&[]), Some(home.path())).unwrap_err();
    assert_eq!(error.kind, ErrorKind::BadRequest);
    assert!(error.message.contains("AWS_REGION"), "{}", error.message);

    let error = Bedrock::new(
        config.clone(),
        &env_of(&[("AWS_DEFAULT_REGION", "eu-west-1")]),
        Some(home.path()),
    )
    .unwrap_err();
    assert_eq!(error.kind, ErrorKind::BadRequest);
    for wanted in [
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "[default]",
        "~/.aws/credentials",
        "AWS_PROFILE",
    ] {
        assert!(
            error.message.contains(wanted),
            "{wanted}: {}",
            error.message
        );
    }

    let bearer = Bedrock::new(
        config.clone(),
        &env_of(&[("AWS_REGION", "eu-west-1"), (BEARER_TOKEN_ENV, "key")]),
        None,
    )
    .unwrap();
    assert!(!bearer.signs());
    config.model = "us.anthropic.claude-3-5-haiku-20241022-v1:0".into();
    config.stream = false;
    let signed = Bedrock::new(
        config,
        &env_of(&[
            ("AWS_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "a"),
            ("AWS_SECRET_ACCESS_KEY", "b"),
        ]),
        None,
    )
    .unwrap();
    assert!(signed.signs());
    assert_eq!(
        signed.url(),
        "https://bedrock-runtime.eu-west-1.amazonaws.com/model/us.anthropic.claude-3-5-haiku-20241022-v1%3A0/converse"
    );
    assert_eq!(
        encode_path_segment("arn:aws:bedrock:us-east-1:1:inference-profile/x"),
        "arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx"
    );
}

#[test]
fn a_signed_bedrock_request_carries_the_sigv4_headers() {
    let mut config = ProviderConfig::new(crate::config::Provider::Bedrock, "m:0");
    config.region = Some("us-west-2".into());
    let env = env_of(&[
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_SESSION_TOKEN", "session"),
    ]);
    let backend = Bedrock::new(config, &env, None)
        .unwrap()
        .with_clock(suite_time);
    let request = backend.build(b"{}").unwrap();
    let headers = request.headers();
    assert_eq!(headers["x-amz-date"], "20150830T123600Z");
    assert_eq!(headers["x-amz-security-token"], "session");
    assert_eq!(headers["host"], "bedrock-runtime.us-west-2.amazonaws.com");
    let authorization = headers["authorization"].to_str().unwrap();
    assert!(
        authorization.starts_with(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-west-2/bedrock/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature="
        ),
        "{authorization}"
    );
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

#[test]
fn ids_are_rekeyed_consistently_and_unpaired_blocks_repaired() {
    let long = "x".repeat(70);
    let request = ModelRequest {
        system: String::new(),
        messages: vec![
            Message::assistant("", vec![call("call_a|fc_b", "t", "not json")], ""),
            Message::tool("call_a|fc_b", r#"{ "ok" : false,"error":"x"}"#, ""),
            Message::assistant(
                "",
                vec![call(&long, "t", "[1]"), call("call_a_fc_b", "t", "{}")],
                "",
            ),
            Message::tool(&long, "", ""),
            Message::tool("stray", "late", ""),
            Message::user("next", ""),
            Message::assistant("dangling", vec![call("call_a|fc_b", "t", "{}")], ""),
        ],
        tools: vec![],
    };
    let body = request_body(&request, 10);
    let expected = json!({
        "messages": [
            {"role": "user", "content": [{"text": LEADING_USER_PLACEHOLDER}]},
            {"role": "assistant", "content": [
                {"toolUse": {"toolUseId": "call_a_fc_b", "name": "t", "input": {}}}]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "call_a_fc_b", "content": [{"text": r#"{ "ok" : false,"error":"x"}"#}], "status": "error"}}]},
            {"role": "assistant", "content": [
                {"toolUse": {"toolUseId": "x".repeat(64), "name": "t", "input": {}}},
                {"toolUse": {"toolUseId": "call_a_fc_b_2", "name": "t", "input": {}}}]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "x".repeat(64), "content": [{"text": "(no output)"}], "status": "success"}},
                {"toolResult": {"toolUseId": "call_a_fc_b_2", "content": [{"text": r#"{"ok":false,"error":"no result was recorded for this tool call"}"#}], "status": "error"}},
                {"text": "[result of tool call stray]\nlate"},
                {"text": "next"}]},
            {"role": "assistant", "content": [
                {"text": "dangling"},
                {"toolUse": {"toolUseId": "call_a_fc_b_3", "name": "t", "input": {}}}]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "call_a_fc_b_3", "content": [{"text": r#"{"ok":false,"error":"no result was recorded for this tool call"}"#}], "status": "error"}}]},
        ],
        "toolConfig": {"tools": [{"toolSpec": {
            "name": "t",
            "description": "A tool used earlier in this conversation; not offered now.",
            "inputSchema": {"json": {"type": "object"}},
        }}]},
        "inferenceConfig": {"maxTokens": 10},
    });
    assert_eq!(body, expected);
}

#[test]
fn plain_requests_have_no_tool_config_and_offered_tools_do() {
    let mut request = ModelRequest {
        system: "sys".into(),
        messages: vec![Message::user("hi", ""), Message::user("again", "")],
        tools: vec![],
    };
    assert_eq!(
        request_body(&request, 5),
        json!({
            "system": [{"text": "sys"}],
            "messages": [{"role": "user", "content": [{"text": "hi"}, {"text": "again"}]}],
            "inferenceConfig": {"maxTokens": 5},
        })
    );
    request.tools.push(ToolSpec {
        name: "read_file".into(),
        description: "Reads".into(),
        input_schema: json!({"type": "object"}),
    });
    assert_eq!(
        request_body(&request, 5)["toolConfig"],
        json!({"tools": [{"toolSpec": {"name": "read_file", "description": "Reads", "inputSchema": {"json": {"type": "object"}}}}]})
    );
    assert!(is_error_observation(r#"{"ok":false}"#));
    assert!(!is_error_observation(r#"{"ok":true}"#));
    assert!(!is_error_observation("ok false"));
}

/// An event-stream frame with string headers.
fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut head = Vec::new();
    for (name, value) in headers {
        head.push(name.len() as u8);
        head.extend_from_slice(name.as_bytes());
        head.push(7);
        head.extend_from_slice(&(value.len() as u16).to_be_bytes());
        head.extend_from_slice(value.as_bytes());
    }
    let total = 16 + head.len() + payload.len();
    let mut out = Vec::new();
    out.extend_from_slice(&(total as u32).to_be_bytes());
    out.extend_from_slice(&(head.len() as u32).to_be_bytes());
    let prelude_crc = crc32fast::hash(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

fn event(kind: &str, payload: Value) -> Vec<u8> {
    frame(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

#[test]
fn frames_decode_byte_by_byte_and_skip_other_header_types() {
    let mut bytes = event("messageStart", json!({"role": "assistant"}));
    // A frame with a non-string header (type 4, an i32) before the string ones.
    let mut odd = frame(&[(":message-type", "event")], b"{}");
    let extra = [1u8, b'n', 4, 0, 0, 0, 7];
    odd.splice(12..12, extra);
    let total = odd.len() as u32;
    let headers = (odd.len() - 16 - 2) as u32;
    odd.truncate(odd.len() - 4);
    odd[0..4].copy_from_slice(&total.to_be_bytes());
    odd[4..8].copy_from_slice(&headers.to_be_bytes());
    let prelude = crc32fast::hash(&odd[0..8]);
    odd[8..12].copy_from_slice(&prelude.to_be_bytes());
    let crc = crc32fast::hash(&odd);
    odd.extend_from_slice(&crc.to_be_bytes());
    bytes.extend_from_slice(&odd);
    let mut decoder = FrameDecoder::default();
    let mut frames = Vec::new();
    for byte in &bytes {
        decoder.push(std::slice::from_ref(byte));
        while let Some(frame) = decoder.next_frame().unwrap() {
            frames.push(frame);
        }
    }
    assert!(decoder.is_empty());
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0].header(":event-type"), Some("messageStart"));
    assert_eq!(frames[1].header(":message-type"), Some("event"));
    assert_eq!(frames[1].header("n"), None);
    assert_eq!(frames[1].payload, b"{}");
}

#[test]
fn bad_crcs_are_protocol_errors() {
    let good = event("messageStop", json!({"stopReason": "end_turn"}));
    for at in [9usize, good.len() - 1, 30] {
        let mut bad = good.clone();
        bad[at] ^= 0x01;
        let mut decoder = FrameDecoder::default();
        decoder.push(&bad);
        let error = decoder.next_frame().unwrap_err();
        assert_eq!(error.kind, ErrorKind::Protocol, "byte {at}");
        assert!(error.message.contains("CRC"), "{}", error.message);
    }
}

#[test]
fn a_frame_longer_than_the_cap_is_refused_from_its_prelude() {
    // A prelude announcing MAX_FRAME_BYTES + 1 bytes, with a valid CRC: refused at once,
    // before the rest is buffered.
    let mut prelude = Vec::new();
    prelude.extend_from_slice(&(MAX_FRAME_BYTES as u32 + 1).to_be_bytes());
    prelude.extend_from_slice(&0u32.to_be_bytes());
    let crc = crc32fast::hash(&prelude);
    prelude.extend_from_slice(&crc.to_be_bytes());
    let mut decoder = FrameDecoder::default();
    decoder.push(&prelude);
    let error = decoder.next_frame().unwrap_err();
    assert_eq!(error.kind, ErrorKind::Protocol);
    assert_eq!(
        error.message,
        format!(
            "a Bedrock event-stream frame has an impossible length: {} bytes (at most {MAX_FRAME_BYTES})",
            MAX_FRAME_BYTES + 1
        )
    );
    // A frame cut after its prelude is still a frame in progress.
    let stop = event("messageStop", json!({}));
    let mut decoder = FrameDecoder::default();
    decoder.push(&stop[..14]);
    assert_eq!(decoder.next_frame().unwrap(), None);
    assert!(!decoder.is_empty());
    decoder.push(&stop[14..]);
    assert!(decoder.next_frame().unwrap().is_some());
    assert!(decoder.is_empty());
}

#[test]
fn a_stream_cut_short_is_transient() {
    let mut reader = StreamReader::default();
    reader
        .push(&event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "hi"}}),
        ))
        .unwrap();
    assert_eq!(reader.finish().unwrap_err().kind, ErrorKind::Transient);
    let mut reader = StreamReader::default();
    let stop = event("messageStop", json!({}));
    reader.push(&stop[..stop.len() - 3]).unwrap();
    assert_eq!(reader.finish().unwrap_err().kind, ErrorKind::Transient);
}

#[test]
fn tool_choice_none_is_refused_at_start() {
    let mut config = ProviderConfig::new(crate::config::Provider::Bedrock, "m");
    config.region = Some("us-east-1".into());
    config.api_key = Some(Secret::new("k"));
    config.tool_choice = Some(ToolChoice::None);
    let error = Bedrock::new(config, &env_of(&[]), None).unwrap_err();
    assert_eq!(error.kind, ErrorKind::BadRequest);
    assert!(
        error.message.contains("model.tool_choice"),
        "{}",
        error.message
    );
}
