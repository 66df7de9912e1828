use sluice_store::{Action, SqliteStore, Store, StoreError};

use crate::harness::{Harness, Kind, raw, user};

fn tables(path: &std::path::Path) -> Vec<String> {
    raw(path)
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn user_version(path: &std::path::Path) -> i64 {
    raw(path)
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopening_migrates_nothing_and_keeps_everything() {
    let t = Harness::new(
        Kind::Sqlite,
        "reopening_migrates_nothing_and_keeps_everything",
    )
    .await
    .unwrap();
    let id = t.store.create_session().await.unwrap().id;
    t.store.append(&id, &user("kept")).await.unwrap();
    let schema_before: Vec<String> = raw(&t.path)
        .prepare("SELECT sql FROM sqlite_schema ORDER BY name")
        .unwrap()
        .query_map([], |row| {
            row.get::<_, Option<String>>(0)
                .map(Option::unwrap_or_default)
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    drop(t.store);
    for _ in 0..3 {
        let store = SqliteStore::open(&t.path).unwrap();
        assert_eq!(
            store.messages(&id).await.unwrap()[0].message.content,
            "kept"
        );
    }
    assert_eq!(
        tables(&t.path),
        [
            "actions",
            "approvals",
            "audit",
            "call_facts",
            "config",
            "messages",
            "queued_prompts",
            "run_events",
            "runs",
            "sessions"
        ]
    );
    assert_eq!(user_version(&t.path), SqliteStore::SCHEMA_VERSION);
    let schema_after: Vec<String> = raw(&t.path)
        .prepare("SELECT sql FROM sqlite_schema ORDER BY name")
        .unwrap()
        .query_map([], |row| {
            row.get::<_, Option<String>>(0)
                .map(Option::unwrap_or_default)
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(schema_before, schema_after);
    let mode: String = raw(&t.path)
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal", "WAL is a property of the file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_from_a_newer_sluice_is_refused() {
    let t = Harness::new(Kind::Sqlite, "a_schema_from_a_newer_sluice_is_refused")
        .await
        .unwrap();
    drop(t.store);
    let newer = SqliteStore::SCHEMA_VERSION + 1;
    raw(&t.path)
        .pragma_update(None, "user_version", newer)
        .unwrap();
    let err = SqliteStore::open(&t.path).unwrap_err();
    let shown = t.path.display().to_string();
    match &err {
        StoreError::TooNew { path, found, known } => {
            assert_eq!(
                (path, *found, *known),
                (&shown, newer, SqliteStore::SCHEMA_VERSION)
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        err.to_string(),
        format!(
            "session store {shown} has schema version {newer}; this Sluice knows up to 5: upgrade Sluice"
        )
    );
    assert_eq!(user_version(&t.path), newer, "left alone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_creates_missing_directories() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/c/sessions.db");
    let store = SqliteStore::open(&path).unwrap();
    assert!(path.is_file());
    assert_eq!(store.path(), path.display().to_string());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("a/b"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}

/// A store path naming an existing file that is not a session store was
/// silently made a database (an empty file), or refused with SQLite's "file is not a
/// database" from setting the journal mode. Each is refused, naming the file and what it is,
/// and the file is left exactly as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_is_not_a_store_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |path: &std::path::Path, what: &str| {
        let before = std::fs::read(path).ok();
        let err = SqliteStore::open(path).unwrap_err();
        assert!(matches!(err, StoreError::NotAStore { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "{} is not a Sluice session store: {what}; refusing to use it (nothing was written). Give --store (SLUICE_STORE, store.path) a new file or an existing session store",
                path.display()
            )
        );
        assert_eq!(
            std::fs::read(path).ok(),
            before,
            "{} changed",
            path.display()
        );
    };
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    refused(&empty, "it is an empty file (0 bytes)");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "hello\n").unwrap();
    refused(
        &notes,
        "it is a file of 6 bytes that is not a SQLite database",
    );
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![b'x'; 8192]).unwrap();
    refused(
        &junk,
        "it is a file of 8192 bytes that is not a SQLite database",
    );
    refused(dir.path(), "it is a directory");
    // Another program's SQLite database.
    let foreign = dir.path().join("other.sqlite");
    raw(&foreign)
        .execute_batch("CREATE TABLE contacts (name TEXT); CREATE TABLE notes (body TEXT);")
        .unwrap();
    refused(
        &foreign,
        "it is a SQLite database of something else (it holds contacts, notes)",
    );
    #[cfg(unix)]
    {
        let fifo = dir.path().join("fifo");
        sluice_operator_files::make_fifo(&fifo).unwrap();
        let err = SqliteStore::open(&fifo).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{} is not a Sluice session store: it is not a regular file (a device, FIFO or socket); refusing to use it (nothing was written). Give --store (SLUICE_STORE, store.path) a new file or an existing session store",
                fifo.display()
            )
        );
    }
    // An empty SQLite database (only its header) is a new store.
    let blank = dir.path().join("blank.db");
    raw(&blank)
        .execute_batch("PRAGMA user_version = 0; VACUUM;")
        .unwrap();
    SqliteStore::open(&blank).unwrap();
    assert_eq!(user_version(&blank), SqliteStore::SCHEMA_VERSION);

    let blocked = dir.path().join("file");
    std::fs::write(&blocked, "").unwrap();
    let err = SqliteStore::open(&blocked.join("sessions.db")).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("cannot create directory"), "{text}");
    assert!(text.contains(&blocked.display().to_string()), "{text}");
}

/// A store of schema version 1 (before runs were claimed with their prompt, and before runs
/// and their events were stored) is migrated in place, keeping its sessions and messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_store_is_migrated() {
    let t = Harness::new(Kind::Sqlite, "a_version_1_store_is_migrated")
        .await
        .unwrap();
    let id = t.store.create_session().await.unwrap().id;
    t.store.append(&id, &user("kept")).await.unwrap();
    drop(t.store);
    // Undo version 2 by hand, as a store written by the previous Sluice looks.
    raw(&t.path)
        .execute_batch(
            "DROP TABLE actions; DROP INDEX sessions_by_owner; ALTER TABLE sessions DROP COLUMN owner; DROP TABLE call_facts; DROP TABLE run_events; DROP TABLE runs; DROP TABLE config; ALTER TABLE sessions DROP COLUMN run_id; DROP TABLE queued_prompts; ALTER TABLE sessions DROP COLUMN runner_token; PRAGMA user_version = 1;",
        )
        .unwrap();
    let store = SqliteStore::open(&t.path).unwrap();
    assert_eq!(user_version(&t.path), SqliteStore::SCHEMA_VERSION);
    assert_eq!(
        store.messages(&id).await.unwrap()[0].message.content,
        "kept"
    );
    store
        .begin_run(&id, Some("after the upgrade"))
        .await
        .unwrap();
    assert_eq!(store.append_queued_prompts(&id).await.unwrap(), [2]);
    assert_eq!(store.session(&id).await.unwrap().owner, "admin");
}

/// A store of schema version 4 (before sessions had owners and the actions log) is migrated
/// in place: its sessions keep everything and belong to `admin`, whoever made them, and the
/// actions log starts empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_4_store_is_migrated_and_its_sessions_belong_to_admin() {
    let t = Harness::new(
        Kind::Sqlite,
        "a_version_4_store_is_migrated_and_its_sessions_belong_to_admin",
    )
    .await
    .unwrap();
    let older = t.store.create_owned_session("alice").await.unwrap().id;
    t.store.append(&older, &user("kept")).await.unwrap();
    let newer = t.store.create_named_session("named").await.unwrap().id;
    t.store
        .record_action(Some(&older), "alice", Action::Prompt, None)
        .await
        .unwrap();
    drop(t.store);
    // Undo version 5 by hand, as a store written by the previous Sluice looks.
    raw(&t.path)
        .execute_batch(
            "DROP TABLE actions; DROP INDEX sessions_by_owner; ALTER TABLE sessions DROP COLUMN owner; PRAGMA user_version = 4;",
        )
        .unwrap();
    assert_eq!(
        SqliteStore::migrate(&t.path).unwrap(),
        (4, SqliteStore::SCHEMA_VERSION)
    );
    assert_eq!(SqliteStore::SCHEMA_VERSION, 5);
    let store = SqliteStore::open(&t.path).unwrap();
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
    assert_eq!(
        store.messages(&older).await.unwrap()[0].message.content,
        "kept"
    );
    assert_eq!(store.actions(Some(&older)).await.unwrap(), Vec::new());
    store
        .record_action(Some(&older), "admin", Action::Resume, None)
        .await
        .unwrap();
    assert_eq!(store.actions(Some(&older)).await.unwrap().len(), 1);
    let fresh = store.create_owned_session("bob").await.unwrap();
    assert_eq!(store.session(&fresh.id).await.unwrap().owner, "bob");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_may_open_a_new_file_at_once() {
    // Many connections racing to create and migrate the same new file: each migration
    // step re-reads the version under the write lock, so exactly one applies it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || SqliteStore::open(&path).map(drop))
        })
        .collect();
    for handle in handles {
        handle.join().unwrap().unwrap();
    }
    assert_eq!(user_version(&path), SqliteStore::SCHEMA_VERSION);
    // The temporary files each made beside it are gone.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".new-"))
        .collect();
    assert_eq!(names, Vec::<String>::new());
}
