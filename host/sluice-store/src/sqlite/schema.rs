//! The session store's file: its schema and migrations, creating it whole, and the checks
//! that a file is a Sluice session store before anything is written to it.

use std::io::Read as _;
use std::path::Path;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::StoreError;
use crate::runner::process_token;

/// The schema, one migration per version: migration `i` takes `PRAGMA user_version` from
/// `i` to `i + 1` and runs in its own transaction. Append new versions; never edit one
/// that has shipped.
///
/// Version 1:
/// - `sessions`: one row per session; `runner_pid` is the process running it while
///   `status = 'running'`.
/// - `messages`: one row per message, keyed by `(session_id, seq)`; `tool_calls` is a JSON
///   array of `{id, name, arguments}` or NULL when the message has none. An ordinary rowid
///   table rather than WITHOUT ROWID: SQLite recommends WITHOUT ROWID only for rows well
///   under 1/20 of a page, and observations run to kilobytes. The primary key's index
///   serves both `MAX(seq)` on append and the transcript read.
/// - `audit`: the original of every changed message, oldest first by `id`.
/// - `approvals`: the operator's decision per tool call.
///
/// Version 2 (one run per session across processes, and prompts accepted with their run):
/// - `sessions.runner_token`: the runner process's token (drawn once per process), so a
///   process tells its own run from a stale row of an earlier process with the same pid.
/// - `queued_prompts`: prompts accepted by `begin_run` that the run has not yet appended to
///   `messages`, oldest first by `id`.
///
/// Version 3 (runs, their events, cancellation and the run-time configuration in the
/// store, so every process sharing it sees them):
/// - `sessions.run_id`: the session's latest run.
/// - `runs`: one row per run; `ended_at` and `status` once it has ended; `cancel_requested`
///   (0 or 1); `last_event`, the position of its last event.
/// - `run_events`: the events of each run, keyed by `(run_id, seq)`, `data` a JSON object.
/// - `config`: run-time configuration values (`PUT /agent/config`), JSON by key.
///
/// Version 4 (what each call cost):
/// - `call_facts`: one row per tool call, keyed to the message of its observation; `facts`
///   a JSON object (`crate::CallRecord`).
///
/// Version 5 (tenancy: who owns a session, and who did what):
/// - `sessions.owner`: the principal that created the session; `admin`
///   (`crate::DEFAULT_OWNER`) for every session made before, and for sessions created
///   without an owner. Indexed by `(owner, created_at)` for one principal's list.
/// - `actions`: the actions log (`crate::ActionRecord`), oldest first by `id`;
///   `session_id` NULL for a change of the run-time configuration; `action` a name
///   (`crate::Action`) unconstrained in SQL, like a status.
///
/// Tables are STRICT (a TEXT column refuses anything else). Status, role and decision
/// values are not constrained in SQL, so a later version can add one without rebuilding a
/// table; the code refuses values it does not know when it reads them.
pub(crate) const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    status      TEXT NOT NULL,
    last_error  TEXT,
    runner_pid  INTEGER
) STRICT;
CREATE INDEX sessions_by_created_at ON sessions (created_at);

CREATE TABLE messages (
    session_id   TEXT NOT NULL REFERENCES sessions (id),
    seq          INTEGER NOT NULL CHECK (seq >= 1),
    role         TEXT NOT NULL,
    content      TEXT NOT NULL,
    tool_calls   TEXT,
    tool_call_id TEXT,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT;

CREATE TABLE audit (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    changed_at  TEXT NOT NULL,
    reason      TEXT NOT NULL,
    original    TEXT NOT NULL,
    replacement TEXT NOT NULL,
    FOREIGN KEY (session_id, seq) REFERENCES messages (session_id, seq)
) STRICT;
CREATE INDEX audit_by_session ON audit (session_id, id);

CREATE TABLE approvals (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    call_id    TEXT NOT NULL,
    decision   TEXT NOT NULL,
    decided_at TEXT NOT NULL,
    PRIMARY KEY (session_id, call_id)
) STRICT;
",
    "
ALTER TABLE sessions ADD COLUMN runner_token TEXT;

CREATE TABLE queued_prompts (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id),
    content     TEXT NOT NULL,
    created_at  TEXT NOT NULL
) STRICT;
CREATE INDEX queued_prompts_by_session ON queued_prompts (session_id, id);
",
    "
ALTER TABLE sessions ADD COLUMN run_id TEXT;

CREATE TABLE runs (
    id               TEXT PRIMARY KEY NOT NULL,
    session_id       TEXT NOT NULL REFERENCES sessions (id),
    started_at       TEXT NOT NULL,
    ended_at         TEXT,
    status           TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    last_event       INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE run_events (
    run_id TEXT NOT NULL REFERENCES runs (id),
    seq    INTEGER NOT NULL CHECK (seq >= 1),
    kind   TEXT NOT NULL,
    data   TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT;

CREATE TABLE config (
    key        TEXT PRIMARY KEY NOT NULL,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
",
    "
CREATE TABLE call_facts (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    tool        TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    facts       TEXT NOT NULL,
    FOREIGN KEY (session_id, seq) REFERENCES messages (session_id, seq)
) STRICT;
CREATE INDEX call_facts_by_session ON call_facts (session_id, id);
",
    "
ALTER TABLE sessions ADD COLUMN owner TEXT NOT NULL DEFAULT 'admin';
CREATE INDEX sessions_by_owner ON sessions (owner, created_at);

CREATE TABLE actions (
    id         INTEGER PRIMARY KEY,
    session_id TEXT REFERENCES sessions (id),
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    detail     TEXT,
    at         TEXT NOT NULL
) STRICT;
CREATE INDEX actions_by_session ON actions (session_id, id);
",
];

/// The newest schema version this build knows (`PRAGMA user_version`): one per migration.
pub(crate) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the schema of `conn` up to [`SCHEMA_VERSION`], one transaction
/// per migration. Safe against another process migrating the same file at once: each
/// step re-reads the version after taking the write lock.
pub(crate) fn migrate(conn: &mut Connection, path: &str) -> Result<(), StoreError> {
    let known = SCHEMA_VERSION;
    let fail = |what: String, e: rusqlite::Error| StoreError::Database {
        path: path.to_owned(),
        message: format!("{what}: {e}"),
    };
    let version = |conn: &Connection| -> Result<i64, StoreError> {
        let found: i64 = conn
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(|e| fail("cannot read the schema version".into(), e))?;
        if found > known {
            return Err(StoreError::TooNew {
                path: path.to_owned(),
                found,
                known,
            });
        }
        if found < 0 {
            return Err(StoreError::Database {
                path: path.to_owned(),
                message: format!("schema version {found} is not one Sluice writes"),
            });
        }
        Ok(found)
    };
    if version(conn)? == known {
        return Ok(());
    }
    for (index, sql) in MIGRATIONS.iter().enumerate() {
        let target = index as i64 + 1;
        let what = || format!("cannot migrate the schema to version {target}");
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| fail(what(), e))?;
        if version(&tx)? >= target {
            continue;
        }
        tx.execute_batch(sql).map_err(|e| fail(what(), e))?;
        tx.pragma_update(None, "user_version", target)
            .map_err(|e| fail(what(), e))?;
        tx.commit().map_err(|e| fail(what(), e))?;
    }
    Ok(())
}

/// The first 16 bytes of every SQLite database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Refuses a file at `path` that is not a SQLite database: a directory, anything but a
/// regular file, an empty file, or a file without SQLite's header. Reads at most 16 bytes,
/// and opens nothing but a regular file (a FIFO would block). `Ok` when nothing is there.
pub(crate) fn check_file(path: &Path, shown: &str) -> Result<(), StoreError> {
    let not_a_store = |what: String| StoreError::NotAStore {
        path: shown.to_owned(),
        what,
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(StoreError::Database {
                path: shown.to_owned(),
                message: format!("cannot read its metadata: {e}"),
            });
        }
    };
    if meta.is_dir() {
        return Err(not_a_store("it is a directory".into()));
    }
    if !meta.is_file() {
        return Err(not_a_store(
            "it is not a regular file (a device, FIFO or socket)".into(),
        ));
    }
    if meta.len() == 0 {
        return Err(not_a_store("it is an empty file (0 bytes)".into()));
    }
    let mut header = [0u8; 16];
    let read = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut header))
        .map_err(|e| StoreError::Database {
            path: shown.to_owned(),
            message: format!("cannot read it: {e}"),
        })?;
    if read < header.len() || &header != SQLITE_HEADER {
        return Err(not_a_store(format!(
            "it is a file of {} bytes that is not a SQLite database",
            meta.len()
        )));
    }
    Ok(())
}

/// Refuses a SQLite database that some other program made: one that Sluice never
/// migrated (schema version 0) but that holds tables, views or indexes.
pub(crate) fn check_not_foreign(conn: &Connection, shown: &str) -> Result<(), StoreError> {
    let fail = |e: rusqlite::Error| StoreError::Database {
        path: shown.to_owned(),
        message: format!("cannot read the schema: {e}"),
    };
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(fail)?;
    if version != 0 {
        return Ok(());
    }
    let names: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY name LIMIT 6",
        )
        .and_then(|mut stmt| {
            stmt.query_map([], |row| row.get(0))?
                .collect::<Result<_, _>>()
        })
        .map_err(fail)?;
    if names.is_empty() {
        return Ok(());
    }
    Err(StoreError::NotAStore {
        path: shown.to_owned(),
        what: format!(
            "it is a SQLite database of something else (it holds {}{})",
            names.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
            if names.len() > 5 { ", …" } else { "" }
        ),
    })
}

/// Creates a complete, empty store at `path`, which did not exist: the schema is written to
/// a temporary file beside it (rollback journal, so everything is in the one file when it
/// closes), which is then hard-linked to `path`. If another process linked its own first,
/// that one is kept. Where hard links are not supported, the file is renamed into place
/// unless `path` exists by then.
pub(crate) fn create_whole(path: &Path, shown: &str) -> Result<(), StoreError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| StoreError::Database {
        path: shown.to_owned(),
        message: format!("{what}: {e}"),
    };
    static CREATED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nth = CREATED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".new-{}-{nth}", process_token()));
    let temp = path.with_file_name(name);
    let result = (|| {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(&temp, flags)
            .map_err(|e| fail("cannot create the database", &e))?;
        migrate(&mut conn, shown)?;
        conn.close()
            .map_err(|(_, e)| fail("cannot create the database", &e))?;
        match std::fs::hard_link(&temp, path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(_) if !path.exists() => std::fs::rename(&temp, path)
                .map_err(|e| fail("cannot move the new database into place", &e)),
            Err(_) => Ok(()),
        }
    })();
    let _ = std::fs::remove_file(&temp);
    result
}

/// Creates `dir` and its missing parents; on Unix the ones it creates get mode 0700
/// (transcripts hold what the tools read).
pub(crate) fn create_private_dir_all(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}
