use sluice_protocol::SessionStatus;
use sluice_store::{Decision, SqliteStore, Store, StoreError};

use crate::util::{raw, temp_store};

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

#[test]
fn one_run_at_a_time_in_this_process() {
    let t = temp_store();
    let id = t.store.create_session().unwrap().id;
    t.store.begin_run(&id, None).unwrap();
    assert_eq!(t.store.session(&id).unwrap().status, SessionStatus::Running);
    assert_eq!(run_row(&t.path, &id), ("running".to_owned(), Some(ours())));

    // A second run: refused, through this store or another connection to the file.
    assert!(matches!(t.store.begin_run(&id, None), Err(StoreError::Busy(s)) if s == id));
    let other = SqliteStore::open(&t.path).unwrap();
    assert!(matches!(other.begin_run(&id, None), Err(StoreError::Busy(s)) if s == id));
    assert_eq!(
        other.begin_run(&id, Some("lost?")).unwrap_err().to_string(),
        format!(
            "session {id:?} already has a run in progress (one run per session, across every process using this store); nothing was added: wait for that run to end"
        )
    );
    assert_eq!(other.append_queued_prompts(&id).unwrap(), Vec::<u64>::new());
    // Another session is free.
    let second = t.store.create_session().unwrap().id;
    t.store.begin_run(&second, None).unwrap();

    t.store
        .end_run(&id, SessionStatus::Completed, None)
        .unwrap();
    assert_eq!(run_row(&t.path, &id), ("completed".to_owned(), None));
    other.begin_run(&id, None).unwrap();
    other.end_run(&id, SessionStatus::Aborted, None).unwrap();
    t.store
        .end_run(&second, SessionStatus::Completed, None)
        .unwrap();
}

#[test]
fn a_run_of_another_live_process_is_busy() {
    let t = temp_store();
    let id = t.store.create_session().unwrap().id;
    // The process that runs this test binary (cargo, nextest or a shell) is alive and
    // not us.
    let live = i64::from(std::os::unix::process::parent_id());
    set_running(&t.path, &id, Some(live));
    assert!(matches!(
        t.store.begin_run(&id, None),
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
        .end_run(&id, SessionStatus::Completed, None)
        .unwrap();
    t.store.begin_run(&id, None).unwrap();
    assert_eq!(run_row(&t.path, &id), ("running".to_owned(), Some(ours())));
}

#[cfg(target_os = "linux")]
#[test]
fn a_stale_running_session_is_taken_over() {
    let t = temp_store();
    let id = t.store.create_session().unwrap().id;
    // No process has this pid: pid_max is at most 2^22 on Linux.
    set_running(&t.path, &id, Some(4_294_967_000));
    t.store.begin_run(&id, None).unwrap();
    assert_eq!(run_row(&t.path, &id), ("running".to_owned(), Some(ours())));
    t.store
        .end_run(&id, SessionStatus::Error, Some("boom"))
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
    t.store.begin_run(&id, None).unwrap();
    child.wait().unwrap();
    t.store
        .end_run(&id, SessionStatus::Completed, None)
        .unwrap();
}

#[test]
fn running_rows_without_a_live_owner_are_stale() {
    let t = temp_store();
    let id = t.store.create_session().unwrap().id;
    // No runner recorded.
    set_running(&t.path, &id, None);
    t.store.begin_run(&id, None).unwrap();
    t.store
        .end_run(&id, SessionStatus::Completed, None)
        .unwrap();
    // Our own pid, but not a run of ours: an earlier process with the same pid left it
    // (as happens in containers).
    set_running(&t.path, &id, Some(ours()));
    t.store.begin_run(&id, None).unwrap();
    assert_eq!(run_row(&t.path, &id), ("running".to_owned(), Some(ours())));
    t.store
        .end_run(&id, SessionStatus::Completed, None)
        .unwrap();
}

#[test]
fn end_run_records_status_and_last_error() {
    let t = temp_store();
    let id = t.store.create_session().unwrap().id;
    let before = t.store.session(&id).unwrap();
    t.store.begin_run(&id, None).unwrap();
    let message = "Reached maxTurns=50 without a final answer. ✓";
    t.store
        .end_run(&id, SessionStatus::Completed, Some(message))
        .unwrap();
    let after = t.store.session(&id).unwrap();
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
        t.store.begin_run(&id, None).unwrap();
        t.store.end_run(&id, status, None).unwrap();
        let s = t.store.session(&id).unwrap();
        assert_eq!((s.status, s.last_error), (status, None));
    }
}

#[test]
fn decisions_are_per_call_and_the_last_one_counts() {
    let t = temp_store();
    let a = t.store.create_session().unwrap().id;
    let b = t.store.create_session().unwrap().id;
    assert_eq!(t.store.decision(&a, "call_1").unwrap(), None);
    t.store.decide(&a, "call_1", Decision::Approve).unwrap();
    assert_eq!(
        t.store.decision(&a, "call_1").unwrap(),
        Some(Decision::Approve)
    );
    assert_eq!(t.store.decision(&a, "call_2").unwrap(), None);
    assert_eq!(t.store.decision(&b, "call_1").unwrap(), None);
    t.store.decide(&a, "call_1", Decision::Deny).unwrap();
    t.store.decide(&a, "call_2", Decision::Approve).unwrap();
    assert_eq!(
        t.store.decision(&a, "call_1").unwrap(),
        Some(Decision::Deny)
    );
    assert_eq!(
        t.store.decision(&a, "call_2").unwrap(),
        Some(Decision::Approve)
    );
    // Another process (the operator's CLI) sees them.
    let other = SqliteStore::open(&t.path).unwrap();
    assert_eq!(other.decision(&a, "call_1").unwrap(), Some(Decision::Deny));
}

/// Issue 12 item 6: a prompt is accepted together with its run, in one transaction, or
/// refused with Busy; an accepted prompt waits in the store until the run appends it, and a
/// run that dies first leaves it for the next run.
#[test]
fn a_prompt_is_accepted_with_its_run_and_never_lost() {
    let t = temp_store();
    let id = t.store.create_session().unwrap().id;
    t.store.begin_run(&id, Some("first")).unwrap();
    assert!(
        t.store.messages(&id).unwrap().is_empty(),
        "queued, not yet in the transcript"
    );
    // Refused while the run holds the session: nothing is queued.
    let other = SqliteStore::open(&t.path).unwrap();
    assert!(matches!(
        other.begin_run(&id, Some("refused")),
        Err(StoreError::Busy(_))
    ));
    assert_eq!(t.store.append_queued_prompts(&id).unwrap(), [1]);
    assert_eq!(
        t.store.append_queued_prompts(&id).unwrap(),
        Vec::<u64>::new(),
        "once"
    );
    let messages = t.store.messages(&id).unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].message.content, "first");
    assert_eq!(messages[0].message.role, sluice_protocol::Role::User);

    // The runner dies before appending its prompt: the next run (here another handle, as
    // another process would) takes the session over and appends both, in order.
    t.store
        .end_run(&id, SessionStatus::Completed, None)
        .unwrap();
    t.store.begin_run(&id, Some("second")).unwrap();
    set_running(&t.path, &id, Some(4_294_967_000));
    other.begin_run(&id, Some("third")).unwrap();
    assert_eq!(other.append_queued_prompts(&id).unwrap(), [2, 3]);
    let contents: Vec<String> = other
        .messages(&id)
        .unwrap()
        .into_iter()
        .map(|m| m.message.content)
        .collect();
    assert_eq!(contents, ["first", "second", "third"]);
    other.end_run(&id, SessionStatus::Completed, None).unwrap();
}

#[test]
fn sessions_may_be_created_under_a_chosen_name() {
    let t = temp_store();
    let s = t.store.create_named_session("fix-login.2").unwrap();
    assert_eq!(
        (s.id.as_str(), s.status, s.message_count),
        ("fix-login.2", SessionStatus::Idle, 0)
    );
    assert_eq!(t.store.session("fix-login.2").unwrap().id, "fix-login.2");
    assert!(matches!(
        t.store.create_named_session("fix-login.2"),
        Err(StoreError::SessionExists(n)) if n == "fix-login.2"
    ));
    for bad in ["", "../etc", "-x", "a b", &"n".repeat(65)] {
        let e = t.store.create_named_session(bad).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "session name {bad:?} is not allowed: a session name is 1 to 64 characters: ASCII letters, digits, `-`, `_` and `.`, starting with a letter or digit"
            )
        );
    }
    assert_eq!(t.store.list_sessions().unwrap().len(), 1);
}
