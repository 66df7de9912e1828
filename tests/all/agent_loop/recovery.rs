//! Context-window recovery (rows P5–P10): the newest results shrunk and the retry
//! completed, only the newest large group, a session already over, rejected again, nothing
//! to shrink, and a rate limit that is no overflow.

use super::*;

#[test]
fn p5_an_overflow_shrinks_the_newest_results_and_the_retry_completes() {
    let events = Mutex::new(Vec::new());
    let db = db();
    let model = script(&[
        calls(&[
            ("text", json!({"bytes": 30_000})),
            ("text", json!({"bytes": 30_000})),
        ]),
        openai_overflow(),
        answer("done"),
    ]);
    let tools = Arc::new(FakeTools::default());
    let agent = agent(&db.store, model.clone(), tools.clone(), DEFAULT_CAP);
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    let outcome = block_on(agent.run(&id, Some("go"), &CancellationToken::new(), &|e| {
        events.lock().unwrap().push(e)
    }))
    .unwrap();

    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(outcome.last_error, None);
    assert_eq!(outcome.answer.as_deref(), Some("done"));
    assert_eq!(
        stored_status(&db.store, &id, &outcome),
        SessionStatus::Completed
    );
    assert_eq!(
        roles(&db.store, &id),
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant
        ]
    );
    let original = text_observation(30_000);
    assert_eq!(original.len(), 30_032);
    let tool = tool_messages(&db.store, &id);
    for m in &tool {
        let c = &m.message.content;
        assert!(c.len() <= 2048, "{} bytes", c.len());
        assert!(
            original.starts_with(&c[..c.find('…').unwrap()]),
            "a head of the original"
        );
        assert!(c.contains("…[cut from 30032 bytes"), "{c}");
        assert!(
            c.ends_with("…[cut from 30032 bytes: a request including this result exceeded the model's context window. Ask for less: a narrower query]"),
            "{c}"
        );
    }
    // Three requests; the retry is under a tenth of the rejected one and carries the shrunk
    // results. No tool ran again.
    assert_eq!(outcome.requests, 3);
    let requests = model.requests();
    let bytes = model.request_bytes();
    assert_eq!(bytes.len(), 3);
    assert!(bytes[2] * 10 < bytes[1], "{bytes:?}");
    let stored: Vec<&str> = tool.iter().map(|m| m.message.content.as_str()).collect();
    assert_eq!(request_tool_contents(&requests[1]), [&original, &original]);
    assert_eq!(request_tool_contents(&requests[2]), stored);
    assert_eq!(tools.calls(), 2);
    // The audit holds the originals.
    let audit = crate::agent_loop::block_on(db.store.audit(&id)).unwrap();
    assert_eq!(audit.len(), 2);
    for (entry, m) in audit.iter().zip(&tool) {
        assert_eq!(entry.seq, m.seq);
        assert_eq!(entry.original, original);
        assert_eq!(entry.replacement, m.message.content);
        assert!(entry.reason.contains(OPENAI_OVERFLOW), "{}", entry.reason);
    }
    let shrunk: Vec<RunEvent> = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, RunEvent::Shrunk { .. }))
        .cloned()
        .collect();
    let to_bytes = stored.iter().map(|s| s.len()).sum();
    assert_eq!(
        shrunk,
        [RunEvent::Shrunk {
            seqs: vec![tool[0].seq, tool[1].seq],
            from_bytes: 60_064,
            to_bytes
        }]
    );
}

#[test]
fn p6_only_the_newest_group_with_a_large_result_is_shrunk() {
    // 9,968 x make an observation of exactly 10,000 bytes.
    assert_eq!(text_observation(9_968).len(), 10_000);
    let big = || ("text", json!({"bytes": 9_968}));
    let small = ("text", json!({"bytes": 10}));
    let db = db();
    let model = script(&[
        calls(&[big()]),
        answer("first"),
        calls(&[small, big()]),
        answer("second"),
        openai_overflow(),
        answer("third"),
    ]);
    let tools = Arc::new(FakeTools::default());
    let agent = agent(&db.store, model.clone(), tools.clone(), DEFAULT_CAP);
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    for prompt in ["one", "two"] {
        let outcome = block_on(run(&agent, &id, Some(prompt)));
        assert_eq!(outcome.status, SessionStatus::Completed);
    }
    let before = tool_messages(&db.store, &id);
    assert_eq!(before.len(), 3);
    let outcome = block_on(run(&agent, &id, Some("three")));
    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(outcome.last_error, None);
    assert_eq!(outcome.requests, 2);

    let after = tool_messages(&db.store, &id);
    // The old group and the small result of the newest group are untouched.
    assert_eq!(after[0], before[0]);
    assert_eq!(after[0].message.content.len(), 10_000);
    assert_eq!(after[1], before[1]);
    let shrunk = &after[2].message.content;
    assert!(shrunk.len() <= 2048);
    assert!(shrunk.contains("…[cut from 10000 bytes"), "{shrunk}");
    let audit = crate::agent_loop::block_on(db.store.audit(&id)).unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].seq, before[2].seq);
    assert_eq!(audit[0].original, before[2].message.content);
    assert_eq!(tools.calls(), 3);
}

#[test]
fn p7_a_session_holding_a_huge_observation_recovers() {
    let db = db();
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    // As an older version (or another writer) would have stored it: one uncapped result.
    let huge = text_observation(1_000_000 - 32);
    assert_eq!(huge.len(), 1_000_000);
    let call = ToolCall {
        id: "call_old".into(),
        name: "text".into(),
        arguments: r#"{"bytes":999968}"#.into(),
    };
    for m in [
        Message::user("read it", now_rfc3339()),
        Message::assistant("", vec![call], now_rfc3339()),
        Message::tool("call_old", huge.clone(), now_rfc3339()),
        Message::assistant("It is long.", vec![], now_rfc3339()),
    ] {
        crate::agent_loop::block_on(db.store.append(&id, &m)).unwrap();
    }
    let model = script(&[answer("recovered")]);
    let window = Arc::new(sluice_models::ContextWindow::new(model.clone(), 100_000));
    let agent = agent(
        &db.store,
        window.clone(),
        Arc::new(FakeTools::default()),
        DEFAULT_CAP,
    );
    let outcome = block_on(run(&agent, &id, Some("and now?")));
    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(outcome.last_error, None);
    assert_eq!(outcome.answer.as_deref(), Some("recovered"));
    assert_eq!(outcome.requests, 2);
    assert_eq!((window.rejected(), window.sent()), (1, 1));
    let tool = tool_messages(&db.store, &id);
    let stored = &tool[0].message.content;
    assert!(stored.len() <= 2048, "{} bytes", stored.len());
    assert!(stored.contains("…[cut from 1000000 bytes"), "{stored}");
    let audit = crate::agent_loop::block_on(db.store.audit(&id)).unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].original, huge);
    assert_eq!(
        roles(&db.store, &id),
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::User,
            Role::Assistant
        ]
    );
}

#[test]
fn p8_rejected_again_after_shrinking_is_an_error() {
    let (db, id, model, tools, outcome) = run_fake(
        &[
            calls(&[("text", json!({"bytes": 30_000}))]),
            anthropic_overflow(),
            anthropic_overflow(),
        ],
        DEFAULT_CAP,
        "go",
    );
    assert_eq!(outcome.status, SessionStatus::Error);
    assert_eq!(
        stored_status(&db.store, &id, &outcome),
        SessionStatus::Error
    );
    let last_error = outcome.last_error.unwrap();
    assert!(
        last_error.contains("still does not fit the model's context window after shrinking"),
        "{last_error}"
    );
    assert!(last_error.contains("start a new session"), "{last_error}");
    assert!(last_error.contains(ANTHROPIC_OVERFLOW), "{last_error}");
    assert_eq!(outcome.requests, 3);
    assert_eq!(model.requests().len(), 3);
    // The shrink happened once and stays; the tool did not run again.
    assert_eq!(
        crate::agent_loop::block_on(db.store.audit(&id))
            .unwrap()
            .len(),
        1
    );
    assert_eq!(tools.calls(), 1);
    assert!(tool_messages(&db.store, &id)[0].message.content.len() <= 2048);
}

#[test]
fn p9_an_overflow_with_nothing_to_shrink_is_an_error_after_one_request() {
    let prompt = "p".repeat(5000);
    let (db, id, model, _tools, outcome) = run_fake(
        &[anthropic_overflow(), answer("never")],
        DEFAULT_CAP,
        &prompt,
    );
    assert_eq!(outcome.status, SessionStatus::Error);
    assert_eq!(
        stored_status(&db.store, &id, &outcome),
        SessionStatus::Error
    );
    let last_error = outcome.last_error.unwrap();
    assert!(
        last_error.contains("no tool result over 2,048 bytes is left to shrink"),
        "{last_error}"
    );
    assert!(
        last_error.contains("shorten the prompt or start a new session"),
        "{last_error}"
    );
    assert!(last_error.contains(ANTHROPIC_OVERFLOW), "{last_error}");
    assert_eq!(outcome.requests, 1);
    assert_eq!(model.requests().len(), 1);
    assert_eq!(roles(&db.store, &id), [Role::User]);
    assert_eq!(
        crate::agent_loop::block_on(db.store.messages(&id)).unwrap()[0]
            .message
            .content,
        prompt
    );
    assert!(
        crate::agent_loop::block_on(db.store.audit(&id))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn p10_a_rate_limit_is_not_an_overflow_and_shrinks_nothing() {
    let rate_limited = json!({"error": {"status": 429, "headers": {"retry-after": 8}, "body": {"error": {
        "message": RATE_LIMITED,
        "type": "tokens",
        "param": null,
        "code": "rate_limit_exceeded"
    }}}});
    let (db, id, model, _tools, outcome) = run_fake(
        &[
            calls(&[("text", json!({"bytes": 30_000}))]),
            rate_limited.clone(),
            rate_limited,
        ],
        DEFAULT_CAP,
        "go",
    );
    assert_eq!(outcome.status, SessionStatus::Error);
    assert_eq!(outcome.last_error.as_deref(), Some(RATE_LIMITED));
    assert_eq!(
        stored_status(&db.store, &id, &outcome),
        SessionStatus::Error
    );
    // The tool call's request, then the rate-limited one: at most twice if retried.
    let requests = model.requests().len();
    assert!((2..=3).contains(&requests), "{requests} requests");
    assert_eq!(outcome.requests as usize, requests);
    let tool = tool_messages(&db.store, &id);
    assert_eq!(tool.len(), 1);
    assert_eq!(tool[0].message.content, text_observation(30_000));
    assert!(
        crate::agent_loop::block_on(db.store.audit(&id))
            .unwrap()
            .is_empty()
    );
}
