//! Runs across two replicas and the CLI on one database.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::{Cluster, kinds};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_sessions_over_two_replicas_complete_intact() {
    let Some(cluster) =
        Cluster::new("fifty_sessions_over_two_replicas_complete_intact", false).await
    else {
        return;
    };
    let replicas = std::sync::Arc::new([cluster.replica("a"), cluster.replica("b")]);
    let mut tasks = Vec::new();
    for i in 0..50 {
        let replicas = replicas.clone();
        tasks.push(tokio::spawn(async move {
            // Created on one replica, prompted on the other.
            let id = replicas[i % 2].session().await;
            let prompt = format!("Session {i}: what errors are in the logs?");
            let (status, ended) = replicas[(i + 1) % 2]
                .post(
                    &format!("/sessions/{id}/prompts?wait=true"),
                    json!({"prompt": prompt}),
                )
                .await;
            assert_eq!(status, 200, "{ended}");
            (i, id, prompt, ended)
        }));
    }
    for task in tasks {
        let (i, id, prompt, ended) = task.await.unwrap();
        assert_eq!(ended["status"], "completed", "{ended}");
        assert_eq!(ended["requests"], 5);
        // Read back on the replica that created it.
        let messages = replicas[i % 2].messages(&id).await;
        assert_eq!(messages.len(), 10, "{id}");
        for (n, m) in messages.iter().enumerate() {
            assert_eq!(m["seq"], json!(n + 1));
            let role = if n == 0 {
                "user"
            } else if n % 2 == 1 {
                "assistant"
            } else {
                "tool"
            };
            assert_eq!(m["role"], role, "{id} message {}", n + 1);
        }
        assert_eq!(messages[0]["content"], prompt.as_str());
        assert_eq!(messages[9]["content"], ended["answer"]);
        // Its run's events replay on either replica, from seq 1.
        let run = ended["runId"].as_str().unwrap();
        let mut events = Vec::new();
        replicas[i % 2]
            .stream(&format!("/sessions/{id}/events?runId={run}"))
            .await
            .read_to_finish(&mut events)
            .await;
        assert_eq!(events[0]["type"], "started");
        assert_eq!(events.last().unwrap()["status"], "completed");
        for (n, e) in events.iter().enumerate() {
            assert_eq!(e["seq"], json!(n + 1));
        }
    }
    let (_, list) = replicas[1].get("/sessions").await;
    assert_eq!(list["sessions"].as_array().unwrap().len(), 50);
    for r in replicas.iter() {
        assert!(
            !r.printed().contains(&cluster.password),
            "the password was printed"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_on_a_is_refused_streamed_and_cancelled_from_b() {
    let Some(cluster) =
        Cluster::new("a_run_on_a_is_refused_streamed_and_cancelled_from_b", true).await
    else {
        return;
    };
    let a = cluster.replica("a");
    let b = cluster.replica("b");
    let id = a.session().await;
    let (status, started) = a
        .post(
            &format!("/sessions/{id}/prompts"),
            json!({"prompt": "first"}),
        )
        .await;
    assert_eq!(status, 202, "{started}");
    let run = started["runId"].as_str().unwrap().to_string();
    cluster.model().next_request();

    // B refuses a second prompt and a resume: 409, nothing stored.
    let (status, body) = b
        .post(
            &format!("/sessions/{id}/prompts"),
            json!({"prompt": "second"}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["session"], id.as_str());
    let (status, _) = b.post(&format!("/sessions/{id}/resume"), json!({})).await;
    assert_eq!(status, 409);
    let (_, session) = b.get(&format!("/sessions/{id}")).await;
    assert_eq!(session["run"], json!({"runId": run, "running": true}));

    // B streams A's run: the run in progress, from its start.
    let mut stream = b.stream(&format!("/sessions/{id}/events")).await;
    let mut events = Vec::new();
    while events.len() < 2 {
        events.push(stream.next().await.unwrap());
    }
    assert_eq!(kinds(&events), ["started", "model_request"]);
    assert_eq!(events[0]["runId"], run.as_str());
    assert_eq!(events[0]["prompt"], "first");

    // A cancel on B ends A's run `aborted`.
    let (status, ended) = b
        .post(&format!("/sessions/{id}/cancel?wait=true"), json!({}))
        .await;
    assert_eq!(status, 200, "{ended}");
    assert_eq!(ended["status"], "aborted");
    assert_eq!(ended["runId"], run.as_str());
    stream.read_to_finish(&mut events).await;
    assert_eq!(kinds(&events), ["started", "model_request", "finished"]);
    assert_eq!(events[2]["status"], "aborted");
    let (_, session) = a.get(&format!("/sessions/{id}")).await;
    assert_eq!(session["session"]["status"], "aborted");
    assert_eq!(session["run"]["running"], false);
    let messages = session["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0]["content"], "first");
    // The held request of the cancelled run may now be answered; nobody reads it.
    cluster.model().release_one();

    // Now B runs the session to its end.
    cluster.model().release_one();
    let (status, ended) = b
        .post(
            &format!("/sessions/{id}/prompts?wait=true"),
            json!({"prompt": "third"}),
        )
        .await;
    assert_eq!(status, 200, "{ended}");
    assert_eq!(ended["status"], "completed");
    let contents: Vec<&str> = Vec::new();
    let messages = a.messages(&id).await;
    let mut contents = contents;
    contents.extend(messages.iter().map(|m| m["content"].as_str().unwrap()));
    assert_eq!(contents, ["first", "third", "done"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_mid_run_b_resumes_with_nothing_lost_or_duplicated() {
    let Some(cluster) = Cluster::new(
        "a_killed_mid_run_b_resumes_with_nothing_lost_or_duplicated",
        true,
    )
    .await
    else {
        return;
    };
    let mut a = cluster.replica("a");
    let b = cluster.replica("b");
    let id = a.session().await;
    let (status, started) = a
        .post(
            &format!("/sessions/{id}/prompts"),
            json!({"prompt": "what failed?"}),
        )
        .await;
    assert_eq!(status, 202, "{started}");
    let run = started["runId"].as_str().unwrap().to_string();
    cluster.model().next_request();
    let mut stream = b
        .stream(&format!("/sessions/{id}/events?runId={run}"))
        .await;
    // A kill once A has stored its `model_request` event (the model may see the request
    // before A stores it: killed in between, the event was never there).
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        let sent = event["type"] == "model_request";
        events.push(event);
        if sent {
            break;
        }
    }
    a.kill();
    // The stream on B ends: A's run will not finish.
    stream.read_to_finish(&mut events).await;
    assert_eq!(events.last().unwrap()["status"], "error");
    // The lock died with A's connection: B resumes at once and completes the session.
    cluster.model().release_one(); // A's held request (A is gone).
    cluster.model().release_one(); // B's.
    let (status, ended) = b
        .post(&format!("/sessions/{id}/resume?wait=true"), json!({}))
        .await;
    assert_eq!(status, 200, "{ended}");
    assert_eq!(ended["status"], "completed", "{ended}");
    let messages = b.messages(&id).await;
    let contents: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(contents, [("user", "what failed?"), ("assistant", "done")]);
    // A's run was closed by B's, as an error; its events replay whole.
    let mut replay = Vec::new();
    b.stream(&format!("/sessions/{id}/events?runId={run}"))
        .await
        .read_to_finish(&mut replay)
        .await;
    assert_eq!(kinds(&replay), ["started", "model_request", "finished"]);
    assert_eq!(replay[2]["status"], "error");
    assert!(
        replay[2]["lastError"]
            .as_str()
            .unwrap()
            .contains("stopped before the run ended")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lost_connection_ends_the_run_error_and_the_session_resumes() {
    let Some(cluster) = Cluster::new(
        "a_lost_connection_ends_the_run_error_and_the_session_resumes",
        true,
    )
    .await
    else {
        return;
    };
    let a = cluster.replica("a");
    let b = cluster.replica("b");
    let id = a.session().await;
    let (status, _) = a
        .post(
            &format!("/sessions/{id}/prompts"),
            json!({"prompt": "what failed?"}),
        )
        .await;
    assert_eq!(status, 202);
    cluster.model().next_request();
    assert!(cluster.cut_run_connections().await >= 1);
    // The model answers; A cannot store the answer on its lost connection: the run ends
    // `error`, and nothing of it was written.
    cluster.model().release_one();
    let ended = loop {
        let (_, s) = a.get(&format!("/sessions/{id}")).await;
        if s["run"]["running"] == false && s["session"]["status"] != "running" {
            break s;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(ended["session"]["status"], "error", "{ended}");
    assert!(
        ended["session"]["lastError"]
            .as_str()
            .unwrap()
            .contains("append to session"),
        "{ended}"
    );
    let messages = ended["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{messages:?}");
    // Resumable, on either replica.
    cluster.model().release_one();
    let (status, done) = b
        .post(&format!("/sessions/{id}/resume?wait=true"), json!({}))
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "completed");
    assert_eq!(b.messages(&id).await.len(), 2);
    for r in [&a, &b] {
        assert!(
            !r.printed().contains(&cluster.password),
            "the password was printed"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_configuration_put_on_a_is_seen_by_b_and_after_a_restart() {
    let Some(cluster) = Cluster::new(
        "a_configuration_put_on_a_is_seen_by_b_and_after_a_restart",
        false,
    )
    .await
    else {
        return;
    };
    let a = cluster.replica("a");
    let b = cluster.replica("b");
    let changed = json!({"max_tool_result_bytes": 8192, "max_turns": 2, "auto_approve": false});
    let (status, body) = a
        .send(
            reqwest::Method::PUT,
            "/agent/config",
            Some(json!({"max_tool_result_bytes": 8192, "max_turns": 2})),
        )
        .await;
    assert_eq!((status, &body), (200, &changed));
    assert_eq!(b.get("/agent/config").await, (200, changed.clone()));
    // A run on B uses it: the scripted model needs 5 requests, 2 are allowed.
    let id = b.session().await;
    let (_, ended) = b
        .post(
            &format!("/sessions/{id}/prompts?wait=true"),
            json!({"prompt": "errors?"}),
        )
        .await;
    assert_eq!(ended["requests"], 2, "{ended}");
    assert_eq!(
        ended["lastError"],
        "Reached maxTurns=2 without a final answer."
    );
    drop(b);
    let restarted = cluster.replica("c");
    assert_eq!(restarted.get("/agent/config").await, (200, changed));
}

/// Item 6: `sluice store migrate`, `sluice run` and `sluice session …` on the database the
/// replicas share, with one run per session between the CLI and a replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_cli_shares_the_database_and_its_one_run_per_session() {
    let Some(cluster) = Cluster::new(
        "the_cli_shares_the_database_and_its_one_run_per_session",
        true,
    )
    .await
    else {
        return;
    };
    let shown = sluice_store::redact_url(&cluster.url);
    assert!(shown.contains(":***@"), "{shown}");
    let migrate = cluster.cli_output(true, &["store", "migrate"]);
    let expected = |from: i64| {
        json!({"store": shown, "fromVersion": from, "toVersion": sluice_store::PgStore::SCHEMA_VERSION})
            .to_string()
            + "\n"
    };
    assert_eq!(migrate, (Some(0), expected(0), String::new()));
    let again = cluster.cli_output(false, &["store", "migrate"]);
    assert_eq!(
        again,
        (
            Some(0),
            expected(sluice_store::PgStore::SCHEMA_VERSION),
            String::new()
        )
    );

    // `sluice run` holds session "cli" (its model request waits); replica A refuses it, and
    // so does a second `sluice run`.
    let a = cluster.replica("a");
    let first = cluster
        .cli(true, &["run", "--session", "cli", "first"])
        .spawn()
        .unwrap();
    let request = cluster.model().next_request();
    assert_eq!(
        request["messages"].as_array().unwrap().last().unwrap()["content"],
        "first"
    );
    let (status, body) = a
        .post("/sessions/cli/prompts", json!({"prompt": "refused"}))
        .await;
    assert_eq!(status, 409, "{body}");
    let busy = "sluice: error: session \"cli\" already has a run in progress (one run per session, across every process using this store); nothing was added: wait for that run to end\n";
    let second = cluster.cli_output(false, &["run", "--session", "cli", "refused too"]);
    assert_eq!(second, (Some(2), String::new(), busy.to_string()));
    cluster.model().release_one();
    let first = cluster.checked(first.wait_with_output().unwrap());
    assert_eq!(
        first,
        (
            Some(0),
            "done\n".to_string(),
            "sluice: no session \"cli\" yet: created it\nsession cli: completed\n".to_string()
        )
    );

    // The CLI and the replica read the same transcript.
    let (code, listed, _) = cluster.cli_output(false, &["session", "list"]);
    assert_eq!(code, Some(0));
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["id"], "cli");
    assert_eq!(listed[0]["status"], "completed");
    assert_eq!(listed[0]["messageCount"], 2);
    let (code, show, _) = cluster.cli_output(true, &["session", "show", "cli"]);
    assert_eq!(code, Some(0));
    let show: Value = serde_json::from_str(&show).unwrap();
    assert_eq!(show["messages"], json!(a.messages("cli").await));
    let contents: Vec<&str> = show["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["first", "done"]);

    // Now replica A runs it; the CLI is refused meanwhile.
    let (status, accepted) = a
        .post("/sessions/cli/prompts", json!({"prompt": "third"}))
        .await;
    assert_eq!(status, 202, "{accepted}");
    cluster.model().next_request();
    let refused = cluster.cli_output(true, &["run", "--session", "cli", "refused"]);
    assert_eq!(refused, (Some(2), String::new(), busy.to_string()));
    cluster.model().release_one();
    // Followed by its run id: the run may end before the stream opens, and a stream
    // without one, opened after the session's run ended, waits for the next run.
    let mut events = Vec::new();
    a.stream(accepted["events"].as_str().unwrap())
        .await
        .read_to_finish(&mut events)
        .await;
    assert_eq!(events.last().unwrap()["status"], "completed");
    let contents: Vec<String> = a
        .messages("cli")
        .await
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(contents, ["first", "done", "third", "done"]);
}

/// Item 7: a database that cannot be reached stops every command at once, naming the URL
/// without its password. Needs no PostgreSQL: nothing listens on port 1.
#[test]
fn an_unreachable_database_stops_every_command_naming_it_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let url = "postgres://sluice:hunter2-x9@127.0.0.1:1/sluice?connect_timeout=5";
    let refused = "session store postgres://sluice:***@127.0.0.1:1/sluice?connect_timeout=5: cannot connect to the database: error connecting to server: Connection refused (os error 111)";
    // `--root` only where the command takes it (`session` and `store` refuse it).
    let root = format!("--root={}", dir.path().display());
    for (args, prefix) in [
        (
            &["serve", "--listen", "127.0.0.1:0", root.as_str()][..],
            "failed to set up the agent: ",
        ),
        (&["run", "hello", root.as_str()][..], ""),
        (&["session", "list"][..], ""),
        (&["store", "migrate"][..], ""),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["--store-url", url])
            .args(args)
            .env("SLUICE_CACHE_DIR", crate::warm_cache())
            .env("SLUICE_LOG", "debug")
            .env_remove("SLUICE_STORE")
            .env_remove("SLUICE_STORE_URL")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        // The error is the one line that says so (a compile started in the background may
        // still log after it at `debug`).
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("sluice: error: "))
            .collect();
        assert_eq!(
            errors,
            [format!("sluice: error: {prefix}{refused}")],
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("hunter2"), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
