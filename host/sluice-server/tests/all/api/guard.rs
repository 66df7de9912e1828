//! The guard (docs/mcp.md#http-guard): on the default loopback server without a token, a request
//! naming another `Host` (DNS rebinding), a cross-origin request (a blind cross-site POST)
//! and a body that is not declared JSON are refused before any route runs, and nothing is
//! stored. Before the guard, `POST /sessions` with `Host: attacker.example` and
//! `Content-Type: text/plain` answered 201 and a prompt posted the same way ran.

use serde_json::{Value, json};
use sluice_server::ROUTES;

use super::{Setup, TestServer};

/// Sends `method path` with `headers` (and `body` when given) and returns (status, JSON).
async fn send(
    server: &TestServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, Value) {
    let mut r = server.request(
        reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
        path,
    );
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    if let Some(b) = body {
        r = r.body(b.to_string());
    }
    server.send(r).await
}

async fn session_count(server: &TestServer) -> usize {
    let (status, body) = server.get("/sessions").await;
    assert_eq!(status, 200, "{body}");
    body["sessions"].as_array().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebinding_host_is_refused_on_every_route() {
    let server = TestServer::scripted().await;
    let id = server.session().await;
    let host = [("host", "attacker.example")];
    let (status, body) = send(&server, "POST", "/sessions", &host, None).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["host"], "attacker.example");
    assert_eq!(
        body["allowedHosts"],
        json!(["127.0.0.1", "[::1]", "localhost", "*.localhost"])
    );
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("refusing Host \"attacker.example\": this server answers only to 127.0.0.1, [::1], localhost, *.localhost (a guard against DNS rebinding)"),
        "{body}"
    );
    for route in ROUTES {
        let path = route
            .path
            .replace("{id}", &id)
            .replace("{call_id}", "call_1");
        for name in ["attacker.example:8080", "localhost.attacker.example"] {
            let (status, body) = send(&server, route.method, &path, &[("host", name)], None).await;
            assert_eq!(status, 403, "{} {path} {name}: {body}", route.method);
        }
    }
    // The names of the machine itself still work, with or without the port.
    let port = server.base.rsplit(':').next().unwrap().to_string();
    for name in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        "LOCALHOST".to_string(),
        format!("sluice.localhost:{port}"),
    ] {
        let (status, body) = send(&server, "GET", "/healthz", &[("host", &name)], None).await;
        assert_eq!(status, 200, "{name}: {body}");
    }
    assert_eq!(session_count(&server).await, 1);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blind_cross_site_post_is_refused() {
    let server = TestServer::scripted().await;
    let id = server.session().await;
    // What a web page's form or fetch(no-cors) sends: text/plain, its own Origin.
    let prompt = format!("/sessions/{id}/prompts");
    let cross = [
        ("origin", "http://evil.example"),
        ("content-type", "text/plain"),
    ];
    let (status, body) = send(&server, "POST", &prompt, &cross, Some(r#"{"prompt":"x"}"#)).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["origin"], "http://evil.example");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("refusing a cross-origin request from Origin \"http://evil.example\""),
        "{body}"
    );
    // Cross-origin with the right type is refused as well, and so is `Origin: null`.
    for origin in ["http://evil.example", "null", "http://localhost:1"] {
        let headers = [("origin", origin), ("content-type", "application/json")];
        let (status, _) = send(&server, "POST", "/sessions", &headers, Some("{}")).await;
        assert_eq!(status, 403, "{origin}");
    }
    // The server's own origin is not cross-origin.
    let own = server.base.clone();
    let (status, body) = send(&server, "POST", "/sessions", &[("origin", &own)], None).await;
    assert_eq!(status, 201, "{body}");
    // Nothing from the refused requests was stored.
    assert_eq!(session_count(&server).await, 2);
    assert!(server.messages(&id).await.is_empty());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_must_be_declared_json() {
    let server = TestServer::scripted().await;
    let id = server.session().await;
    let prompt = format!("/sessions/{id}/prompts?wait=true");
    let body = Some(r#"{"prompt":"What failed?"}"#);
    for (content_type, shown) in [
        (Some("text/plain"), json!("text/plain")),
        (
            Some("application/x-www-form-urlencoded"),
            json!("application/x-www-form-urlencoded"),
        ),
        (None, Value::Null),
    ] {
        let headers: Vec<(&str, &str)> = content_type
            .map(|t| ("content-type", t))
            .into_iter()
            .collect();
        let (status, answer) = send(&server, "POST", &prompt, &headers, body).await;
        assert_eq!(status, 415, "{content_type:?}: {answer}");
        assert_eq!(answer["contentType"], shown);
        assert_eq!(answer["allowed"], "application/json");
    }
    let (status, answer) = send(
        &server,
        "PUT",
        "/agent/config",
        &[("content-type", "text/plain")],
        Some(r#"{"max_turns":3}"#),
    )
    .await;
    assert_eq!(status, 415, "{answer}");
    let (_, config) = server.get("/agent/config").await;
    assert_eq!(config["max_turns"], 50);
    assert!(server.messages(&id).await.is_empty());
    // Declared JSON (with a charset) is served; so is a POST without a body.
    let json_type = [("content-type", "application/json; charset=utf-8")];
    let (status, answer) = send(&server, "POST", &prompt, &json_type, body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["status"], "completed");
    let (status, _) = send(&server, "POST", "/sessions", &[], None).await;
    assert_eq!(status, 201);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_names_and_tokens_open_what_they_should() {
    let server = TestServer::start(Setup {
        allowed_hosts: vec!["Sluice.Example".into()],
        ..Setup::default()
    })
    .await;
    let (status, body) = send(
        &server,
        "POST",
        "/sessions",
        &[("host", "sluice.example")],
        None,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    // A proxied page on that name is its own origin.
    let proxied = [
        ("host", "sluice.example"),
        ("origin", "https://sluice.example"),
    ];
    let (status, body) = send(&server, "POST", "/sessions", &proxied, None).await;
    assert_eq!(status, 201, "{body}");
    let (status, _) = send(
        &server,
        "POST",
        "/sessions",
        &[("host", "other.example")],
        None,
    )
    .await;
    assert_eq!(status, 403);
    server.stop().await;

    // With a token, a cross-origin request that carries it is served; without it, 401.
    let server = TestServer::start(Setup {
        token: Some("t0ken".into()),
        ..Setup::default()
    })
    .await;
    let cross = [("origin", "http://console.example")];
    let (status, body) = send(&server, "POST", "/sessions", &cross, None).await;
    assert_eq!(status, 201, "{body}");
    let anonymous = reqwest::Client::new()
        .post(server.url("/sessions"))
        .header("origin", "http://console.example")
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
    server.stop().await;
}

/// Header games a browser cannot play but a proxy in front might pass on, over raw TCP
/// (reqwest would not send them): two `Host` headers with the good one first, an
/// absolute-form request line naming `attacker.example` with `Host: 127.0.0.1`, and two
/// `Origin` headers (the server's own, then another). Each was served before (201).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_games_are_refused() {
    let server = TestServer::scripted().await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let post = |line: &str, headers: &str| {
        format!("{line}\r\n{headers}Content-Length: 0\r\nConnection: close\r\n\r\n")
    };
    let two_hosts = post(
        "POST /sessions HTTP/1.1",
        &format!("Host: {addr}\r\nHost: attacker.example\r\n"),
    );
    let (status, body) = super::listen::raw(&addr, &two_hosts).await;
    assert_eq!(status, 400, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body,
        json!({
            "error": "refusing a request with 2 Host headers: a request may carry at most one Host header (the guard will not choose between them; fix the client or the proxy in front)",
            "header": "Host",
            "count": 2,
        })
    );
    let absolute = post(
        "POST http://attacker.example/sessions HTTP/1.1",
        "Host: 127.0.0.1\r\n",
    );
    let (status, body) = super::listen::raw(&addr, &absolute).await;
    assert_eq!(status, 403, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["host"], "attacker.example");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("refusing Host \"attacker.example\": this server answers only to"),
        "{body}"
    );
    let two_origins = post(
        "POST /sessions HTTP/1.1",
        &format!("Host: {addr}\r\nOrigin: http://{addr}\r\nOrigin: http://evil.example\r\n"),
    );
    let (status, body) = super::listen::raw(&addr, &two_origins).await;
    assert_eq!(status, 400, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["header"], "Origin");
    assert_eq!(body["count"], 2);
    // An absolute-form target naming the server itself is served.
    let own = post(
        &format!("POST http://{addr}/sessions HTTP/1.1"),
        &format!("Host: {addr}\r\n"),
    );
    let (status, body) = super::listen::raw(&addr, &own).await;
    assert_eq!(status, 201, "{body}");
    // Only that one was stored.
    assert_eq!(session_count(&server).await, 1);
    server.stop().await;
}
