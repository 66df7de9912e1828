//! Destructive calls over HTTP: the run pauses `awaiting_approval`, the operator approves or
//! denies, and the next run stores exactly one observation for the call.

use serde_json::json;

use super::{Setup, TestServer, replay};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn approve_then_deny_a_destructive_call() {
    let server = TestServer::start(Setup {
        backend: replay(&[
            json!({"content": "Reading.", "toolCalls": [{"id": "call_a", "name": "read_file", "arguments": {"path": "app.log"}}]}),
            json!({"content": "It says worker-3 lost its connection."}),
            json!({"content": "Again.", "toolCalls": [{"id": "call_d", "name": "read_file", "arguments": {"path": "notes.txt"}}]}),
            json!({"content": "Denied, so I stop."}),
        ]),
        destructive: &["read_file"],
        ..Setup::default()
    })
    .await;
    let id = server.session().await;
    let ended = server.prompt_wait(&id, "read app.log").await;
    assert_eq!(ended["status"], "awaiting_approval", "{ended}");
    assert_eq!(ended["requests"], 1);
    let events = server
        .events(&format!(
            "/sessions/{id}/events?runId={}",
            ended["runId"].as_str().unwrap()
        ))
        .await;
    let waiting = events
        .iter()
        .find(|e| e["type"] == "awaiting_approval")
        .expect("an awaiting_approval event");
    assert_eq!(waiting["callId"], "call_a");
    assert_eq!(waiting["name"], "read_file");
    assert_eq!(events.last().unwrap()["status"], "awaiting_approval");

    let (status, list) = server.get(&format!("/sessions/{id}/approvals")).await;
    assert_eq!(status, 200);
    assert_eq!(
        list,
        json!({"session": id, "approvals": [{"callId": "call_a", "tool": "read_file", "arguments": "{\"path\":\"app.log\"}", "decision": null}]})
    );
    // A new prompt cannot jump the queue.
    let (status, body) = server
        .post(
            &format!("/sessions/{id}/prompts"),
            json!({"prompt": "never mind"}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["callId"], "call_a");
    assert_eq!(body["tool"], "read_file");
    // Unknown calls and bad decisions.
    let (status, body) = server
        .post(
            &format!("/sessions/{id}/approvals/call_x"),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("calls waiting: call_a")
    );
    let (status, _) = server
        .post(
            &format!("/sessions/{id}/approvals/call_a"),
            json!({"decision": "maybe"}),
        )
        .await;
    assert_eq!(status, 400);

    let (status, body) = server
        .post(
            &format!("/sessions/{id}/approvals/call_a"),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["decision"], "approve");
    assert_eq!(body["tool"], "read_file");
    let (_, list) = server.get(&format!("/sessions/{id}/approvals")).await;
    assert_eq!(list["approvals"][0]["decision"], "approve");

    let (status, ended) = server
        .post(&format!("/sessions/{id}/resume?wait=true"), json!({}))
        .await;
    assert_eq!(status, 200, "{ended}");
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["answer"], "It says worker-3 lost its connection.");
    let messages = server.messages(&id).await;
    let observations: Vec<_> = messages
        .iter()
        .filter(|m| m["toolCallId"] == "call_a")
        .collect();
    assert_eq!(observations.len(), 1, "{messages:?}");
    assert!(
        observations[0]["content"]
            .as_str()
            .unwrap()
            .contains("ERROR worker-3 lost connection to db-2")
    );
    let (_, list) = server.get(&format!("/sessions/{id}/approvals")).await;
    assert_eq!(list["approvals"], json!([]));

    // Deny: the next run stores the denial as the call's one observation.
    let ended = server.prompt_wait(&id, "and notes.txt?").await;
    assert_eq!(ended["status"], "awaiting_approval");
    let (status, _) = server
        .post(
            &format!("/sessions/{id}/approvals/call_d"),
            json!({"decision": "deny"}),
        )
        .await;
    assert_eq!(status, 200);
    let (_, ended) = server
        .post(&format!("/sessions/{id}/resume?wait=true"), json!({}))
        .await;
    assert_eq!(ended["status"], "completed", "{ended}");
    let messages = server.messages(&id).await;
    let denied: Vec<_> = messages
        .iter()
        .filter(|m| m["toolCallId"] == "call_d")
        .collect();
    assert_eq!(denied.len(), 1);
    let denial = denied[0]["content"].as_str().unwrap();
    assert!(
        denial.starts_with("{\"ok\":false,\"error\":\"the operator denied this call"),
        "{denial}"
    );
    assert_eq!(messages.len(), 8);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn auto_approve_set_at_run_time_skips_the_wait() {
    let server = TestServer::start(Setup {
        backend: replay(&[
            json!({"toolCalls": [{"id": "call_a", "name": "read_file", "arguments": {"path": "notes.txt"}}]}),
            json!({"content": "nothing to see"}),
        ]),
        destructive: &["read_file"],
        ..Setup::default()
    })
    .await;
    let (status, _) = server
        .put("/agent/config", json!({"auto_approve": true}))
        .await;
    assert_eq!(status, 200);
    let id = server.session().await;
    let ended = server.prompt_wait(&id, "read notes.txt").await;
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(server.messages(&id).await.len(), 4);
    server.stop().await;
}
