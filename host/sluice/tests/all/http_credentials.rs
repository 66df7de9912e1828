//! Through the binary (docs/configuration.md#credentials-the-tool-never-holds):
//! `sluice call` runs the test component http-fetch under a policy whose
//! `http_credentials` give one local server a key from the operator's environment (a
//! `[tools.NAME]` table) or from a file (a tools-directory policy). The server receives
//! the key; the tool reads only the marker where the server echoed it; the log, at `info`
//! and at `trace`, has one `credential attached` event naming the host and the header,
//! and no part of the key anywhere. A key that is not set makes the tool unavailable,
//! naming the credential and the variable.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// The key: letters, digits and `-`; its first bytes, `QXZ`, appear in no message of the
/// host.
const KEY: &str = "QXZ-key-1d8e6f0a2b4c7e93";

/// The `x-api-key` values a server saw, one list per request.
type Seen = Arc<Mutex<Vec<Vec<String>>>>;

/// An HTTP/1.1 server on 127.0.0.1 that answers every request with its head as the body
/// and records its `x-api-key` headers. It serves until the test process ends.
fn echo_server() -> (SocketAddr, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("its address");
    let seen: Seen = Arc::default();
    let record = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("a second handle"));
            let (mut head, mut line) = (String::new(), String::new());
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                head.push_str(&line);
                line.clear();
            }
            let keys = head
                .lines()
                .filter_map(|l| l.split_once(':'))
                .filter(|(n, _)| n.eq_ignore_ascii_case("x-api-key"))
                .map(|(_, v)| v.trim().to_string())
                .collect();
            record.lock().unwrap().push(keys);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{head}",
                head.len()
            );
        }
    });
    (addr, seen)
}

/// The credential's table body: `X-Api-Key: {secret}` from `secret`.
fn credential(secret: &str) -> String {
    format!("header = \"X-Api-Key\"\nvalue = \"{{secret}}\"\nsecret = {secret}\n")
}

/// Runs `sluice --config CONFIG call exchange` to `url` at `SLUICE_LOG=log`, with
/// `NET_API_KEY` set to `key` when given.
fn call(config: &Path, log: &str, url: &str, key: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sluice"));
    command
        .args([
            "--config",
            &config.display().to_string(),
            "call",
            "exchange",
        ])
        .arg(json!({"url": url, "headers": [], "maxRedirects": 0}).to_string())
        .env("SLUICE_CACHE_DIR", crate::warm_cache())
        .env_remove("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES")
        .env_remove("NET_API_KEY")
        .env("SLUICE_LOG", log)
        .env("NO_COLOR", "1");
    if let Some(key) = key {
        command.env("NET_API_KEY", key);
    }
    command.output().expect("sluice runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `hex` as text.
fn unhex(hex: &str) -> String {
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    String::from_utf8(bytes).unwrap()
}

/// True when `text` holds any 8 consecutive characters of `secret`.
fn shows_part_of(text: &str, secret: &str) -> bool {
    (0..=secret.len() - 8).any(|i| text.contains(&secret[i..i + 8]))
}

/// Checks one `sluice call exchange` that sent the key to `addr`: the tool read the marker
/// where the server echoed it, and neither output shows a part of the key.
fn check_exchange(o: &Output, addr: SocketAddr) {
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(!shows_part_of(&stdout, KEY), "{stdout}");
    assert!(
        !shows_part_of(&stderr, KEY),
        "the log shows the key:\n{stderr}"
    );
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    let body = unhex(v["result"]["bodyHex"].as_str().unwrap());
    let marker = format!(
        "[secret withheld: http_credentials.127.0.0.1:{}]",
        addr.port()
    );
    assert!(body.contains(&format!("x-api-key: {marker}\r\n")), "{body}");
}

#[test]
fn a_tool_sends_a_key_from_the_environment_it_never_sees() {
    let (addr, seen) = echo_server();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sluice.toml");
    std::fs::write(
        &config,
        format!(
            "builtins = []\n\n[tools.net]\ncomponent = {:?}\nhttp = [\"{addr}\"]\nhttp_methods = [\"GET\"]\n\n[tools.net.http_credentials.\"{addr}\"]\n{}",
            sluice_tests::HTTP_FETCH_WASM,
            credential("{ env = \"NET_API_KEY\" }")
        ),
    )
    .unwrap();
    let url = format!("http://{addr}/echo");
    for log in ["info", "trace"] {
        let o = call(&config, log, &url, Some(KEY));
        check_exchange(&o, addr);
        let stderr = text(&o.stderr);
        // One event per use, naming the host, the port and the header, never the value.
        let events: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("credential attached"))
            .collect();
        assert_eq!(events.len(), 1, "SLUICE_LOG={log}:\n{stderr}");
        for field in [
            "server.address=127.0.0.1".to_string(),
            format!("server.port={}", addr.port()),
            "http.request.method=GET".to_string(),
            "http.request.header=x-api-key".to_string(),
            format!("credential=http_credentials.127.0.0.1:{}", addr.port()),
        ] {
            assert!(events[0].contains(&field), "{field}: {}", events[0]);
        }
        // The call's line marks the request that carried it.
        let line = stderr
            .lines()
            .find(|l| l.contains("tool call"))
            .unwrap_or_else(|| panic!("no call line at {log}:\n{stderr}"));
        assert!(
            line.contains(&format!("GET {addr} 200 ")) && line.contains(", credential x-api-key"),
            "{line}"
        );
    }
    assert_eq!(
        *seen.lock().unwrap(),
        [vec![KEY.to_string()], vec![KEY.to_string()]]
    );
    // Without the variable the tool is unavailable, naming the credential and the variable.
    let o = call(&config, "warn", &url, None);
    let stderr = text(&o.stderr);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v,
        json!({"ok": false, "error": "unknown_tool", "name": "exchange", "tools": []})
    );
    assert!(
        stderr.contains(&format!(
            "its secret \"http_credentials.{addr}\" cannot be read from environment variable NET_API_KEY: it is not set"
        )),
        "{stderr}"
    );
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[test]
fn a_tools_directory_policy_gives_a_key_from_a_file_no_tool_reads() {
    let (addr, seen) = echo_server();
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::copy(sluice_tests::HTTP_FETCH_WASM, tools.join("net.wasm")).unwrap();
    std::fs::write(tools.join("net.key"), format!("{KEY}\n")).unwrap();
    std::fs::write(
        tools.join("net.toml"),
        format!(
            "http = [\"{addr}\"]\n\n[http_credentials.\"{addr}\"]\n{}",
            credential("{ file = \"net.key\" }")
        ),
    )
    .unwrap();
    let config = dir.path().join("sluice.toml");
    // The built-in read_file may read the tools directory, but not the key's file.
    std::fs::write(
        &config,
        "builtins = [\"read_file\"]\ntools_dir = \"tools\"\n\n[roots]\ntools = \"tools\"\n",
    )
    .unwrap();
    let o = call(&config, "info", &format!("http://{addr}/echo"), None);
    check_exchange(&o, addr);
    assert_eq!(*seen.lock().unwrap(), [vec![KEY.to_string()]]);
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "--config",
            &config.display().to_string(),
            "call",
            "read_file",
        ])
        .arg(json!({"path": "net.key"}).to_string())
        .env("SLUICE_CACHE_DIR", crate::warm_cache())
        .env_remove("SLUICE_LOG")
        .output()
        .expect("sluice runs");
    let stdout = text(&o.stdout);
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).unwrap(),
        json!({"ok": false, "error": "refusing to read key material: net.key", "kind": "key-material"}),
        "{}",
        text(&o.stderr)
    );
}
