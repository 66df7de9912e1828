//! MCP over Streamable HTTP: `POST /mcp` of `sluice serve` and `sluice mcp --listen`, under
//! the operator API's rules.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

use super::{command, root_flag};

/// A running HTTP server and its base URL (`http://127.0.0.1:PORT`).
pub(crate) struct Listening {
    pub(crate) url: String,
    _child: Child,
    _dir: tempfile::TempDir,
}

/// Starts `sluice --root DIR <args…>` (`serve` or `mcp --listen 127.0.0.1:0`; `serve` with
/// `--store FILE` too, in the same directory) and waits for the address it prints on stderr.
pub(crate) async fn listen(args: &[&str], env: &[(&str, &str)]) -> Listening {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "one\ntwo\n").unwrap();
    std::fs::write(dir.path().join("app.log"), "INFO a\nERROR b\n").unwrap();
    let root = root_flag(dir.path());
    let store = dir.path().join("sessions.db").display().to_string();
    let mut all = vec!["--root", root.as_str()];
    // `mcp` has no sessions, so no store.
    if args.first() == Some(&"serve") {
        all.extend(["--store", store.as_str()]);
    }
    all.extend(args);
    let mut cmd = command(&all);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(at) = line.find("http://") {
                let rest = &line[at..];
                let end = rest[7..].find(['/', ' ']).map_or(rest.len(), |i| i + 7);
                return rest[..end].to_string();
            }
        }
        panic!("the server printed no address");
    })
    .await
    .expect("the server starts");
    // Keep draining stderr so the server never blocks on it.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Listening {
        url,
        _child: child,
        _dir: dir,
    }
}

/// POSTs `body` to `url/mcp` with the headers MCP asks for (and `extra`).
async fn post(url: &str, body: &Value, extra: &[(&str, &str)]) -> reqwest::Response {
    let content_type = extra
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .map_or("application/json", |(_, v)| *v);
    let mut request = reqwest::Client::new()
        .post(format!("{url}/mcp"))
        .header("content-type", content_type)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(body.to_string());
    for (k, v) in extra
        .iter()
        .filter(|(k, _)| !k.eq_ignore_ascii_case("content-type"))
    {
        request = request.header(*k, *v);
    }
    request.send().await.unwrap()
}

fn list() -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"tools/list"})
}

#[tokio::test]
async fn serve_answers_mcp_at_post_mcp_under_its_token() {
    let server = listen(
        &["serve", "--listen", "127.0.0.1:0"],
        &[("SLUICE_SERVER_TOKEN", "t0ken")],
    )
    .await;
    let url = &server.url;
    // Without the token: 401, as every route of the operator API.
    let r = post(url, &list(), &[]).await;
    assert_eq!(r.status(), 401);
    let auth = [("authorization", "Bearer t0ken")];
    let r = post(url, &list(), &auth).await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    let names: Vec<&str> = body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "read_file",
            "tail_file",
            "grep_files",
            "list_dir",
            "run_script"
        ]
    );
    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"f.txt"}}});
    let body: Value = post(url, &call, &auth).await.json().await.unwrap();
    assert_eq!(
        body["result"]["content"][0]["text"],
        "{\"ok\":true,\"result\":{\"path\":\"f.txt\",\"size\":8,\"offset\":0,\"startLine\":1,\"endLine\":2,\"totalLines\":2,\"contentBytes\":8,\"content\":\"one\\ntwo\\n\"}}"
    );
    // DNS rebinding: a Host that is not the server's, even with the token.
    let r = post(url, &list(), &[auth[0], ("host", "attacker.example")]).await;
    assert_eq!(r.status(), 403);
    // A cross-origin request carrying the token passes the guard (the token is what a web
    // page cannot send); without it, 401 as above.
    let r = post(url, &list(), &[auth[0], ("origin", "https://app.example")]).await;
    assert_eq!(r.status(), 200);
    // The operator API still answers beside it.
    let health = reqwest::Client::new()
        .get(format!("{url}/healthz"))
        .header("authorization", "Bearer t0ken")
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    // And its OpenAPI document describes POST /mcp beside the API's routes.
    let doc: Value = reqwest::Client::new()
        .get(format!("{url}/openapi.json"))
        .header("authorization", "Bearer t0ken")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let methods: Vec<&String> = doc["paths"]["/mcp"].as_object().unwrap().keys().collect();
    assert_eq!(methods, ["post"]);
    assert_eq!(
        doc["paths"].as_object().unwrap().len(),
        sluice_server::ROUTES
            .iter()
            .map(|r| r.path)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            + 1
    );
}

#[tokio::test]
async fn mcp_listen_serves_alone_with_the_body_limit() {
    let server = listen(
        &["mcp", "--listen", "127.0.0.1:0", "--max-body-bytes", "2048"],
        &[],
    )
    .await;
    let url = &server.url;
    // Loopback without a token: no token needed.
    let r = post(url, &list(), &[]).await;
    assert_eq!(r.status(), 200);
    // The operator API's guard: DNS rebinding (a Host that is not the server's), a
    // cross-site page (an Origin that is not the server's, and no token), a body not sent
    // as JSON.
    let r = post(url, &list(), &[("host", "attacker.example")]).await;
    assert_eq!(r.status(), 403);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"].as_str().unwrap().contains("attacker.example"),
        "{body}"
    );
    let r = post(url, &list(), &[("origin", "https://attacker.example")]).await;
    assert_eq!(r.status(), 403);
    // The server's own origin (the Host it was reached by) passes.
    let r = post(url, &list(), &[("origin", url.as_str())]).await;
    assert_eq!(r.status(), 200);
    let r = post(url, &list(), &[("content-type", "text/plain")]).await;
    assert_eq!(r.status(), 415);
    let big = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"x".repeat(5000)}}});
    let r = post(url, &big, &[]).await;
    assert_eq!(r.status(), 413);
    // Only /mcp is served.
    let r = reqwest::get(format!("{url}/healthz")).await.unwrap();
    assert_eq!(r.status(), 404);
    // Malformed JSON: a JSON-RPC parse error.
    let r = reqwest::Client::new()
        .post(format!("{url}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32700, "{body}");
}

#[tokio::test]
async fn mcp_listen_beyond_loopback_needs_a_token() {
    let out = command(&["mcp", "--listen", "0.0.0.0:0"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refusing to listen on 0.0.0.0:0 without a bearer token"),
        "{stderr}"
    );
}

/// GET `url` + `path` (no token).
async fn get(url: &str, path: &str) -> reqwest::Response {
    reqwest::get(format!("{url}{path}")).await.unwrap()
}

/// Sluice serves no OAuth: with a token set, the discovery paths and `/register` answer
/// 404 (not 401, which sends Claude Code into dynamic client registration), on both
/// servers.
#[tokio::test]
async fn oauth_discovery_answers_404_under_a_token() {
    for args in [
        ["serve", "--listen", "127.0.0.1:0"],
        ["mcp", "--listen", "127.0.0.1:0"],
    ] {
        let server = listen(&args, &[("SLUICE_SERVER_TOKEN", "t0ken")]).await;
        let url = &server.url;
        for path in [
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server",
            "/.well-known/oauth-authorization-server/mcp",
            "/.well-known/openid-configuration",
        ] {
            let r = get(url, path).await;
            assert_eq!(r.status(), 404, "{args:?} {path}");
            let body: Value = r.json().await.unwrap();
            assert!(
                body["error"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{path} is not served: Sluice serves no OAuth.")),
                "{body}"
            );
        }
        let r = reqwest::Client::new()
            .post(format!("{url}/register"))
            .header("content-type", "application/json")
            .body(r#"{"client_name":"claude-code","redirect_uris":["http://localhost:1/cb"]}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{args:?} /register");
        // /mcp itself still wants the token.
        assert_eq!(post(url, &list(), &[]).await.status(), 401, "{args:?}");
    }
}

/// Over HTTP as over stdio: an `id` that is not a string or a number is -32600 with `id`
/// null, `params` that are not an object -32602 with the request's `id`.
#[tokio::test]
async fn http_answers_bad_ids_and_params_as_stdio_does() {
    let server = listen(&["mcp", "--listen", "127.0.0.1:0"], &[]).await;
    let url = &server.url;
    let r = post(
        url,
        &json!({"jsonrpc":"2.0","id":{"n":1},"method":"tools/list"}),
        &[],
    )
    .await;
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["id"], Value::Null, "{body}");
    assert_eq!(body["error"]["code"], -32600, "{body}");
    let r = post(
        url,
        &json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":"x"}),
        &[],
    )
    .await;
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body,
        json!({"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"invalid params: the `params` of tools/call must be an object, not a string"}})
    );
}

/// A principal granted one tool (`tools:call:read_file`) sees and calls that one alone over
/// `/mcp`; a principal without any `tools:call` grant is refused 403 naming the scope
/// (docs/api.md#principals-and-scopes).
#[tokio::test]
async fn a_principal_granted_one_tool_sees_and_calls_only_it() {
    use sha2::Digest as _;
    let config = tempfile::tempdir().unwrap();
    let hash = |t: &str| -> String {
        sha2::Sha256::digest(t.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let file = config.path().join("sluice.toml");
    std::fs::write(
        &file,
        format!(
            "[[server.tokens]]\nname = \"reader\"\nscopes = [\"tools:call:read_file\"]\nsha256 = \"{}\"\n\n[[server.tokens]]\nname = \"watcher\"\nscopes = [\"sessions:read\"]\nsha256 = \"{}\"\n",
            hash("sluice_reader"),
            hash("sluice_watcher")
        ),
    )
    .unwrap();
    let file = file.display().to_string();
    let server = listen(&["--config", &file, "mcp", "--listen", "127.0.0.1:0"], &[]).await;
    let url = &server.url;
    let watcher = [("authorization", "Bearer sluice_watcher")];
    let r = post(url, &list(), &watcher).await;
    assert_eq!(r.status(), 403);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        (&body["scope"], &body["principal"]),
        (&json!("tools:call"), &json!("watcher"))
    );
    let reader = [("authorization", "Bearer sluice_reader")];
    let body: Value = post(url, &list(), &reader).await.json().await.unwrap();
    let names: Vec<&str> = body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read_file"]);
    let call = |tool: &str, args: Value| json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":tool,"arguments":args}});
    let body: Value = post(
        url,
        &call("grep_files", json!({"pattern": "ERROR"})),
        &reader,
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(body["result"]["isError"], true);
    assert_eq!(
        body["result"]["content"][0]["text"],
        "{\"ok\":false,\"error\":\"tool \\\"grep_files\\\" is not granted to \\\"reader\\\": calling it needs scope tools:call:grep_files (or tools:call); this principal may call read_file\",\"kind\":\"not-granted\"}"
    );
    let body: Value = post(url, &call("read_file", json!({"path": "f.txt"})), &reader)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["result"]["isError"], false, "{body}");
}
