//! Principals and scopes (docs/api.md#principals-and-scopes): a `[[server.tokens]]` token
//! reaches exactly the routes its scopes allow, each other one answering 403 naming the scope;
//! the single token stays `admin`.

use serde_json::{Value, json};
use sha2::Digest as _;
use sluice_config::ServerToken;
use sluice_protocol::access::{Grant, Scope};
use sluice_server::{MCP_ROUTES, ROUTES};

use super::{Setup, TestServer};

const ADMIN_TOKEN: &str = "t0ken-for-tests";

/// A `[[server.tokens]]` entry named `name` whose token is `sluice_<name>`.
fn entry(name: &str, grants: &[Grant]) -> ServerToken {
    ServerToken {
        name: name.into(),
        grants: grants.to_vec(),
        sha256: sha2::Sha256::digest(token(name).as_bytes()).into(),
    }
}

fn token(name: &str) -> String {
    format!("sluice_{name}")
}

/// The token named after every scope but `missing`.
fn all_but(missing: Scope) -> String {
    format!("all-but-{}", missing.as_str().replace(':', "-"))
}

/// A path of `route` that names session `id`.
fn concrete(path: &str, id: &str) -> String {
    path.replace("{id}", id).replace("{call_id}", "call_1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_route_needs_its_scope_and_names_it_when_missing() {
    let mut tokens = Vec::new();
    for missing in Scope::ALL.into_iter().filter(|s| *s != Scope::Admin) {
        let grants: Vec<Grant> = Scope::ALL
            .into_iter()
            .filter(|s| *s != missing && *s != Scope::Admin)
            .map(Grant::Scope)
            .collect();
        tokens.push(entry(&all_but(missing), &grants));
    }
    tokens.push(entry(
        "nothing-but-one-tool",
        &[Grant::Tool("read_file".into())],
    ));
    let server = TestServer::start(Setup {
        token: Some(ADMIN_TOKEN.into()),
        tokens,
        ..Setup::default()
    })
    .await;
    let id = server.session().await; // As admin, so every principal may see it for now.
    let client = reqwest::Client::new();
    let mut refused = 0;
    for route in ROUTES.iter().chain(MCP_ROUTES) {
        let Some(scope) = route.scope else { continue };
        let path = concrete(route.path, &id);
        let method = reqwest::Method::from_bytes(route.method.as_bytes()).unwrap();
        let name = all_but(scope);
        let response = client
            .request(method.clone(), server.url(&path))
            .bearer_auth(token(&name))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 403, "{method} {path} as {name}");
        assert_eq!(
            response.headers()["www-authenticate"].to_str().unwrap(),
            format!("Bearer error=\"insufficient_scope\", scope=\"{scope}\"")
        );
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["scope"], scope.as_str(), "{method} {path}");
        assert_eq!(body["principal"], name.as_str());
        let held: Vec<&str> = Scope::ALL
            .iter()
            .filter(|s| **s != scope && **s != Scope::Admin)
            .map(|s| s.as_str())
            .collect();
        assert_eq!(
            body["error"],
            format!(
                "{method} {} needs scope {scope}; {name:?} has {}. Give the token the scope in its [[server.tokens]] entry (or the access token, from the authorization server)",
                route.path,
                held.join(", ")
            )
        );
        refused += 1;
    }
    assert_eq!(refused, 14, "every route with a scope was tried");
    // A grant of one tool reaches /mcp (the guard lets it through), and nothing else.
    let (status, _) = send(&client, &server, "GET", "/sessions", "nothing-but-one-tool").await;
    assert_eq!(status, 403);
    let (status, _) = send(&client, &server, "GET", "/tools", "nothing-but-one-tool").await;
    assert_eq!(status, 200, "a route without a scope takes any principal");
    server.stop().await;
}

async fn send(
    client: &reqwest::Client,
    server: &TestServer,
    method: &str,
    path: &str,
    name: &str,
) -> (u16, Value) {
    let response = client
        .request(
            reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
            server.url(path),
        )
        .bearer_auth(token(name))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holder_of_a_scope_passes_and_the_single_token_is_admin() {
    let server = TestServer::start(Setup {
        token: Some(ADMIN_TOKEN.into()),
        tokens: vec![
            entry("reader", &[Grant::Scope(Scope::SessionsRead)]),
            entry("configurer", &[Grant::Scope(Scope::Config)]),
        ],
        ..Setup::default()
    })
    .await;
    let client = reqwest::Client::new();
    let (status, body) = send(&client, &server, "GET", "/sessions", "reader").await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = send(&client, &server, "POST", "/sessions", "reader").await;
    assert_eq!((status, &body["scope"]), (403, &json!("sessions:write")));
    let (status, body) = send(&client, &server, "GET", "/agent/config", "configurer").await;
    assert_eq!(status, 200, "{body}");
    // The single token is admin: every route, as before.
    let (status, _) = server.post("/sessions", json!({})).await;
    assert_eq!(status, 201);
    let (status, _) = server.get("/agent/config").await;
    assert_eq!(status, 200);
    // A token that is none of them is 401, as before.
    let (status, body) = send(&client, &server, "GET", "/sessions", "stranger").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (401, Some("the bearer token is wrong"))
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_tokens_alone_guard_a_server() {
    // Without the single token, the named ones are still required.
    let server = TestServer::start(Setup {
        tokens: vec![entry("reader", &[Grant::Scope(Scope::SessionsRead)])],
        ..Setup::default()
    })
    .await;
    let response = reqwest::get(server.url("/sessions")).await.unwrap();
    assert_eq!(response.status().as_u16(), 401);
    let (status, _) = send(
        &reqwest::Client::new(),
        &server,
        "GET",
        "/sessions",
        "reader",
    )
    .await;
    assert_eq!(status, 200);
    server.stop().await;
}
