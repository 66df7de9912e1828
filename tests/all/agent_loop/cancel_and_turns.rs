//! Cancellation while the model answers (row P11) and during a recovery, and `maxTurns`.

use super::*;

#[test]
fn p11_cancelling_while_the_model_answers_aborts_and_appends_nothing() {
    let db = db();
    let model = script(&[json!({"content": "too late", "delayMs": 30_000})]);
    let agent = agent(
        &db.store,
        model.clone(),
        Arc::new(FakeTools::default()),
        DEFAULT_CAP,
    );
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let (outcome, busy) = block_on(async {
        let run = agent.run(&id, Some("hello"), &cancel, &|_| {});
        let other = async {
            until("the request", || model.requests().len() == 1).await;
            assert_eq!(
                db.store.session(&id).await.unwrap().status,
                SessionStatus::Running
            );
            // One run per session at a time.
            let busy = agent
                .run(&id, Some("again"), &CancellationToken::new(), &|_| {})
                .await;
            cancel.cancel();
            busy
        };
        tokio::join!(run, other)
    });
    assert!(
        matches!(busy, Err(AgentError::Store(StoreError::Busy(ref s))) if *s == id),
        "{busy:?}"
    );
    let outcome = outcome.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the run did not wait for the reply"
    );
    assert_eq!(outcome.status, SessionStatus::Aborted);
    assert_eq!(outcome.answer, None);
    assert_eq!(
        stored_status(&db.store, &id, &outcome),
        SessionStatus::Aborted
    );
    assert_eq!(roles(&db.store, &id), [Role::User]);
    assert_eq!(
        crate::agent_loop::block_on(db.store.messages(&id)).unwrap()[0]
            .message
            .content,
        "hello"
    );
    assert_eq!(model.requests().len(), 1);
}

/// A backend that cancels `cancel` as it returns a context-window rejection: the run is
/// cancelled between the rejection and the shrink.
struct CancelOnOverflow {
    inner: ReplayModel,
    cancel: CancellationToken,
}

#[async_trait::async_trait]
impl Backend for CancelOnOverflow {
    fn name(&self) -> String {
        self.inner.name()
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, BackendError> {
        let reply = self.inner.complete(request).await;
        if reply
            .as_ref()
            .is_err_and(BackendError::context_window_exceeded)
        {
            self.cancel.cancel();
        }
        reply
    }
}

#[test]
fn cancelled_during_recovery_aborts_and_shrinks_nothing() {
    let db = db();
    let model = script(&[
        calls(&[("text", json!({"bytes": 30_000}))]),
        openai_overflow(),
        answer("never"),
    ]);
    let cancel = CancellationToken::new();
    let backend = CancelOnOverflow {
        inner: model.clone(),
        cancel: cancel.clone(),
    };
    let agent = agent(
        &db.store,
        backend,
        Arc::new(FakeTools::default()),
        DEFAULT_CAP,
    );
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    let outcome = block_on(agent.run(&id, Some("go"), &cancel, &|_| {})).unwrap();
    assert_eq!(outcome.status, SessionStatus::Aborted);
    assert_eq!(model.requests().len(), 2);
    assert!(
        crate::agent_loop::block_on(db.store.audit(&id))
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        tool_messages(&db.store, &id)[0].message.content,
        text_observation(30_000)
    );
    assert_eq!(
        roles(&db.store, &id),
        [Role::User, Role::Assistant, Role::Tool]
    );
}

#[test]
fn max_turns_completes_with_last_error() {
    let db = db();
    let model = script(&[
        calls(&[("text", json!({"bytes": 1}))]),
        calls(&[("text", json!({"bytes": 2}))]),
        calls(&[("text", json!({"bytes": 3}))]),
    ]);
    let settings = Settings {
        max_turns: 2,
        ..Settings::default()
    };
    let agent = Agent::new(
        db.store.clone(),
        Arc::new(model.clone()),
        Arc::new(FakeTools::default()),
        settings,
    );
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;
    let outcome = block_on(run(&agent, &id, Some("go")));
    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(
        outcome.last_error.as_deref(),
        Some("Reached maxTurns=2 without a final answer.")
    );
    assert_eq!(
        stored_status(&db.store, &id, &outcome),
        SessionStatus::Completed
    );
    assert_eq!(outcome.requests, 2);
    assert_eq!(model.requests().len(), 2);
    assert_eq!(tool_messages(&db.store, &id).len(), 2);
}
