use std::io::Write;

use sluice_protocol::Message;

use super::*;
use crate::error::ErrorKind;

fn request(text: &str) -> ModelRequest {
    ModelRequest {
        system: "sys".into(),
        messages: vec![Message::user(text, "t")],
        tools: vec![],
    }
}

fn parse_err(text: &str) -> String {
    match ReplayModel::parse("s.jsonl", text) {
        Ok(_) => panic!("expected a parse error for {text}"),
        Err(e) => e.to_string(),
    }
}

const SCRIPT: &str = r#"{"content":"Let me look.","toolCalls":[{"name":"list_dir","arguments":{"path":"."}},{"name":"read_file","arguments":"{\"path\":"}]}

{"content":"","toolCalls":[{"id":"mine","name":"tail_file"}],"usage":{"inputTokens":12,"outputTokens":3}}
{"error":{"status":400,"body":{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 90 tokens > 80 maximum"}}}}
{"error":{"status":429,"body":"slow down","headers":{"retry-after":3}}}
{"error":{"event":{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}}}
{"error":{"network":"connection reset by peer"}}
{"content":"Done."}
"#;

#[tokio::test]
async fn replays_records_and_runs_out() {
    let model = ReplayModel::parse("s.jsonl", SCRIPT).map_err(|e| e.to_string());
    let model = model.as_ref().map_err(String::as_str);
    let Ok(model) = model else {
        panic!("{model:?}")
    };
    assert_eq!(model.name(), "replay:s.jsonl");
    assert_eq!(
        model.turns().iter().map(|t| t.line).collect::<Vec<_>>(),
        vec![1, 3, 4, 5, 6, 7, 8]
    );

    let first = model.complete(&request("one")).await;
    assert_eq!(
        first,
        Ok(ModelReply {
            content: "Let me look.".into(),
            tool_calls: vec![
                ToolCall {
                    id: "call_1".into(),
                    name: "list_dir".into(),
                    arguments: r#"{"path":"."}"#.into()
                },
                ToolCall {
                    id: "call_2".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"#.into()
                },
            ],
            usage: None,
            http_requests: None,
        })
    );
    let second = model.complete(&request("two")).await;
    assert_eq!(
        second,
        Ok(ModelReply {
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: "mine".into(),
                name: "tail_file".into(),
                arguments: "{}".into()
            }],
            usage: Some(Usage {
                input_tokens: 12,
                output_tokens: 3
            }),
            http_requests: None,
        })
    );
    let overflow = model.complete(&request("three")).await.err();
    assert_eq!(
        overflow
            .as_ref()
            .map(|e| (e.kind, e.status, e.message.as_str())),
        Some((
            ErrorKind::ContextWindowExceeded,
            Some(400),
            "prompt is too long: 90 tokens > 80 maximum"
        ))
    );
    let limited = model.complete(&request("four")).await.err();
    assert_eq!(
        limited.map(|e| (e.kind, e.retry_after, e.message)),
        Some((
            ErrorKind::RateLimited,
            Some(Duration::from_secs(3)),
            "slow down".to_string()
        ))
    );
    let stream = model.complete(&request("five")).await.err();
    assert_eq!(
        stream.map(|e| (e.kind, e.status)),
        Some((ErrorKind::Overloaded, None))
    );
    let network = model.complete(&request("six")).await.err();
    assert_eq!(
        network.map(|e| (e.kind, e.message)),
        Some((ErrorKind::Transient, "connection reset by peer".to_string()))
    );
    assert_eq!(
        model.complete(&request("seven")).await.map(|r| r.content),
        Ok("Done.".to_string())
    );
    assert_eq!(model.turns_left(), 0);

    let over = model.complete(&request("eight")).await.err();
    assert_eq!(
        over.map(|e| (e.kind, e.message)),
        Some((
            ErrorKind::Protocol,
            "the replay script has no more turns (7 used)".to_string()
        ))
    );

    let texts: Vec<String> = model
        .requests()
        .iter()
        .map(|r| r.messages[0].content.clone())
        .collect();
    assert_eq!(
        texts,
        [
            "one", "two", "three", "four", "five", "six", "seven", "eight"
        ]
    );
    let bytes = model.request_bytes();
    assert_eq!(bytes.len(), 8);
    assert_eq!(bytes[0], request("one").json_bytes());
    assert_eq!(model.turns_used(), 7);
}

#[tokio::test]
async fn clones_share_state_and_a_cancelled_request_uses_its_turn() {
    let model = ReplayModel::parse(
        "d",
        "{\"content\":\"slow\",\"delayMs\":5000}\n{\"content\":\"fast\"}\n",
    )
    .map_err(|e| e.to_string());
    let Ok(model) = model else {
        panic!("{model:?}")
    };
    let observer = model.clone();
    let started = std::time::Instant::now();
    let cancelled =
        tokio::time::timeout(Duration::from_millis(50), model.complete(&request("a"))).await;
    assert!(cancelled.is_err(), "the delayed turn must still be pending");
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(
        model.complete(&request("b")).await.map(|r| r.content),
        Ok("fast".to_string())
    );
    assert_eq!(observer.requests().len(), 2);
    assert_eq!(observer.turns_used(), 2);
    assert_eq!(observer.turns()[0].delay, Duration::from_secs(5));
}

/// A FIFO as the replay script is refused at once, naming the file and what it is.
#[cfg(unix)]
#[test]
fn a_fifo_as_the_script_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("replay.jsonl");
    sluice_operator_files::make_fifo(&fifo).unwrap();
    let error = ReplayModel::from_file(&fifo).err().unwrap();
    assert!(matches!(error, ReplayError::Read { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!(
            "cannot read the replay script {}: not a regular file (it is a FIFO); name a regular file",
            fifo.display()
        )
    );
}

#[test]
fn parse_errors_name_the_file_and_line() {
    assert_eq!(
        parse_err("{\"content\":\"a\"}\n\n{\"content\":"),
        "s.jsonl:3: not valid JSON: EOF while parsing a value at line 1 column 11"
    );
    assert_eq!(parse_err("[1]"), "s.jsonl:1: a turn must be a JSON object");
    assert_eq!(
        parse_err(r#"{"tool_calls":[]}"#),
        "s.jsonl:1: unknown key \"tool_calls\" in a turn (allowed: content, toolCalls, usage, delayMs, error)"
    );
    assert_eq!(
        parse_err(r#"{"toolCalls":[{"arguments":{}}]}"#),
        "s.jsonl:1: toolCalls[0]: name must be a string"
    );
    assert_eq!(
        parse_err(r#"{"delayMs":-1}"#),
        "s.jsonl:1: delayMs must be a non-negative integer"
    );
    assert_eq!(
        parse_err(r#"{"error":{"status":700}}"#),
        "s.jsonl:1: error needs a status (an integer from 100 to 599), an event or a network message"
    );
    assert_eq!(
        parse_err(r#"{"content":"x","error":{"status":500}}"#),
        "s.jsonl:1: a turn with \"error\" cannot also have \"content\""
    );
    assert_eq!(
        parse_err(r#"{"error":{"status":500,"headers":{"a":[]}}}"#),
        "s.jsonl:1: error.headers.a must be a string or a number"
    );
}

#[test]
fn from_file_reads_and_names_the_file() {
    let dir = tempfile::tempdir();
    let Ok(dir) = dir else { panic!("tempdir") };
    let path = dir.path().join("script.jsonl");
    let written = std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(b"{\"content\":\"hi\"}\n{oops}\n"));
    assert!(written.is_ok());
    let err = ReplayModel::from_file(&path)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.starts_with(&format!("{}:2: not valid JSON", path.display())),
        "{err}"
    );

    let missing = dir.path().join("missing.jsonl");
    let err = ReplayModel::from_file(&missing).err();
    assert!(matches!(err, Some(ReplayError::Read { .. })), "{err:?}");

    let ok = std::fs::write(&path, "{\"content\":\"hi\"}\n").map_err(|e| e.to_string());
    assert_eq!(ok, Ok(()));
    let model = ReplayModel::from_file(&path)
        .map(|m| m.turns().len())
        .map_err(|e| e.to_string());
    assert_eq!(model, Ok(1));
}
