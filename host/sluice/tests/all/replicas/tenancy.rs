//! Tenancy across replicas (docs/api.md#tenancy): 20 principals with 5 sessions each, created
//! and prompted over two `sluice serve` replicas on one PostgreSQL database. No principal
//! reads, streams, prompts, resumes, cancels, approves or audits another's session (every
//! route tried, on the replica that did not create it: 404, the answer of a missing session);
//! each lists its own five; admin sees all hundred; the audit names each actor.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Value, json};
use sha2::Digest as _;

use super::{Cluster, Replica};

const PRINCIPALS: usize = 20;
const SESSIONS_EACH: usize = 5;
const ADMIN_TOKEN: &str = "admin-t0ken-for-the-tenancy-test";

fn name(i: usize) -> String {
    format!("p{i:02}")
}

fn token(i: usize) -> String {
    format!("sluice_tenant_{i:02}_token")
}

/// Sends `method path` as `bearer` (a POST with the body its route takes).
async fn send(replica: &Replica, bearer: &str, method: &str, path: &str) -> (u16, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut r = replica
        .client
        .request(method.clone(), format!("{}{path}", replica.base))
        .bearer_auth(bearer);
    if method == reqwest::Method::POST {
        r = r.json(&if path.contains("/prompts") {
            json!({"prompt": "what failed?"})
        } else if path.contains("/approvals/") {
            json!({"decision": "deny"})
        } else {
            json!({})
        });
    }
    let response = r.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn ids(list: &Value) -> BTreeSet<String> {
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_principals_see_only_their_own_sessions_across_replicas() {
    let Some(cluster) = Cluster::new(
        "twenty_principals_see_only_their_own_sessions_across_replicas",
        false,
    )
    .await
    else {
        return;
    };
    let mut tokens = String::new();
    for i in 0..PRINCIPALS {
        let hash: String = sha2::Sha256::digest(token(i).as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        write!(
            tokens,
            "\n[[server.tokens]]\nname = \"{}\"\nscopes = [\"sessions:read\", \"sessions:write\", \"approvals\"]\nsha256 = \"{hash}\"\n",
            name(i)
        )
        .unwrap();
    }
    let config = cluster.dir.path().join("sluice.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text + &tokens).unwrap();
    let env = [("SLUICE_SERVER_TOKEN", ADMIN_TOKEN)];
    let replicas = Arc::new([
        cluster.replica_with("a", &env),
        cluster.replica_with("b", &env),
    ]);

    // Each principal creates five sessions, alternating replicas, and prompts the first on
    // the other replica.
    let mut tasks = Vec::new();
    for i in 0..PRINCIPALS {
        let replicas = replicas.clone();
        tasks.push(tokio::spawn(async move {
            let mut own = Vec::new();
            for n in 0..SESSIONS_EACH {
                let (status, created) =
                    send(&replicas[n % 2], &token(i), "POST", "/sessions").await;
                assert_eq!(status, 201, "{created}");
                assert_eq!(created["owner"], name(i).as_str());
                own.push(created["id"].as_str().unwrap().to_string());
            }
            let (status, ended) = send(
                &replicas[1],
                &token(i),
                "POST",
                &format!("/sessions/{}/prompts?wait=true", own[0]),
            )
            .await;
            assert_eq!(
                (status, &ended["status"]),
                (200, &json!("completed")),
                "{ended}"
            );
            (own, ended["runId"].as_str().unwrap().to_string())
        }));
    }
    let mut sessions = Vec::new();
    for task in tasks {
        sessions.push(task.await.unwrap());
    }

    // Every route naming a session, tried by the next principal on the replica that did not
    // create it (and on the other): the 404 of a missing session.
    let routes: Vec<_> = sluice_server::ROUTES
        .iter()
        .filter(|r| r.path.contains("{id}"))
        .collect();
    assert_eq!(routes.len(), 8);
    let mut refused = 0;
    for (i, (own, run)) in sessions.iter().enumerate() {
        let intruder = (i + 1) % PRINCIPALS;
        for (n, id) in own.iter().enumerate() {
            let replica = &replicas[(n + 1) % 2];
            for route in &routes {
                // The first session of each is tried on every route; the rest on reading it.
                if n > 0 && route.path != "/sessions/{id}" {
                    continue;
                }
                let path = route
                    .path
                    .replace("{id}", id)
                    .replace("{call_id}", "call_1");
                let path = if path.ends_with("/events") {
                    format!("{path}?runId={run}")
                } else {
                    path
                };
                let (status, body) = send(replica, &token(intruder), route.method, &path).await;
                assert_eq!(
                    (status, body),
                    (
                        404,
                        json!({"error": format!("no session {id:?}"), "session": id})
                    ),
                    "{} {path} as {}",
                    route.method,
                    name(intruder)
                );
                refused += 1;
            }
        }
    }
    assert_eq!(refused, PRINCIPALS * (8 + (SESSIONS_EACH - 1)));

    // Each lists its own five, on either replica; admin sees all.
    for (i, (own, _)) in sessions.iter().enumerate() {
        for replica in replicas.iter() {
            let (status, list) = send(replica, &token(i), "GET", "/sessions?limit=1000").await;
            assert_eq!(status, 200);
            assert_eq!(ids(&list), own.iter().cloned().collect::<BTreeSet<_>>());
            assert_eq!(list["total"], SESSIONS_EACH);
        }
    }
    let (_, all) = send(&replicas[0], ADMIN_TOKEN, "GET", "/sessions?limit=1000").await;
    assert_eq!(all["total"], PRINCIPALS * SESSIONS_EACH);
    let everyone: BTreeSet<String> = sessions.iter().flat_map(|(own, _)| own.clone()).collect();
    assert_eq!(ids(&all), everyone);

    // Admin resumes p00's first session on A; its owner reads the actors on B.
    let first = &sessions[0].0[0];
    let (status, ended) = send(
        &replicas[0],
        ADMIN_TOKEN,
        "POST",
        &format!("/sessions/{first}/resume?wait=true"),
    )
    .await;
    assert_eq!(status, 200, "{ended}");
    let (status, audit) = send(
        &replicas[1],
        &token(0),
        "GET",
        &format!("/sessions/{first}/audit"),
    )
    .await;
    assert_eq!(status, 200, "{audit}");
    let actors: Vec<(&str, &str)> = audit["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["actor"].as_str().unwrap(), a["action"].as_str().unwrap()))
        .collect();
    assert_eq!(
        actors,
        [("p00", "create"), ("p00", "prompt"), ("admin", "resume")]
    );
}
