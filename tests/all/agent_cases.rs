//! The agent loop on whole scenarios: the reference scenario (a 1 MB log read with the real
//! `read_file` under simulated context windows of 300 KB and 45 KB, and a session an older
//! version left holding a 1,057,864-byte observation) and cases C5–C6 of
//! `docs/regressions.md` (an oversized history recovered once, the shrink surviving a
//! restart).

use std::sync::Arc;

use serde_json::{Value, json};
use sluice_agent::Agent;
use sluice_models::{ContextWindow, ModelRequest, ScriptedModel};
use sluice_protocol::{Message, Role, SessionStatus, ToolCall};
use sluice_store::{SqliteStore, Store, now_rfc3339};
use sluice_tests::{HOSTILE_WASM, Sandbox, escaped_len};
use tokio_util::sync::CancellationToken;

use crate::agent_loop::{
    DEFAULT_CAP, agent, answer, calls, db, request_tool_contents, roles, run, script,
    tool_messages, until,
};
use crate::{CASE_CAP, cache};

/// The size of the log of the reference scenario: 1 MB.
const LOG_BYTES: usize = 1_000_000;

/// A structured (JSON lines) application log of at least `bytes` bytes, whole lines; every
/// 50th line is an error. Each line carries the request body as a JSON string, so its quotes
/// are escaped twice in an observation and three times in a request: a page of it weighs
/// about 1.4 times its escaped size in a request.
fn json_log(bytes: usize) -> String {
    let mut log = String::with_capacity(bytes + 300);
    let mut i = 0usize;
    while log.len() < bytes {
        i += 1;
        let ts = format!(
            "2026-11-30T08:{:02}:{:02}.{:03}Z",
            (i / 60_000) % 60,
            (i / 1000) % 60,
            i % 1000
        );
        let item = i * 7 % 1_000_000;
        let body = format!(r#"{{\"item\":\"{item:06}\",\"qty\":2,\"tags\":[\"a\",\"b\"]}}"#);
        let line = if i.is_multiple_of(50) {
            format!(
                r#"{{"ts":"{ts}","level":"error","msg":"request failed","id":{i},"error":"upstream timeout after 30000 ms","body":"{body}"}}"#
            )
        } else {
            format!(
                r#"{{"ts":"{ts}","level":"info","msg":"request handled","id":{i},"path":"/api/v1/items/{item:06}","status":200,"body":"{body}"}}"#
            )
        };
        log.push_str(&line);
        log.push('\n');
    }
    log
}

/// A plain-text log of at least `bytes` bytes, whole lines of about 110 bytes; every 50th
/// line is an error.
fn text_log(bytes: usize) -> String {
    let mut log = String::with_capacity(bytes + 200);
    let mut i = 0usize;
    while log.len() < bytes {
        i += 1;
        let ts = format!(
            "2026-11-30T08:{:02}:{:02}.{:03}Z",
            (i / 60_000) % 60,
            (i / 1000) % 60,
            i % 1000
        );
        if i.is_multiple_of(50) {
            log.push_str(&format!(
                "{ts} ERROR worker-{:02} request {i} failed: upstream timeout after 30000 ms\n",
                i % 16
            ));
        } else {
            log.push_str(&format!(
                "{ts} INFO  worker-{:02} request {i} handled path=/api/v1/items/{:06} status=200\n",
                i % 16,
                i * 7 % 1_000_000
            ));
        }
    }
    log
}

/// A sandbox at the default cap holding `app.log` (1 MB) and a small `notes.txt`.
fn log_sandbox() -> Sandbox {
    let sb = Sandbox::new(cache(), DEFAULT_CAP);
    sb.write("app.log", json_log(LOG_BYTES));
    sb.write("notes.txt", "rotated nightly\n");
    sb
}

/// The result of `read_file` in a stored or sent observation, if it is an uncut success.
fn read_result(observation: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(observation).ok()?;
    (v["ok"] == true).then(|| v["result"].clone())
}

/// Checks that `observation` is one page of `app.log` from the real `read_file`, within the
/// default cap and not cut: a content of at most half the cap (escaped), and a cursor on.
fn assert_one_page(observation: &str) -> Value {
    assert!(observation.len() <= DEFAULT_CAP as usize);
    assert!(!observation.contains("…[truncated; "), "cut by the cap");
    let page = read_result(observation).expect("an uncut read_file page");
    assert_eq!(page["path"], "app.log");
    let content = page["content"].as_str().unwrap();
    assert!(escaped_len(content) <= DEFAULT_CAP as usize / 2);
    assert!(escaped_len(content) > DEFAULT_CAP as usize / 2 - 300);
    assert!(page["nextOffset"].as_u64().is_some(), "{page}");
    page
}

#[test]
fn reference_scenario_a_300_kb_window_holds_one_paged_result_per_request() {
    let sb = log_sandbox();
    let db = db();
    let window = Arc::new(ContextWindow::new(ScriptedModel::new(), 300_000));
    let requests = Arc::new(std::sync::Mutex::new(Vec::<ModelRequest>::new()));
    let recorder = Recorder {
        inner: window.clone(),
        requests: requests.clone(),
    };
    let agent = agent(&db.store, recorder, sb.toolbox.clone(), DEFAULT_CAP);
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    let outcome = sb.block_on(run(&agent, &id, Some("What failed in the logs?")));
    assert_eq!(outcome.status, SessionStatus::Completed, "{outcome:?}");
    assert_eq!(outcome.last_error, None);
    assert_eq!(window.rejected(), 0, "{:?}", window.records());

    // Each request holds one more tool result than the one before: one page per read.
    let requests = requests.lock().unwrap().clone();
    assert_eq!(requests.len() as u32, outcome.requests);
    for (k, request) in requests.iter().enumerate() {
        let results = request_tool_contents(request);
        assert_eq!(results.len(), k, "request {k}");
        for r in &results {
            assert!(r.len() <= DEFAULT_CAP as usize, "no result over the cap");
            assert!(!r.contains("…[truncated; "), "no result cut by the cap");
        }
    }
    let stored = crate::agent_loop::block_on(db.store.messages(&id)).unwrap();
    let reads: Vec<&str> = stored
        .iter()
        .filter(|m| m.message.role == Role::Tool)
        .zip(
            stored
                .iter()
                .flat_map(|m| m.message.tool_calls.iter())
                .map(|c| c.name.as_str()),
        )
        .filter(|(_, name)| *name == "read_file")
        .map(|(m, _)| m.message.content.as_str())
        .collect();
    assert_eq!(reads.len(), sluice_models::scripted::MAX_READ_PAGES);
    let mut offset = 0;
    for r in reads {
        let page = assert_one_page(r);
        assert_eq!(page["offset"], offset, "pages follow the cursor");
        offset = page["nextOffset"].as_u64().unwrap();
    }
    let answer = outcome.answer.unwrap();
    assert!(answer.contains("- app.log:50: "), "{answer}");
}

/// A backend that records every request before passing it on (the scripted model does not
/// record).
struct Recorder<B> {
    inner: B,
    requests: Arc<std::sync::Mutex<Vec<ModelRequest>>>,
}

#[async_trait::async_trait]
impl<B: sluice_models::Backend> sluice_models::Backend for Recorder<B> {
    fn name(&self) -> String {
        self.inner.name()
    }

    async fn complete(
        &self,
        request: &ModelRequest,
    ) -> Result<sluice_models::ModelReply, sluice_models::BackendError> {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.complete(request).await
    }
}

#[test]
fn reference_scenario_a_45_kb_window_rejects_shrinks_and_completes_twice() {
    let sb = log_sandbox();
    let db = db();
    let model = script(&[
        calls(&[("read_file", json!({"path": "app.log"}))]),
        answer("first page read"),
        calls(&[("read_file", json!({"path": "app.log", "offset": 500_000}))]),
        answer("second page read"),
    ]);
    let window = Arc::new(ContextWindow::new(model.clone(), 45_000));
    let agent = agent(&db.store, window.clone(), sb.toolbox.clone(), DEFAULT_CAP);
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;

    for (round, prompt) in ["What is in app.log?", "And in its middle?"]
        .into_iter()
        .enumerate()
    {
        let outcome = sb.block_on(run(&agent, &id, Some(prompt)));
        assert_eq!(outcome.status, SessionStatus::Completed, "{outcome:?}");
        assert_eq!(outcome.last_error, None);
        // The prompt, the page (rejected), the retry.
        assert_eq!(outcome.requests, 3);
        let records = window.records();
        let this_run = &records[records.len() - 3..];
        assert_eq!(
            this_run.iter().map(|r| r.rejected).collect::<Vec<_>>(),
            [false, true, false],
            "{records:?}"
        );
        assert!(this_run[1].bytes > 45_000 && this_run[2].bytes <= 45_000);
        // The page was shrunk to at most 2,048 bytes; the audit keeps it whole.
        let tool = tool_messages(&db.store, &id);
        assert_eq!(tool.len(), round + 1);
        let shrunk = &tool[round].message.content;
        assert!(shrunk.len() <= 2048, "{} bytes", shrunk.len());
        let audit = crate::agent_loop::block_on(db.store.audit(&id)).unwrap();
        assert_eq!(audit.len(), round + 1);
        let original = &audit[round].original;
        assert_eq!(audit[round].seq, tool[round].seq);
        let page = assert_one_page(original);
        assert_eq!(page["offset"], if round == 0 { 0 } else { 500_000 });
        assert!(
            shrunk.contains(&format!("…[cut from {} bytes", original.len())),
            "{shrunk}"
        );
        assert!(original.starts_with(&shrunk[..shrunk.find('…').unwrap()]));
        // The retry carried the shrunk page, and every result shrunk so far.
        let sent = model.requests();
        let retried = sent.last().unwrap();
        let stored: Vec<&str> = tool.iter().map(|m| m.message.content.as_str()).collect();
        assert_eq!(request_tool_contents(retried), stored);
    }
    assert_eq!(window.rejected(), 2);
    assert_eq!(
        roles(&db.store, &id),
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
}

/// A plain-text log of about 1 MB and the observation an older version stored for reading
/// all of it at once (no pages, no cap), exactly `bytes` long: whole lines of [`text_log`],
/// then a last line of `x` that makes the length exact.
fn whole_file_observation(bytes: usize) -> (String, String) {
    let observation = |log: &str| {
        let lines = log.lines().count();
        format!(
            "{{\"ok\":true,\"result\":{}}}",
            json!({"path": "app.log", "size": log.len(), "offset": 0, "content": log,
                   "startLine": 1, "endLine": lines, "totalLines": lines})
        )
    };
    let mut log = String::new();
    let mut escaped = 0;
    for line in text_log(bytes).split_inclusive('\n') {
        // Room for the envelope (about 130 bytes) and the last line.
        if escaped + escaped_len(line) + 300 > bytes {
            break;
        }
        escaped += escaped_len(line);
        log.push_str(line);
    }
    let base = log.len();
    let mut fill = 0;
    loop {
        log.truncate(base);
        log.push_str(&"x".repeat(fill));
        log.push('\n');
        let text = observation(&log);
        if text.len() == bytes {
            return (log, text);
        }
        assert!(text.len() < bytes, "{} bytes", text.len());
        fill += bytes - text.len();
    }
}

#[test]
fn reference_scenario_a_session_holding_a_whole_file_observation_recovers() {
    let sb = Sandbox::new(cache(), DEFAULT_CAP);
    let (log, huge) = whole_file_observation(1_057_864);
    assert_eq!(huge.len(), 1_057_864);
    assert!(log.len() > 1_000_000, "{} bytes", log.len());
    sb.write("app.log", &log);

    for limit in [300_000, 45_000] {
        // The session as an older version stored it, straight through the store.
        let db = db();
        let id = crate::agent_loop::block_on(db.store.create_session())
            .unwrap()
            .id;
        let call = ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"app.log"}"#.into(),
        };
        for m in [
            Message::user("Read app.log", now_rfc3339()),
            Message::assistant("Reading `app.log`.", vec![call], now_rfc3339()),
            Message::tool("call_1", huge.clone(), now_rfc3339()),
            Message::assistant("It is a long log.", vec![], now_rfc3339()),
        ] {
            crate::agent_loop::block_on(db.store.append(&id, &m)).unwrap();
        }
        let window = Arc::new(ContextWindow::new(ScriptedModel::new(), limit));
        let agent = agent(&db.store, window.clone(), sb.toolbox.clone(), DEFAULT_CAP);
        let outcome = sb.block_on(run(&agent, &id, Some("What failed in the logs?")));
        assert_eq!(
            outcome.status,
            SessionStatus::Completed,
            "{limit}: {outcome:?}"
        );
        assert_eq!(outcome.last_error, None);
        // Recovered on its first rejection: the first request was rejected, its retry was
        // not, and the old result's original is in the audit.
        let records = window.records();
        assert!(records[0].rejected && !records[1].rejected, "{records:?}");
        let audit = crate::agent_loop::block_on(db.store.audit(&id)).unwrap();
        assert_eq!(audit[0].seq, 3);
        assert_eq!(audit[0].original, huge);
        if limit == 300_000 {
            // The pages the run then read fit the window: no other rejection.
            assert_eq!(window.rejected(), 1, "{records:?}");
            assert_eq!(audit.len(), 1);
        } else {
            // A page is over a 45 KB window, but every rejection is followed by an accepted
            // retry.
            for pair in records.windows(2) {
                assert!(!(pair[0].rejected && pair[1].rejected), "{records:?}");
            }
            assert_eq!(audit.len(), window.rejected());
        }
        let old = &crate::agent_loop::block_on(db.store.messages(&id)).unwrap()[2]
            .message
            .content;
        assert!(old.len() <= 2048, "{} bytes", old.len());
        assert!(old.contains("…[cut from 1057864 bytes"), "{old}");
        assert!(outcome.answer.unwrap().contains("app.log:"));
    }
}

/// C5's session: the hostile component at CAP 8192 (its `big_string` makes results of
/// ~8 KiB), a fake provider rejecting requests over 40 KiB with Anthropic's 400, and a
/// model that asks for six results in one turn, then answers two prompts.
struct C5 {
    sb: Sandbox,
    db: crate::agent_loop::Db,
    id: String,
}

/// The window of C5: 40 KiB.
const C5_WINDOW: usize = 40 * 1024;

/// Runs case C5 and checks it; returns the session for C6.
fn c5() -> C5 {
    let sb = Sandbox::with_component(cache(), CASE_CAP, HOSTILE_WASM, |_| {});
    let db = db();
    let six: Vec<(&str, Value)> = (0..6)
        .map(|_| ("big_string", json!({"bytes": 8000})))
        .collect();
    let model = script(&[
        calls(&six),
        answer("six results read"),
        answer("still here"),
    ]);
    let window = Arc::new(ContextWindow::new(model.clone(), C5_WINDOW));
    let agent = agent(&db.store, window.clone(), sb.toolbox.clone(), CASE_CAP);
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;

    let first = sb.block_on(run(&agent, &id, Some("Fetch six strings.")));
    assert_eq!(first.status, SessionStatus::Completed, "{first:?}");
    assert_eq!(first.last_error, None);
    let second = sb.block_on(run(&agent, &id, Some("Anything else?")));
    assert_eq!(second.status, SessionStatus::Completed, "{second:?}");
    assert_eq!(second.answer.as_deref(), Some("still here"));

    // One shrink, one retry: the request with the six results was the only rejection.
    let records = window.records();
    assert_eq!(
        records.iter().map(|r| r.rejected).collect::<Vec<_>>(),
        [false, true, false, false],
        "{records:?}"
    );
    assert!(records[1].bytes > C5_WINDOW);
    let original = format!(r#"{{"ok":true,"result":"{}"}}"#, "x".repeat(8000));
    let audit = crate::agent_loop::block_on(db.store.audit(&id)).unwrap();
    assert_eq!(audit.len(), 6);
    let tool = tool_messages(&db.store, &id);
    assert_eq!(tool.len(), 6);
    for (entry, m) in audit.iter().zip(&tool) {
        assert_eq!(entry.original, original);
        assert_eq!(entry.seq, m.seq);
        assert_eq!(entry.replacement, m.message.content);
        assert!(m.message.content.len() <= 2048);
        assert!(m.message.content.contains("…[cut from 8023 bytes"));
        assert!(
            entry.reason.contains("prompt is too long: "),
            "{}",
            entry.reason
        );
    }

    // The shrunk results persist: the second prompt's request carries them byte for byte
    // and is the retried request plus the two messages added since (the answer and the new
    // prompt), nothing more; no original is ever re-sent.
    let sent = model.requests();
    assert_eq!(
        sent.len(),
        3,
        "the inner model saw the prompt, the retry, prompt two"
    );
    let (retried, next) = (&sent[1], &sent[2]);
    assert_eq!(records[2].bytes, retried.json_bytes());
    assert_eq!(
        next.messages[..retried.messages.len()],
        retried.messages[..]
    );
    let added = &next.messages[retried.messages.len()..];
    assert_eq!(
        added.iter().map(|m| m.role).collect::<Vec<_>>(),
        [Role::Assistant, Role::User]
    );
    let added_bytes: usize = added
        .iter()
        .map(|m| serde_json::to_string(m).unwrap().len() + 1)
        .sum();
    assert_eq!(next.json_bytes(), retried.json_bytes() + added_bytes);
    assert!(next.json_bytes() <= C5_WINDOW);
    for request in &sent[1..] {
        for content in request_tool_contents(request) {
            assert_ne!(content, original, "an original was re-sent");
            assert!(content.len() <= 2048);
        }
    }
    C5 { sb, db, id }
}

#[test]
fn c5_an_oversized_history_is_shrunk_once_and_stays_shrunk() {
    c5();
}

#[test]
fn c6_a_restarted_session_keeps_its_shrunk_results() {
    let C5 { sb, db, id } = c5();
    // A third prompt is in flight when the operator stops the process (Ctrl-C).
    let slow = script(&[json!({"content": "never seen", "delayMs": 30_000})]);
    let window = Arc::new(ContextWindow::new(slow.clone(), C5_WINDOW));
    let agent = agent(&db.store, window.clone(), sb.toolbox.clone(), CASE_CAP);
    let cancel = CancellationToken::new();
    let stopped = sb.block_on(async {
        let run = agent.run(&id, Some("One more thing?"), &cancel, &|_| {});
        let stop = async {
            until("the request", || slow.requests().len() == 1).await;
            cancel.cancel();
        };
        tokio::join!(run, stop).0
    });
    assert_eq!(stopped.unwrap().status, SessionStatus::Aborted);
    let before_restart = slow.requests()[0].clone();
    let transcript = crate::agent_loop::block_on(db.store.messages(&id)).unwrap();
    let shrunk: Vec<String> = tool_messages(&db.store, &id)
        .into_iter()
        .map(|m| m.message.content)
        .collect();
    drop(agent);
    let crate::agent_loop::Db {
        _dir,
        path,
        store: old_store,
    } = db;
    drop(old_store);

    // The process starts again over the same file, with `--session` the same id.
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    assert_eq!(
        crate::agent_loop::block_on(store.messages(&id)).unwrap(),
        transcript
    );
    let model = script(&[answer("resumed")]);
    let window = Arc::new(ContextWindow::new(model.clone(), C5_WINDOW));
    let agent = Agent::new(
        store.clone(),
        window.clone(),
        sb.toolbox.clone(),
        sluice_agent::Settings {
            max_tool_result_bytes: CASE_CAP,
            ..sluice_agent::Settings::default()
        },
    );
    let outcome = sb.block_on(run(&agent, &id, None));
    assert_eq!(outcome.status, SessionStatus::Completed, "{outcome:?}");
    assert_eq!(window.rejected(), 0);
    let first = &model.requests()[0];
    // The transcript carries the shrunk results byte for byte, and the first request is the
    // last one before the restart.
    assert_eq!(request_tool_contents(first), shrunk);
    assert_eq!(first.messages, before_restart.messages);
    assert_eq!(first.json_bytes(), before_restart.json_bytes());
    assert_eq!(
        crate::agent_loop::block_on(store.audit(&id)).unwrap().len(),
        6
    );
    assert_eq!(
        crate::agent_loop::block_on(store.messages(&id))
            .unwrap()
            .len(),
        transcript.len() + 1
    );
}
