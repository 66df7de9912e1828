//! Code mode (docs/code-mode.md) everywhere tools are served: each script runs through
//! `sluice call`, a session (`sluice run` with the replay model, read back from its store) and
//! `sluice mcp`, and the three observations are the same bytes. The session's transcript holds
//! that observation and none of the script's inner ones; its audit holds the program.

use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, ClientRequest, Request};
use rmcp::service::{PeerRequestOptions, RunningService};
use serde_json::{Value, json};
use sluice_store::Store;
use sluice_tests::logs::{COUNT_LEVELS, levelled_log};

use super::{call, client, command, root_flag, sluice_call, text};

/// A root with logs and a key file, served through the three paths with `config` as
/// `sluice.toml`.
struct Paths {
    dir: tempfile::TempDir,
    flags: Vec<String>,
    mcp: RunningService<RoleClient, ()>,
}

impl Paths {
    async fn start(config: &str, log_lines: usize) -> (Paths, [usize; 3]) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("keys")).unwrap();
        let (text, counts) = levelled_log(log_lines);
        std::fs::write(root.join("app.log"), text).unwrap();
        // grep_files passes over files larger than 5 MiB (docs/paging.md): a smaller log to grep.
        std::fs::create_dir_all(root.join("logs")).unwrap();
        std::fs::write(root.join("logs/app.log"), levelled_log(20_000).0).unwrap();
        std::fs::write(
            root.join("keys/deploy_key"),
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
        )
        .unwrap();
        let conf = dir.path().join("sluice.toml");
        std::fs::write(&conf, config).unwrap();
        let flags = vec![
            "--config".to_string(),
            conf.display().to_string(),
            "--root".to_string(),
            root_flag(&root),
        ];
        let refs: Vec<&str> = flags.iter().map(String::as_str).collect();
        let mcp = client(&refs).await;
        (Paths { dir, flags, mcp }, counts)
    }

    fn flags(&self) -> Vec<&str> {
        self.flags.iter().map(String::as_str).collect()
    }

    /// The observation of `script` through `sluice call`, a session and MCP: the same text
    /// on each, returned as JSON.
    async fn observe(&self, script: &str) -> Value {
        let args = json!({ "script": script });
        let by_call = sluice_call(&self.flags(), "run_script", &args.to_string()).await;
        let by_session = self.session(&args).await;
        let by_mcp = text(&call(&self.mcp, "run_script", args.clone()).await).to_string();
        assert_eq!(by_session, by_call, "a session and sluice call differ");
        assert_eq!(by_mcp, by_call, "MCP and sluice call differ");
        serde_json::from_str(&by_call).unwrap_or_else(|e| panic!("{e}: {by_call}"))
    }

    /// The observation of one `run_script` call in a session the replay model drives: read
    /// from the store, with the transcript checked to hold nothing else of the script's.
    async fn session(&self, args: &Value) -> String {
        let n = std::fs::read_dir(self.dir.path()).unwrap().count();
        let replay = self.dir.path().join(format!("replay-{n}.jsonl"));
        let db = self.dir.path().join(format!("sessions-{n}.db"));
        let turn = json!({"content": "", "toolCalls": [{"name": "run_script", "arguments": args}]});
        std::fs::write(&replay, format!("{turn}\n{{\"content\":\"done\"}}\n")).unwrap();
        let model = format!("replay:{}", replay.display());
        let db_flag = db.display().to_string();
        let mut all = self.flags();
        all.extend([
            "--store", &db_flag, "run", "--model", &model, "--json", "Run it.",
        ]);
        let out = command(&all).output().await.unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let run: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(run["answer"], "done", "{run}");
        let id = run["session"].as_str().unwrap();
        let store = sluice_store::SqliteStore::open(&db).unwrap();
        let messages = store.messages(id).await.unwrap();
        let roles: Vec<String> = messages
            .iter()
            .map(|m| format!("{:?}", m.message.role))
            .collect();
        // The prompt, the call, its one observation, the answer (and the system prompt,
        // when the session stores one first).
        let tools: Vec<_> = messages
            .iter()
            .filter(|m| m.message.role == sluice_protocol::Role::Tool)
            .collect();
        assert_eq!(tools.len(), 1, "{roles:?}");
        let observation = tools[0].message.content.clone();
        // The audit holds the program (docs/code-mode.md#the-audit).
        let audit = store.audit(id).await.unwrap();
        let script = args["script"].as_str().unwrap();
        let program = json!(script).to_string();
        assert!(
            audit.iter().any(|a| a.original.contains(&program)),
            "{audit:?}"
        );
        observation
    }

    async fn end(self) {
        self.mcp.cancel().await.unwrap();
    }
}

/// Code-mode scripts under the default limits (docs/code-mode.md#limits: 30 s, 256 MiB,
/// 1,000 calls), each the same through the three paths.
#[tokio::test]
async fn each_script_is_the_same_through_call_session_and_mcp() {
    // About 50 MB.
    let (paths, [errors, warns, infos]) = Paths::start("", 740_000).await;

    let obs = paths.observe(COUNT_LEVELS).await;
    assert_eq!(obs["ok"], true, "{obs}");
    let r = &obs["result"];
    assert_eq!(
        r["result"]["counts"],
        json!({"ERROR": errors, "WARN": warns, "INFO": infos})
    );
    assert_eq!(r["calls"], r["result"]["pages"]);
    assert!(r["innerBytes"].as_u64().unwrap() > 50_000_000, "{r}");
    // The inner observations stayed out: a few hundred bytes, not 50 MB.
    assert!(obs.to_string().len() < 300, "{obs}");

    // A grep aggregated by worker: ERROR is on lines 0, 10, 20, …, so even workers only.
    let obs = paths
        .observe(
            r#"const by = {}; let cursor;
               do {
                 const page = tools.call("grep_files", cursor ? {pattern: " ERROR ", path: "logs", cursor} : {pattern: " ERROR ", path: "logs"});
                 if (!page.ok) return page;
                 for (const m of page.result.results) { const w = m.text.split(" ")[2]; by[w] = (by[w] || 0) + 1; }
                 cursor = page.result.nextCursor;
               } while (cursor != null);
               return Object.keys(by).sort().join(",");"#,
        )
        .await;
    assert_eq!(
        obs["result"]["result"],
        "worker-0,worker-10,worker-12,worker-14,worker-2,worker-4,worker-6,worker-8",
        "{obs}"
    );

    // The key file stays refused, and a tool not granted is unknown.
    let obs = paths
        .observe(r#"return [tools.call("read_file", {path: "keys/deploy_key"}), tools.call("shell", {cmd: "id"})];"#)
        .await;
    let inner = &obs["result"]["result"];
    assert_eq!(
        inner[0],
        json!({"ok":false,"error":"refusing to read key material: keys/deploy_key","kind":"key-material"})
    );
    assert_eq!(inner[1]["error"], "unknown_tool", "{inner}");
    assert_eq!(inner[1]["name"], "shell");

    // 2,000 calls: the call limit, with its key.
    let obs = paths
        .observe(r#"for (let i = 0; i < 2000; i++) tools.call("list_dir", {}); return 1;"#)
        .await;
    assert_eq!(obs["kind"], "resource-limit", "{obs}");
    assert!(
        obs["error"]
            .as_str()
            .unwrap()
            .contains("(code_mode.max_inner_calls)"),
        "{obs}"
    );

    // Allocating without end: the memory limit at the default 256 MiB, with its key.
    let obs = paths
        .observe("const a = []; for (;;) a.push('x'.repeat(1 << 16) + a.length);")
        .await;
    assert_eq!(obs["kind"], "memory-limit", "{obs}");
    assert!(
        obs["error"].as_str().unwrap().contains("memory_mib"),
        "{obs}"
    );

    // 100 MB returned: cut to the cap with the usual marker (not JSON, so as text here).
    let args = json!({"script": "return 'x'.repeat(100 * 1000 * 1000);"});
    let by_call = sluice_call(&paths.flags(), "run_script", &args.to_string()).await;
    assert!(by_call.len() <= 65_536, "{}", by_call.len());
    assert!(
        by_call.starts_with(
            r#"{"ok":true,"result":{"calls":0,"innerBytes":0,"resultBytes":100000002,"result":"\"xxx"#
        ),
        "{}",
        &by_call[..200]
    );
    assert!(by_call.contains("…[truncated; full result is "));
    assert_eq!(paths.session(&args).await, by_call);
    assert_eq!(text(&call(&paths.mcp, "run_script", args).await), by_call);

    // A syntax error names the line.
    let obs = paths.observe("const a = 1;\nconst b = ;\nreturn a;").await;
    assert_eq!(obs["kind"], "syntax-error", "{obs}");
    assert!(obs["error"].as_str().unwrap().contains("line 2"), "{obs}");
    paths.end().await;
}

/// `while (true) {}` ends at the script's timeout, through each path, with the key that
/// changes it; the next call works.
#[tokio::test]
async fn an_endless_loop_ends_at_its_timeout_through_each_path() {
    let (paths, _) = Paths::start("[tools.run_script]\ntimeout_ms = 1000\n", 10).await;
    let started = Instant::now();
    let obs = paths.observe("while (true) {}").await;
    let elapsed = started.elapsed();
    assert_eq!(
        obs,
        json!({"ok":false,"error":"the tool ran past its timeout of 1000 ms and was stopped; raise tools.run_script.timeout_ms in the configuration file (1 to 3600000 ms) if it needs longer","kind":"timeout"})
    );
    // Three runs of at least the 1 s timeout (the message names it, not the 30 s default;
    // how soon after it a guest stops is measured in tests/all/host_limits.rs).
    assert!(elapsed >= Duration::from_secs(3), "{elapsed:?}");
    let obs = paths.observe("return 1 + 1").await;
    assert_eq!(obs["result"]["result"], 2);
    paths.end().await;
}

/// Cancelling an MCP call stops a running script: with one call slot, the next call runs,
/// which it can only once the script let go of the slot.
#[tokio::test]
async fn cancelling_over_mcp_stops_a_running_script() {
    let (paths, _) = Paths::start(
        "[runtime]\nmax_concurrent_calls = 1\n[tools.run_script]\ntimeout_ms = 60000\n",
        10,
    )
    .await;
    let params = CallToolRequestParams::new("run_script").with_arguments(
        json!({"script": "while (true) {}"})
            .as_object()
            .unwrap()
            .clone(),
    );
    let handle = paths
        .mcp
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(params)),
            PeerRequestOptions::default(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    handle.cancel(Some("test".into())).await.unwrap();
    // The one slot is free again: the next script runs (were the first still running, this
    // call would wait for the slot and end `busy` after runtime.queue_timeout_ms).
    let next = call(&paths.mcp, "run_script", json!({"script": "return 2"})).await;
    assert_eq!(next.is_error, Some(false), "{}", text(&next));
    let obs: Value = serde_json::from_str(text(&next)).unwrap();
    assert_eq!(obs["result"]["result"], 2);
    paths.end().await;
}

/// Sixteen scripts at once over one MCP connection: each gets its own answer.
#[tokio::test]
async fn sixteen_scripts_at_once_over_mcp() {
    let (paths, _) = Paths::start("", 16).await;
    let calls = (0..16).map(|i| {
        let peer = paths.mcp.peer().clone();
        tokio::spawn(async move {
            let script = format!(
                r#"const page = tools.call("tail_file", {{path: "app.log", lines: {}}}); return [{i}, page.result.count];"#,
                i + 1
            );
            let params = CallToolRequestParams::new("run_script")
                .with_arguments(json!({ "script": script }).as_object().unwrap().clone());
            peer.call_tool(params).await.unwrap()
        })
    });
    let calls: Vec<_> = calls.collect();
    for (i, handle) in calls.into_iter().enumerate() {
        let result = handle.await.unwrap();
        let obs: Value = serde_json::from_str(text(&result)).unwrap();
        assert_eq!(obs["result"]["result"], json!([i, i + 1]), "{obs}");
    }
    paths.end().await;
}

/// Code mode offline (docs/code-mode.md#run_script): `sluice run` with the scripted model answers an aggregation
/// prompt with one `run_script` call whose observation is small, and the right counts. The log
/// has lines of every error word in several cases (the search finds each line once, however
/// many words it holds) and pages of 2 MiB (several of them).
#[tokio::test]
async fn the_scripted_model_counts_by_worker_in_one_script_call() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    let mut expected = std::collections::BTreeMap::<String, u64>::new();
    for i in 0..100_000u64 {
        let worker = format!("worker-{}", i % 7);
        let what = match i % 50 {
            0 => "ERROR lost connection",
            1 => "error: failed to flush",
            2 => "WARN fatal? no, a Panic averted",
            _ => "INFO processed batch",
        };
        if i % 50 < 3 {
            *expected.entry(worker.clone()).or_default() += 1;
        }
        text.push_str(&format!("2026-11-30T01:00:00Z {worker} {what} {i}\n"));
    }
    assert!(text.len() > 5 << 20, "several pages: {}", text.len());
    std::fs::write(dir.path().join("app.log"), &text).unwrap();
    let root = root_flag(dir.path());
    let db = dir.path().join("s.db").display().to_string();
    let prompt = "How many errors per worker in app.log?";
    let out = command(&["--root", &root, "--store", &db, "run", "--json", prompt])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let answer = run["answer"].as_str().unwrap();
    let total: u64 = expected.values().sum();
    assert!(
        answer.contains(&format!("Matched: {total} of 100000 lines in 1 file")),
        "{answer}"
    );
    for (worker, n) in &expected {
        assert!(answer.contains(&format!("- {worker}: {n}\n")), "{answer}");
    }
    let store = sluice_store::SqliteStore::open(std::path::Path::new(&db)).unwrap();
    let messages = store
        .messages(run["session"].as_str().unwrap())
        .await
        .unwrap();
    let calls: Vec<&str> = messages
        .iter()
        .flat_map(|m| m.message.tool_calls.iter().map(|c| c.name.as_str()))
        .collect();
    assert_eq!(calls, ["run_script"]);
    let observation = messages
        .iter()
        .find(|m| m.message.role == sluice_protocol::Role::Tool)
        .unwrap();
    assert!(
        observation.message.content.len() < 1_000,
        "{}",
        observation.message.content
    );
}
