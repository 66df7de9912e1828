//! [`SqliteStore`]: the embedded session store, one SQLite file in WAL mode.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{
    Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior, params,
};
use sluice_protocol::{Message, Role, SessionStatus, ToolCall};

use crate::runner::{process_is_live, process_token};
use crate::schema::{
    MIGRATIONS, check_file, check_not_foreign, create_private_dir_all, create_whole, migrate,
};
use crate::{
    AuditEntry, Decision, SessionRecord, Store, StoreError, StoredMessage, now_rfc3339,
    valid_session_name,
};

/// How long an operation waits for another connection's write transaction (in this or
/// another process) before it fails with "database is locked": 5 s.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The one statement that appends a message. `MAX(seq)` is one descent of the primary
/// key's index, so an append costs O(log n + size of the message) and writes one row.
const APPEND_SQL: &str = "
INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id, created_at)
SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3, ?4, ?5, ?6 FROM messages WHERE session_id = ?1
RETURNING seq";

/// A session row with its message count (the last `seq`: positions are gapless and rows
/// are never deleted, so this is one index descent, not a count of the transcript).
const SESSION_SQL: &str = "
SELECT s.id, s.created_at, s.updated_at, s.status, s.last_error,
       (SELECT COALESCE(MAX(m.seq), 0) FROM messages m WHERE m.session_id = s.id)
FROM sessions s";

/// The embedded session store: one SQLite file in WAL mode.
///
/// Durability: `synchronous = NORMAL`. In WAL mode a transaction is committed once its
/// frames are written to the WAL file, so a committed transaction survives a crash of the
/// process (a panic, `kill -9`): the OS holds the written pages. Only a power loss or an
/// OS crash can roll back the newest transactions, and the database stays consistent
/// even then. `FULL` would add an fsync to every append for that case alone.
///
/// Concurrency: the store holds one connection behind a mutex, so calls from many threads
/// are serialised; other processes may open the same file. Every write is an IMMEDIATE
/// transaction (it takes the write lock before reading), and a writer waits up to 5 s for
/// another's write lock before failing with [`StoreError::Database`] ("database is
/// locked"). A reader in another connection never waits for a writer (WAL).
///
/// One run per session, across processes: the session row records the runner's pid and a
/// token drawn once per process; [`Store::begin_run`] reads and writes them in one
/// IMMEDIATE transaction, so two processes (or two handles in one process) cannot both
/// claim a session, and a row left `running` by a process that has died is taken over.
pub struct SqliteStore {
    /// The file as given to [`SqliteStore::open`], for messages.
    path: String,
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// The newest schema version this build knows (`PRAGMA user_version`).
    pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

    /// Opens the store at `path`, creating the file and its parent directories if missing
    /// (directories this creates are private to the user on Unix: mode 0700), and brings
    /// its schema up to [`SqliteStore::SCHEMA_VERSION`].
    ///
    /// A missing file is created whole: the database is made under a temporary name
    /// beside it and linked into place, so a file at `path` is always either a complete
    /// store or not one of Sluice's, even when several processes create it at once. An
    /// existing file that is not a SQLite database, or a SQLite database that Sluice did
    /// not make, is refused before anything is written to it.
    ///
    /// Errors: [`StoreError::NotAStore`] for a directory, an empty file, a file that is not
    /// a SQLite database, or another program's database; [`StoreError::TooNew`] when a
    /// newer Sluice wrote the schema; [`StoreError::Database`] when the directory cannot be
    /// created, or WAL mode is not available (for example on a file system without shared
    /// memory support).
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let shown = path.display().to_string();
        let fail = |what: &str, e: &dyn std::fmt::Display| StoreError::Database {
            path: shown.clone(),
            message: format!("{what}: {e}"),
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            create_private_dir_all(parent)
                .map_err(|e| fail(&format!("cannot create directory {}", parent.display()), &e))?;
        }
        check_file(path, &shown)?;
        if !path.exists() {
            create_whole(path, &shown)?;
        }
        check_file(path, &shown)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn =
            Connection::open_with_flags(path, flags).map_err(|e| fail("cannot open", &e))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| fail("cannot set the busy timeout", &e))?;
        check_not_foreign(&conn, &shown)?;
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(|e| fail("cannot use WAL journal mode", &e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(fail(
                "cannot use WAL journal mode",
                &format!("SQLite kept journal mode {mode:?}"),
            ));
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| fail("cannot set synchronous = NORMAL", &e))?;
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(|e| fail("cannot enable foreign keys", &e))?;
        migrate(&mut conn, &shown)?;
        Ok(SqliteStore {
            path: shown,
            conn: Mutex::new(conn),
        })
    }

    /// Where the store lives by default: `$SLUICE_DATA_DIR/sessions.db`, else
    /// `$XDG_DATA_HOME/sluice/sessions.db`, else `$HOME/.local/share/sluice/sessions.db`.
    /// `None` when none of these variables is set.
    pub fn default_path() -> Option<PathBuf> {
        Self::default_path_from(|name| std::env::var_os(name))
    }

    /// [`SqliteStore::default_path`] with the environment read through `env` (a variable's
    /// value, or `None` when it is unset). Empty values count as unset, and a relative
    /// `XDG_DATA_HOME` is ignored, as the XDG base directory specification says.
    pub fn default_path_from(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
        let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(dir) = var("SLUICE_DATA_DIR") {
            return Some(dir.join("sessions.db"));
        }
        if let Some(dir) = var("XDG_DATA_HOME").filter(|d| d.is_absolute()) {
            return Some(dir.join("sluice").join("sessions.db"));
        }
        var("HOME").map(|home| home.join(".local/share/sluice/sessions.db"))
    }

    /// The database file, as given to [`SqliteStore::open`].
    pub fn path(&self) -> &str {
        &self.path
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while the lock was held dropped its transaction, which rolled back: the
        // connection is usable.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` in an IMMEDIATE transaction (the write lock is taken before anything is
    /// read, so no other writer can slip in between a read and the write that depends on
    /// it) and commits it. `what` and `id` name the operation in error messages.
    fn write<T>(
        &self,
        what: &str,
        id: &str,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, Fail>,
    ) -> Result<T, StoreError> {
        self.transaction(TransactionBehavior::Immediate, what, id, f)
    }

    /// Runs `f` in a read transaction: one consistent snapshot.
    fn read<T>(
        &self,
        what: &str,
        id: &str,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, Fail>,
    ) -> Result<T, StoreError> {
        self.transaction(TransactionBehavior::Deferred, what, id, f)
    }

    /// Runs `f` in a transaction that begins as `behavior` says, and commits it.
    fn transaction<T>(
        &self,
        behavior: TransactionBehavior,
        what: &str,
        id: &str,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, Fail>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn();
        let result = (|| {
            let tx = conn.transaction_with_behavior(behavior)?;
            let value = f(&tx)?;
            tx.commit()?;
            Ok(value)
        })();
        result.map_err(|e| self.error(what, id, e))
    }

    fn error(&self, what: &str, id: &str, fail: Fail) -> StoreError {
        let message = match fail {
            Fail::Store(e) => return e,
            Fail::Sql(e) => e.to_string(),
            Fail::Other(message) => message,
        };
        let message = if id.is_empty() {
            format!("{what}: {message}")
        } else {
            format!("{what} {id:?}: {message}")
        };
        StoreError::Database {
            path: self.path.clone(),
            message,
        }
    }
}

/// Why an operation failed, before it is named: `?` converts both SQLite's errors and
/// the store's own.
enum Fail {
    Sql(rusqlite::Error),
    Store(StoreError),
    /// A row that does not decode, or a failure outside SQLite.
    Other(String),
}

impl From<rusqlite::Error> for Fail {
    fn from(e: rusqlite::Error) -> Self {
        Fail::Sql(e)
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Fail::Store(e)
    }
}

/// A fresh session id: `s-` and 12 characters of lowercase Crockford base32 (digits and
/// letters without i, l, o, u), 60 random bits from the OS.
fn new_session_id() -> Result<String, Fail> {
    const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)
        .map_err(|e| Fail::Other(format!("cannot read random bytes for a session id: {e}")))?;
    let mut bits = u64::from_le_bytes(bytes);
    let mut id = String::with_capacity(14);
    id.push_str("s-");
    for _ in 0..12 {
        id.push(char::from(ALPHABET[(bits & 31) as usize]));
        bits >>= 5;
    }
    Ok(id)
}

/// Fails with [`StoreError::NoSession`] unless session `id` exists.
fn require_session(tx: &Transaction<'_>, id: &str) -> Result<(), Fail> {
    let found = tx
        .prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")?
        .query_row([id], |_| Ok(()))
        .optional()?;
    found.ok_or_else(|| Fail::Store(StoreError::NoSession(id.to_owned())))
}

/// Sets `updated_at` of session `id` to `now`; fails with [`StoreError::NoSession`]
/// unless it exists.
fn touch_session(tx: &Transaction<'_>, id: &str, now: &str) -> Result<(), Fail> {
    let changed = tx
        .prepare_cached("UPDATE sessions SET updated_at = ?2 WHERE id = ?1")?
        .execute(params![id, now])?;
    if changed == 0 {
        return Err(Fail::Store(StoreError::NoSession(id.to_owned())));
    }
    Ok(())
}

/// A session row as [`SESSION_SQL`] selects it, decoded later.
type SessionRow = (String, String, String, String, Option<String>, i64);

fn session_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
    ))
}

fn session_record(
    (id, created_at, updated_at, status, last_error, count): SessionRow,
) -> Result<SessionRecord, Fail> {
    let status = SessionStatus::parse(&status)
        .ok_or_else(|| Fail::Other(format!("session {id:?} has unknown status {status:?}")))?;
    Ok(SessionRecord {
        id,
        created_at,
        updated_at,
        status,
        last_error,
        message_count: count.max(0) as u64,
    })
}

impl Store for SqliteStore {
    fn create_session(&self) -> Result<SessionRecord, StoreError> {
        self.write("create session", "", |tx| {
            let now = now_rfc3339();
            let mut insert = tx.prepare_cached(
                "INSERT INTO sessions (id, created_at, updated_at, status) VALUES (?1, ?2, ?2, ?3)
                 ON CONFLICT (id) DO NOTHING",
            )?;
            // 60 random bits: a clash is all but impossible, but costs nothing to survive.
            for _ in 0..8 {
                let id = new_session_id()?;
                if insert.execute(params![id, now, SessionStatus::Idle.as_str()])? == 1 {
                    return Ok(SessionRecord {
                        id,
                        created_at: now.clone(),
                        updated_at: now,
                        status: SessionStatus::Idle,
                        last_error: None,
                        message_count: 0,
                    });
                }
            }
            Err(Fail::Other("eight fresh session ids were all taken".into()))
        })
    }

    fn create_named_session(&self, name: &str) -> Result<SessionRecord, StoreError> {
        if !valid_session_name(name) {
            return Err(StoreError::BadSessionName {
                name: name.to_owned(),
            });
        }
        self.write("create session", name, |tx| {
            let now = now_rfc3339();
            let inserted = tx
                .prepare_cached(
                    "INSERT INTO sessions (id, created_at, updated_at, status) VALUES (?1, ?2, ?2, ?3)
                     ON CONFLICT (id) DO NOTHING",
                )?
                .execute(params![name, now, SessionStatus::Idle.as_str()])?;
            if inserted == 0 {
                return Err(StoreError::SessionExists(name.to_owned()).into());
            }
            Ok(SessionRecord {
                id: name.to_owned(),
                created_at: now.clone(),
                updated_at: now,
                status: SessionStatus::Idle,
                last_error: None,
                message_count: 0,
            })
        })
    }

    fn session(&self, id: &str) -> Result<SessionRecord, StoreError> {
        self.read("read session", id, |tx| {
            let row = tx
                .prepare_cached(&format!("{SESSION_SQL} WHERE s.id = ?1"))?
                .query_row([id], session_row)
                .optional()?
                .ok_or_else(|| StoreError::NoSession(id.to_owned()))?;
            session_record(row)
        })
    }

    fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        self.read("list sessions", "", |tx| {
            // rowid breaks ties between sessions created in the same millisecond.
            let mut stmt = tx.prepare_cached(&format!(
                "{SESSION_SQL} ORDER BY s.created_at DESC, s.rowid DESC"
            ))?;
            let rows = stmt
                .query_map([], session_row)?
                .collect::<Result<Vec<_>, _>>()?;
            rows.into_iter().map(session_record).collect()
        })
    }

    fn messages(&self, id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        self.read("read the transcript of session", id, |tx| {
            require_session(tx, id)?;
            let mut stmt = tx.prepare_cached(
                "SELECT seq, role, content, tool_calls, tool_call_id, created_at
                 FROM messages WHERE session_id = ?1 ORDER BY seq",
            )?;
            let rows = stmt.query_map([id], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, Option<String>>(3)?,
                    row.get::<_, Option<String>>(4)?,
                    row.get::<_, String>(5)?,
                ))
            })?;
            let mut messages = Vec::new();
            for row in rows {
                let (seq, role, content, tool_calls, tool_call_id, created_at) = row?;
                let role = Role::parse(&role).ok_or_else(|| {
                    Fail::Other(format!("message {seq} has unknown role {role:?}"))
                })?;
                let tool_calls: Vec<ToolCall> = match tool_calls {
                    None => Vec::new(),
                    Some(json) => serde_json::from_str(&json).map_err(|e| {
                        Fail::Other(format!("message {seq} has unreadable tool calls: {e}"))
                    })?,
                };
                messages.push(StoredMessage {
                    seq: seq.max(0) as u64,
                    message: Message {
                        role,
                        content,
                        tool_calls,
                        tool_call_id,
                        created_at,
                    },
                });
            }
            Ok(messages)
        })
    }

    fn append(&self, id: &str, message: &Message) -> Result<u64, StoreError> {
        let tool_calls = if message.tool_calls.is_empty() {
            None
        } else {
            Some(
                serde_json::to_string(&message.tool_calls).map_err(|e| StoreError::Database {
                    path: self.path.clone(),
                    message: format!("append to session {id:?}: cannot encode the tool calls: {e}"),
                })?,
            )
        };
        self.write("append to session", id, |tx| {
            touch_session(tx, id, &now_rfc3339())?;
            let seq: i64 = tx.prepare_cached(APPEND_SQL)?.query_row(
                params![
                    id,
                    message.role.as_str(),
                    message.content,
                    tool_calls,
                    message.tool_call_id,
                    message.created_at,
                ],
                |row| row.get(0),
            )?;
            Ok(seq.max(0) as u64)
        })
    }

    fn replace_content(
        &self,
        id: &str,
        seq: u64,
        content: &str,
        reason: &str,
    ) -> Result<(), StoreError> {
        self.write("change a message of session", id, |tx| {
            let now = now_rfc3339();
            touch_session(tx, id, &now)?;
            let no_message = || {
                Fail::Store(StoreError::NoMessage {
                    session: id.to_owned(),
                    seq,
                })
            };
            let seq = i64::try_from(seq).map_err(|_| no_message())?;
            let original: String = tx
                .prepare_cached("SELECT content FROM messages WHERE session_id = ?1 AND seq = ?2")?
                .query_row(params![id, seq], |row| row.get(0))
                .optional()?
                .ok_or_else(no_message)?;
            tx.prepare_cached(
                "INSERT INTO audit (session_id, seq, changed_at, reason, original, replacement)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![id, seq, now, reason, original, content])?;
            tx.prepare_cached(
                "UPDATE messages SET content = ?3 WHERE session_id = ?1 AND seq = ?2",
            )?
            .execute(params![id, seq, content])?;
            Ok(())
        })
    }

    fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError> {
        self.read("read the audit of session", id, |tx| {
            require_session(tx, id)?;
            let mut stmt = tx.prepare_cached(
                "SELECT session_id, seq, changed_at, reason, original, replacement
                 FROM audit WHERE session_id = ?1 ORDER BY id",
            )?;
            let entries = stmt
                .query_map([id], |row| {
                    Ok(AuditEntry {
                        session_id: row.get(0)?,
                        seq: row.get::<_, i64>(1)?.max(0) as u64,
                        changed_at: row.get(2)?,
                        reason: row.get(3)?,
                        original: row.get(4)?,
                        replacement: row.get(5)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(entries)
        })
    }

    fn begin_run(&self, id: &str, prompt: Option<&str>) -> Result<(), StoreError> {
        let ours = std::process::id();
        let token = process_token();
        self.write("begin a run of session", id, |tx| {
            let (status, pid, runner): (String, Option<i64>, Option<String>) = tx
                .prepare_cached(
                    "SELECT status, runner_pid, runner_token FROM sessions WHERE id = ?1",
                )?
                .query_row([id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
                .optional()?
                .ok_or_else(|| StoreError::NoSession(id.to_owned()))?;
            if status == SessionStatus::Running.as_str() {
                let pid = pid.and_then(|p| u32::try_from(p).ok());
                // Our pid with another token is a stale row of an earlier process.
                let ours_now = pid == Some(ours) && runner.as_deref() == Some(token);
                let other_live = pid.is_some_and(|p| p != ours && process_is_live(p));
                if ours_now || other_live {
                    return Err(StoreError::Busy(id.to_owned()).into());
                }
            }
            let now = now_rfc3339();
            tx.prepare_cached(
                "UPDATE sessions SET status = ?2, runner_pid = ?3, runner_token = ?4, updated_at = ?5
                 WHERE id = ?1",
            )?
            .execute(params![id, SessionStatus::Running.as_str(), ours, token, now])?;
            if let Some(prompt) = prompt {
                tx.prepare_cached(
                    "INSERT INTO queued_prompts (session_id, content, created_at) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![id, prompt, now])?;
            }
            Ok(())
        })
    }

    fn append_queued_prompts(&self, id: &str) -> Result<Vec<u64>, StoreError> {
        self.write("append the queued prompts of session", id, |tx| {
            require_session(tx, id)?;
            let queued: Vec<(i64, String, String)> = tx
                .prepare_cached(
                    "SELECT id, content, created_at FROM queued_prompts WHERE session_id = ?1 ORDER BY id",
                )?
                .query_map([id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
                .collect::<Result<_, _>>()?;
            let Some((last, _, _)) = queued.last() else {
                return Ok(Vec::new());
            };
            touch_session(tx, id, &now_rfc3339())?;
            let mut seqs = Vec::with_capacity(queued.len());
            let mut append = tx.prepare_cached(APPEND_SQL)?;
            for (_, content, created_at) in &queued {
                let seq: i64 = append.query_row(
                    params![id, Role::User.as_str(), content, None::<String>, None::<String>, created_at],
                    |row| row.get(0),
                )?;
                seqs.push(seq.max(0) as u64);
            }
            tx.prepare_cached("DELETE FROM queued_prompts WHERE session_id = ?1 AND id <= ?2")?
                .execute(params![id, last])?;
            Ok(seqs)
        })
    }

    fn end_run(
        &self,
        id: &str,
        status: SessionStatus,
        last_error: Option<&str>,
    ) -> Result<(), StoreError> {
        self.write("end the run of session", id, |tx| {
            let changed = tx
                .prepare_cached(
                    "UPDATE sessions SET status = ?2, last_error = ?3, runner_pid = NULL, runner_token = NULL,
                     updated_at = ?4 WHERE id = ?1",
                )?
                .execute(params![id, status.as_str(), last_error, now_rfc3339()])?;
            if changed == 0 {
                return Err(StoreError::NoSession(id.to_owned()).into());
            }
            Ok(())
        })
    }

    fn decide(&self, id: &str, call_id: &str, decision: Decision) -> Result<(), StoreError> {
        self.write("record a decision in session", id, |tx| {
            let now = now_rfc3339();
            touch_session(tx, id, &now)?;
            tx.prepare_cached(
                "INSERT INTO approvals (session_id, call_id, decision, decided_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (session_id, call_id) DO UPDATE
                 SET decision = excluded.decision, decided_at = excluded.decided_at",
            )?
            .execute(params![id, call_id, decision.as_str(), now])?;
            Ok(())
        })
    }

    fn decision(&self, id: &str, call_id: &str) -> Result<Option<Decision>, StoreError> {
        self.read("read a decision in session", id, |tx| {
            require_session(tx, id)?;
            let stored: Option<String> = tx
                .prepare_cached(
                    "SELECT decision FROM approvals WHERE session_id = ?1 AND call_id = ?2",
                )?
                .query_row([id, call_id], |row| row.get(0))
                .optional()?;
            stored
                .map(|s| {
                    Decision::parse(&s).ok_or_else(|| {
                        Fail::Other(format!("call {call_id:?} has unknown decision {s:?}"))
                    })
                })
                .transpose()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("sessions.db")).unwrap();
        (dir, store)
    }

    fn plan(store: &SqliteStore, sql: &str) -> String {
        let conn = store.conn();
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let details = stmt
            .query_map(
                params!["s-x", "user", "c", None::<String>, None::<String>, "t"],
                |row| row.get::<_, String>(3),
            )
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        details.join("\n")
    }

    /// The append reads one entry of the primary key's index, never the transcript: that
    /// is what keeps message 10,000 as cheap as message 1.
    #[test]
    fn append_searches_the_primary_key() {
        let (_dir, store) = open();
        let plan = plan(&store, APPEND_SQL);
        assert!(plan.contains("SEARCH messages USING"), "{plan}");
        assert!(
            plan.contains("INDEX sqlite_autoindex_messages_1 (session_id=?)"),
            "{plan}"
        );
        assert!(!plan.contains("SCAN"), "{plan}");
    }

    #[test]
    fn session_ids_are_short_url_safe_and_distinct() {
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..10_000 {
            let id = match new_session_id() {
                Ok(id) => id,
                Err(_) => panic!("no randomness"),
            };
            assert_eq!(id.len(), 14);
            assert!(id.starts_with("s-"));
            assert!(
                id[2..]
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()),
                "{id}"
            );
            assert!(seen.insert(id));
        }
    }

    #[test]
    fn default_path_precedence() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(*v))
            }
        };
        let path = |vars| SqliteStore::default_path_from(env(vars));
        let all = &[
            ("SLUICE_DATA_DIR", "/d"),
            ("XDG_DATA_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(path(all), Some(PathBuf::from("/d/sessions.db")));
        assert_eq!(
            path(&[
                ("SLUICE_DATA_DIR", ""),
                ("XDG_DATA_HOME", "/x"),
                ("HOME", "/h")
            ]),
            Some(PathBuf::from("/x/sluice/sessions.db"))
        );
        assert_eq!(
            path(&[("XDG_DATA_HOME", "relative"), ("HOME", "/h")]),
            Some(PathBuf::from("/h/.local/share/sluice/sessions.db"))
        );
        assert_eq!(
            path(&[("HOME", "/h")]),
            Some(PathBuf::from("/h/.local/share/sluice/sessions.db"))
        );
        assert_eq!(path(&[]), None);
    }

    #[test]
    fn pragmas_are_set() {
        let (_dir, store) = open();
        let conn = store.conn();
        let get = |name: &str| -> String {
            conn.pragma_query_value(None, name, |row| row.get::<_, rusqlite::types::Value>(0))
                .map(|v| format!("{v:?}"))
                .unwrap()
        };
        assert_eq!(get("journal_mode"), "Text(\"wal\")");
        assert_eq!(get("synchronous"), "Integer(1)"); // NORMAL
        assert_eq!(get("foreign_keys"), "Integer(1)");
        assert_eq!(get("busy_timeout"), "Integer(5000)");
        assert_eq!(
            get("user_version"),
            format!("Integer({})", SqliteStore::SCHEMA_VERSION)
        );
    }
}
