use sluice_protocol::SessionStatus;
use sluice_store::{Decision, RunEnd, StoreError};

use crate::harness::{Harness, Kind, raw};

/// `(status, runner_pid)` as stored.
fn run_row(path: &std::path::Path, id: &str) -> (String, Option<i64>) {
    raw(path)
        .query_row(
            "SELECT status, runner_pid FROM sessions WHERE id = ?1",
            [id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap()
}

fn set_running(path: &std::path::Path, id: &str, pid: Option<i64>) {
    raw(path)
        .execute(
            "UPDATE sessions SET status = 'running', runner_pid = ?2 WHERE id = ?1",
            rusqlite::params![id, pid],
        )
        .unwrap();
}

fn ours() -> i64 {
    i64::from(std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_run_at_a_time_in_this_process() {
    let t = Harness::new(Kind::Sqlite, "one_run_at_a_time_in_this_process")
        .await
        .unwrap();
    let id = t.store.create_session().await.unwrap().id;
    t.store.begin_run(&id, None).await.unwrap();
    assert_eq!(
        t.store.session(&id).await.unwrap().status,
        SessionStatus::Running
    );
    assert_eq!(run_row(&t.path, &id), ("running".to_owned(), Some(ours())));

    // A second run: refused, through this store or another connection to the file.
    assert!(matches!(t.store.begin_run(&id, None).await, Err(StoreError::Busy(s)) if s == id));
    let other = t.reopen().await;
    assert!(matches!(other.begin_run(&id, None).await, Err(StoreError::Busy(s)) if s == id));
    assert_eq!(
        other
            .begin_run(&id, Some("lost?"))
            .await
            .unwrap_err()
            .to_string(),
        format!(
            "session {id:?} already has a run in progress (one run per session, across every process using this store); nothing was added: wait for that run to end"
        )
    );
    assert_eq!(
        other.append_queued_prompts(&id).await.unwrap(),
        Vec::<u64>::new()
    );
    // Another session is free.
    let second = t.store.create_session().await.unwrap().id;
    t.store.begin_run(&second, None).await.unwrap();

    t.store
        .end_run(&id, &RunEnd::status(SessionStatus::Completed, None))
        .await
        .unwrap();
    assert_eq!(run_row(&t.path, &id), ("completed".to_owned(), None));
    other.begin_run(&id, None).await.unwrap();
    other
        .end_run(&id, &RunEnd::status(SessionStatus::Aborted, None))
        .await
        .unwrap();
    t.store
        .end_run(&second, &RunEnd::status(SessionStatus::Completed, None))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_another_live_process_is_busy() {
    let t = Harness::new(Kind::Sqlite, "a_run_of_another_live_process_is_busy")
        .await
        .unwrap();
    let id = t.store.create_session().await.unwrap().id;
    // The process that runs this test binary (cargo, nextest or a shell) is alive and
    // not us.
    let live = i64::from(std::os::unix::process::parent_id());
    set_running(&t.path, &id, Some(live));
    assert!(matches!(
        t.store.begin_run(&id, None).await,
        Err(StoreError::Busy(_))
    ));
    assert_eq!(
        run_row(&t.path, &id),
        ("running".to_owned(), Some(live)),
        "untouched"
    );
    // The refusal left nothing behind in this process: once the other run ends, ours may
    // begin.
    t.store
        .end_run(&id, &RunEnd::status(SessionStatus::Completed, None))
        .await
        .unwrap();
    t.store.begin_run(&id, None).await.unwrap();
    assert_eq!(run_row(&t.path, &id), ("running".to_owned(), Some(ours())));
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_running_session_is_taken_over() {
    let t = Harness::new(Kind::Sqlite, "a_stale_running_session_is_taken_over")
        .await
        .unwrap();
    let id = t.store.create_session().await.unwrap().id;
    // No process has this pid: pid_max is at most 2^22 on Linux.
    set_running(&t.path, &id, Some(4_294_967_000));
    t.store.begin_run(&id, None).await.unwrap();
    assert_eq!(run_row(&t.path, &id), ("running".to_owned(), Some(ours())));
    t.store
        .end_run(&id, &RunEnd::status(SessionStatus::Error, Some("boom")))
        .await
        .unwrap();

    // A runner that exited but was not yet reaped (a zombie) is gone too.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let zombie = child.id();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{zombie}/stat")).unwrap();
        if stat
            .rsplit_once(')')
            .unwrap()
            .1
            .trim_start()
            .starts_with('Z')
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "`true` did not exit: {stat}"
        );
        std::thread::yield_now();
    }
    set_running(&t.path, &id, Some(i64::from(zombie)));
    t.store.begin_run(&id, None).await.unwrap();
    child.wait().unwrap();
    t.store
        .end_run(&id, &RunEnd::status(SessionStatus::Completed, None))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_rows_without_a_live_owner_are_stale() {
    let t = Harness::new(Kind::Sqlite, "running_rows_without_a_live_owner_are_stale")
        .await
        .unwrap();
    let id = t.store.create_session().await.unwrap().id;
    // No runner recorded.
    set_running(&t.path, &id, None);
    t.store.begin_run(&id, None).await.unwrap();
    t.store
        .end_run(&id, &RunEnd::status(SessionStatus::Completed, None))
        .await
        .unwrap();
    // Our own pid, but not a run of ours: an earlier process with the same pid left it
    // (as happens in containers).
    set_running(&t.path, &id, Some(ours()));
    t.store.begin_run(&id, None).await.unwrap();
    assert_eq!(run_row(&t.path, &id), ("running".to_owned(), Some(ours())));
    t.store
        .end_run(&id, &RunEnd::status(SessionStatus::Completed, None))
        .await
        .unwrap();
}

async fn end_run_records_status_and_last_error(kind: Kind) {
    let Some(t) = Harness::new(kind, "end_run_records_status_and_last_error").await else {
        return;
    };
    let id = t.store.create_session().await.unwrap().id;
    let before = t.store.session(&id).await.unwrap();
    t.store.begin_run(&id, None).await.unwrap();
    let message = "Reached maxTurns=50 without a final answer. ✓";
    t.store
        .end_run(
            &id,
            &RunEnd::status(SessionStatus::Completed, Some(message)),
        )
        .await
        .unwrap();
    let after = t.store.session(&id).await.unwrap();
    assert_eq!(
        (after.status, after.last_error.as_deref()),
        (SessionStatus::Completed, Some(message))
    );
    assert!(after.updated_at >= before.updated_at);
    for status in [
        SessionStatus::AwaitingApproval,
        SessionStatus::Aborted,
        SessionStatus::Error,
        SessionStatus::Idle,
    ] {
        t.store.begin_run(&id, None).await.unwrap();
        t.store
            .end_run(&id, &RunEnd::status(status, None))
            .await
            .unwrap();
        let s = t.store.session(&id).await.unwrap();
        assert_eq!((s.status, s.last_error), (status, None));
    }
}

async fn decisions_are_per_call_and_the_last_one_counts(kind: Kind) {
    let Some(t) = Harness::new(kind, "decisions_are_per_call_and_the_last_one_counts").await else {
        return;
    };
    let a = t.store.create_session().await.unwrap().id;
    let b = t.store.create_session().await.unwrap().id;
    assert_eq!(t.store.decision(&a, "call_1").await.unwrap(), None);
    t.store
        .decide(&a, "call_1", Decision::Approve)
        .await
        .unwrap();
    assert_eq!(
        t.store.decision(&a, "call_1").await.unwrap(),
        Some(Decision::Approve)
    );
    assert_eq!(t.store.decision(&a, "call_2").await.unwrap(), None);
    assert_eq!(t.store.decision(&b, "call_1").await.unwrap(), None);
    t.store.decide(&a, "call_1", Decision::Deny).await.unwrap();
    t.store
        .decide(&a, "call_2", Decision::Approve)
        .await
        .unwrap();
    assert_eq!(
        t.store.decision(&a, "call_1").await.unwrap(),
        Some(Decision::Deny)
    );
    assert_eq!(
        t.store.decision(&a, "call_2").await.unwrap(),
        Some(Decision::Approve)
    );
    // Another process (the operator's CLI) sees them.
    let other = t.reopen().await;
    assert_eq!(
        other.decision(&a, "call_1").await.unwrap(),
        Some(Decision::Deny)
    );
}

/// A prompt is accepted together with its run, in one transaction, or
/// refused with Busy; an accepted prompt waits in the store until the run appends it, and a
/// run that dies first leaves it for the next run.
async fn a_prompt_is_accepted_with_its_run_and_never_lost(kind: Kind) {
    let Some(t) = Harness::new(kind, "a_prompt_is_accepted_with_its_run_and_never_lost").await
    else {
        return;
    };
    let id = t.store.create_session().await.unwrap().id;
    t.store.begin_run(&id, Some("first")).await.unwrap();
    assert!(
        t.store.messages(&id).await.unwrap().is_empty(),
        "queued, not yet in the transcript"
    );
    // Refused while the run holds the session: nothing is queued.
    let other = t.reopen().await;
    assert!(matches!(
        other.begin_run(&id, Some("refused")).await,
        Err(StoreError::Busy(_))
    ));
    assert_eq!(t.store.append_queued_prompts(&id).await.unwrap(), [1]);
    assert_eq!(
        t.store.append_queued_prompts(&id).await.unwrap(),
        Vec::<u64>::new(),
        "once"
    );
    let messages = t.store.messages(&id).await.unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].message.content, "first");
    assert_eq!(messages[0].message.role, sluice_protocol::Role::User);

    // The runner dies before appending its prompt: the next run (here another handle, as
    // another process would) takes the session over and appends both, in order.
    t.store
        .end_run(&id, &RunEnd::status(SessionStatus::Completed, None))
        .await
        .unwrap();
    t.store.begin_run(&id, Some("second")).await.unwrap();
    t.kill_runners().await;
    other.begin_run(&id, Some("third")).await.unwrap();
    assert_eq!(other.append_queued_prompts(&id).await.unwrap(), [2, 3]);
    let contents: Vec<String> = other
        .messages(&id)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message.content)
        .collect();
    assert_eq!(contents, ["first", "second", "third"]);
    other
        .end_run(&id, &RunEnd::status(SessionStatus::Completed, None))
        .await
        .unwrap();
}

async fn sessions_may_be_created_under_a_chosen_name(kind: Kind) {
    let Some(t) = Harness::new(kind, "sessions_may_be_created_under_a_chosen_name").await else {
        return;
    };
    let s = t.store.create_named_session("fix-login.2").await.unwrap();
    assert_eq!(
        (s.id.as_str(), s.status, s.message_count),
        ("fix-login.2", SessionStatus::Idle, 0)
    );
    assert_eq!(
        t.store.session("fix-login.2").await.unwrap().id,
        "fix-login.2"
    );
    assert!(matches!(
        t.store.create_named_session("fix-login.2").await,
        Err(StoreError::SessionExists(n)) if n == "fix-login.2"
    ));
    for bad in ["", "../etc", "-x", "a b", &"n".repeat(65)] {
        let e = t.store.create_named_session(bad).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "session name {bad:?} is not allowed: a session name is 1 to 64 characters: ASCII letters, digits, `-`, `_` and `.`, starting with a letter or digit"
            )
        );
    }
    assert_eq!(t.store.list_sessions().await.unwrap().len(), 1);
}

both!(
    end_run_records_status_and_last_error,
    decisions_are_per_call_and_the_last_one_counts,
    a_prompt_is_accepted_with_its_run_and_never_lost,
    sessions_may_be_created_under_a_chosen_name,
);
