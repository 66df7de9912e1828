//! `sluice run`: the scripted model citing a file and line, a run killed with -9 and
//! resumed, Ctrl-C reaching the call in progress, a session created under the name given.

use super::*;

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
        .env("SLUICE_CACHE_DIR", crate::warm_cache())
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

/// Ctrl-C in `sluice run` reaches the tool call in progress: a guest sleeping inside a host
/// call (its timeout 60 s) is stopped, the run ends `aborted` (exit 130) within about 200 ms
/// of the signal, and the call's result says it was cancelled.
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
        .env("SLUICE_CACHE_DIR", crate::warm_cache())
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

/// `sluice run --session NAME "prompt"` on a name no session has creates a session
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
