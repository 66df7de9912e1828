//! Approvals of destructive calls: an approved call runs once on the next run, a denied one
//! stores one denial and does not run.

use super::*;

/// The hostile component with `destructive = true` and a writable root `rw` (beside the
/// read-only root), and the directory behind `rw`.
fn destructive_sandbox() -> (Sandbox, tempfile::TempDir) {
    let rw = tempfile::tempdir().unwrap();
    let dir = rw.path().to_path_buf();
    let sb = Sandbox::with_component(cache(), DEFAULT_CAP, HOSTILE_WASM, |p| {
        p.destructive = true;
        p.roots.push(RootGrant {
            name: "rw".into(),
            dir,
            write: true,
        });
    });
    (sb, rw)
}

/// Runs a session whose model asks to write `out.txt` with the destructive tool, decides the
/// call with `decision`, and resumes it: (database, session id, model, the written file).
fn approval_round(decision: Decision) -> (Db, String, ReplayModel, PathBuf, tempfile::TempDir) {
    let (sb, rw) = destructive_sandbox();
    let toolbox: Arc<Toolbox> = sb.toolbox.clone();
    assert!(Tools::is_destructive(toolbox.as_ref(), "write_file"));
    let db = db();
    let model = script(&[
        calls(&[(
            "write_file",
            json!({"path": "/rw/out.txt", "contents": "approved"}),
        )]),
        answer("written"),
    ]);
    let agent = agent(&db.store, model.clone(), toolbox, DEFAULT_CAP);
    let id = crate::agent_loop::block_on(db.store.create_session())
        .unwrap()
        .id;

    let outcome = sb.block_on(run(&agent, &id, Some("write it")));
    assert_eq!(outcome.status, SessionStatus::AwaitingApproval);
    assert_eq!(outcome.last_error, None);
    assert_eq!(
        stored_status(&db.store, &id, &outcome),
        SessionStatus::AwaitingApproval
    );
    // No observation for the waiting call, and the tool did not run.
    assert_eq!(roles(&db.store, &id), [Role::User, Role::Assistant]);
    let out = rw.path().join("out.txt");
    assert!(!out.exists());
    // A new prompt cannot jump the queue.
    let refused = sb.block_on(agent.run(&id, Some("more"), &CancellationToken::new(), &|_| {}));
    assert!(
        matches!(&refused, Err(AgentError::AwaitingApproval { call_id, tool, .. }) if call_id == "call_1" && tool == "write_file"),
        "{refused:?}"
    );
    assert_eq!(
        crate::agent_loop::block_on(db.store.session(&id))
            .unwrap()
            .status,
        SessionStatus::AwaitingApproval
    );
    assert_eq!(roles(&db.store, &id), [Role::User, Role::Assistant]);

    crate::agent_loop::block_on(db.store.decide(&id, "call_1", decision)).unwrap();
    let outcome = sb.block_on(run(&agent, &id, None));
    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(outcome.answer.as_deref(), Some("written"));
    assert_eq!(
        roles(&db.store, &id),
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    (db, id, model, out, rw)
}

#[test]
fn an_approved_destructive_call_runs_once_on_the_next_run() {
    let (db, id, model, out, _rw) = approval_round(Decision::Approve);
    let tool = tool_messages(&db.store, &id);
    assert_eq!(tool.len(), 1);
    assert_eq!(tool[0].message.tool_call_id.as_deref(), Some("call_1"));
    assert_eq!(tool[0].message.content, r#"{"ok":true,"result":null}"#);
    assert_eq!(std::fs::read_to_string(out).unwrap(), "approved");
    assert_eq!(model.requests().len(), 2);
}

#[test]
fn a_denied_destructive_call_stores_one_denial_and_does_not_run() {
    let (db, id, _model, out, _rw) = approval_round(Decision::Deny);
    let tool = tool_messages(&db.store, &id);
    assert_eq!(tool.len(), 1);
    assert_eq!(tool[0].message.tool_call_id.as_deref(), Some("call_1"));
    assert_eq!(
        tool[0].message.content,
        r#"{"ok":false,"error":"the operator denied this call of write_file; do not retry it","kind":"denied"}"#
    );
    assert!(!out.exists(), "the denied tool did not run");
}
