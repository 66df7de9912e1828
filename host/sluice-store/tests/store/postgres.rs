//! PostgreSQL's own mechanics: the URL in errors (never its password), an unreachable
//! server, migrations recorded in `sluice_schema`, a schema from a newer Sluice refused.

use sluice_store::{Action, PgStore, Store, StoreError};

use crate::harness::postgres_url;

#[tokio::test]
async fn an_unreachable_database_is_named_without_its_password() {
    // Nothing listens on port 1 of 127.0.0.1.
    let url = "postgres://sluice:hunter2-secret@127.0.0.1:1/sluice?connect_timeout=5";
    let err = PgStore::connect(url).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("session store postgres://sluice:***@127.0.0.1:1/sluice?connect_timeout=5: cannot connect to the database: "),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
    assert!(!format!("{err:?}").contains("hunter2"));
    let text = PgStore::connect("mysql://u:hunter2@h/db")
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        text,
        "session store mysql://u:***@h/db: not a PostgreSQL URL: it must start with postgres:// or postgresql://"
    );
    // Not even a URL: not shown at all.
    let text = PgStore::connect("postgres://u:hunter2@h:notaport/db")
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        text,
        "session store (a store URL that is not a URL; not shown): not a valid PostgreSQL URL: invalid connection string"
    );
}

#[tokio::test]
async fn a_wrong_password_is_refused_without_showing_it() {
    let Some(server) = postgres_url("a_wrong_password_is_refused_without_showing_it") else {
        return;
    };
    let mut url = url::Url::parse(&server).unwrap();
    url.set_password(Some("not-the-password-x9")).unwrap();
    let text = PgStore::connect(url.as_str())
        .await
        .unwrap_err()
        .to_string();
    assert!(text.contains("password authentication failed"), "{text}");
    assert!(!text.contains("not-the-password-x9"), "{text}");
    if let Some(real) = url::Url::parse(&server).unwrap().password() {
        assert!(!text.contains(real), "{text}");
    }
}

#[tokio::test]
async fn migrations_are_recorded_and_a_newer_schema_is_refused() {
    let Some(server) = postgres_url("migrations_are_recorded_and_a_newer_schema_is_refused") else {
        return;
    };
    let url = PgStore::create_scratch_database(&server).await.unwrap();
    assert_eq!(
        PgStore::migrate(&url).await.unwrap(),
        (0, PgStore::SCHEMA_VERSION)
    );
    assert_eq!(
        PgStore::migrate(&url).await.unwrap(),
        (PgStore::SCHEMA_VERSION, PgStore::SCHEMA_VERSION),
        "nothing to do the second time"
    );
    // Several replicas starting at once: each migration applied once.
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { PgStore::connect(&url).await.map(drop) })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let config: tokio_postgres::Config = url.parse().unwrap();
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let versions: Vec<i32> = client
        .query("SELECT version FROM sluice_schema ORDER BY version", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        versions,
        (1..=PgStore::SCHEMA_VERSION as i32).collect::<Vec<_>>()
    );
    let newer = PgStore::SCHEMA_VERSION as i32 + 1;
    client
        .execute(
            "INSERT INTO sluice_schema (version, applied_at) VALUES ($1, 'later')",
            &[&newer],
        )
        .await
        .unwrap();
    let err = PgStore::connect(&url).await.unwrap_err();
    match &err {
        StoreError::TooNew { path, found, known } => {
            assert_eq!(
                (*found, *known),
                (i64::from(newer), PgStore::SCHEMA_VERSION)
            );
            assert!(!path.contains(url::Url::parse(&url).unwrap().password().unwrap_or("\u{0}")));
        }
        other => panic!("{other:?}"),
    }
    drop(client);
    PgStore::drop_scratch_database(&url).await.unwrap();
}

/// `/healthz` reports the store's state through `Store::ping`: it answers while the
/// database is there and fails, naming the URL without its password, once it is gone (the
/// database dropped under a running store, as a database that is down).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_reports_a_database_that_is_gone() {
    let Some(server) = postgres_url("ping_reports_a_database_that_is_gone") else {
        return;
    };
    let url = PgStore::create_scratch_database(&server).await.unwrap();
    let store = PgStore::connect(&url).await.unwrap();
    store.ping().await.unwrap();
    PgStore::drop_scratch_database(&url).await.unwrap();
    let e = store.ping().await.unwrap_err();
    let StoreError::Database { path, message } = &e else {
        panic!("not Database: {e:?}");
    };
    assert_eq!(path, &sluice_store::redact_url(&url));
    assert!(message.starts_with("check the database: "), "{message}");
    let password = ::url::Url::parse(&url)
        .unwrap()
        .password()
        .map(str::to_owned);
    if let Some(p) = password.filter(|p| !p.is_empty()) {
        assert!(!e.to_string().contains(&p), "{e}");
    }
}

/// A database of schema version 2 (before sessions had owners and the actions log) is
/// migrated in place: its sessions keep everything and belong to `admin`, whoever made
/// them, and the actions log starts empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_2_database_is_migrated_and_its_sessions_belong_to_admin() {
    let test = "a_version_2_database_is_migrated_and_its_sessions_belong_to_admin";
    let Some(server) = postgres_url(test) else {
        return;
    };
    let url = PgStore::create_scratch_database(&server).await.unwrap();
    let store = PgStore::connect(&url).await.unwrap();
    let older = store.create_owned_session("alice").await.unwrap().id;
    store
        .append(&older, &sluice_protocol::Message::user("kept", "t"))
        .await
        .unwrap();
    let newer = store.create_named_session("named").await.unwrap().id;
    store
        .record_action(Some(&older), "alice", Action::Prompt, None)
        .await
        .unwrap();
    drop(store);
    // Undo version 3 by hand, as a database written by the previous Sluice looks.
    let config: tokio_postgres::Config = url.parse().unwrap();
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(
            "DROP TABLE actions; ALTER TABLE sessions DROP COLUMN owner; DELETE FROM sluice_schema WHERE version = 3;",
        )
        .await
        .unwrap();
    assert_eq!(PgStore::SCHEMA_VERSION, 3);
    assert_eq!(PgStore::migrate(&url).await.unwrap(), (2, 3));
    let indexes: Vec<String> = client
        .query(
            "SELECT indexname FROM pg_indexes WHERE tablename IN ('sessions', 'actions') ORDER BY indexname",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        indexes,
        [
            "actions_by_session",
            "actions_pkey",
            "sessions_by_created_at",
            "sessions_by_owner",
            "sessions_pkey"
        ]
    );
    let store = PgStore::connect(&url).await.unwrap();
    let listed = store.list_sessions().await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|s| (s.id.as_str(), s.owner.as_str(), s.message_count))
            .collect::<Vec<_>>(),
        [(newer.as_str(), "admin", 0), (older.as_str(), "admin", 1)]
    );
    assert_eq!(
        store.list_owned_sessions(Some("admin")).await.unwrap(),
        listed
    );
    assert_eq!(
        store.list_owned_sessions(Some("alice")).await.unwrap(),
        Vec::new()
    );
    assert_eq!(store.actions(Some(&older)).await.unwrap(), Vec::new());
    store
        .record_action(Some(&older), "admin", Action::Resume, None)
        .await
        .unwrap();
    assert_eq!(store.actions(Some(&older)).await.unwrap().len(), 1);
    let fresh = store.create_owned_session("bob").await.unwrap();
    assert_eq!(store.session(&fresh.id).await.unwrap().owner, "bob");
    drop((store, client));
    PgStore::drop_scratch_database(&url).await.unwrap();
}
