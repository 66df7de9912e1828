//! Through the binary (docs/components.md#http-by-allowlist): the example tool guest-examples/rust-json-summary
//! (`summarize`, a Rust component calling `wasi:http`) answers `sluice call` against a local
//! HTTP server listed in its policy, and is refused one that is not; `sluice tools inspect`
//! shows `wasi:http` as provided.
//!
//! The same for `fetch` in Python, JavaScript and C
//! (guest-examples/{py,js,c}-fetch, built by guest-examples/build.sh), under the policy of
//! each example's `sluice.toml` with its `http` list pointed at the local server. Each
//! language answers every call alike, byte for byte, but for the message of a request that
//! fails (JavaScript's `fetch` does not say why). A component that is not built skips its
//! test with a line on stderr, except under `CI=true`, where that is a failure.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The document the local server serves at `/repo.json`.
const REPO_JSON: &str = r#"{"name":"wasmtime","stars":16000,"topics":["wasm","wasi"],"owner":{"login":"bytecodealliance"}}"#;

use crate::binary::{sluice, text};

/// A local server's answer: status line, `content-type`, body.
type Reply = (&'static str, &'static str, Vec<u8>);

/// An HTTP/1.1 server on 127.0.0.1 on a thread of its own: each request is answered with
/// `route(path, user-agent)`, and `connection: close` (a `3xx` also with `location:
/// /doc.json`). It serves until the test process ends.
fn serve(route: fn(&str, &str) -> Reply) -> SocketAddr {
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
            let mut agent = String::new();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("user-agent")
                {
                    agent = value.trim().to_string();
                }
                line.clear();
            }
            let path = match request_line.split(' ').collect::<Vec<_>>()[..] {
                ["GET", path, _] => path.to_string(),
                _ => String::new(),
            };
            let (status, content_type, body) = route(&path, &agent);
            let location = if status.starts_with('3') {
                "location: /doc.json\r\n"
            } else {
                ""
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\n{location}content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(&body);
        }
    });
    addr
}

/// `GET /repo.json` is [`REPO_JSON`] as `application/json`, anything else a 404.
fn repo_json(path: &str, _agent: &str) -> Reply {
    if path == "/repo.json" {
        ("200 OK", "application/json", REPO_JSON.into())
    } else {
        ("404 Not Found", "application/json", Vec::new())
    }
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
    let addr = serve(repo_json);
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

/// The document the local server serves at `/doc.json`: 27 ASCII bytes, then `ü` (2 bytes).
const DOC_JSON: &str = r#"{"name":"wasmtime","note":"ünïcödé ✓"}"#;

/// The routes of the `fetch` tests: `/doc.json`, `/agent` (the request's `user-agent`),
/// `/moved` (a 302), `/logo.png` (bytes that are not UTF-8), anything else a 404.
fn fetch_routes(path: &str, agent: &str) -> Reply {
    match path {
        "/doc.json" => ("200 OK", "application/json", DOC_JSON.into()),
        "/agent" => ("200 OK", "text/plain; charset=utf-8", agent.into()),
        "/moved" => ("302 Found", "text/plain", b"see /doc.json".to_vec()),
        "/logo.png" => (
            "200 OK",
            "image/png",
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec(),
        ),
        _ => (
            "404 Not Found",
            "text/plain",
            format!("no page at {path}").into_bytes(),
        ),
    }
}

/// A listed address nothing listens on (port 1, tcpmux, is not served here).
const CLOSED: &str = "127.0.0.1:1";

/// The repository.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `target/guest-examples/<stem>.wasm`, which guest-examples/build.sh builds, when it is
/// there. When it is not: under `CI=true` a failure; otherwise a line on stderr (written past
/// the test harness's capture, so a plain `cargo test` shows it) and `None`, and the test
/// returns.
fn built(stem: &str) -> Option<PathBuf> {
    let path = repo()
        .join("target/guest-examples")
        .join(format!("{stem}.wasm"));
    if path.is_file() {
        return Some(path);
    }
    let rel = format!("target/guest-examples/{stem}.wasm");
    sluice_test_support::skip_or_fail(&format!(
        "{rel} not built (run guest-examples/install-toolchains.sh && guest-examples/build.sh; .ci/run builds it before the tests)"
    ));
    None
}

/// guest-examples/`<dir>`/sluice.toml, its component `wasm` and its `http` list `allow`, in a
/// temporary directory.
fn example_config(
    dir: &str,
    stem: &str,
    wasm: &Path,
    allow: &[&str],
) -> (tempfile::TempDir, String) {
    let source = repo().join("guest-examples").join(dir).join("sluice.toml");
    let text = std::fs::read_to_string(&source).unwrap();
    let component = format!("component = \"../../target/guest-examples/{stem}.wasm\"\n");
    let http = "http = [\"api.github.com\"]";
    assert!(text.contains(&component), "{dir}/sluice.toml: {component}");
    assert!(text.contains(http), "{dir}/sluice.toml: {http}");
    let text = text
        .replace(
            &component,
            &format!("component = {:?}\n", wasm.display().to_string()),
        )
        .replace(http, &format!("http = {allow:?}"));
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("sluice.toml");
    std::fs::write(&path, text).unwrap();
    (tmp, path.display().to_string())
}

/// `fetch` in guest-examples/`<dir>` (tool `<stem>`): every call's exact observation, against
/// the local server; `failed` is the message of a request to a listed port that refuses.
fn fetch_example(dir: &str, stem: &str, failed: &str) {
    let Some(wasm) = built(stem) else { return };
    let addr = serve(fetch_routes);
    let listed = addr.to_string();
    let (_tmp, cfg) = example_config(dir, stem, &wasm, &[&listed, CLOSED]);
    let call = |args: Value| -> Value {
        let o = sluice(&["--config", &cfg, "call", stem, &args.to_string()]);
        assert_eq!(o.status.code(), Some(0), "{args}: {}", text(&o.stderr));
        serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{args}: {e}: {}", text(&o.stdout)))
    };
    let url = |path: &str| format!("http://{addr}{path}");
    let page = |path: &str, status: u16, content_type: &str, body: &[u8], text: &str| {
        json!({"ok": true, "result": {
            "url": url(path),
            "status": status,
            "contentType": content_type,
            "bytes": body.len(),
            "text": text,
            "cut": text.len() < body.len(),
        }})
    };

    // The whole document, and its first 28 bytes: the 28th is half of `ü`, left out.
    assert_eq!(
        call(json!({"url": url("/doc.json")})),
        page(
            "/doc.json",
            200,
            "application/json",
            DOC_JSON.as_bytes(),
            DOC_JSON
        )
    );
    assert_eq!(
        call(json!({"url": url("/doc.json"), "maxBytes": 28})),
        page(
            "/doc.json",
            200,
            "application/json",
            DOC_JSON.as_bytes(),
            r#"{"name":"wasmtime","note":""#
        )
    );
    assert_eq!(
        call(json!({"url": url("/doc.json"), "maxBytes": 29})),
        page(
            "/doc.json",
            200,
            "application/json",
            DOC_JSON.as_bytes(),
            r#"{"name":"wasmtime","note":"ü"#
        )
    );
    // The header the tool sets; a redirect is not followed; a 404 is a page too.
    assert_eq!(
        call(json!({"url": url("/agent")})),
        page(
            "/agent",
            200,
            "text/plain; charset=utf-8",
            b"sluice-example-fetch/0.1",
            "sluice-example-fetch/0.1"
        )
    );
    assert_eq!(
        call(json!({"url": url("/moved")})),
        page(
            "/moved",
            302,
            "text/plain",
            b"see /doc.json",
            "see /doc.json"
        )
    );
    assert_eq!(
        call(json!({"url": url("/nope?x=1#top")})),
        json!({"ok": true, "result": {
            "url": url("/nope?x=1#top"),
            "status": 404,
            "contentType": "text/plain",
            "bytes": 20,
            "text": "no page at /nope?x=1",
            "cut": false,
        }})
    );

    // The tool's errors.
    let error = |message: String, kind: &str| json!({"ok": false, "error": message, "kind": kind});
    assert_eq!(
        call(json!({"url": url("/logo.png")})),
        error(
            format!("the body of {} is not UTF-8 text", url("/logo.png")),
            "binary-file"
        )
    );
    assert_eq!(
        call(json!({"url": format!("http://{CLOSED}/")})),
        error(format!("GET http://{CLOSED}/ failed: {failed}"), "io")
    );
    assert_eq!(
        call(json!({"url": "ftp://example.com/"})),
        error(
            "url must start with http:// or https://; got ftp://example.com/".into(),
            "invalid-argument"
        )
    );
    assert_eq!(
        call(json!({"url": "http:///doc.json"})),
        error(
            "url has no host: http:///doc.json".into(),
            "invalid-argument"
        )
    );
    assert_eq!(
        call(json!({"url": url("/doc.json"), "maxBytes": 4097})),
        error(
            "maxBytes must be 1 to 4096; got 4097".into(),
            "invalid-argument"
        )
    );

    // A host the policy does not list: the host's error, whatever the tool answers.
    assert_eq!(
        call(json!({"url": "https://example.com/"})),
        error(
            format!(
                "the tool's GET request to example.com:443 was refused: example.com:443 is not in its policy key http (it allows {listed}, {CLOSED})"
            ),
            "http-denied"
        )
    );
}

#[test]
fn the_python_fetch_example_answers_for_listed_hosts_only() {
    fetch_example("py-fetch", "py_fetch", "connection-refused");
}

#[test]
fn the_javascript_fetch_example_answers_for_listed_hosts_only() {
    // StarlingMonkey's fetch rejects with this TypeError whatever the wasi:http error-code.
    fetch_example(
        "js-fetch",
        "js_fetch",
        "NetworkError when attempting to fetch resource",
    );
}

#[test]
fn the_c_fetch_example_answers_for_listed_hosts_only() {
    fetch_example("c-fetch", "c_fetch", "connection-refused");
}

/// One world: the three `fetch` examples build the same `wit/world.wit`.
#[test]
fn the_fetch_examples_share_one_world() {
    let world = |dir: &str| {
        std::fs::read_to_string(
            repo()
                .join("guest-examples")
                .join(dir)
                .join("wit/world.wit"),
        )
        .unwrap()
    };
    assert_eq!(world("py-fetch"), world("js-fetch"));
    assert_eq!(world("py-fetch"), world("c-fetch"));
}
