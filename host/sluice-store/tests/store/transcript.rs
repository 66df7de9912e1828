use std::time::Instant;

use sluice_protocol::{Message, Role, SessionStatus};
use sluice_store::{AuditEntry, RunEnd, StoreError, StoredMessage, now_rfc3339};

use crate::harness::{Harness, Kind, call, user};

fn every_kind_of_message() -> Vec<Message> {
    let megabyte: String = "0123456789abcdef".repeat(64 * 1024);
    assert_eq!(megabyte.len(), 1 << 20);
    vec![
        Message::user(
            "héllo wörld ✓ 🦀 日本語 — \"quotes\" 'single' \\ back\r\nCRLF\ttab \u{0} nul \u{10FFFF}",
            "2026-11-30T08:00:00.001Z",
        ),
        Message::assistant(
            "",
            vec![
                call("call_1", "read_file", r#"{"path":"src/ü.rs","offset":0}"#),
                call("call_2", "grep_files", "{not json at all"),
                call("", "", ""),
            ],
            "2026-11-30T08:00:00.002Z",
        ),
        Message::tool("call_1", megabyte, "2026-11-30T08:00:00.003Z"),
        Message::tool("call_2", "", "2026-11-30T08:00:00.004Z"),
        Message {
            role: Role::Tool,
            content: "{\"ok\":false,\"error\":\"denied\"}".into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(String::new()),
            created_at: "not even a timestamp".into(),
        },
        Message::assistant("The answer: 42.", Vec::new(), "2026-11-30T08:00:01.000Z"),
    ]
}

fn numbered(messages: &[Message]) -> Vec<StoredMessage> {
    messages
        .iter()
        .enumerate()
        .map(|(i, message)| StoredMessage {
            seq: i as u64 + 1,
            message: message.clone(),
        })
        .collect()
}

async fn every_field_round_trips(kind: Kind) {
    let Some(t) = Harness::new(kind, "every_field_round_trips").await else {
        return;
    };
    let session = t.store.create_session().await.unwrap();
    assert_eq!(session.status, SessionStatus::Idle);
    assert_eq!(session.message_count, 0);
    assert_eq!(session.created_at, session.updated_at);
    assert_eq!(t.store.session(&session.id).await.unwrap(), session);
    assert_eq!(t.store.messages(&session.id).await.unwrap(), Vec::new());

    let messages = every_kind_of_message();
    for (i, message) in messages.iter().enumerate() {
        assert_eq!(
            t.store.append(&session.id, message).await.unwrap(),
            i as u64 + 1
        );
    }
    assert_eq!(
        t.store.messages(&session.id).await.unwrap(),
        numbered(&messages)
    );

    let after = t.store.session(&session.id).await.unwrap();
    assert_eq!(after.message_count, messages.len() as u64);
    assert_eq!(after.created_at, session.created_at);
    assert!(after.updated_at >= session.updated_at);

    // And from a fresh connection.
    let store = t.reopen().await;
    assert_eq!(
        store.messages(&session.id).await.unwrap(),
        numbered(&messages)
    );
    assert_eq!(store.session(&session.id).await.unwrap(), after);
}

/// SQLite's own columns (PostgreSQL's are the same JSON text).
#[tokio::test]
async fn tool_calls_are_stored_as_json_and_absent_ones_as_null() {
    let kind = Kind::Sqlite;
    let Some(t) = Harness::new(
        kind,
        "tool_calls_are_stored_as_json_and_absent_ones_as_null",
    )
    .await
    else {
        return;
    };
    let id = t.store.create_session().await.unwrap().id;
    t.store
        .append(
            &id,
            &Message::assistant("", vec![call("c1", "list_dir", "{}")], "t"),
        )
        .await
        .unwrap();
    t.store.append(&id, &user("no calls")).await.unwrap();
    let conn = crate::harness::raw(&t.path);
    let stored: Vec<Option<String>> = conn
        .prepare("SELECT tool_calls FROM messages WHERE session_id = ?1 ORDER BY seq")
        .unwrap()
        .query_map([&id], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        stored,
        vec![
            Some(r#"[{"id":"c1","name":"list_dir","arguments":"{}"}]"#.to_owned()),
            None
        ]
    );
}

async fn positions_are_gapless_and_per_session(kind: Kind) {
    let Some(t) = Harness::new(kind, "positions_are_gapless_and_per_session").await else {
        return;
    };
    let a = t.store.create_session().await.unwrap().id;
    let b = t.store.create_session().await.unwrap().id;
    for i in 1..=50u64 {
        assert_eq!(
            t.store.append(&a, &user(&format!("a{i}"))).await.unwrap(),
            i
        );
        if i % 2 == 0 {
            assert_eq!(
                t.store
                    .append(&b, &user(&format!("b{}", i / 2)))
                    .await
                    .unwrap(),
                i / 2
            );
        }
    }
    let seqs = |messages: Vec<sluice_store::StoredMessage>| -> Vec<u64> {
        messages.iter().map(|m| m.seq).collect()
    };
    assert_eq!(
        seqs(t.store.messages(&a).await.unwrap()),
        (1..=50).collect::<Vec<_>>()
    );
    assert_eq!(
        seqs(t.store.messages(&b).await.unwrap()),
        (1..=25).collect::<Vec<_>>()
    );
    assert_eq!(
        t.store.messages(&b).await.unwrap()[24].message.content,
        "b25"
    );
}

async fn annotate_records_a_note_beside_a_message_it_leaves_alone(kind: Kind) {
    let Some(t) = Harness::new(
        kind,
        "annotate_records_a_note_beside_a_message_it_leaves_alone",
    )
    .await
    else {
        return;
    };
    let id = t.store.create_session().await.unwrap().id;
    let original = every_kind_of_message();
    for m in &original {
        t.store.append(&id, m).await.unwrap();
    }
    let note = r#"{"program":"return 1","calls":[]}"#;
    t.store
        .annotate(&id, 3, "run_script: its program and tool calls", note)
        .await
        .unwrap();
    assert_eq!(t.store.messages(&id).await.unwrap(), numbered(&original));
    let audit = t.store.audit(&id).await.unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(
        (
            audit[0].seq,
            audit[0].reason.as_str(),
            audit[0].original.as_str(),
            audit[0].replacement.as_str()
        ),
        (
            3,
            "run_script: its program and tool calls",
            note,
            original[2].content.as_str()
        )
    );
    assert!(matches!(
        t.store.annotate(&id, 99, "r", "n").await,
        Err(StoreError::NoMessage { seq: 99, .. })
    ));
    assert_eq!(t.store.audit(&id).await.unwrap().len(), 1);
}

async fn record_call_keeps_what_a_call_cost_beside_its_message(kind: Kind) {
    let Some(t) = Harness::new(
        kind,
        "record_call_keeps_what_a_call_cost_beside_its_message",
    )
    .await
    else {
        return;
    };
    let id = t.store.create_session().await.unwrap().id;
    let original = every_kind_of_message();
    for m in &original {
        t.store.append(&id, m).await.unwrap();
    }
    let facts = serde_json::json!({"outcome": "returned", "guestUs": 812, "peakMemoryBytes": 1_179_648, "digest": "sha256:ab"});
    t.store
        .record_call(&id, 3, "read_file", &facts)
        .await
        .unwrap();
    // A name the model gave may hold anything, NUL included.
    let odd = serde_json::json!({"outcome": ""});
    t.store.record_call(&id, 3, "no\0such", &odd).await.unwrap();
    assert_eq!(t.store.messages(&id).await.unwrap(), numbered(&original));
    let calls = t.store.calls(&id).await.unwrap();
    let seen: Vec<_> = calls
        .iter()
        .map(|c| (c.seq, c.tool.as_str(), c.facts.clone()))
        .collect();
    assert_eq!(seen, [(3, "read_file", facts), (3, "no\0such", odd)]);
    assert_eq!(calls[0].recorded_at.len(), "2026-11-30T08:15:02.123Z".len());
    assert!(matches!(
        t.store
            .record_call(&id, 99, "read_file", &serde_json::json!({}))
            .await,
        Err(StoreError::NoMessage { seq: 99, .. })
    ));
    assert_eq!(t.store.calls(&id).await.unwrap().len(), 2);
    assert!(t.store.audit(&id).await.unwrap().is_empty());
    assert!(matches!(
        t.store.calls("s-nosuchsession").await,
        Err(StoreError::NoSession(_))
    ));
}

async fn replace_content_keeps_the_original_in_the_audit(kind: Kind) {
    let Some(t) = Harness::new(kind, "replace_content_keeps_the_original_in_the_audit").await
    else {
        return;
    };
    let id = t.store.create_session().await.unwrap().id;
    let original = every_kind_of_message();
    for m in &original {
        t.store.append(&id, m).await.unwrap();
    }
    let big = original[2].content.clone();
    let head = "0123…[cut from 1048576 bytes: a request including this result exceeded the model's context window. Ask for less: …]";
    let reason = "prompt is too long: 210000 tokens > 200000 maximum";

    let before = now_rfc3339();
    t.store.replace_content(&id, 3, head, reason).await.unwrap();
    let after = now_rfc3339();

    let mut expected = numbered(&original);
    expected[2].message.content = head.to_owned();
    assert_eq!(
        t.store.messages(&id).await.unwrap(),
        expected,
        "only message 3 changed"
    );

    let audit = t.store.audit(&id).await.unwrap();
    assert_eq!(audit.len(), 1);
    let changed_at = audit[0].changed_at.clone();
    assert!(
        before <= changed_at && changed_at <= after,
        "{before} <= {changed_at} <= {after}"
    );
    assert_eq!(
        audit,
        vec![AuditEntry {
            session_id: id.clone(),
            seq: 3,
            changed_at,
            reason: reason.to_owned(),
            original: big,
            replacement: head.to_owned(),
        }]
    );

    // A second change keeps the first replacement as its original; the audit is in order.
    t.store
        .replace_content(&id, 3, "shorter", "again")
        .await
        .unwrap();
    let audit = t.store.audit(&id).await.unwrap();
    assert_eq!(audit.len(), 2);
    assert_eq!(
        (
            audit[1].original.as_str(),
            audit[1].replacement.as_str(),
            audit[1].reason.as_str()
        ),
        (head, "shorter", "again")
    );
    assert_eq!(
        t.store.messages(&id).await.unwrap()[2].message.content,
        "shorter"
    );
}

async fn replace_content_of_a_missing_message_changes_nothing(kind: Kind) {
    let Some(t) = Harness::new(kind, "replace_content_of_a_missing_message_changes_nothing").await
    else {
        return;
    };
    let id = t.store.create_session().await.unwrap().id;
    t.store.append(&id, &user("one")).await.unwrap();
    for seq in [0, 2, u64::MAX] {
        match t.store.replace_content(&id, seq, "x", "r").await {
            Err(StoreError::NoMessage { session, seq: s }) => {
                assert_eq!((session.as_str(), s), (id.as_str(), seq))
            }
            other => panic!("seq {seq}: {other:?}"),
        }
    }
    assert!(matches!(
        t.store.replace_content("s-nosuchsession", 1, "x", "r").await,
        Err(StoreError::NoSession(s)) if s == "s-nosuchsession"
    ));
    assert_eq!(t.store.audit(&id).await.unwrap(), Vec::new());
    assert_eq!(
        t.store.messages(&id).await.unwrap()[0].message.content,
        "one"
    );
}

async fn unknown_sessions_are_no_session_errors(kind: Kind) {
    let Some(t) = Harness::new(kind, "unknown_sessions_are_no_session_errors").await else {
        return;
    };
    let s = &t.store;
    let id = "s-0000000000zz";
    let no_session = |r: Result<(), StoreError>| match r {
        Err(StoreError::NoSession(got)) => assert_eq!(got, id),
        other => panic!("{other:?}"),
    };
    no_session(s.session(id).await.map(drop));
    no_session(s.messages(id).await.map(drop));
    no_session(s.append(id, &user("x")).await.map(drop));
    no_session(s.audit(id).await.map(drop));
    no_session(s.begin_run(id, None).await.map(drop));
    no_session(s.append_queued_prompts(id).await.map(drop));
    no_session(
        s.end_run(id, &RunEnd::status(SessionStatus::Completed, None))
            .await,
    );
    no_session(s.decide(id, "c1", sluice_store::Decision::Approve).await);
    no_session(s.decision(id, "c1").await.map(drop));
    no_session(s.latest_run(id).await.map(drop));
    no_session(s.request_cancel(id).await.map(drop));
    assert_eq!(s.list_sessions().await.unwrap(), Vec::new());
    assert_eq!(
        s.session(id).await.unwrap_err().to_string(),
        "no session \"s-0000000000zz\"",
        "errors quote the id"
    );
}

async fn sessions_are_listed_newest_first(kind: Kind) {
    let Some(t) = Harness::new(kind, "sessions_are_listed_newest_first").await else {
        return;
    };
    let mut ids: Vec<String> = Vec::new();
    for _ in 0..5 {
        ids.push(t.store.create_session().await.unwrap().id);
    }
    t.store.append(&ids[1], &user("x")).await.unwrap();
    t.store.append(&ids[1], &user("y")).await.unwrap();
    let listed = t.store.list_sessions().await.unwrap();
    let listed_ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
    let mut expected: Vec<&str> = ids.iter().map(String::as_str).collect();
    expected.reverse();
    assert_eq!(listed_ids, expected);
    assert_eq!(listed[3].message_count, 2);
    assert_eq!(listed[3], t.store.session(&ids[1]).await.unwrap());
}

/// Message 10,000 costs about what message 1 did: the append reads one index entry and
/// writes one row, whatever the length of the transcript. (The unit test
/// `append_searches_the_primary_key` checks the query plan; this checks the clock, with a
/// wide margin so a loaded machine does not fail it.)
async fn append_cost_does_not_grow_with_the_transcript(kind: Kind) {
    let Some(t) = Harness::new(kind, "append_cost_does_not_grow_with_the_transcript").await else {
        return;
    };
    let id = t.store.create_session().await.unwrap().id;
    let message = user(&"x".repeat(300));
    let mut micros = Vec::with_capacity(10_000);
    for _ in 0..10_000 {
        let start = Instant::now();
        t.store.append(&id, &message).await.unwrap();
        micros.push(start.elapsed().as_micros());
    }
    let median = |slice: &[u128]| {
        let mut v = slice.to_vec();
        v.sort_unstable();
        v[v.len() / 2]
    };
    let first = median(&micros[..500]);
    let last = median(&micros[9_500..]);
    assert!(
        last <= 3 * first + 200,
        "median append: first 500 {first} µs, last 500 {last} µs"
    );
    assert_eq!(t.store.session(&id).await.unwrap().message_count, 10_000);
}

both!(
    every_field_round_trips,
    positions_are_gapless_and_per_session,
    replace_content_keeps_the_original_in_the_audit,
    annotate_records_a_note_beside_a_message_it_leaves_alone,
    record_call_keeps_what_a_call_cost_beside_its_message,
    replace_content_of_a_missing_message_changes_nothing,
    unknown_sessions_are_no_session_errors,
    sessions_are_listed_newest_first,
);

/// SQLite only: PostgreSQL's append cost is measured by the bench (row
/// 7b), where a loaded machine cannot make a test flaky.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_cost_does_not_grow_with_the_transcript_sqlite() {
    append_cost_does_not_grow_with_the_transcript(Kind::Sqlite).await;
}
