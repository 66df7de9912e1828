//! The `sluice` binary as an operator runs it: exit codes, stdout, stderr.

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

#[path = "support/warm_cache.rs"]
mod warm_cache;

/// Runs `sluice` with `args`, sharing one compiled-component cache across tests.
fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .env("SLUICE_CACHE_DIR", warm_cache::warm_cache())
        .env_remove("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES")
        .output()
        .expect("sluice runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A temporary root holding `f.txt`.
fn root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "one\r\ntwo\nthree").unwrap();
    dir
}

#[test]
fn call_prints_the_exact_observation() {
    let dir = root();
    let root_flag = format!("logs={}", dir.path().display());
    let o = sluice(&[
        "call",
        "read_file",
        r#"{"path":"f.txt"}"#,
        "--root",
        &root_flag,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "{\"ok\":true,\"result\":{\"path\":\"f.txt\",\"size\":14,\"offset\":0,\"startLine\":1,\"endLine\":3,\"totalLines\":3,\"contentBytes\":14,\"content\":\"one\\r\\ntwo\\nthree\"}}\n"
    );
}

#[test]
fn a_tool_error_still_exits_zero() {
    let dir = root();
    let root_flag = dir.path().display().to_string();
    let o = sluice(&[
        "--root",
        &root_flag,
        "call",
        "read_file",
        r#"{"path":"missing.txt"}"#,
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        "{\"ok\":false,\"error\":\"no such file or directory: missing.txt\",\"kind\":\"not-found\"}\n"
    );
    let o = sluice(&["--root", &root_flag, "call", "read_file", "{not json"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stdout(&o).starts_with("{\"ok\":false,\"error\":\"arguments are not valid JSON: "),
        "{}",
        stdout(&o)
    );
    let o = sluice(&["--root", &root_flag, "call", "no_such_tool"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        "{\"ok\":false,\"error\":\"unknown_tool\",\"name\":\"no_such_tool\",\"tools\":[\"list_dir\",\"run_script\",\"read_file\",\"tail_file\",\"grep_files\"]}\n"
    );
}

#[test]
fn the_cap_flag_applies() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (1..=500).map(|i| format!("line {i:014}\n")).collect();
    std::fs::write(dir.path().join("f.txt"), text).unwrap();
    let root_flag = dir.path().display().to_string();
    let o = sluice(&[
        "--root",
        &root_flag,
        "--max-tool-result-bytes",
        "2048",
        "call",
        "read_file",
        r#"{"path":"f.txt"}"#,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.len() <= 2048 + 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["result"]["nextOffset"], 960);
    assert_eq!(v["result"]["nextLine"], 49);
}

#[test]
fn bad_cap_values_stop_at_boot_with_key_value_and_range() {
    for bad in ["1023", "1048577", "1.5", "x"] {
        let o = sluice(&["--max-tool-result-bytes", bad, "call", "read_file", "{}"]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(o.stdout.is_empty(), "{bad}: nothing runs");
        assert_eq!(
            stderr(&o),
            format!(
                "sluice: error: agent.max_tool_result_bytes must be an integer from 1024 to 1048576 (bytes); got {bad} (from --max-tool-result-bytes)\n"
            )
        );
    }
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["call", "read_file", "{}"])
        .env("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES", "1.5")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("got 1.5 (from SLUICE_AGENT_MAX_TOOL_RESULT_BYTES)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_call_pool_sizes_stop_at_boot_with_key_value_and_range() {
    for bad in ["0", "1025", "two"] {
        let o = sluice(&["--max-concurrent-calls", bad, "call", "read_file", "{}"]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(o.stdout.is_empty(), "{bad}: nothing runs");
        assert_eq!(
            stderr(&o),
            format!(
                "sluice: error: runtime.max_concurrent_calls must be an integer from 1 to 1024 (calls); got {bad} (from --max-concurrent-calls)\n"
            )
        );
    }
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["call", "read_file", "{}"])
        .env("SLUICE_RUNTIME_QUEUE_TIMEOUT_MS", "-1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "sluice: error: runtime.queue_timeout_ms must be an integer from 0 to 3600000 (ms); got -1 (from SLUICE_RUNTIME_QUEUE_TIMEOUT_MS)\n"
    );
    // In range, the calls run.
    let dir = root();
    let root_flag = dir.path().display().to_string();
    let o = sluice(&[
        "--max-concurrent-calls",
        "1",
        "--root",
        &root_flag,
        "call",
        "read_file",
        r#"{"path":"f.txt","lineCount":1}"#,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with(r#"{"ok":true,"#), "{}", stdout(&o));
}

#[test]
fn a_missing_root_is_a_clear_error() {
    let o = sluice(&["--root", "/no/such/dir", "call", "list_dir"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.starts_with(
            "sluice: error: root \"dir\" (/no/such/dir, set by --root /no/such/dir): cannot be opened: "
        ),
        "{err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
}

#[test]
fn bad_flags_are_reported_by_the_parser() {
    let o = sluice(&["call"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("required arguments were not provided"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn tools_lists_names_descriptions_and_schemas() {
    let dir = root();
    let root_flag = dir.path().display().to_string();
    let o = sluice(&["--root", &root_flag, "tools"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut tools: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    for t in tools.as_array_mut().unwrap() {
        t["source"] = "<source>".into();
    }
    insta::assert_json_snapshot!("tools", tools);
}

/// A drop-in setup: root `data` holding `f.txt`, a tools directory holding `reader.wasm`
/// (a copy of the read_file component, as a third party would ship it) and, if given, its
/// policy, and a sluice.toml with `builtins` as given.
fn drop_in(policy: Option<&str>, builtins: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/f.txt"), "hello\n").unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::write(tools.join("reader.wasm"), read_file_component()).unwrap();
    if let Some(p) = policy {
        std::fs::write(tools.join("reader.toml"), p).unwrap();
    }
    let config = dir.path().join("sluice.toml");
    std::fs::write(
        &config,
        format!("builtins = {builtins}\ntools_dir = \"tools\"\n\n[roots]\ndata = \"data\"\n"),
    )
    .unwrap();
    (dir, config)
}

fn read_file_component() -> &'static [u8] {
    sluice_builtin("read_file")
}

fn sluice_builtin(name: &str) -> &'static [u8] {
    sluice_builtins::BUILTINS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, wasm)| *wasm)
        .unwrap()
}

#[test]
fn a_tools_directory_component_runs_under_its_policy() {
    let (_d, config) = drop_in(Some("read = [\"data\"]\ntimeout_ms = 5000\n"), "[]");
    let config = config.display().to_string();
    let o = sluice(&[
        "--config",
        &config,
        "call",
        "read_file",
        r#"{"path":"f.txt"}"#,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "{\"ok\":true,\"result\":{\"path\":\"f.txt\",\"size\":6,\"offset\":0,\"startLine\":1,\"endLine\":1,\"totalLines\":1,\"contentBytes\":6,\"content\":\"hello\\n\"}}\n"
    );
    let o = sluice(&["--config", &config, "tools"]);
    let tools: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(tools.as_array().unwrap().len(), 1);
    assert!(
        tools[0]["source"]
            .as_str()
            .unwrap()
            .ends_with("tools/reader.wasm")
    );
    assert_eq!(tools[0]["destructive"], false);
}

#[test]
fn without_a_policy_a_component_gets_nothing() {
    let (_d, config) = drop_in(None, "[]");
    let config = config.display().to_string();
    let o = sluice(&[
        "--config",
        &config,
        "call",
        "read_file",
        r#"{"path":"f.txt"}"#,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "{\"ok\":false,\"error\":\"this tool has no root directory granted; ask the operator to grant one\",\"kind\":\"invalid-argument\"}\n"
    );
}

#[test]
fn a_tool_name_taken_twice_stops_the_start() {
    let (_d, config) = drop_in(Some("read = [\"data\"]\n"), "[\"read_file\"]");
    let o = sluice(&["--config", &config.display().to_string(), "tools"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.starts_with(
            "sluice: error: two tools are named \"read_file\" (built-in read_file and "
        ),
        "{err}"
    );
}

/// The lowercase hex SHA-256 of `bytes`, computed here rather than by the code under test.
fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

#[test]
fn a_sha256_pin_mismatch_refuses_to_load() {
    let wrong = "0".repeat(64);
    let (_d, config) = drop_in(
        Some(&format!("read = [\"data\"]\nsha256 = \"{wrong}\"\n")),
        "[]",
    );
    // Under --strict the start stops on it.
    let o = sluice(&[
        "--config",
        &config.display().to_string(),
        "--strict",
        "tools",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let actual = sha256_hex(sluice_builtin("read_file"));
    let err = stderr(&o);
    assert!(err.starts_with("sluice: error: refusing to load "), "{err}");
    assert!(
        err.ends_with(&format!(
            "tools/reader.wasm: its sha256 is {actual}, but the policy pins {wrong}\n"
        )),
        "{err}"
    );
    // By default the component is left out, listed as unavailable with the same reason.
    let o = sluice(&["--config", &config.display().to_string(), "tools"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let tools: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(tools.as_array().unwrap().len(), 1);
    assert_eq!(tools[0]["unavailable"], true);
    assert!(
        tools[0]["reason"].as_str().unwrap().ends_with(&format!(
            "tools/reader.wasm: its sha256 is {actual}, but the policy pins {wrong}"
        )),
        "{tools}"
    );
    // The right pin loads.
    let (_d, config) = drop_in(
        Some(&format!("read = [\"data\"]\nsha256 = \"{actual}\"\n")),
        "[]",
    );
    let o = sluice(&["--config", &config.display().to_string(), "tools"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// A sibling policy naming an unknown root leaves its tool out, with the reason, and the
/// rest start; `--strict` refuses the start (docs/configuration.md#tools-directory).
#[test]
fn a_policy_naming_an_unknown_root_leaves_its_tool_out() {
    let (_d, config) = drop_in(Some("read = [\"logs\"]\n"), "[\"list_dir\"]");
    let o = sluice(&["--config", &config.display().to_string(), "tools"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let tools: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(tools[0]["name"], "list_dir", "{tools}");
    assert_eq!(tools[1]["unavailable"], true, "{tools}");
    let reason = tools[1]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "tools.reader.read must be names of defined roots (data); got \"logs\" (from "
        ),
        "{reason}"
    );
    let o = sluice(&[
        "--strict",
        "--config",
        &config.display().to_string(),
        "tools",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("tools.reader.read must be names of defined roots (data); got \"logs\""),
        "{err}"
    );
}

#[test]
fn inspect_shows_tools_imports_and_digest_without_running() {
    let (d, _config) = drop_in(None, "[]");
    let file = d.path().join("tools/reader.wasm");
    let o = sluice(&["tools", "inspect", &file.display().to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["sha256"], sha256_hex(sluice_builtin("read_file")));
    assert_eq!(v["tools"][0]["name"], "read_file");
    let imports = v["imports"].as_array().unwrap();
    let budget = imports
        .iter()
        .find(|i| i["name"] == "sluice:tools/budget@0.1.3")
        .unwrap();
    assert_eq!(budget["provided"], true);
    // Components import only the functions they call; the Rust tools size pages themselves.
    assert_eq!(
        budget["functions"],
        serde_json::json!(["max-result-bytes", "time-budget-ms"])
    );
    assert!(imports.iter().all(|i| i["provided"] == true), "{imports:?}");
    assert!(imports.iter().any(|i| {
        i["name"]
            .as_str()
            .unwrap()
            .starts_with("wasi:filesystem/preopens@0.2.")
    }));
}

/// Review finding: inspecting a file that is not a component printed wasmparser's dump of
/// the preamble bytes. Now it says what the file is and what a component is.
#[test]
fn inspect_says_what_a_non_component_file_is() {
    let d = tempfile::tempdir().unwrap();
    let text = d.path().join("notes.txt");
    std::fs::write(&text, "root:x:0:0:root:/root:/bin/bash\n").unwrap();
    let module = d.path().join("core.wasm");
    std::fs::write(&module, b"\0asm\x01\0\0\0").unwrap();
    for (file, why) in [
        (
            &text,
            "it is not a WebAssembly component (a component starts with `\\0asm` and the component layer)",
        ),
        (
            &module,
            "it is a core WebAssembly module, not a component: build it for wasm32-wasip2, or wrap it with `wasm-tools component new`",
        ),
    ] {
        let o = sluice(&["tools", "inspect", &file.display().to_string()]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(err.trim_end().ends_with(why), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// A directory of a few log files: `logs/build.log` fails at line 3.
fn log_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    std::fs::write(
        logs.join("build.log"),
        "compiling core\ncompiling cli\nerror: linker failed with exit code 1\nbuild stopped\n",
    )
    .unwrap();
    std::fs::write(logs.join("app.log"), "started\nserving on :8080\nstopped\n").unwrap();
    std::fs::write(logs.join("notes.txt"), "nothing to see\n").unwrap();
    dir
}

#[test]
fn run_with_the_scripted_model_answers_citing_a_file_and_line() {
    let dir = log_dir();
    let root = dir.path().join("logs").display().to_string();
    let store = dir.path().join("sessions.db").display().to_string();
    let o = sluice(&["--root", &root, "--store", &store, "run", "What failed?"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("build.log:3: error: linker failed"), "{out}");
    assert!(stderr(&o).contains(": completed"), "{}", stderr(&o));

    let o = sluice(&[
        "--root",
        &root,
        "--store",
        &store,
        "run",
        "--json",
        "What failed?",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["status"], "completed");
    assert_eq!(v["lastError"], serde_json::Value::Null);
    assert!(
        v["answer"].as_str().unwrap().contains("build.log:3:"),
        "{v}"
    );
    let messages = v["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles.first(), Some(&"user"));
    assert_eq!(roles.last(), Some(&"assistant"));
    assert!(roles.contains(&"tool"), "{roles:?}");
    assert_eq!(messages[0]["content"], "What failed?");
    // A new session: its messages start at 1, gapless.
    for (i, m) in messages.iter().enumerate() {
        assert_eq!(m["seq"], i as u64 + 1);
    }
    for m in messages.iter().filter(|m| m["role"] == "tool") {
        let observation: serde_json::Value =
            serde_json::from_str(m["content"].as_str().unwrap()).unwrap();
        assert_eq!(observation["ok"], true, "{observation}");
    }
    assert_eq!(v["requests"], messages.len() as u64 / 2);
}

/// A stored message as its row: (seq, role, content, tool_calls, tool_call_id).
type Row = (i64, String, String, Option<String>, Option<String>);

/// The rows of session `id` in `db`, read through a read-only connection that does not
/// disturb a writer.
fn rows(db: &Path, id: &str) -> Vec<Row> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT seq, role, content, tool_calls, tool_call_id FROM messages
             WHERE session_id = ?1 ORDER BY seq",
        )
        .unwrap();
    stmt.query_map([id], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// The id of the only session in `db`, once there is one.
fn only_session(db: &Path) -> Option<String> {
    if !db.exists() {
        return None;
    }
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .ok()?;
    conn.query_row("SELECT id FROM sessions", [], |r| r.get(0))
        .ok()
}

/// Checks that the stored transcript of `id` is whole: positions 1..n without gaps, roles
/// known, tool calls and observations valid JSON, every observation answering a call.
fn assert_whole(store: &sluice_store::SqliteStore, id: &str) -> Vec<sluice_store::StoredMessage> {
    use sluice_store::Store;
    let messages = block(store.messages(id)).unwrap();
    let mut calls = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        assert_eq!(m.seq, i as u64 + 1, "gapless");
        match m.message.role {
            sluice_protocol::Role::Assistant => {
                calls.extend(m.message.tool_calls.iter().map(|c| c.id.clone()));
                for c in &m.message.tool_calls {
                    serde_json::from_str::<serde_json::Value>(&c.arguments).unwrap();
                }
            }
            sluice_protocol::Role::Tool => {
                let v: serde_json::Value = serde_json::from_str(&m.message.content).unwrap();
                assert_eq!(v["ok"], true, "{v}");
                let call = m.message.tool_call_id.clone().unwrap();
                assert!(
                    calls.contains(&call),
                    "an observation of an unknown call {call}"
                );
            }
            sluice_protocol::Role::User => {}
        }
    }
    messages
}

#[test]
fn a_killed_run_keeps_every_acknowledged_message_and_resumes() {
    let dir = log_dir();
    let root = dir.path().join("logs").display().to_string();
    let db = dir.path().join("sessions.db");
    // Forty turns of one read each, 100 ms of thinking per turn: the run takes seconds.
    let slow = dir.path().join("slow.jsonl");
    let mut script = String::new();
    for i in 0..40 {
        script.push_str(&format!(
            "{{\"content\":\"step {i}\",\"toolCalls\":[{{\"name\":\"read_file\",\"arguments\":{{\"path\":\"build.log\"}}}}],\"delayMs\":100}}\n"
        ));
    }
    script.push_str("{\"content\":\"never reached\"}\n");
    std::fs::write(&slow, script).unwrap();
    let model = format!("replay:{}", slow.display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--root", &root, "--store"])
        .arg(&db)
        .args(["run", "--model", &model, "Read build.log forty times."])
        .env("SLUICE_CACHE_DIR", warm_cache::warm_cache())
        .env_remove("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();

    // Wait (bounded) until the run has stored a few messages, then kill -9 it mid-run.
    let start = std::time::Instant::now();
    let (id, acknowledged) = loop {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "the run stored no messages"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was killed"
        );
        if let Some(id) = only_session(&db) {
            let seen = rows(&db, &id);
            if seen.len() >= 6 {
                break (id, seen);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "killed, not finished: {status:?}");

    // Restart: the database is sound, the session loads, and every message seen before the
    // kill is there, unchanged, followed by at most what was committed after.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    let store = sluice_store::SqliteStore::open(&db).unwrap();
    use sluice_store::Store;
    let session = block(store.session(&id)).unwrap();
    assert_eq!(session.status, sluice_protocol::SessionStatus::Running);
    let after = rows(&db, &id);
    assert!(after.len() >= acknowledged.len());
    assert_eq!(after[..acknowledged.len()], acknowledged[..]);
    let before_resume = assert_whole(&store, &id);
    assert_eq!(
        before_resume[0].message.content,
        "Read build.log forty times."
    );
    drop(store);

    // Resume without a prompt: a call left without its observation runs first, then the
    // model (a fresh script) answers.
    let fresh = dir.path().join("fresh.jsonl");
    std::fs::write(&fresh, "{\"content\":\"resumed and done\"}\n").unwrap();
    let fresh_model = format!("replay:{}", fresh.display());
    let db_flag = db.display().to_string();
    let o = sluice(&[
        "--root",
        &root,
        "--store",
        &db_flag,
        "run",
        "--session",
        &id,
        "--model",
        &fresh_model,
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["status"], "completed", "{v}");
    assert_eq!(v["answer"], "resumed and done");
    let store = sluice_store::SqliteStore::open(&db).unwrap();
    assert_eq!(
        block(store.session(&id)).unwrap().status,
        sluice_protocol::SessionStatus::Completed
    );
    let resumed = assert_whole(&store, &id);
    assert_eq!(resumed[..before_resume.len()], before_resume[..]);
    let last = resumed.last().unwrap();
    assert_eq!(last.message.content, "resumed and done");
    // Every call has exactly one observation.
    let calls: Vec<&str> = resumed
        .iter()
        .flat_map(|m| m.message.tool_calls.iter().map(|c| c.id.as_str()))
        .collect();
    let answered: Vec<&str> = resumed
        .iter()
        .filter_map(|m| m.message.tool_call_id.as_deref())
        .collect();
    assert_eq!(calls, answered);
}

#[test]
fn an_empty_cache_variable_counts_as_unset() {
    let dir = root();
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["call", "list_dir"])
        .current_dir(dir.path())
        .env("SLUICE_CACHE_DIR", "")
        .env("XDG_CACHE_HOME", dir.path().join("xdg"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Nothing was written into the working directory; the cache went to XDG_CACHE_HOME.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cwasm"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
    assert!(dir.path().join("xdg/sluice/components").is_dir());
}

#[test]
fn a_missing_config_file_is_named_once() {
    let o = sluice(&["--config", "/no/such/sluice.toml", "tools"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "sluice: error: failed to read /no/such/sluice.toml: No such file or directory (os error 2)\n"
    );
}

#[test]
fn serve_refuses_a_non_loopback_address_without_a_token() {
    let dir = root();
    let store = dir.path().join("sessions.db");
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--root", &dir.path().display().to_string()])
        .args(["--store", &store.display().to_string()])
        .args(["serve", "--listen", "0.0.0.0:0"])
        .env_remove("SLUICE_SERVER_TOKEN")
        .output()
        .expect("sluice runs");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .starts_with("sluice: error: refusing to listen on 0.0.0.0:0 without a bearer token"),
        "{}",
        stderr(&o)
    );
}

/// `sluice serve` wires the same configuration as `sluice run`: a prompt posted over HTTP
/// runs the scripted model over the root and is stored in the configured store.
#[test]
fn serve_answers_over_http() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpStream;

    let dir = log_dir();
    let store = dir.path().join("sessions.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--root", &dir.path().join("logs").display().to_string()])
        .args(["--store", &store.display().to_string()])
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("SLUICE_CACHE_DIR", warm_cache::warm_cache())
        .env_remove("SLUICE_SERVER_TOKEN")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("sluice starts");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("an address in {line:?}"))
        .to_string();
    let request = |method: &str, path: &str, body: &str| -> String {
        let mut s = TcpStream::connect(&addr).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    let created = request("POST", "/sessions", "");
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    let id = created
        .split("\"id\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_string();
    let ended = request(
        "POST",
        &format!("/sessions/{id}/prompts?wait=true"),
        r#"{"prompt":"what failed in the logs?"}"#,
    );
    assert!(ended.starts_with("HTTP/1.1 200"), "{ended}");
    assert!(ended.contains("\"status\":\"completed\""), "{ended}");
    // SIGTERM is not Ctrl-C; kill it (the store already holds the run).
    child.kill().unwrap();
    child.wait().unwrap();
    let store = sluice_store::SqliteStore::open(&store).unwrap();
    use sluice_store::Store as _;
    assert_eq!(
        block(store.session(&id)).unwrap().status,
        sluice_protocol::SessionStatus::Completed
    );
}

/// A one-connection-per-request HTTP server on 127.0.0.1 answering each request with the next
/// `(status, JSON body)`; its thread returns the request bodies it read.
fn http_server(answers: Vec<(u16, String)>) -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut bodies = Vec::new();
        for (status, body) in answers {
            let (mut stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap();
                }
            }
            let mut request = vec![0; length];
            reader.read_exact(&mut request).unwrap();
            bodies.push(String::from_utf8(request).unwrap());
            write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
        }
        bodies
    });
    (url, handle)
}

/// Issue 13: a retry warning written to a file (not a terminal) carries no colour codes, and
/// `--json` counts every HTTP request (the retry included) and shows the reported usage.
#[test]
fn retry_warnings_on_a_non_terminal_stderr_carry_no_colour_codes() {
    let (url, server) = http_server(vec![
        (
            503,
            r#"{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","code":null}}"#.into(),
        ),
        (
            200,
            r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Nothing failed."},"finish_reason":"stop"}],"usage":{"prompt_tokens":321,"completion_tokens":4,"total_tokens":325}}"#.into(),
        ),
    ]);
    let dir = log_dir();
    let config = dir.path().join("sluice.toml");
    std::fs::write(
        &config,
        format!(
            "[model]\nprovider = \"llamacpp\"\nname = \"m\"\nbase_url = \"{url}\"\nstream = false\n"
        ),
    )
    .unwrap();
    let root = dir.path().join("logs").display().to_string();
    let store = dir.path().join("sessions.db").display().to_string();
    let o = sluice(&[
        "--config",
        &config.display().to_string(),
        "--root",
        &root,
        "--store",
        &store,
        "run",
        "--json",
        "What failed?",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("model request failed; retrying"), "{err}");
    assert!(!err.contains('\u{1b}'), "{err:?}");
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["answer"], "Nothing failed.");
    assert_eq!(v["requests"], 2);
    assert_eq!(
        v["usage"],
        serde_json::json!({"inputTokens": 321, "outputTokens": 4, "unreportedReplies": 0})
    );
    let bodies = server.join().unwrap();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0], bodies[1]);
}

/// Ctrl-C in `sluice run` reaches the tool call in progress: a guest sleeping inside a host
/// call (its timeout 60 s) is stopped, the run ends `aborted` (exit 130) within about 200 ms
/// of the signal, and the call's result says it was cancelled (issue 12, item 1).
#[test]
fn ctrl_c_stops_a_run_whose_guest_sleeps() {
    use sluice_store::Store;

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("logs")).unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::copy(sluice_tests::HOSTILE_WASM, tools.join("hostile.wasm")).unwrap();
    std::fs::write(tools.join("hostile.toml"), "timeout_ms = 60000\n").unwrap();
    let config = dir.path().join("sluice.toml");
    std::fs::write(
        &config,
        "builtins = []\ntools_dir = \"tools\"\n\n[roots]\nlogs = \"logs\"\n",
    )
    .unwrap();
    let script = dir.path().join("sleep.jsonl");
    std::fs::write(
        &script,
        "{\"toolCalls\":[{\"name\":\"sleep\",\"arguments\":{\"ms\":60000}}]}\n{\"content\":\"never reached\"}\n",
    )
    .unwrap();
    let db = dir.path().join("sessions.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("--config")
        .arg(&config)
        .arg("--store")
        .arg(&db)
        // Strict: the component has compiled before the run starts, so the call below is
        // the guest asleep in the host, not a call waiting for its code.
        .arg("--strict")
        .args([
            "run",
            "--model",
            &format!("replay:{}", script.display()),
            "sleep",
        ])
        .env("SLUICE_CACHE_DIR", warm_cache::warm_cache())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();

    // Wait (bounded) until the model's turn is stored: the call starts right after.
    let start = std::time::Instant::now();
    let id = loop {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "the run stored no assistant message"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        if let Some(id) = only_session(&db)
            && rows(&db, &id).len() >= 2
        {
            break id;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    // Let the guest fall asleep inside the host (instantiating it takes milliseconds).
    std::thread::sleep(std::time::Duration::from_millis(300));
    let signalled = std::time::Instant::now();
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    let took = signalled.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    // 200 ms is the behaviour; the rest is slack for a loaded 2-core machine (the process
    // also closes its store and runtime).
    assert!(
        took < std::time::Duration::from_millis(700),
        "exited {took:?} after Ctrl-C"
    );
    let store = sluice_store::SqliteStore::open(&db).unwrap();
    assert_eq!(
        block(store.session(&id)).unwrap().status,
        sluice_protocol::SessionStatus::Aborted
    );
    let messages = block(store.messages(&id)).unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last.message.tool_call_id.as_deref(), Some("call_1"));
    assert_eq!(
        last.message.content,
        r#"{"ok":false,"error":"the call was cancelled before the tool finished (its run was cancelled); it may have done part of its work","kind":"cancelled"}"#
    );
}

/// Issue 14: `sluice run --session NAME "prompt"` on a name no session has creates a session
/// under that name (and says so on stderr), as other agents' `--session-id` does; before, it
/// failed with `no session "NAME"`. A name is checked, and without a prompt there is nothing
/// to start, so a missing session is still an error.
#[test]
fn run_creates_a_session_under_the_name_given() {
    let dir = log_dir();
    let store = dir.path().join("sessions.db");
    let store_flag = store.display().to_string();
    let root_flag = dir.path().join("logs").display().to_string();
    let run = |args: &[&str]| {
        let mut all = vec!["--root", &root_flag, "--store", &store_flag, "run"];
        all.extend_from_slice(args);
        sluice(&all)
    };
    let o = run(&["--session", "fix-login", "what failed?"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("sluice: no session \"fix-login\" yet: created it\n"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).ends_with("session fix-login: completed\n"),
        "{}",
        stderr(&o)
    );
    // The second time it continues the same session.
    let o = run(&["--session", "fix-login", "and now?", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("created it"), "{}", stderr(&o));
    let shown: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(shown["session"], "fix-login");
    assert_eq!(shown["messages"][0]["content"], "and now?");
    assert!(shown["messages"][0]["seq"].as_u64().unwrap() > 1, "{shown}");

    let o = run(&["--session", "no/such name", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "sluice: error: session name \"no/such name\" is not allowed: a session name is 1 to 64 characters: ASCII letters, digits, `-`, `_` and `.`, starting with a letter or digit\n"
    );
    let o = run(&["--session", "never-started"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "sluice: error: no session \"never-started\": give a prompt to start a session under that name (`sluice run --session never-started \"…\"`), or see `sluice session list`\n"
    );
    let list = sluice(&["--store", &store_flag, "session", "list"]);
    let sessions: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let ids: Vec<&str> = sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["fix-login"]);
}

/// Issue 12 item 13, through the binary: a non-UTF-8 `SLUICE_AGENT_MAX_TOOL_RESULT_BYTES`
/// used to read as unset (the default applied), and a store path naming a file that is not
/// a store was made a database (an empty file) or refused in SQLite's words. Both stop the
/// start, naming the variable or the file, and the file is left as it was.
#[cfg(unix)]
#[test]
fn bad_environment_and_store_files_stop_the_start() {
    use std::os::unix::ffi::OsStrExt;
    let dir = root();
    let root_flag = dir.path().display().to_string();
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--root", &root_flag, "call", "list_dir"])
        .env(
            "SLUICE_AGENT_MAX_TOOL_RESULT_BYTES",
            std::ffi::OsStr::from_bytes(b"\xff\xfe"),
        )
        .output()
        .expect("sluice runs");
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "sluice: error: agent.max_tool_result_bytes must be valid UTF-8 text; got \"\\xFF\\xFE\" (from SLUICE_AGENT_MAX_TOOL_RESULT_BYTES)\n"
    );
    let empty = dir.path().join("notes.txt");
    std::fs::write(&empty, "").unwrap();
    let store_flag = empty.display().to_string();
    let o = sluice(&["--store", &store_flag, "session", "list"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        format!(
            "sluice: error: {store_flag} is not a Sluice session store: it is an empty file (0 bytes); refusing to use it (nothing was written). Give --store (SLUICE_STORE, store.path) a new file or an existing session store\n"
        )
    );
    assert_eq!(std::fs::read(&empty).unwrap(), b"");
}

/// Runs a store call to its end (the store is async; these tests are not).
fn block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}
