//! Tenancy (docs/api.md#tenancy): a session belongs to the principal that created it; another
//! principal without `admin` gets, on every route naming it, the very 404 of a session that
//! does not exist; lists show one's own; the audit names every actor.

use serde_json::{Value, json};
use sha2::Digest as _;
use sluice_config::ServerToken;
use sluice_protocol::access::{Grant, Scope};
use sluice_server::ROUTES;

use super::{Setup, TestServer};

const ADMIN_TOKEN: &str = "t0ken-for-tests";

fn user(name: &str) -> ServerToken {
    ServerToken {
        name: name.into(),
        grants: [Scope::SessionsRead, Scope::SessionsWrite, Scope::Approvals]
            .into_iter()
            .map(Grant::Scope)
            .collect(),
        sha256: sha2::Sha256::digest(format!("sluice_{name}").as_bytes()).into(),
    }
}

/// Sends `method path` (with `{}` as the body of a POST) as `who` (`None`: the single token).
async fn send(server: &TestServer, who: Option<&str>, method: &str, path: &str) -> (u16, Value) {
    let token = who.map_or(ADMIN_TOKEN.to_string(), |n| format!("sluice_{n}"));
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut r = reqwest::Client::new()
        .request(method.clone(), server.url(path))
        .bearer_auth(token);
    if method == reqwest::Method::POST {
        let body = if path.contains("/prompts") {
            json!({"prompt": "what failed?"})
        } else if path.contains("/approvals/") {
            json!({"decision": "approve"})
        } else {
            json!({})
        };
        r = r.json(&body);
    }
    let response = r.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_principals_session_is_not_found_on_every_route() {
    let server = TestServer::start(Setup {
        token: Some(ADMIN_TOKEN.into()),
        tokens: vec![user("alice"), user("bob")],
        ..Setup::default()
    })
    .await;
    let (status, created) = send(&server, Some("alice"), "POST", "/sessions").await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["owner"], "alice");
    let id = created["id"].as_str().unwrap().to_string();
    let (status, ran) = send(
        &server,
        Some("alice"),
        "POST",
        &format!("/sessions/{id}/prompts?wait=true"),
    )
    .await;
    assert_eq!(
        (status, &ran["status"]),
        (200, &json!("completed")),
        "{ran}"
    );
    let run_id = ran["runId"].as_str().unwrap().to_string();
    let mut tried = 0;
    for route in ROUTES.iter().filter(|r| r.path.contains("{id}")) {
        for (session, bob_or_missing) in [(id.as_str(), "bob"), ("s-none", "alice")] {
            let path = route
                .path
                .replace("{id}", session)
                .replace("{call_id}", "call_1");
            let path = if path.ends_with("/events") {
                format!("{path}?runId={run_id}")
            } else {
                path
            };
            let (status, body) = send(&server, Some(bob_or_missing), route.method, &path).await;
            assert_eq!(
                status, 404,
                "{} {path} as {bob_or_missing}: {body}",
                route.method
            );
            // The answer is the one a session that does not exist gets, id for id.
            assert_eq!(
                body,
                json!({"error": format!("no session {session:?}"), "session": session}),
                "{} {path}",
                route.method
            );
        }
        tried += 1;
    }
    assert_eq!(tried, 8, "every route naming a session");
    // Lists show one's own; admin sees all.
    let (_, bobs) = send(&server, Some("bob"), "POST", "/sessions").await;
    let ids = |list: &Value| -> Vec<String> {
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    };
    let (_, list) = send(&server, Some("bob"), "GET", "/sessions").await;
    assert_eq!(ids(&list), [bobs["id"].as_str().unwrap()]);
    assert_eq!(list["total"], 1);
    let (_, list) = send(&server, None, "GET", "/sessions").await;
    assert_eq!(ids(&list), [bobs["id"].as_str().unwrap(), id.as_str()]);
    // Admin acts on alice's session; the audit names each actor.
    let (status, _) = send(
        &server,
        None,
        "POST",
        &format!("/sessions/{id}/resume?wait=true"),
    )
    .await;
    assert_eq!(status, 200);
    let (status, audit) = send(
        &server,
        Some("alice"),
        "GET",
        &format!("/sessions/{id}/audit"),
    )
    .await;
    assert_eq!(status, 200, "{audit}");
    let actions: Vec<(String, String)> = audit["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["actor"].as_str().unwrap().to_string(),
                a["action"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("alice".to_string(), "create".to_string()),
            ("alice".to_string(), "prompt".to_string()),
            ("admin".to_string(), "resume".to_string()),
        ]
    );
    assert_eq!(audit["actions"][1]["detail"], run_id.as_str());
    assert_eq!(audit["actions"][1]["session"], id.as_str());
    // A configuration change is recorded with its actor and values.
    let (status, _) = server.put("/agent/config", json!({"max_turns": 7})).await;
    assert_eq!(status, 200);
    let (status, changes) = send(&server, None, "GET", "/agent/config/changes").await;
    assert_eq!(status, 200);
    assert_eq!(changes["changes"].as_array().unwrap().len(), 1);
    assert_eq!(changes["changes"][0]["actor"], "admin");
    assert_eq!(changes["changes"][0]["action"], "config");
    assert_eq!(changes["changes"][0]["detail"], "{\"max_turns\":7}");
    assert_eq!(changes["changes"][0]["session"], Value::Null);
    server.stop().await;
}
