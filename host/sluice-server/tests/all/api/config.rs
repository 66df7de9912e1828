//! `GET/PUT /agent/config`: row P13 (docs/regressions.md#p13) over the API (400 naming the key, the
//! value and the range; nothing changes), unknown and boot-only keys, and changes that
//! apply to the next run.

use serde_json::{Value, json};

use super::TestServer;

fn defaults() -> Value {
    json!({"max_tool_result_bytes": 65_536, "max_turns": 50, "auto_approve": false})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn p13_out_of_range_or_wrongly_typed_values_are_400_and_change_nothing() {
    let server = TestServer::scripted().await;
    let (status, config) = server.get("/agent/config").await;
    assert_eq!(status, 200);
    assert_eq!(config, defaults());
    for (value, shown) in [
        (json!(1023), "1023"),
        (json!(1_048_577), "1048577"),
        (json!(1.5), "1.5"),
        (json!("x"), "\"x\""),
    ] {
        let (status, body) = server
            .put("/agent/config", json!({"max_tool_result_bytes": value}))
            .await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(
            body,
            json!({
                "error": format!("agent.max_tool_result_bytes must be an integer from 1024 to 1048576 (bytes); got {shown} (from PUT /agent/config)"),
                "key": "max_tool_result_bytes",
                "value": value,
                "allowed": "an integer from 1024 to 1048576 (bytes)",
                "min": 1024,
                "max": 1_048_576,
            })
        );
        let (_, config) = server.get("/agent/config").await;
        assert_eq!(config, defaults());
    }
    // All or nothing: a good key beside a bad one is not applied either.
    let (status, body) = server
        .put(
            "/agent/config",
            json!({"max_turns": 7, "max_tool_result_bytes": 1023, "auto_approve": "yes"}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["key"], "max_tool_result_bytes");
    assert_eq!(body["more"][0]["key"], "auto_approve");
    assert_eq!(body["more"][0]["allowed"], "true or false");
    let (_, config) = server.get("/agent/config").await;
    assert_eq!(config, defaults());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unknown_and_boot_only_keys_are_refused() {
    let server = TestServer::scripted().await;
    for (key, value, says) in [
        (
            "max_tool_result",
            json!(4096),
            "unknown configuration key \"max_tool_result\"",
        ),
        (
            "roots",
            json!({"logs": "/var/log"}),
            "roots is read at boot only",
        ),
        (
            "store",
            json!({"path": "/tmp/x.db"}),
            "store is read at boot only",
        ),
        (
            "model.name",
            json!("gpt"),
            "model.name is read at boot only",
        ),
        (
            "agent.system_prompt",
            json!("be brief"),
            "agent.system_prompt is read at boot only",
        ),
    ] {
        let mut body = serde_json::Map::new();
        body.insert(key.into(), value.clone());
        body.insert("max_turns".into(), json!(3));
        let (status, answer) = server.put("/agent/config", Value::Object(body)).await;
        assert_eq!(status, 400, "{answer}");
        assert!(
            answer["error"].as_str().unwrap().starts_with(says),
            "{answer}"
        );
        assert_eq!(answer["key"], key);
        assert_eq!(answer["value"], value);
        assert_eq!(
            answer["runtimeKeys"],
            json!(["max_tool_result_bytes", "max_turns", "auto_approve"])
        );
        let (_, config) = server.get("/agent/config").await;
        assert_eq!(config, defaults());
    }
    for body in [json!([1]), json!("max_turns=3")] {
        let (status, _) = server.put("/agent/config", body).await;
        assert_eq!(status, 400);
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn valid_changes_apply_at_once_to_the_next_run() {
    let server = TestServer::scripted().await;
    let (status, config) = server
        .put(
            "/agent/config",
            json!({"agent.max_tool_result_bytes": 1024, "max_turns": 2}),
        )
        .await;
    assert_eq!(status, 200, "{config}");
    assert_eq!(
        config,
        json!({"max_tool_result_bytes": 1024, "max_turns": 2, "auto_approve": false})
    );
    let (_, again) = server.get("/agent/config").await;
    assert_eq!(again, config);
    let id = server.session().await;
    let ended = server
        .prompt_wait(&id, "What errors are in the logs?")
        .await;
    assert_eq!(ended["status"], "completed");
    assert_eq!(
        ended["lastError"],
        "Reached maxTurns=2 without a final answer."
    );
    assert_eq!(ended["requests"], 2);
    for m in server.messages(&id).await {
        if m["role"] == "tool" {
            assert!(m["content"].as_str().unwrap().len() <= 1024);
        }
    }
    // An empty change changes nothing.
    let (status, same) = server.put("/agent/config", json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(same, config);
    server.stop().await;
}
