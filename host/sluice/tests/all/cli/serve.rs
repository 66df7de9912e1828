//! `sluice serve`: no start beyond loopback without a token, a prompt posted over HTTP, and
//! a model's retry warnings on a non-terminal stderr.

use super::*;

#[test]
fn serve_refuses_a_non_loopback_address_without_a_token() {
    let dir = root();
    let store = dir.path().join("sessions.db");
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--root", &dir.path().display().to_string()])
        .args(["--store", &store.display().to_string()])
        .args(["serve", "--listen", "0.0.0.0:0"])
        .env_remove("SLUICE_SERVER_TOKEN")
        .output()
        .expect("sluice runs");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .starts_with("sluice: error: refusing to listen on 0.0.0.0:0 without a bearer token"),
        "{}",
        stderr(&o)
    );
}

/// `sluice serve` wires the same configuration as `sluice run`: a prompt posted over HTTP
/// runs the scripted model over the root and is stored in the configured store.
#[test]
fn serve_answers_over_http() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpStream;

    let dir = log_dir();
    let store = dir.path().join("sessions.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--root", &dir.path().join("logs").display().to_string()])
        .args(["--store", &store.display().to_string()])
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("SLUICE_CACHE_DIR", crate::warm_cache())
        .env_remove("SLUICE_SERVER_TOKEN")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("sluice starts");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("an address in {line:?}"))
        .to_string();
    let request = |method: &str, path: &str, body: &str| -> String {
        let mut s = TcpStream::connect(&addr).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    let created = request("POST", "/sessions", "");
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    let id = created
        .split("\"id\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_string();
    let ended = request(
        "POST",
        &format!("/sessions/{id}/prompts?wait=true"),
        r#"{"prompt":"what failed in the logs?"}"#,
    );
    assert!(ended.starts_with("HTTP/1.1 200"), "{ended}");
    assert!(ended.contains("\"status\":\"completed\""), "{ended}");
    // SIGTERM is not Ctrl-C; kill it (the store already holds the run).
    child.kill().unwrap();
    child.wait().unwrap();
    let store = sluice_store::SqliteStore::open(&store).unwrap();
    use sluice_store::Store as _;
    assert_eq!(
        block(store.session(&id)).unwrap().status,
        sluice_protocol::SessionStatus::Completed
    );
}

/// A one-connection-per-request HTTP server on 127.0.0.1 answering each request with the next
/// `(status, JSON body)`; its thread returns the request bodies it read.
fn http_server(answers: Vec<(u16, String)>) -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut bodies = Vec::new();
        for (status, body) in answers {
            let (mut stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap();
                }
            }
            let mut request = vec![0; length];
            reader.read_exact(&mut request).unwrap();
            bodies.push(String::from_utf8(request).unwrap());
            write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
        }
        bodies
    });
    (url, handle)
}

/// A retry warning written to a file (not a terminal) carries no colour codes, and
/// `--json` counts every HTTP request (the retry included) and shows the reported usage.
#[test]
fn retry_warnings_on_a_non_terminal_stderr_carry_no_colour_codes() {
    let (url, server) = http_server(vec![
        (
            503,
            r#"{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","code":null}}"#.into(),
        ),
        (
            200,
            r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Nothing failed."},"finish_reason":"stop"}],"usage":{"prompt_tokens":321,"completion_tokens":4,"total_tokens":325}}"#.into(),
        ),
    ]);
    let dir = log_dir();
    let config = dir.path().join("sluice.toml");
    std::fs::write(
        &config,
        format!(
            "[model]\nprovider = \"llamacpp\"\nname = \"m\"\nbase_url = \"{url}\"\nstream = false\n"
        ),
    )
    .unwrap();
    let root = dir.path().join("logs").display().to_string();
    let store = dir.path().join("sessions.db").display().to_string();
    let o = sluice(&[
        "--config",
        &config.display().to_string(),
        "--root",
        &root,
        "--store",
        &store,
        "run",
        "--json",
        "What failed?",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("model request failed; retrying"), "{err}");
    assert!(!err.contains('\u{1b}'), "{err:?}");
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["answer"], "Nothing failed.");
    assert_eq!(v["requests"], 2);
    assert_eq!(
        v["usage"],
        serde_json::json!({"inputTokens": 321, "outputTokens": 4, "unreportedReplies": 0})
    );
    let bodies = server.join().unwrap();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0], bodies[1]);
}
