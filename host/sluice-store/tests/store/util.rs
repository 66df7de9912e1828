use std::path::PathBuf;

use sluice_protocol::{Message, ToolCall};
use sluice_store::SqliteStore;
use tempfile::TempDir;

/// A store in a fresh temporary directory (removed on drop).
pub(crate) struct TempStore {
    pub(crate) _dir: TempDir,
    pub(crate) path: PathBuf,
    pub(crate) store: SqliteStore,
}

pub(crate) fn temp_store() -> TempStore {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteStore::open(&path).unwrap();
    TempStore {
        _dir: dir,
        path,
        store,
    }
}

/// A plain connection to the same file, to look behind the store's back.
pub(crate) fn raw(path: &std::path::Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    conn
}

pub(crate) fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

pub(crate) fn user(content: &str) -> Message {
    Message::user(content, "2026-11-30T08:00:00.000Z")
}
