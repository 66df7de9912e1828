//! rmcp's client over stdio against `sluice mcp`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, ClientRequest, ProgressNotificationParam, Request, RequestMetaObject,
    ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

use super::{call, client, command, root_flag, sluice_call, text};

/// A root with a small text file, a log, a key file and a nested directory.
fn files() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("f.txt"), "one\r\ntwo\nthree").unwrap();
    std::fs::write(
        p.join("app.log"),
        "INFO start\nERROR db lost\nINFO retry\nERROR db lost again\n",
    )
    .unwrap();
    std::fs::create_dir(p.join("keys")).unwrap();
    std::fs::write(
        p.join("keys/deploy_key"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB\n-----END OPENSSH PRIVATE KEY-----\n",
    )
    .unwrap();
    std::fs::create_dir(p.join("sub")).unwrap();
    std::fs::write(p.join("sub/x.txt"), "x\n").unwrap();
    dir
}

#[tokio::test]
async fn tools_list_serves_every_tool_with_its_schema_and_annotations() {
    let dir = files();
    let root = root_flag(dir.path());
    let client = client(&["--root", &root]).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "read_file",
            "tail_file",
            "grep_files",
            "list_dir",
            "run_script"
        ]
    );
    // The schemas and descriptions are `sluice tools`' own.
    let out = command(&["--root", &root, "tools"]).output().await.unwrap();
    let listed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    for (tool, expected) in tools.iter().zip(&listed) {
        assert_eq!(tool.name, expected["name"].as_str().unwrap());
        assert_eq!(
            tool.description.as_deref(),
            Some(expected["description"].as_str().unwrap())
        );
        assert_eq!(
            Value::Object((*tool.input_schema).clone()),
            expected["inputSchema"]
        );
        assert_eq!(tool.output_schema, None);
        // The file tools read the same twice; run_script runs what a script says (read-only
        // here, as every tool it may call is).
        let annotations = if tool.name == "run_script" {
            json!({"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false})
        } else {
            json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
        };
        assert_eq!(
            serde_json::to_value(&tool.annotations).unwrap(),
            annotations,
            "{}",
            tool.name
        );
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn tools_list_pages_follow_the_cursor() {
    let dir = files();
    let conf = dir.path().join("sluice.toml");
    std::fs::write(&conf, "[mcp]\ntools_per_page = 3\n").unwrap();
    let root = root_flag(dir.path());
    let conf = conf.display().to_string();
    let client = client(&["--root", &root, "--config", &conf]).await;
    let first = client.list_tools(None).await.unwrap();
    assert_eq!(first.tools.len(), 3);
    assert_eq!(first.next_cursor.as_deref(), Some("3"));
    let second = client
        .list_tools(Some(
            rmcp::model::PaginatedRequestParams::default().with_cursor(Some("3".into())),
        ))
        .await
        .unwrap();
    let names: Vec<&str> = second.tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["list_dir", "run_script"]);
    assert_eq!(second.next_cursor, None);
    let bad = client
        .list_tools(Some(
            rmcp::model::PaginatedRequestParams::default().with_cursor(Some("9".into())),
        ))
        .await
        .unwrap_err();
    assert!(
        bad.to_string().contains("is not one this server gave"),
        "{bad}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn each_built_in_answers_what_sluice_call_prints() {
    let dir = files();
    let root = root_flag(dir.path());
    let flags = ["--root", root.as_str(), "--max-tool-result-bytes", "4096"];
    let client = client(&flags).await;
    let cases = [
        ("read_file", json!({"path": "f.txt"})),
        (
            "read_file",
            json!({"path": "app.log", "startLine": 2, "lineCount": 2}),
        ),
        ("tail_file", json!({"path": "app.log", "lines": 2})),
        ("grep_files", json!({"pattern": "error"})),
        ("list_dir", json!({})),
        ("list_dir", json!({"path": "sub"})),
    ];
    for (tool, args) in cases {
        let expected = sluice_call(&flags, tool, &args.to_string()).await;
        let result = call(&client, tool, args.clone()).await;
        assert_eq!(text(&result), expected, "{tool} {args}");
        assert_eq!(result.is_error, Some(false), "{tool} {args}");
        let structured: Value = serde_json::from_str(&expected).unwrap();
        assert_eq!(result.structured_content.as_ref(), Some(&structured));
        assert!(expected.starts_with("{\"ok\":true,"), "{expected}");
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn tool_errors_are_observations_with_is_error() {
    let dir = files();
    let root = root_flag(dir.path());
    let flags = ["--root", root.as_str()];
    let client = client(&flags).await;
    let cases = [
        // Key material, by name and at every offset.
        ("read_file", json!({"path": "keys/deploy_key"})),
        (
            "read_file",
            json!({"path": "keys/deploy_key", "offset": 40}),
        ),
        ("tail_file", json!({"path": "keys/deploy_key"})),
        // Unknown tool.
        ("no_such_tool", json!({})),
        // Bad arguments.
        ("read_file", json!({"path": "f.txt", "startLine": 0})),
        ("read_file", json!({"path": "f.txt", "lines": 3})),
        ("read_file", json!({})),
        // Not found, outside the root.
        ("read_file", json!({"path": "missing.txt"})),
        ("read_file", json!({"path": "../etc/passwd"})),
    ];
    for (tool, args) in cases {
        let expected = sluice_call(&flags, tool, &args.to_string()).await;
        let result = call(&client, tool, args.clone()).await;
        assert_eq!(text(&result), expected, "{tool} {args}");
        assert_eq!(result.is_error, Some(true), "{tool} {args}");
        assert!(expected.starts_with("{\"ok\":false,"), "{expected}");
    }
    let refused = call(&client, "read_file", json!({"path": "keys/deploy_key"})).await;
    assert_eq!(
        text(&refused),
        "{\"ok\":false,\"error\":\"refusing to read key material: keys/deploy_key\",\"kind\":\"key-material\"}"
    );
    let unknown = call(&client, "no_such_tool", json!({})).await;
    assert_eq!(
        text(&unknown),
        "{\"ok\":false,\"error\":\"unknown_tool\",\"name\":\"no_such_tool\",\"tools\":[\"list_dir\",\"run_script\",\"read_file\",\"tail_file\",\"grep_files\"]}"
    );
    let bad = call(
        &client,
        "read_file",
        json!({"path": "f.txt", "startLine": 0}),
    )
    .await;
    assert_eq!(
        text(&bad),
        "{\"ok\":false,\"error\":\"startLine must be an integer of at least 1; got 0\",\"kind\":\"invalid-argument\"}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_5_mb_log_pages_to_its_end_within_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = String::new();
    let mut n = 0u64;
    while log.len() < 5 << 20 {
        n += 1;
        log.push_str(&format!(
            "2026-11-30T01:00:00Z INFO  worker-{} processed batch {n} in 87 ms\n",
            n % 13
        ));
    }
    std::fs::write(dir.path().join("big.log"), &log).unwrap();
    let root = root_flag(dir.path());
    let cap = 65_536;
    let client = client(&["--root", &root]).await;
    let mut rebuilt = String::with_capacity(log.len());
    let mut args = json!({"path": "big.log"});
    let mut pages = 0;
    loop {
        let result = call(&client, "read_file", args.clone()).await;
        let body = text(&result);
        assert!(body.len() <= cap, "page {pages}: {} bytes", body.len());
        assert_eq!(result.is_error, Some(false), "{body}");
        let page: Value = serde_json::from_str(body).unwrap();
        let r = &page["result"];
        rebuilt.push_str(r["content"].as_str().unwrap());
        pages += 1;
        match r.get("nextOffset") {
            Some(next) => {
                args = json!({"path": "big.log", "offset": next, "startLine": r["nextLine"]});
            }
            None => {
                assert_eq!(r["totalLines"], json!(n));
                break;
            }
        }
    }
    assert_eq!(rebuilt.len(), log.len());
    assert!(rebuilt == log, "the pages rebuild the file");
    // 5 MiB in pages of at most 32 KiB of content.
    assert!(pages >= 160, "{pages} pages");
    client.cancel().await.unwrap();
}

/// A `sluice.toml` loading the hostile test component (and grep_files) with `extra` policy
/// lines.
fn hostile_config(dir: &std::path::Path, extra: &str) -> String {
    let conf = dir.join("sluice.toml");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    std::fs::write(
        &conf,
        format!(
            "builtins = [\"grep_files\"]\n[roots]\nwork = \"work\"\n[tools.hostile]\ncomponent = {:?}\ntimeout_ms = 300\n{extra}",
            sluice_tests::HOSTILE_WASM
        ),
    )
    .unwrap();
    conf.display().to_string()
}

#[tokio::test]
async fn a_guest_timeout_and_a_cut_result_are_observations_too() {
    let dir = tempfile::tempdir().unwrap();
    let conf = hostile_config(dir.path(), "");
    let flags = ["--config", conf.as_str(), "--max-tool-result-bytes", "2048"];
    let client = client(&flags).await;
    let spin = call(&client, "spin", json!({})).await;
    assert_eq!(
        text(&spin),
        "{\"ok\":false,\"error\":\"the tool ran past its timeout of 300 ms and was stopped; raise tools.hostile.timeout_ms in the configuration file (1 to 3600000 ms) if it needs longer\",\"kind\":\"timeout\"}"
    );
    assert_eq!(spin.is_error, Some(true));
    // The message names the policy's 300 ms; how soon after it a guest stops is measured in
    // tests/all/host_limits.rs (here the first call may also wait for the compile).
    // A result the cap cuts: one block within the cap, and no structuredContent (it is not
    // whole).
    let args = json!({"bytes": 10000});
    let big = call(&client, "big_string", args.clone()).await;
    let expected = sluice_call(&flags, "big_string", &args.to_string()).await;
    assert_eq!(text(&big), expected);
    assert!(expected.len() <= 2048);
    assert!(
        expected.contains("…[truncated; full result is 10023 bytes."),
        "{expected}"
    );
    assert_eq!(big.is_error, Some(false));
    assert_eq!(big.structured_content, None);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn destructive_tools_are_served_only_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let conf = hostile_config(dir.path(), "write = [\"work\"]\n");
    let hidden = client(&["--config", &conf]).await;
    let names: Vec<String> = hidden
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["grep_files"]);
    let refused = call(
        &hidden,
        "write_file",
        json!({"path": "/work/out.txt", "contents": "hi"}),
    )
    .await;
    assert_eq!(
        text(&refused),
        "{\"ok\":false,\"error\":\"unknown_tool\",\"name\":\"write_file\",\"tools\":[\"grep_files\"]}"
    );
    assert_eq!(refused.is_error, Some(true));
    assert!(!dir.path().join("work/out.txt").exists());
    hidden.cancel().await.unwrap();

    let allowed = client(&["--config", &conf, "mcp", "--allow-destructive"]).await;
    let tools = allowed.list_all_tools().await.unwrap();
    let write = tools.iter().find(|t| t.name == "write_file").unwrap();
    assert_eq!(
        serde_json::to_value(&write.annotations).unwrap(),
        json!({"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false})
    );
    // No approval pause: it runs.
    let wrote = call(
        &allowed,
        "write_file",
        json!({"path": "/work/out.txt", "contents": "hi"}),
    )
    .await;
    assert_eq!(text(&wrote), "{\"ok\":true,\"result\":null}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("work/out.txt")).unwrap(),
        "hi"
    );
    allowed.cancel().await.unwrap();
}

#[tokio::test]
async fn thirty_two_concurrent_calls_all_answer() {
    let dir = files();
    for i in 0..32 {
        std::fs::write(
            dir.path().join(format!("n{i:02}.txt")),
            format!("file {i}\n"),
        )
        .unwrap();
    }
    let root = root_flag(dir.path());
    let client = Arc::new(client(&["--root", &root]).await);
    let mut tasks = Vec::new();
    for i in 0..32 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let path = format!("n{i:02}.txt");
            let r = call(&client, "read_file", json!({"path": path})).await;
            (i, text(&r).to_string())
        }));
    }
    for task in tasks {
        let (i, body) = task.await.unwrap();
        assert_eq!(
            body,
            format!(
                "{{\"ok\":true,\"result\":{{\"path\":\"n{i:02}.txt\",\"size\":{},\"offset\":0,\"startLine\":1,\"endLine\":1,\"totalLines\":1,\"contentBytes\":{},\"content\":\"file {i}\\n\"}}}}",
                format!("file {i}\n").len(),
                format!("file {i}\n").len()
            )
        );
    }
}

/// A client that records the progress notifications it receives.
#[derive(Clone, Default)]
struct Progress(Arc<Mutex<Vec<ProgressNotificationParam>>>);

impl ClientHandler for Progress {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push(params);
    }
}

#[tokio::test]
async fn grep_files_reports_progress_when_asked() {
    let dir = files();
    let root = root_flag(dir.path());
    let progress = Progress::default();
    let transport = TokioChildProcess::new(command(&["--root", &root, "mcp"])).unwrap();
    let client = progress.clone().serve(transport).await.unwrap();
    let mut meta = RequestMetaObject::new();
    meta.set_progress_token(rmcp::model::ProgressToken(
        rmcp::model::NumberOrString::Number(7),
    ));
    let params = CallToolRequestParams::new("grep_files")
        .with_arguments(json!({"pattern": "error"}).as_object().unwrap().clone());
    let request = ClientRequest::CallToolRequest(Request::new(params));
    let handle = client
        .send_cancellable_request(request, PeerRequestOptions::default().with_meta(meta))
        .await
        .unwrap();
    let token = handle.progress_token.clone();
    let ServerResult::CallToolResult(result) = handle.await_response().await.unwrap() else {
        panic!("a tools/call result");
    };
    assert_eq!(result.is_error, Some(false));
    // The notification was sent before the result; the client handles it on a task of its
    // own, so wait for it (bounded).
    let deadline = Instant::now() + Duration::from_secs(10);
    while progress.0.lock().unwrap().is_empty() && Instant::now() < deadline {
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let seen = progress.0.lock().unwrap().clone();
    assert!(
        !seen.is_empty(),
        "grep_files reports progress from its start"
    );
    assert!(seen.iter().all(|p| p.progress_token == token));
    assert_eq!(seen[0].message.as_deref(), Some("grep_files: started"));
    assert_eq!(seen[0].progress, 0.0);
    client.cancel().await.unwrap();
}

/// Cancelling a long grep stops the guest: with one call slot, the next call runs within
/// 200 ms of the cancellation (plus slack for a loaded 2-core machine), which it can only
/// when the cancelled guest has let go of the slot.
#[tokio::test]
async fn cancelling_a_long_grep_stops_the_guest_within_200_ms() {
    let dir = tempfile::tempdir().unwrap();
    // 120 files of 4 MiB without a match: a grep that runs for about a second or more.
    let line = "2026-11-30T01:00:00Z INFO worker-7 processed batch 1234 in 87 ms\n";
    let body = line.repeat((4 << 20) / line.len());
    for i in 0..120 {
        std::fs::write(dir.path().join(format!("f{i:03}.log")), &body).unwrap();
    }
    let conf = dir.path().join("sluice.toml");
    std::fs::write(
        &conf,
        format!(
            "[runtime]\nmax_concurrent_calls = 1\n[roots]\nlogs = {:?}\n[tools.grep_files]\ntimeout_ms = 60000\n",
            dir.path()
        ),
    )
    .unwrap();
    let conf = conf.display().to_string();
    let progress = Progress::default();
    let transport = TokioChildProcess::new(command(&["--config", &conf, "mcp"])).unwrap();
    let client = progress.clone().serve(transport).await.unwrap();
    let mut meta = RequestMetaObject::new();
    meta.set_progress_token(rmcp::model::ProgressToken(
        rmcp::model::NumberOrString::Number(1),
    ));
    let params = CallToolRequestParams::new("grep_files")
        .with_arguments(json!({"pattern": "NEEDLE"}).as_object().unwrap().clone());
    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(params)),
            PeerRequestOptions::default().with_meta(meta),
        )
        .await
        .unwrap();
    // Wait until the grep runs (its first progress notification).
    while progress.0.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cancelled = Instant::now();
    handle.cancel(Some("test".into())).await.unwrap();
    let next = call(&client, "list_dir", json!({})).await;
    let waited = cancelled.elapsed();
    assert_eq!(next.is_error, Some(false), "{}", text(&next));
    assert!(
        waited < Duration::from_millis(200 + 800),
        "the next call waited {waited:?}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn protocol_versions_are_the_three_served() {
    let dir = files();
    let root = root_flag(dir.path());
    let client = client(&["--root", &root]).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(info.server_info.as_ref().unwrap().name, "sluice");
    let versions: BTreeMap<&str, ()> = sluice_mcp::PROTOCOL_VERSIONS
        .iter()
        .map(|v| (v.as_str(), ()))
        .collect();
    assert!(
        versions.contains_key(info.protocol_version.as_str()),
        "{info:?}"
    );
    client.cancel().await.unwrap();
}
