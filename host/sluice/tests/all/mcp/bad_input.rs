//! Raw JSON-RPC lines on stdin: every bad input gets a JSON-RPC error or a clean exit,
//! never a panic or a stuck process.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::{command, root_flag};

/// How long an answer may take on a loaded 2-core machine: a call's first answer may wait
/// for its component's first compile, beside every other test's (an empty cache); no test
/// waits this long when it passes.
const ANSWER: Duration = Duration::from_secs(90);

struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: tokio::io::Lines<BufReader<ChildStdout>>,
    _dir: tempfile::TempDir,
}

impl Raw {
    async fn start(extra: &[&str]) -> Raw {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "one\n").unwrap();
        let root = root_flag(dir.path());
        let mut args = vec!["--root", root.as_str(), "mcp"];
        args.extend(extra);
        let mut child = command(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Raw {
            child,
            stdin,
            stdout,
            _dir: dir,
        }
    }

    async fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn answer(&mut self) -> Value {
        let line = tokio::time::timeout(ANSWER, self.stdout.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).expect("stdout carries only JSON-RPC")
    }

    async fn initialize(&mut self, version: &str) -> Value {
        self.send(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":version,"capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}).to_string()).await;
        let answer = self.answer().await;
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        answer
    }

    /// Closes stdin and waits for the exit status.
    async fn end(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        tokio::time::timeout(ANSWER, self.child.wait())
            .await
            .expect("sluice mcp exits after EOF")
            .unwrap()
    }
}

#[tokio::test]
async fn malformed_lines_unknown_methods_and_bad_shapes_get_json_rpc_errors() {
    let mut raw = Raw::start(&[]).await;
    let init = raw.initialize("2025-06-18").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "sluice");

    raw.send("this is not json").await;
    let a = raw.answer().await;
    assert_eq!(a["id"], Value::Null);
    assert_eq!(a["error"]["code"], -32700);
    assert!(
        a["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("parse error: ")
    );

    // `params` that are not an object: invalid params, with the request's id.
    raw.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":5}"#)
        .await;
    let a = raw.answer().await;
    assert_eq!(a["id"], 5);
    assert_eq!(a["error"]["code"], -32602);
    raw.send(r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":"read_file"}"#)
        .await;
    let a = raw.answer().await;
    assert_eq!(
        a,
        json!({"jsonrpc":"2.0","id":"s","error":{"code":-32602,"message":"invalid params: the `params` of tools/call must be an object, not a string"}})
    );

    // An `id` that is not a string or a number: invalid request, id null (it was no
    // notification, and is answered).
    raw.send(r#"{"jsonrpc":"2.0","id":{"n":1},"method":"tools/list"}"#)
        .await;
    let a = raw.answer().await;
    assert_eq!(a["id"], Value::Null);
    assert_eq!(a["error"]["code"], -32600);
    assert!(
        a["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid request: `id` must be a string or a number, not an object;"),
        "{a}"
    );
    raw.send(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#)
        .await;
    let a = raw.answer().await;
    assert_eq!(
        (a["id"].clone(), a["error"]["code"].clone()),
        (Value::Null, json!(-32600)),
        "{a}"
    );

    raw.send(r#"{"jsonrpc":"2.0","id":6,"method":"no/such/method"}"#)
        .await;
    let a = raw.answer().await;
    assert_eq!(a["id"], 6);
    assert_eq!(a["error"]["code"], -32601);

    // The server still serves.
    raw.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"f.txt"}}}"#).await;
    let a = raw.answer().await;
    assert_eq!(a["id"], 7);
    assert_eq!(
        a["result"]["content"][0]["text"],
        "{\"ok\":true,\"result\":{\"path\":\"f.txt\",\"size\":4,\"offset\":0,\"startLine\":1,\"endLine\":1,\"totalLines\":1,\"contentBytes\":4,\"content\":\"one\\n\"}}"
    );
    assert!(raw.end().await.success());
}

#[tokio::test]
async fn an_oversized_request_gets_an_error_with_its_id() {
    let mut raw = Raw::start(&["--max-body-bytes", "4096"]).await;
    raw.initialize("2025-11-25").await;
    let big = "x".repeat(100_000);
    raw.send(&json!({"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{"name":"read_file","arguments":{"path":big}}}).to_string()).await;
    let a = raw.answer().await;
    assert_eq!(a["id"], "big-1");
    assert_eq!(a["error"]["code"], -32600);
    assert!(
        a["error"]["message"]
            .as_str()
            .unwrap()
            .contains("over the limit of 4096 bytes"),
        "{a}"
    );
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#)
        .await;
    let a = raw.answer().await;
    assert_eq!(a["id"], 2);
    assert_eq!(a["result"]["tools"].as_array().unwrap().len(), 5);
    assert!(raw.end().await.success());
}

#[tokio::test]
async fn versions_the_server_does_not_speak() {
    // initialize with an unknown version: the server answers with one it speaks (the client
    // then decides).
    let mut raw = Raw::start(&[]).await;
    let init = raw.initialize("1999-01-01").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert!(raw.end().await.success());

    // 2026-07-28 style: a request naming an unsupported version in `_meta` gets -32022
    // listing the supported ones.
    let mut raw = Raw::start(&[]).await;
    raw.send(
        &json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2030-01-01",
        "io.modelcontextprotocol/clientCapabilities":{},
        "io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"}}}})
        .to_string(),
    )
    .await;
    let a = raw.answer().await;
    assert_eq!(a["id"], 1);
    assert_eq!(a["error"]["code"], -32022, "{a}");
    let supported = a["error"]["data"]["supported"].clone();
    assert_eq!(
        supported,
        json!(["2025-06-18", "2025-11-25", "2026-07-28"]),
        "{a}"
    );
    assert!(raw.end().await.success());
}

#[tokio::test]
async fn server_discover_and_a_stateless_call() {
    let mut raw = Raw::start(&[]).await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{},
        "io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"}});
    raw.send(
        &json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":meta}})
            .to_string(),
    )
    .await;
    let a = raw.answer().await;
    assert_eq!(a["result"]["resultType"], "complete", "{a}");
    assert_eq!(
        a["result"]["supportedVersions"],
        json!(["2025-06-18", "2025-11-25", "2026-07-28"]),
        "{a}"
    );
    raw.send(
        &json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":meta}}).to_string(),
    )
    .await;
    let a = raw.answer().await;
    assert_eq!(a["result"]["resultType"], "complete", "{a}");
    assert_eq!(a["result"]["ttlMs"], 60_000);
    assert_eq!(a["result"]["cacheScope"], "private");
    raw.send(&json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":meta,"name":"read_file","arguments":{"path":"f.txt"}}}).to_string()).await;
    let a = raw.answer().await;
    assert_eq!(a["result"]["resultType"], "complete", "{a}");
    assert_eq!(a["result"]["isError"], false);
    assert!(raw.end().await.success());
}

/// An integer beyond 64 bits reaches Sluice as the float rmcp parsed (its digits gone): it
/// is judged too large, as the same literal through `sluice call` is, not a fraction.
#[tokio::test]
async fn integers_beyond_64_bits_are_too_large_not_fractions() {
    let mut raw = Raw::start(&[]).await;
    raw.initialize("2025-06-18").await;
    let call = |id: u32, name: &str, arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{arguments}}}}}"#
        )
    };
    // tail_file's lines saturates: every line of the file.
    raw.send(&call(
        1,
        "tail_file",
        r#"{"path":"f.txt","lines":18446744073709551616}"#,
    ))
    .await;
    let a = raw.answer().await;
    assert_eq!(a["result"]["isError"], false, "{a}");
    assert_eq!(
        a["result"]["structuredContent"]["result"]["lines"],
        json!(["one"])
    );
    // read_file's offset does not: too large, with the bound.
    raw.send(&call(
        2,
        "read_file",
        r#"{"path":"f.txt","offset":18446744073709551616}"#,
    ))
    .await;
    let a = raw.answer().await;
    assert_eq!(
        a["result"]["structuredContent"],
        json!({"ok":false,"error":"offset must be an integer of at most 18446744073709551615; got 1.8446744073709552e+19","kind":"invalid-argument"})
    );
    // A float with a fraction is still not an integer.
    raw.send(&call(3, "read_file", r#"{"path":"f.txt","offset":2.5}"#))
        .await;
    let a = raw.answer().await;
    assert_eq!(
        a["result"]["structuredContent"]["error"],
        "offset must be an integer of at least 0; got 2.5"
    );
    assert!(raw.end().await.success());
}

#[tokio::test]
async fn eof_before_anything_is_a_clean_exit() {
    let started = Instant::now();
    let raw = Raw::start(&[]).await;
    assert!(raw.end().await.success());
    assert!(started.elapsed() < ANSWER);
}

/// A client that keeps stdin open but never reads stdout: once the pipe is full and a
/// write makes no progress for the write timeout, the server exits.
#[tokio::test]
async fn a_client_that_stops_reading_ends_the_server() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.txt"), "y".repeat(60_000) + "\n").unwrap();
    let root = root_flag(dir.path());
    let mut child = command(&["--root", &root, "mcp", "--write-timeout-ms", "500"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let _unread = child.stdout.take().unwrap();
    stdin.write_all(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}).to_string().as_bytes()).await.unwrap();
    stdin
        .write_all(b"\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    // Each answer is about 60 KB; a pipe holds 64 KiB.
    for id in 1..=20 {
        let line = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"big.txt"}}}).to_string() + "\n";
        if stdin.write_all(line.as_bytes()).await.is_err() {
            break;
        }
    }
    let status = tokio::time::timeout(ANSWER, child.wait())
        .await
        .expect("sluice mcp exits when its client stops reading")
        .unwrap();
    assert!(status.success(), "{status}");
    drop(stdin);
}
