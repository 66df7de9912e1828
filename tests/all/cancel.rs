//! Cancelling a run reaches the tool call in progress. A guest sleeping
//! inside a host call (timeout 60 s) is stopped within about 200 ms of the cancellation,
//! the run ends `aborted`, and the transcript stays one a provider accepts: every tool call
//! of the assistant turn has a result (`cancelled`), so the next prompt simply follows.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_agent::RunEvent;
use sluice_protocol::{Role, SessionStatus};
use sluice_runtime::{CallOptions, CallStatus};
use sluice_store::Store;
use sluice_tests::{HOSTILE_WASM, Sandbox};
use tokio_util::sync::CancellationToken;

use crate::agent_loop::{DEFAULT_CAP, agent, answer, calls, db, script};
use crate::cache;

/// What the issue allows between a cancellation and the end of the run.
const PROMPTLY: Duration = Duration::from_millis(200);

/// Slack for a loaded 2-core machine on top of [`PROMPTLY`] (the bound is the behaviour,
/// but the scheduler may be late).
const SLACK: Duration = Duration::from_millis(300);

/// How long after the call starts the run is cancelled: the guest is asleep in the host by
/// then (instantiating it takes a few milliseconds).
const CANCEL_AFTER: Duration = Duration::from_millis(150);

/// The hostile component with a long timeout: only a cancellation ends its sleep.
fn sleeper() -> Sandbox {
    Sandbox::with_component(cache(), DEFAULT_CAP, HOSTILE_WASM, |p| {
        p.timeout = Duration::from_secs(60);
    })
}

#[test]
fn cancelling_a_run_stops_a_guest_sleeping_in_a_host_call() {
    let sb = sleeper();
    let db = db();
    let model = script(&[
        calls(&[
            ("sleep", json!({"ms": 60_000})),
            ("big_string", json!({"bytes": 3})),
        ]),
        answer("done"),
    ]);
    let agent = agent(&db.store, model.clone(), sb.toolbox.clone(), DEFAULT_CAP);
    let id = sb.block_on(db.store.create_session()).unwrap().id;
    let cancel = CancellationToken::new();
    let cancelled_at: Arc<Mutex<Option<Instant>>> = Arc::default();
    let events = {
        let (cancel, cancelled_at) = (cancel.clone(), cancelled_at.clone());
        move |e: RunEvent| {
            if let RunEvent::ToolStarted { name, .. } = &e
                && name == "sleep"
            {
                let (cancel, cancelled_at) = (cancel.clone(), cancelled_at.clone());
                std::thread::spawn(move || {
                    std::thread::sleep(CANCEL_AFTER);
                    *cancelled_at.lock().unwrap() = Some(Instant::now());
                    cancel.cancel();
                });
            }
        }
    };
    let outcome = sb
        .block_on(agent.run(&id, Some("sleep, then more"), &cancel, &events))
        .unwrap();
    let took = cancelled_at.lock().unwrap().expect("cancelled").elapsed();
    assert_eq!(outcome.status, SessionStatus::Aborted);
    assert_eq!(outcome.last_error.as_deref(), Some("the run was cancelled"));
    assert!(
        took < PROMPTLY + SLACK,
        "the run ended {took:?} after the cancellation"
    );

    // Both calls of the turn have a result: the one cancelled while it ran, and the one
    // the run never started.
    let messages = sb.block_on(db.store.messages(&id)).unwrap();
    let roles: Vec<Role> = messages.iter().map(|m| m.message.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Tool]);
    let results: Vec<(Option<&str>, Value)> = messages[2..]
        .iter()
        .map(|m| {
            (
                m.message.tool_call_id.as_deref(),
                serde_json::from_str(&m.message.content).unwrap(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            (
                Some("call_1"),
                json!({"ok": false, "error": "the call was cancelled before the tool finished (its run was cancelled); it may have done part of its work", "kind": "cancelled"})
            ),
            (
                Some("call_2"),
                json!({"ok": false, "error": "the run was cancelled before this call started; the tool did not run", "kind": "cancelled"})
            ),
        ]
    );

    // The session goes on: the next request carries a result for every call id.
    let outcome = sb
        .block_on(agent.run(&id, Some("go on"), &CancellationToken::new(), &|_| {}))
        .unwrap();
    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(outcome.answer.as_deref(), Some("done"));
    let last = model.requests().last().cloned().expect("a request");
    let roles: Vec<Role> = last.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::User
        ]
    );
}

/// The same through the toolbox alone: a cancelled call's observation says so, with its
/// own status, and the toolbox serves the next call.
#[test]
fn a_cancelled_call_has_its_own_status() {
    let sb = sleeper();
    let cancel = CancellationToken::new();
    let options = CallOptions::new(DEFAULT_CAP).with_cancel(cancel.clone());
    let trigger = {
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(CANCEL_AFTER);
            let at = Instant::now();
            cancel.cancel();
            at
        })
    };
    let obs = sb.block_on(sb.toolbox.call_with("sleep", r#"{"ms":60000}"#, &options));
    let took = trigger.join().unwrap().elapsed();
    assert_eq!(obs.status(), CallStatus::Cancelled);
    assert_eq!(
        obs.text(),
        r#"{"ok":false,"error":"the call was cancelled before the tool finished (its run was cancelled); it may have done part of its work","kind":"cancelled"}"#
    );
    assert!(
        took < PROMPTLY + SLACK,
        "the call ended {took:?} after the cancellation"
    );
    // Cancelled before it starts: no slot is even taken.
    let obs = sb.block_on(sb.toolbox.call_with("sleep", r#"{"ms":60000}"#, &options));
    assert_eq!(obs.status(), CallStatus::Cancelled);
    assert_eq!(
        obs.text(),
        r#"{"ok":false,"error":"the call was cancelled before it started","kind":"cancelled"}"#
    );
    assert_eq!(sb.ok("big_string", &json!({"bytes": 2})), json!("xx"));
}
