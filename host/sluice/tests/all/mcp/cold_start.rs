//! A cold `sluice mcp` (docs/components.md#compiled-components): with an empty cache and two
//! interpreter tools (the Python and JavaScript examples, tens of seconds each to compile),
//! `server/discover`, `initialize` and `tools/list` are answered before either has compiled, and a call
//! of each waits for its code (the baseline compiler's, Winch: `runtime.baseline_compiler`) and
//! then answers. Its times are the bench's (`sluice-bench`). Needs the examples built
//! (`guest-examples/build.sh`); without them it says it skipped (and fails under `CI=true`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::SLUICE;

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The example component `target/guest-examples/<stem>.wasm`, when built; else `None` after
/// saying why (and a failure under `CI=true`).
fn example(stem: &str) -> Option<PathBuf> {
    let path = repo()
        .join("target/guest-examples")
        .join(format!("{stem}.wasm"));
    if path.exists() {
        return Some(path);
    }
    let reason = format!(
        "{} not built (run guest-examples/install-toolchains.sh && guest-examples/build.sh)",
        path.display()
    );
    sluice_test_support::skip_or_fail(&reason);
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_start_answers_the_handshake_while_interpreter_tools_compile() {
    let (Some(csv), Some(json_query)) = (example("csv_summary"), example("json_query")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sample = repo().join("guest-examples/python-csv-summary/sample");
    let config = dir.path().join("sluice.toml");
    std::fs::write(
        &config,
        format!(
            "[roots]\ndata = {sample:?}\n\n\
             [tools.csv_summary]\ncomponent = {csv:?}\nread = [\"data\"]\nmemory_mib = 128\ntimeout_ms = 10000\n\n\
             [tools.json_query]\ncomponent = {json_query:?}\nread = [\"data\"]\nmemory_mib = 256\n",
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let mut child = tokio::process::Command::new(SLUICE)
        .args(["--config", config.as_str(), "mcp"])
        // An empty cache: every component compiles.
        .env("SLUICE_CACHE_DIR", dir.path().join("cache"))
        .env("SLUICE_LOG", "warn,sluice_runtime=info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let started = Instant::now();
    // The log, as it comes.
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let lines = log.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = stderr.next_line().await {
            lines.lock().unwrap().push(line);
        }
    });
    let logged = |what: &str, stem: &str| {
        log.lock()
            .unwrap()
            .iter()
            .any(|l| l.contains(what) && l.contains(&format!("{stem}.wasm")))
    };
    let compiled = |stem: &str| logged(" compiled ", stem);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = async |request: Value| -> Value {
        stdin
            .write_all(format!("{request}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
        if request.get("id").is_none() {
            return Value::Null;
        }
        let line = tokio::time::timeout(Duration::from_secs(600), stdout.next_line())
            .await
            .expect("an answer")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap()
    };

    // A stateless client's first request (2026-07-28), then a client that opens with
    // `initialize`: both answered while everything compiles.
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{},
        "io.modelcontextprotocol/clientInfo":{"name":"cold","version":"0"}});
    let discover =
        ask(json!({"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":meta}}))
            .await;
    assert_eq!(discover["result"]["resultType"], "complete", "{discover}");
    let init = ask(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cold","version":"0"}}})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "sluice", "{init}");
    ask(json!({"jsonrpc":"2.0","method":"notifications/initialized"})).await;
    let list = ask(json!({"jsonrpc":"2.0","id":2,"method":"tools/list"})).await;
    let answered = started.elapsed();
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "read_file",
            "tail_file",
            "grep_files",
            "list_dir",
            "run_script",
            "summarize_table",
            "query_json"
        ]
    );
    // Neither interpreter tool had compiled when the list was answered.
    assert!(
        !compiled("csv_summary"),
        "{answered:?}: {:?}",
        log.lock().unwrap()
    );
    assert!(
        !compiled("json_query"),
        "{answered:?}: {:?}",
        log.lock().unwrap()
    );

    // A call waits for its code, then answers.
    let call = ask(json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"summarize_table","arguments":{"path":"sales.csv"}}})).await;
    assert_eq!(call["result"]["isError"], false, "{call}");
    let text = call["result"]["content"][0]["text"].as_str().unwrap();
    let observation: Value = serde_json::from_str(text).unwrap();
    assert_eq!(observation["ok"], true, "{observation}");
    let csv_answered = started.elapsed();
    let call = ask(json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"query_json","arguments":{"path":"events.jsonl","query":"$[0]"}}})).await;
    assert_eq!(call["result"]["isError"], false, "{call}");
    let text = call["result"]["content"][0]["text"].as_str().unwrap();
    let observation: Value = serde_json::from_str(text).unwrap();
    assert_eq!(observation["ok"], true, "{observation}");
    assert_eq!(observation["result"]["total"], 1, "{observation}");
    // Both answered from the baseline compiler's code.
    for stem in ["csv_summary", "json_query"] {
        assert!(
            logged("compiled by the baseline compiler (Winch)", stem),
            "{stem}: {:?}",
            log.lock().unwrap()
        );
    }
    // For the record, with `--nocapture`.
    #[allow(clippy::print_stderr)]
    {
        eprintln!(
            "cold start: tools/list answered after {answered:?}; the first csv_summary call after {csv_answered:?}, the first query_json call after {:?}",
            started.elapsed()
        );
    }
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(30), child.wait()).await;
}
