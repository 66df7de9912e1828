//! Issue 16 item 9 through the binary: the example tool guest-examples/rust-json-summary
//! (`summarize`, a Rust component calling `wasi:http`) answers `sluice call` against a local
//! HTTP server listed in its policy, and is refused one that is not; `sluice tools inspect`
//! shows `wasi:http` as provided.

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;

use serde_json::{Value, json};

/// The document the local server serves at `/repo.json`.
const REPO_JSON: &str = r#"{"name":"wasmtime","stars":16000,"topics":["wasm","wasi"],"owner":{"login":"bytecodealliance"}}"#;

mod binary;
use binary::{sluice, text};

/// A one-route HTTP/1.1 server on 127.0.0.1 on a thread of its own: `GET /repo.json` is
/// [`REPO_JSON`] as `application/json`, anything else a 404. It serves until the test
/// process ends.
fn serve() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("its address");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("a second handle"));
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            // The rest of the head, up to the empty line.
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let (status, body) = if request_line.starts_with("GET /repo.json ") {
                ("200 OK", REPO_JSON)
            } else {
                ("404 Not Found", "")
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    addr
}

/// `sluice.toml` running the example alone, its `http` allowlist `allow`.
fn config(allow: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sluice.toml");
    std::fs::write(
        &path,
        format!(
            "builtins = []\n\n[tools.json_summary]\ncomponent = {:?}\nhttp = [{allow:?}]\nhttp_methods = [\"GET\"]\nmemory_mib = 64\n",
            sluice_tests::JSON_SUMMARY_WASM
        ),
    )
    .unwrap();
    (dir, path)
}

#[test]
fn the_json_summary_example_answers_sluice_call_for_a_listed_host_only() {
    let addr = serve();
    let (_d, cfg) = config(&addr.to_string());
    let cfg = cfg.display().to_string();
    let url = format!("http://{addr}/repo.json");
    let o = sluice(&[
        "--config",
        &cfg,
        "call",
        "summarize",
        &json!({"url": url, "maxKeys": 3}).to_string(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v,
        json!({"ok": true, "result": {
            "status": 200,
            "contentType": "application/json",
            "bytes": REPO_JSON.len(),
            "jsonType": "object",
            "keys": ["name", "stars", "topics"],
            "length": 4,
            "preview": REPO_JSON,
        }})
    );

    // Another host is refused, naming it and the key.
    let (_d, cfg) = config("127.0.0.2:1");
    let cfg = cfg.display().to_string();
    let o = sluice(&[
        "--config",
        &cfg,
        "call",
        "summarize",
        &json!({"url": url}).to_string(),
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["kind"], "http-denied");
    assert_eq!(
        v["error"],
        format!(
            "the tool's GET request to {addr} was refused: {addr} is not in its policy key http (it allows 127.0.0.2:1)"
        )
    );
}

#[test]
fn inspect_shows_wasi_http_as_provided() {
    let o = sluice(&["tools", "inspect", sluice_tests::JSON_SUMMARY_WASM]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let http: Vec<&Value> = v["imports"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["name"].as_str().unwrap().starts_with("wasi:http/"))
        .collect();
    assert!(!http.is_empty(), "{v}");
    assert!(http.iter().all(|i| i["provided"] == true), "{v}");
}
