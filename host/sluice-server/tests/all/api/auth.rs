//! Bearer tokens: every route refuses a request without the token or with a wrong one, and
//! the server refuses to start beyond loopback without one.

use serde_json::{Value, json};
use sluice_server::{ROUTES, ServeOptions, Server, ServerError};

use super::{Setup, TestServer, make_root, services};

const TOKEN: &str = "t0ken-for-tests";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_route_needs_the_token() {
    let server = TestServer::start(Setup {
        token: Some(TOKEN.into()),
        ..Setup::default()
    })
    .await;
    let id = server.session().await; // With the token.
    let anonymous = reqwest::Client::new();
    for route in ROUTES {
        let path = route
            .path
            .replace("{id}", &id)
            .replace("{call_id}", "call_1");
        let method = reqwest::Method::from_bytes(route.method.as_bytes()).unwrap();
        for auth in [None, Some("Bearer wrong-token"), Some("Basic dDBrZW4=")] {
            let mut r = anonymous
                .request(method.clone(), server.url(&path))
                .json(&json!({}));
            if let Some(a) = auth {
                r = r.header("authorization", a);
            }
            let response = r.send().await.unwrap();
            assert_eq!(response.status().as_u16(), 401, "{method} {path} {auth:?}");
            assert_eq!(
                response.headers()["www-authenticate"].to_str().unwrap(),
                "Bearer realm=\"sluice\""
            );
            let body: Value = response.json().await.unwrap();
            assert!(body["error"].is_string());
        }
    }
    // A route that does not exist is refused the same way: nothing leaks without the token.
    let response = anonymous.get(server.url("/nowhere")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 401);
    // With the token, every route is there (none answers the router's own 404 or 405).
    for route in ROUTES {
        let path = route
            .path
            .replace("{id}", &id)
            .replace("{call_id}", "call_1");
        // Follow a run that does not exist, rather than wait for the next one.
        let path = if path.ends_with("/events") {
            format!("{path}?runId=r-none")
        } else {
            path
        };
        let method = reqwest::Method::from_bytes(route.method.as_bytes()).unwrap();
        let body = if path.ends_with("/prompts") {
            json!({"prompt": "hi"})
        } else {
            json!({})
        };
        let (status, answer) = server
            .send(server.request(method.clone(), &path).json(&body))
            .await;
        assert!(
            status != 401 && status != 405,
            "{method} {path}: {status} {answer}"
        );
        let error = answer["error"].as_str().unwrap_or("");
        assert!(!error.starts_with("no route"), "{method} {path}: {answer}");
    }
    let (status, doc) = server.get("/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    let paths: std::collections::BTreeSet<&str> = ROUTES.iter().map(|r| r.path).collect();
    let documented: std::collections::BTreeSet<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(documented, paths);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_start_beyond_loopback_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let root = make_root(dir.path());
    for listen in ["0.0.0.0:0", "[::]:0", "10.1.2.3:8080"] {
        let options = ServeOptions {
            listen: listen.parse().unwrap(),
            token: None,
            ..ServeOptions::default()
        };
        let Err(e) = Server::new(services(dir.path(), &root, &Setup::default()), options) else {
            panic!("{listen}: started without a token");
        };
        assert!(matches!(e, ServerError::TokenRequired { .. }), "{e}");
        assert!(e.to_string().contains("SLUICE_SERVER_TOKEN"), "{e}");
    }
    // With a token it may; on loopback it may without one.
    let with_token = ServeOptions {
        listen: "0.0.0.0:0".parse().unwrap(),
        token: Some(TOKEN.into()),
        ..ServeOptions::default()
    };
    assert!(Server::new(services(dir.path(), &root, &Setup::default()), with_token).is_ok());
    let loopback = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..ServeOptions::default()
    };
    assert!(Server::new(services(dir.path(), &root, &Setup::default()), loopback).is_ok());
}
