//! Runs in the store (docs/storage.md#one-run-per-session). A run's `started` event is written with its claim and its
//! `finished` event with its end, after every event pushed in between; another handle (a
//! replica) sees them, and is woken by them; a cancellation requested through one handle
//! reaches the runner's; a dead runner's run is closed by the next; the run-time
//! configuration is shared.

use serde_json::{Map, Value, json};
use sluice_protocol::SessionStatus;
use sluice_store::{ORPHANED_RUN, RunEnd, StoreError, Subscription, Topic, Woken};

use crate::harness::{Harness, Kind};

fn fields(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(m) => m,
        _ => panic!("an object"),
    }
}

fn kinds(events: &[sluice_store::StoredEvent]) -> Vec<&str> {
    events.iter().map(|e| e.kind.as_str()).collect()
}

/// Waits on `sub` until a change is signalled to it, or fails after 30 polls (30 s): a
/// change another handle (another process) commits is signalled, through NOTIFY or the
/// SQLite store's watcher, not merely found by a reader polling.
async fn signalled(sub: &mut Subscription) {
    for _ in 0..30 {
        if sub.changed().await == Woken::Signalled {
            return;
        }
    }
    panic!("another handle's change was never signalled");
}

async fn a_run_is_framed_by_started_and_finished(kind: Kind) {
    let Some(t) = Harness::new(kind, "a_run_is_framed_by_started_and_finished").await else {
        return;
    };
    let id = t.store.create_session().await.unwrap().id;
    assert_eq!(t.store.latest_run(&id).await.unwrap(), None);
    let run = t.store.begin_run(&id, Some("hello")).await.unwrap();
    assert!(run.starts_with("r-") && run.len() == 14, "{run}");
    let other = t.reopen().await;
    let record = other.run(&run).await.unwrap();
    assert_eq!(
        (
            record.session_id.as_str(),
            record.live,
            record.ended_at.as_deref(),
            record.status,
            record.cancel_requested
        ),
        (id.as_str(), true, None, None, false)
    );
    assert_eq!(other.latest_run(&id).await.unwrap(), Some(record));

    for i in 0..300 {
        t.store.push_event(
            &run,
            "tool_finished",
            fields(json!({"callId": format!("c{i}"), "bytes": i})),
        );
    }
    t.store
        .end_run(
            &id,
            &RunEnd {
                status: SessionStatus::Completed,
                last_error: None,
                answer: Some("42 ✓".into()),
                requests: Some(3),
            },
        )
        .await
        .unwrap();
    let events = other.events(&run, 0).await.unwrap();
    assert_eq!(events.len(), 302);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1, "gapless, from 1");
    }
    assert_eq!(
        (
            events[0].kind.as_str(),
            Value::Object(events[0].data.clone())
        ),
        ("started", json!({"session": id, "prompt": "hello"}))
    );
    for (i, e) in events[1..301].iter().enumerate() {
        assert_eq!(e.kind, "tool_finished");
        assert_eq!(
            Value::Object(e.data.clone()),
            json!({"callId": format!("c{i}"), "bytes": i}),
            "in the order pushed"
        );
    }
    assert_eq!(
        (
            events[301].kind.as_str(),
            Value::Object(events[301].data.clone())
        ),
        (
            "finished",
            json!({"session": id, "status": "completed", "lastError": null, "answer": "42 ✓", "requests": 3})
        )
    );
    assert_eq!(
        kinds(&other.events(&run, 300).await.unwrap()),
        ["tool_finished", "finished"]
    );
    assert!(other.events(&run, 302).await.unwrap().is_empty());
    let ended = other.run(&run).await.unwrap();
    assert_eq!(
        (ended.live, ended.status),
        (false, Some(SessionStatus::Completed))
    );
    assert!(ended.ended_at.is_some());
    assert!(
        matches!(other.events("r-nosuchrun000", 0).await, Err(StoreError::NoRun(r)) if r == "r-nosuchrun000")
    );
    assert!(matches!(
        other.run("r-nosuchrun000").await,
        Err(StoreError::NoRun(_))
    ));

    // A second run of the session is a new run, with its own events.
    let second = t.store.begin_run(&id, None).await.unwrap();
    assert_ne!(second, run);
    assert_eq!(other.latest_run(&id).await.unwrap().unwrap().id, second);
    assert_eq!(
        Value::Object(other.events(&second, 0).await.unwrap()[0].data.clone()),
        json!({"session": id, "prompt": null})
    );
    t.store
        .end_run(
            &id,
            &RunEnd::status(SessionStatus::Aborted, Some("the run was cancelled")),
        )
        .await
        .unwrap();
    assert_eq!(
        other.events(&run, 0).await.unwrap().len(),
        302,
        "the first run's events are kept"
    );
}

async fn another_handle_is_woken_by_events_and_cancellation(kind: Kind) {
    let Some(t) = Harness::new(kind, "another_handle_is_woken_by_events_and_cancellation").await
    else {
        return;
    };
    let id = t.store.create_session().await.unwrap().id;
    let other = t.reopen().await;
    let mut runs = other.subscribe(Topic::Runs(id.clone()));
    let run = t.store.begin_run(&id, None).await.unwrap();
    // Signalled: the new run is there to read.
    signalled(&mut runs).await;
    assert_eq!(other.latest_run(&id).await.unwrap().unwrap().id, run);

    let mut events = other.subscribe(Topic::Events(run.clone()));
    t.store
        .push_event(&run, "model_request", fields(json!({"bytes": 10})));
    t.store.flush_events().await;
    loop {
        if other.events(&run, 1).await.unwrap().len() == 1 {
            break;
        }
        signalled(&mut events).await;
    }

    // A cancellation requested on the other handle reaches this one's subscription.
    let mut cancel = t.store.subscribe(Topic::Cancel(run.clone()));
    let requested = other.request_cancel(&id).await.unwrap().unwrap();
    assert_eq!(
        (
            requested.id.as_str(),
            requested.cancel_requested,
            requested.live
        ),
        (run.as_str(), true, true)
    );
    loop {
        if t.store.run(&run).await.unwrap().cancel_requested {
            break;
        }
        signalled(&mut cancel).await;
    }
    t.store
        .end_run(&id, &RunEnd::status(SessionStatus::Aborted, None))
        .await
        .unwrap();
    // Nothing left to cancel.
    assert_eq!(other.request_cancel(&id).await.unwrap(), None);
    // With nothing signalled, a subscription returns at its poll interval. (The SQLite
    // watcher wakes every subscription when it finds another handle's commit, so the
    // first wait may end with the end of the run above.)
    let mut quiet = other.subscribe(Topic::Cancel("r-0000000000zz".into()));
    let mut polled = false;
    for _ in 0..3 {
        if quiet.changed().await == Woken::Polled {
            polled = true;
            break;
        }
    }
    assert!(polled, "a quiet subscription is polled");
    // Every subscription is counted while it lives, and forgotten when dropped.
    assert_eq!(other.subscriptions(), 3);
    drop((runs, events, quiet));
    assert_eq!(other.subscriptions(), 0);
}

async fn a_dead_runners_run_is_closed_by_the_next(kind: Kind) {
    let Some(t) = Harness::new(kind, "a_dead_runners_run_is_closed_by_the_next").await else {
        return;
    };
    let id = t.store.create_session().await.unwrap().id;
    let run = t.store.begin_run(&id, Some("first")).await.unwrap();
    t.store
        .push_event(&run, "model_request", fields(json!({"bytes": 1})));
    t.store.flush_events().await;
    let other = t.reopen().await;
    assert!(matches!(
        other.begin_run(&id, None).await,
        Err(StoreError::Busy(_))
    ));
    t.kill_runners().await;
    let dead = other.run(&run).await.unwrap();
    assert_eq!(
        (dead.live, dead.ended_at),
        (false, None),
        "not live, not ended"
    );

    let next = other.begin_run(&id, Some("second")).await.unwrap();
    let events = other.events(&run, 0).await.unwrap();
    assert_eq!(kinds(&events), ["started", "model_request", "finished"]);
    assert_eq!(
        Value::Object(events[2].data.clone()),
        json!({"session": id, "status": "error", "lastError": ORPHANED_RUN, "answer": null, "requests": null})
    );
    assert_eq!(
        other.run(&run).await.unwrap().status,
        Some(SessionStatus::Error)
    );
    assert!(other.run(&next).await.unwrap().live);
    // Both prompts were kept for the run that goes on.
    assert_eq!(other.append_queued_prompts(&id).await.unwrap(), [1, 2]);
    other
        .end_run(&id, &RunEnd::status(SessionStatus::Completed, None))
        .await
        .unwrap();
}

async fn the_run_time_configuration_is_shared(kind: Kind) {
    let Some(t) = Harness::new(kind, "the_run_time_configuration_is_shared").await else {
        return;
    };
    assert_eq!(t.store.config().await.unwrap(), Vec::new());
    t.store
        .set_config(&[
            ("max_turns".into(), json!(7)),
            ("auto_approve".into(), json!(true)),
        ])
        .await
        .unwrap();
    t.store
        .set_config(&[("max_turns".into(), json!(9))])
        .await
        .unwrap();
    let other = t.reopen().await;
    assert_eq!(
        other.config().await.unwrap(),
        [
            ("auto_approve".to_string(), json!(true)),
            ("max_turns".to_string(), json!(9))
        ]
    );
}

both!(
    a_run_is_framed_by_started_and_finished,
    another_handle_is_woken_by_events_and_cancellation,
    a_dead_runners_run_is_closed_by_the_next,
    the_run_time_configuration_is_shared,
);
