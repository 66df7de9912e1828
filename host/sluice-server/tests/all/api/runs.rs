//! Runs over HTTP: a whole run with the offline model, its events, cancellation, one run
//! per session, the body limit, and many sessions at once.

use std::time::Instant;

use serde_json::{Value, json};

use super::{EventReader, Setup, TestServer, assert_intact, read_events, replay};

const PROMPT: &str = "What errors are in the logs?";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_run_with_the_scripted_model() {
    let server = TestServer::scripted().await;
    let id = server.session().await;
    let ended = server.prompt_wait(&id, PROMPT).await;
    assert_eq!(ended["session"], id.as_str());
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["lastError"], Value::Null);
    assert!(ended["runId"].as_str().unwrap().starts_with("r-"));
    let answer = ended["answer"].as_str().unwrap();
    assert!(
        answer.contains("ERROR worker-3 lost connection to db-2"),
        "{answer}"
    );
    assert!(answer.contains("app.log"), "{answer}");
    // list_dir, grep_files, read_file, tail_file, then the answer.
    assert_eq!(ended["requests"], 5);

    let (status, body) = server.get(&format!("/sessions/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(body["session"]["status"], "completed");
    assert_eq!(body["session"]["messageCount"], 10);
    assert_eq!(body["run"]["runId"], ended["runId"]);
    assert_eq!(body["run"]["running"], false);
    let messages = body["messages"].as_array().unwrap();
    assert_intact(messages, PROMPT, answer, 65_536);
    let tools: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["toolCalls"][0]["name"].as_str())
        .collect();
    assert_eq!(tools, ["list_dir", "grep_files", "read_file", "tail_file"]);

    // The session is listed; nothing was shrunk.
    let (_, list) = server.get("/sessions").await;
    assert_eq!(list["sessions"][0]["id"], id.as_str());
    let (status, audit) = server.get(&format!("/sessions/{id}/audit")).await;
    assert_eq!(status, 200);
    assert_eq!(audit["session"], id.as_str());
    assert_eq!(audit["audit"], json!([]));
    // What each call cost: one record per observation, in order (messages 3, 5, 7, 9).
    let calls: Vec<(u64, &str, &str)> = audit["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let facts = &c["facts"];
            (
                c["seq"].as_u64().unwrap(),
                c["tool"].as_str().unwrap(),
                facts["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            (3, "list_dir", "returned"),
            (5, "grep_files", "returned"),
            (7, "read_file", "returned"),
            (9, "tail_file", "returned")
        ]
    );
    assert!(
        audit["calls"][2]["facts"]["digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );

    // A second prompt continues the same session.
    let again = server.prompt_wait(&id, "And in notes.txt?").await;
    assert_eq!(again["status"], "completed");
    assert!(server.messages(&id).await.len() > 10);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn events_stream_a_run_from_start_to_finish() {
    let server = TestServer::scripted().await;
    let id = server.session().await;
    // Subscribed before the run starts: the stream follows the session's next run.
    let stream = server
        .request(reqwest::Method::GET, &format!("/sessions/{id}/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    assert_eq!(
        stream.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let (status, started) = server
        .post(
            &format!("/sessions/{id}/prompts"),
            json!({"prompt": PROMPT}),
        )
        .await;
    assert_eq!(status, 202, "{started}");
    assert_eq!(started["status"], "running");
    let run_id = started["runId"].as_str().unwrap().to_string();
    assert_eq!(
        started["events"],
        format!("/sessions/{id}/events?runId={run_id}")
    );
    let events = read_events(stream).await;

    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"started"));
    assert_eq!(kinds.last(), Some(&"finished"));
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["runId"], run_id.as_str());
        assert_eq!(e["seq"], json!(i + 1));
    }
    assert_eq!(events[0]["prompt"], PROMPT);
    let finished: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_finished")
        .collect();
    let names: Vec<&str> = finished
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["list_dir", "grep_files", "read_file", "tail_file"]);
    for e in &finished {
        assert!(e["callId"].as_str().unwrap().starts_with("call_"));
        assert!(e["bytes"].as_u64().unwrap() > 0);
        assert_eq!(e["bytes"], e["fullBytes"]);
        assert_eq!(e["truncated"], false);
        assert_eq!(e["error"], false);
    }
    assert_eq!(kinds.iter().filter(|k| **k == "tool_started").count(), 4);
    assert_eq!(kinds.iter().filter(|k| **k == "model_request").count(), 5);
    assert!(
        events
            .iter()
            .filter(|e| e["type"] == "model_request")
            .all(|e| e["bytes"].as_u64().unwrap() > 0)
    );
    let end = events.last().unwrap();
    assert_eq!(end["status"], "completed");
    assert_eq!(end["requests"], 5);

    // The events of each tool call match the stored observations' sizes.
    let messages = server.messages(&id).await;
    for e in &finished {
        let m = messages
            .iter()
            .find(|m| m["toolCallId"] == e["callId"])
            .unwrap();
        assert_eq!(
            m["content"].as_str().unwrap().len() as u64,
            e["bytes"].as_u64().unwrap()
        );
    }

    // A finished run replays whole by its id.
    let replayed = server
        .events(&format!("/sessions/{id}/events?runId={run_id}"))
        .await;
    assert_eq!(replayed, events);
    let (status, body) = server
        .get(&format!("/sessions/{id}/events?runId=r-nope"))
        .await;
    assert_eq!(status, 404, "{body}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn events_show_shrink_and_retry() {
    // The model asks for the whole log, then the provider rejects the request as too long;
    // the loop shrinks the observation and retries once.
    let big: String = (0..200)
        .map(|i| format!("2026-11-30T01:00:00Z INFO line {i:05} of a long log\n"))
        .collect();
    let server = TestServer::start(Setup {
        backend: replay(&[
            json!({"toolCalls": [{"name": "read_file", "arguments": {"path": "big.log"}}]}),
            json!({"error": {"status": 400, "body": {"error": {"message": "This model's maximum context length is 10 tokens", "type": "invalid_request_error", "code": "context_length_exceeded"}}}}),
            json!({"content": "done"}),
        ]),
        ..Setup::default()
    })
    .await;
    std::fs::write(server.root().join("big.log"), &big).unwrap();
    let id = server.session().await;
    let ended = server.prompt_wait(&id, "read big.log").await;
    assert_eq!(ended["status"], "completed", "{ended}");
    let run_id = ended["runId"].as_str().unwrap();
    let events = server
        .events(&format!("/sessions/{id}/events?runId={run_id}"))
        .await;
    let shrunk = events
        .iter()
        .find(|e| e["type"] == "shrunk")
        .expect("a shrunk event");
    assert_eq!(shrunk["seqs"], json!([3]));
    assert!(shrunk["fromBytes"].as_u64().unwrap() > 2048);
    assert!(shrunk["toBytes"].as_u64().unwrap() <= 2048);
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "model_request")
            .count(),
        3
    );
    let (_, audit) = server.get(&format!("/sessions/{id}/audit")).await;
    assert_eq!(audit["audit"][0]["seq"], 3);
    assert!(audit["audit"][0]["original"].as_str().unwrap().len() > 2048);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelling_a_run_appends_nothing_after_the_prompt() {
    let server = TestServer::start(Setup {
        backend: replay(&[json!({"content": "too late", "delayMs": 30_000})]),
        ..Setup::default()
    })
    .await;
    let id = server.session().await;
    let t0 = Instant::now();
    let (status, started) = server
        .post(
            &format!("/sessions/{id}/prompts"),
            json!({"prompt": "take your time"}),
        )
        .await;
    assert_eq!(status, 202, "{started}");
    let (status, body) = server.get(&format!("/sessions/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(body["run"]["running"], true);
    // Cancel while the model request is in flight.
    let run_id = started["runId"].as_str().unwrap();
    let stream = server
        .request(
            reqwest::Method::GET,
            &format!("/sessions/{id}/events?runId={run_id}"),
        )
        .send()
        .await
        .unwrap();
    let mut reader = EventReader::new(stream);
    while let Some(event) = reader.next().await {
        if event["type"] == "model_request" {
            break;
        }
    }

    let (status, ended) = server
        .post(&format!("/sessions/{id}/cancel?wait=true"), json!({}))
        .await;
    assert_eq!(status, 200, "{ended}");
    assert_eq!(ended["status"], "aborted");
    assert_eq!(ended["runId"], started["runId"]);
    assert!(
        t0.elapsed().as_secs() < 10,
        "the delayed reply was not awaited"
    );

    let (_, body) = server.get(&format!("/sessions/{id}")).await;
    assert_eq!(body["session"]["status"], "aborted");
    assert_eq!(body["session"]["lastError"], "the run was cancelled");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["content"], "take your time");

    let events = server
        .events(&format!("/sessions/{id}/events?runId={run_id}"))
        .await;
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["started", "model_request", "finished"]);
    assert_eq!(events[2]["status"], "aborted");

    // Nothing left to cancel.
    let (status, body) = server
        .post(&format!("/sessions/{id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 409, "{body}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_second_prompt_while_a_run_is_in_progress_is_409() {
    let server = TestServer::start(Setup {
        backend: replay(&[json!({"content": "slow", "delayMs": 30_000})]),
        ..Setup::default()
    })
    .await;
    let id = server.session().await;
    let (status, started) = server
        .post(
            &format!("/sessions/{id}/prompts"),
            json!({"prompt": "first"}),
        )
        .await;
    assert_eq!(status, 202);
    for path in ["prompts", "prompts?wait=true"] {
        let (status, body) = server
            .post(
                &format!("/sessions/{id}/{path}"),
                json!({"prompt": "second"}),
            )
            .await;
        assert_eq!(status, 409, "{body}");
        assert_eq!(body["runId"], started["runId"]);
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("already has a run in progress")
        );
    }
    // A 409 says when to ask again.
    let refused = server
        .request(reqwest::Method::POST, &format!("/sessions/{id}/resume"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 409);
    assert_eq!(refused.headers()["retry-after"], "1");
    // Other sessions are not held up.
    let other = server.session().await;
    let (status, _) = server.get(&format!("/sessions/{other}")).await;
    assert_eq!(status, 200);
    let (status, _) = server
        .post(&format!("/sessions/{id}/cancel?wait=true"), json!({}))
        .await;
    assert_eq!(status, 200);
    // The second prompt was never stored.
    let messages = server.messages(&id).await;
    assert_eq!(messages.len(), 1);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bodies_over_the_limit_are_413() {
    let server = TestServer::scripted().await;
    let id = server.session().await;
    let limit = sluice_server::DEFAULT_MAX_BODY_BYTES;
    // With a length: refused before it is read.
    let prompt = "x".repeat(limit);
    let (status, body) = server
        .post(
            &format!("/sessions/{id}/prompts"),
            json!({"prompt": prompt}),
        )
        .await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["limitBytes"], limit);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("over the limit of 1048576 bytes")
    );
    // Without a length (chunked): refused as it passes the limit.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..20).map(|_| Ok(vec![b' '; 64 * 1024])).collect();
    let (status, body) = server
        .send(
            server
                .request(reqwest::Method::PUT, "/agent/config")
                .header("content-type", "application/json")
                .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
                    chunks,
                ))),
        )
        .await;
    assert_eq!(status, 413, "{body}");
    // Just under the limit is read (and then judged on its content).
    let fits = format!("{{\"prompt\": \"{}\"}}", "y".repeat(limit - 100));
    let (status, body) = server
        .send(
            server
                .request(
                    reqwest::Method::POST,
                    &format!("/sessions/{id}/prompts?wait=true"),
                )
                .header("content-type", "application/json")
                .body(fits),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // Nothing else was stored.
    let messages = server.messages(&id).await;
    assert_eq!(messages[0]["content"].as_str().unwrap().len(), limit - 100);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_requests_are_json_errors() {
    let server = TestServer::scripted().await;
    let id = server.session().await;
    for (path, body, status) in [
        ("/sessions/s-nope/prompts", json!({"prompt": "hi"}), 404),
        (
            &*format!("/sessions/{id}/prompts"),
            json!({"prompt": ""}),
            400,
        ),
        (
            &*format!("/sessions/{id}/prompts"),
            json!({"prompt": 5}),
            400,
        ),
        (
            &*format!("/sessions/{id}/prompts"),
            json!({"promt": "hi"}),
            400,
        ),
        (
            &*format!("/sessions/{id}/prompts?wait=maybe"),
            json!({"prompt": "hi"}),
            400,
        ),
    ] {
        let (got, answer) = server.post(path, body).await;
        assert_eq!(got, status, "{path}: {answer}");
        assert!(answer["error"].is_string(), "{answer}");
    }
    let (status, body) = server
        .send(
            server
                .request(reqwest::Method::POST, &format!("/sessions/{id}/prompts"))
                .header("content-type", "application/json")
                .body("{not json"),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("the request body is not the JSON expected")
    );
    for path in [
        "/sessions/s-nope",
        "/sessions/s-nope/audit",
        "/sessions/s-nope/approvals",
        "/sessions/s-nope/events",
    ] {
        let (status, body) = server.get(path).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert_eq!(body["error"], "no session \"s-nope\"");
    }
    let (status, body) = server.get("/nowhere").await;
    assert_eq!(status, 404);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("no route GET /nowhere")
    );
    let (status, body) = server
        .send(server.request(reqwest::Method::DELETE, "/sessions"))
        .await;
    assert_eq!(status, 405, "{body}");
    // Nothing was stored by the refused prompts.
    assert!(server.messages(&id).await.is_empty());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn fifty_sessions_run_at_once_with_intact_transcripts() {
    let server = std::sync::Arc::new(TestServer::scripted().await);
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..50 {
        let server = server.clone();
        tasks.push(tokio::spawn(async move {
            let id = server.session().await;
            let prompt = format!("Session {i}: what errors are in the logs?");
            let ended = server.prompt_wait(&id, &prompt).await;
            (id, prompt, ended)
        }));
    }
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        let (id, prompt, ended) = task.await.unwrap();
        assert_eq!(ended["status"], "completed", "{ended}");
        assert_eq!(ended["requests"], 5);
        let answer = ended["answer"].as_str().unwrap();
        let messages = server.messages(&id).await;
        assert_eq!(messages.len(), 10, "{id}");
        assert_intact(&messages, &prompt, answer, 65_536);
        assert!(ids.insert(id));
    }
    let (_, list) = server.get("/sessions").await;
    assert_eq!(list["sessions"].as_array().unwrap().len(), 50);
    assert!(
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["status"] == "completed")
    );
    let (_, health) = server.get("/healthz").await;
    assert_eq!(health["ok"], true, "{health}");
    assert_eq!(health["runsInProgress"], 0, "{health}");
    #[allow(clippy::print_stderr)]
    {
        eprintln!("50 concurrent sessions in {:?}", t0.elapsed());
    }
    if let Ok(server) = std::sync::Arc::try_unwrap(server) {
        server.stop().await;
    }
}
