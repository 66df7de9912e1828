use sluice_store::{SqliteStore, Store, StoreError};

use crate::util::{raw, temp_store, user};

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

#[test]
fn reopening_migrates_nothing_and_keeps_everything() {
    let t = temp_store();
    let id = t.store.create_session().unwrap().id;
    t.store.append(&id, &user("kept")).unwrap();
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
        assert_eq!(store.messages(&id).unwrap()[0].message.content, "kept");
    }
    assert_eq!(
        tables(&t.path),
        ["approvals", "audit", "messages", "sessions"]
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

#[test]
fn a_schema_from_a_newer_sluice_is_refused() {
    let t = temp_store();
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
            "session store {shown} has schema version {newer}; this Sluice knows up to 1: upgrade Sluice"
        )
    );
    assert_eq!(user_version(&t.path), newer, "left alone");
}

#[test]
fn open_creates_missing_directories() {
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

#[test]
fn errors_name_the_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![b'x'; 8192]).unwrap();
    let err = SqliteStore::open(&junk).unwrap_err();
    assert!(matches!(err, StoreError::Database { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("session store {}: ", junk.display())),
        "{text}"
    );
    assert!(text.contains("not a database"), "{text}");

    let blocked = dir.path().join("file");
    std::fs::write(&blocked, "").unwrap();
    let err = SqliteStore::open(&blocked.join("sessions.db")).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("cannot create directory"), "{text}");
    assert!(text.contains(&blocked.display().to_string()), "{text}");
}

#[test]
fn two_processes_may_open_a_new_file_at_once() {
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
}
