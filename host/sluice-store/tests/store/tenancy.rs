//! Tenancy (docs/api.md#tenancy): every session has an owner, lists filter by it, and the actions log
//! records who did what to which session and who changed the configuration.

use sluice_store::{
    Action, ActionRecord, DEFAULT_OWNER, SessionAudit, SessionRecord, StoreError, now_rfc3339,
};

use crate::harness::{Harness, Kind, user};

fn ids(sessions: &[SessionRecord]) -> Vec<&str> {
    sessions.iter().map(|s| s.id.as_str()).collect()
}

/// The actions without their times, which the store stamps.
fn untimed(actions: &[ActionRecord]) -> Vec<(Option<&str>, &str, Action, Option<&str>)> {
    actions
        .iter()
        .map(|a| {
            (
                a.session.as_deref(),
                a.actor.as_str(),
                a.action,
                a.detail.as_deref(),
            )
        })
        .collect()
}

/// Each `at` is an RFC 3339 UTC time with milliseconds, in `from..=to`, in order.
fn assert_times(actions: &[ActionRecord], from: &str, to: &str) {
    for a in actions {
        assert_eq!(a.at.len(), "2026-11-30T08:15:02.123Z".len(), "{a:?}");
        assert!(a.at.ends_with('Z') && a.at.as_bytes()[19] == b'.', "{a:?}");
        assert!(
            from <= a.at.as_str() && a.at.as_str() <= to,
            "{from} {a:?} {to}"
        );
    }
    assert!(
        actions.windows(2).all(|w| w[0].at <= w[1].at),
        "{actions:?}"
    );
}

async fn the_owner_is_recorded_and_read_back(kind: Kind) {
    let Some(t) = Harness::new(kind, "the_owner_is_recorded_and_read_back").await else {
        return;
    };
    let alice = t.store.create_owned_session("alice").await.unwrap();
    let bob = t
        .store
        .create_owned_session("oauth:bob@example.com")
        .await
        .unwrap();
    let plain = t.store.create_session().await.unwrap();
    let named = t.store.create_named_session("fix-login").await.unwrap();
    assert_eq!(
        [&alice, &bob, &plain, &named].map(|s| s.owner.as_str()),
        ["alice", "oauth:bob@example.com", "admin", "admin"]
    );
    assert_eq!(DEFAULT_OWNER, "admin");
    assert_eq!(named.id, "fix-login");
    for created in [&alice, &bob, &plain, &named] {
        assert_eq!(&t.store.session(&created.id).await.unwrap(), created);
    }
    // The owner stays through the session's life, and reads the same from another handle.
    t.store.append(&alice.id, &user("hello")).await.unwrap();
    let other = t.reopen().await;
    let listed = other.list_sessions().await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|s| (s.id.as_str(), s.owner.as_str(), s.message_count))
            .collect::<Vec<_>>(),
        [
            ("fix-login", "admin", 0),
            (plain.id.as_str(), "admin", 0),
            (bob.id.as_str(), "oauth:bob@example.com", 0),
            (alice.id.as_str(), "alice", 1),
        ]
    );
    assert_eq!(
        serde_json::to_value(&listed[3]).unwrap()["owner"],
        serde_json::json!("alice")
    );
}

async fn lists_are_filtered_by_owner_exactly(kind: Kind) {
    let Some(t) = Harness::new(kind, "lists_are_filtered_by_owner_exactly").await else {
        return;
    };
    let mut created: Vec<SessionRecord> = Vec::new();
    for owner in [
        "alice", "bob", "alice", "Alice", "admin", "alice2", "alice", "bob",
    ] {
        created.push(t.store.create_owned_session(owner).await.unwrap());
    }
    created.push(t.store.create_session().await.unwrap());
    // Newest first, as `list_sessions`.
    let of = |owner: &str| -> Vec<&str> {
        created
            .iter()
            .rev()
            .filter(|s| s.owner == owner)
            .map(|s| s.id.as_str())
            .collect()
    };
    let list = |owner: Option<&'static str>| {
        let store = t.store.clone();
        async move { store.list_owned_sessions(owner).await.unwrap() }
    };
    assert_eq!(ids(&list(Some("alice")).await), of("alice"));
    assert_eq!(of("alice").len(), 3);
    assert_eq!(ids(&list(Some("bob")).await), of("bob"));
    assert_eq!(ids(&list(Some("Alice")).await), of("Alice"));
    assert_eq!(ids(&list(Some("alice2")).await), of("alice2"));
    assert_eq!(ids(&list(Some("admin")).await), of("admin"));
    assert_eq!(of("admin").len(), 2);
    for nobody in ["ali", "alice%", "", "carol"] {
        assert_eq!(list(Some(nobody)).await, Vec::new(), "{nobody:?}");
    }
    let all = list(None).await;
    assert_eq!(
        ids(&all),
        created
            .iter()
            .rev()
            .map(|s| s.id.as_str())
            .collect::<Vec<_>>()
    );
    assert_eq!(all, t.store.list_sessions().await.unwrap());
    // The filtered records are the full records.
    assert_eq!(
        list(Some("bob")).await,
        all.iter()
            .filter(|s| s.owner == "bob")
            .cloned()
            .collect::<Vec<_>>()
    );
}

async fn actions_are_recorded_and_read_back_in_order(kind: Kind) {
    let Some(t) = Harness::new(kind, "actions_are_recorded_and_read_back_in_order").await else {
        return;
    };
    let s1 = t.store.create_owned_session("alice").await.unwrap().id;
    let s2 = t.store.create_owned_session("bob").await.unwrap().id;
    let from = now_rfc3339();
    let odd = "détail ✓ \u{0} nul \"quoted\"\nnext line";
    let script: [(&str, &str, Action, Option<&str>); 9] = [
        (&s1, "alice", Action::Create, None),
        (&s2, "bob", Action::Create, None),
        (&s1, "alice", Action::Prompt, Some("r-0000000000a1")),
        (&s1, "admin", Action::Cancel, None),
        (&s2, "bob", Action::Resume, Some("")),
        (&s1, "alice", Action::Approve, Some("call_1")),
        (&s1, "oauth:carol", Action::Deny, Some(odd)),
        (&s2, "bob", Action::Prompt, None),
        (&s1, "alice", Action::Resume, None),
    ];
    for (session, actor, action, detail) in script {
        t.store
            .record_action(Some(session), actor, action, detail)
            .await
            .unwrap();
    }
    let to = now_rfc3339();
    let expected = |id: &str| -> Vec<(Option<&str>, &str, Action, Option<&str>)> {
        script
            .iter()
            .filter(|(s, ..)| *s == id)
            .map(|&(s, actor, action, detail)| (Some(s), actor, action, detail))
            .collect()
    };
    let first = t.store.actions(Some(&s1)).await.unwrap();
    assert_eq!(untimed(&first), expected(&s1));
    assert_eq!(first.len(), 6);
    assert_eq!(first[4].detail.as_deref(), Some(odd));
    assert_times(&first, &from, &to);
    let second = t.store.actions(Some(&s2)).await.unwrap();
    assert_eq!(untimed(&second), expected(&s2));
    assert_eq!(second.len(), 3);
    assert_times(&second, &from, &to);
    assert_eq!(t.store.actions(None).await.unwrap(), Vec::new());
    // The same from another handle.
    assert_eq!(t.reopen().await.actions(Some(&s1)).await.unwrap(), first);
    // Recording an action changes nothing of the session.
    let before = t.store.session(&s2).await.unwrap();
    t.store
        .record_action(Some(&s2), "bob", Action::Cancel, None)
        .await
        .unwrap();
    assert_eq!(t.store.session(&s2).await.unwrap(), before);
    // The audit shows them, with the rest.
    let audit = SessionAudit::read(t.store.as_ref(), &s1).await.unwrap();
    assert_eq!(audit.actions, first);
    let json = serde_json::to_value(&audit).unwrap();
    assert_eq!(
        json["actions"][1],
        serde_json::json!({
            "session": s1, "actor": "alice", "action": "prompt",
            "detail": "r-0000000000a1", "at": first[1].at,
        })
    );
}

async fn an_action_on_a_missing_session_is_refused(kind: Kind) {
    let Some(t) = Harness::new(kind, "an_action_on_a_missing_session_is_refused").await else {
        return;
    };
    let id = t.store.create_session().await.unwrap().id;
    let missing = "s-0000000000zz";
    match t
        .store
        .record_action(Some(missing), "alice", Action::Prompt, Some("x"))
        .await
    {
        Err(StoreError::NoSession(got)) => assert_eq!(got, missing),
        other => panic!("{other:?}"),
    }
    match t.store.actions(Some(missing)).await {
        Err(StoreError::NoSession(got)) => assert_eq!(got, missing),
        other => panic!("{other:?}"),
    }
    match SessionAudit::read(t.store.as_ref(), missing).await {
        Err(StoreError::NoSession(got)) => assert_eq!(got, missing),
        other => panic!("{other:?}"),
    }
    // Nothing was recorded anywhere.
    assert_eq!(t.store.actions(None).await.unwrap(), Vec::new());
    assert_eq!(t.store.actions(Some(&id)).await.unwrap(), Vec::new());
    assert_eq!(
        SessionAudit::read(t.store.as_ref(), &id)
            .await
            .unwrap()
            .actions,
        Vec::new()
    );
}

async fn configuration_changes_are_kept_apart_from_sessions(kind: Kind) {
    let Some(t) = Harness::new(kind, "configuration_changes_are_kept_apart_from_sessions").await
    else {
        return;
    };
    let id = t.store.create_owned_session("alice").await.unwrap().id;
    let from = now_rfc3339();
    t.store
        .record_action(None, "admin", Action::Config, Some("max_turns"))
        .await
        .unwrap();
    t.store
        .record_action(Some(&id), "alice", Action::Prompt, None)
        .await
        .unwrap();
    t.store
        .record_action(None, "ops", Action::Config, Some("auto_approve,max_turns"))
        .await
        .unwrap();
    t.store
        .record_action(None, "ops", Action::Config, None)
        .await
        .unwrap();
    t.store
        .record_action(Some(&id), "alice", Action::Approve, Some("call_7"))
        .await
        .unwrap();
    let to = now_rfc3339();
    let config = t.store.actions(None).await.unwrap();
    assert_eq!(
        untimed(&config),
        [
            (None, "admin", Action::Config, Some("max_turns")),
            (None, "ops", Action::Config, Some("auto_approve,max_turns")),
            (None, "ops", Action::Config, None),
        ]
    );
    assert_times(&config, &from, &to);
    assert_eq!(
        untimed(&t.store.actions(Some(&id)).await.unwrap()),
        [
            (Some(id.as_str()), "alice", Action::Prompt, None),
            (Some(id.as_str()), "alice", Action::Approve, Some("call_7")),
        ]
    );
    assert_eq!(
        serde_json::to_value(&config[0]).unwrap(),
        serde_json::json!({
            "session": null, "actor": "admin", "action": "config",
            "detail": "max_turns", "at": config[0].at,
        })
    );
}

both!(
    the_owner_is_recorded_and_read_back,
    lists_are_filtered_by_owner_exactly,
    actions_are_recorded_and_read_back_in_order,
    an_action_on_a_missing_session_is_refused,
    configuration_changes_are_kept_apart_from_sessions,
);
