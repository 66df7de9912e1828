//! Failover after `kill -9` of the replica running a session (docs/replicas.md#failover),
//! trial by trial: while A runs the session, B answers 409 with `Retry-After: 1`; A is
//! killed and reaped (its process has exited, so the kernel has closed its sockets); B
//! refuses only while PostgreSQL still holds A's lock, and once PostgreSQL has ended A's
//! connection B resumes the session at once, with nothing lost or duplicated. What the test
//! waits for is a state (the lock gone), never a time.

use std::io::Write as _;

use serde_json::json;

use super::{Cluster, kinds};
use sluice_test_support::held_model::EVENT_TIMEOUT;

/// B's answer to a prompt for a session another replica runs, after the session's id.
const ELSEWHERE: &str = "already has a run in progress in another Sluice process using the same session store (one run per session): nothing was added; wait for that run to end, or cancel it where it runs";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_replicas_session_is_free_once_postgres_ends_its_connection() {
    let Some(cluster) = Cluster::new(
        "a_killed_replicas_session_is_free_once_postgres_ends_its_connection",
        true,
    )
    .await
    else {
        return;
    };
    let b = cluster.replica("b");
    for trial in 0..3 {
        let mut a = cluster.replica(&format!("a{trial}"));
        let id = a.session().await;
        let (status, started) = a
            .post(
                &format!("/sessions/{id}/prompts"),
                json!({"prompt": "what failed?"}),
            )
            .await;
        assert_eq!(status, 202, "trial {trial}: {started}");
        cluster.model().next_request(); // A's run waits for the model.
        assert_eq!(
            cluster.run_locks().await,
            1,
            "trial {trial}: A holds the lock"
        );

        // B refuses while A runs it, and says when to ask again.
        let resume = format!("/sessions/{id}/resume");
        let (status, retry, body) = b.post_retry(&resume, json!({})).await;
        assert_eq!(status, 409, "trial {trial}: {body}");
        assert_eq!(retry.as_deref(), Some("1"), "trial {trial}");
        assert_eq!(body["error"], format!("session {id} {ELSEWHERE}"));

        // SIGKILL, and wait until the process is reaped: it has exited, its sockets are
        // closed. B may refuse only while PostgreSQL still holds the lock (its backend has
        // not yet read the end of A's connection), and says when to ask again each time.
        a.kill();
        let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
        let mut refused = 0;
        let run = loop {
            let held = cluster.run_locks().await;
            let (status, retry, body) = b.post_retry(&resume, json!({})).await;
            if status == 202 {
                break body["runId"].as_str().unwrap().to_string();
            }
            assert_eq!(
                (status, retry.as_deref(), held),
                (409, Some("1"), 1),
                "trial {trial}: refused after the lock was gone: {body}"
            );
            refused += 1;
            assert!(
                tokio::time::Instant::now() < deadline,
                "trial {trial}: PostgreSQL never ended the killed replica's connection"
            );
        };
        // Past the harness's capture: how many times B refused after A was reaped.
        let _ = writeln!(
            std::io::stderr(),
            "trial {trial}: {refused} refusal(s) after A was reaped"
        );

        // B's run completes the session.
        let mut stream = b
            .stream(&format!("/sessions/{id}/events?runId={run}"))
            .await;
        cluster.model().release_one(); // A's held request (A is gone).
        cluster.model().release_one(); // B's.
        let mut events = Vec::new();
        stream.read_to_finish(&mut events).await;
        assert_eq!(
            kinds(&events),
            ["started", "model_request", "model_reply", "finished"],
            "trial {trial}"
        );
        assert_eq!(events[3]["status"], "completed", "trial {trial}");
        cluster.model().next_request(); // B's request, answered.
        let messages = b.messages(&id).await;
        let contents: Vec<(&str, &str)> = messages
            .iter()
            .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
            .collect();
        assert_eq!(
            contents,
            [("user", "what failed?"), ("assistant", "done")],
            "trial {trial}"
        );
        assert_eq!(
            cluster.run_locks().await,
            0,
            "trial {trial}: B's run let go"
        );
    }
}

/// `/healthz` reports the store (docs/storage.md#health). 200 while PostgreSQL serves the database;
/// 503 with the store's error once it refuses it (connections to it turned off and ended);
/// 200 again when they are allowed back. Waits for states, not times (the ping is cached
/// for a second).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_reports_a_store_that_is_down_and_back() {
    let Some(cluster) = Cluster::new("healthz_reports_a_store_that_is_down_and_back", false).await
    else {
        return;
    };
    let a = cluster.replica("a");
    let (status, body) = a.get("/healthz").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["store"]["ok"], true, "{body}");

    cluster.allow_connections(false).await;
    let (status, body) = until(&a, 503).await;
    assert_eq!(status, 503);
    assert_eq!(body["ok"], false, "{body}");
    assert_eq!(body["store"]["ok"], false, "{body}");
    assert!(
        body["store"]["error"]
            .as_str()
            .is_some_and(|e| !e.is_empty()),
        "{body}"
    );
    let text = body.to_string();
    assert!(
        !text.contains(&cluster.password),
        "the password was shown: {text}"
    );

    cluster.allow_connections(true).await;
    let (_, body) = until(&a, 200).await;
    assert_eq!(body["store"]["ok"], true, "{body}");
}

/// `/healthz` of `replica`, asked every 100 ms until it answers `status` (at most
/// EVENT_TIMEOUT).
async fn until(replica: &super::Replica, status: u16) -> (u16, serde_json::Value) {
    let started = std::time::Instant::now();
    loop {
        let (got, body) = replica.get("/healthz").await;
        if got == status {
            return (got, body);
        }
        assert!(
            started.elapsed() < EVENT_TIMEOUT,
            "/healthz still answers {got}: {body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
