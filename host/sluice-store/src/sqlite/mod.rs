//! [`SqliteStore`]: the embedded session store, one SQLite file in WAL mode.
//!
//! The operations themselves are synchronous (`sessions.rs`: transcripts, audit and
//! decisions; `runs.rs`: runs, events, cancellation, configuration; `actions.rs`: the
//! actions log); the [`Store`] impl runs
//! each on a thread of the store's own (`worker.rs`, with the watcher of other processes'
//! changes).

mod actions;
mod open;
mod runs;
mod schema;
mod sessions;
mod worker;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use sluice_protocol::{Message, SessionStatus};

use crate::queue::{EventQueue, PendingEvent};

use crate::signals::Signals;
use crate::{
    Action, ActionRecord, AuditEntry, CallRecord, Decision, RunEnd, RunRecord, SessionRecord,
    Store, StoreError, StoredEvent, StoredMessage, Subscription, Topic,
};

/// How often a subscription is woken without a change ([`crate::Woken::Polled`]), to check
/// what no change announces (a runner in another process that died). Changes other
/// processes commit are found by the store's watcher within [`worker::WATCH`].
const POLL: Duration = Duration::from_secs(1);

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
       (SELECT COALESCE(MAX(m.seq), 0) FROM messages m WHERE m.session_id = s.id), s.owner
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
///
/// Async: each call runs on a thread of the store's own, one after another (an append takes
/// tens of microseconds, but a write may wait up to 5 s for another process's write lock,
/// which must not stall a runtime worker): callers wait for their answer as tasks, not
/// threads. Changes made through this store wake its subscriptions at once; those made by
/// other processes within 100 ms, found by one watcher per store (`PRAGMA data_version`).
pub struct SqliteStore {
    inner: Arc<Inner>,
    queue: EventQueue,
    watcher: worker::Watcher,
}

/// The connection and what the store's calls share.
pub(crate) struct Inner {
    /// The file as given to [`SqliteStore::open`], for messages.
    path: String,
    conn: Mutex<Connection>,
    /// The store's thread, which runs every call.
    worker: worker::Worker,
    signals: Signals,
    /// Opened for reading only ([`SqliteStore::open_for_reading`] of a store that cannot
    /// be written): why it cannot be written. Every write fails with
    /// [`StoreError::ReadOnly`].
    read_only: Option<String>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// The newest schema version this build knows (`PRAGMA user_version`).
    pub const SCHEMA_VERSION: i64 = schema::SCHEMA_VERSION;

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
        &self.inner.path
    }

    /// Runs `f` on the store's thread, in its turn.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Inner) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.inner.call(f).await
    }
}

impl Inner {
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
        if let Some(reason) = &self.read_only {
            return Err(StoreError::ReadOnly {
                path: self.path.clone(),
                reason: reason.clone(),
            });
        }
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

/// A fresh id with `prefix` (`s` for sessions, `r` for runs).
fn new_id(prefix: char) -> Result<String, Fail> {
    crate::ids::new_id(prefix).map_err(|e| Fail::Other(e.to_string()))
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
type SessionRow = (String, String, String, String, Option<String>, i64, String);

fn session_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
    ))
}

fn session_record(
    (id, created_at, updated_at, status, last_error, count, owner): SessionRow,
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
        owner,
    })
}

/// Owned copies of the arguments, for the store's thread.
fn own(s: &str) -> String {
    s.to_owned()
}

#[async_trait::async_trait]
impl Store for SqliteStore {
    fn location(&self) -> String {
        self.inner.path.clone()
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.blocking(|s| {
            s.read("read the schema version", "", |tx| {
                Ok(tx.query_row("PRAGMA user_version", [], |row| row.get::<_, i64>(0))?)
            })
            .map(drop)
        })
        .await
    }

    async fn create_owned_session(&self, owner: &str) -> Result<SessionRecord, StoreError> {
        let owner = own(owner);
        self.blocking(move |s| s.create_session(&owner)).await
    }

    async fn create_named_session(&self, name: &str) -> Result<SessionRecord, StoreError> {
        let name = own(name);
        self.blocking(move |s| s.create_named_session(&name)).await
    }

    async fn session(&self, id: &str) -> Result<SessionRecord, StoreError> {
        let id = own(id);
        self.blocking(move |s| s.session(&id)).await
    }

    async fn list_owned_sessions(
        &self,
        owner: Option<&str>,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let owner = owner.map(own);
        self.blocking(move |s| s.list_sessions(owner.as_deref()))
            .await
    }

    async fn messages(&self, id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        let id = own(id);
        self.blocking(move |s| s.messages(&id)).await
    }

    async fn append(&self, id: &str, message: &Message) -> Result<u64, StoreError> {
        let (id, message) = (own(id), message.clone());
        crate::metrics::timed_append("sqlite", self.blocking(move |s| s.append(&id, &message)))
            .await
    }

    async fn replace_content(
        &self,
        id: &str,
        seq: u64,
        content: &str,
        reason: &str,
    ) -> Result<(), StoreError> {
        let (id, content, reason) = (own(id), own(content), own(reason));
        self.blocking(move |s| s.replace_content(&id, seq, &content, &reason))
            .await
    }

    async fn annotate(
        &self,
        id: &str,
        seq: u64,
        reason: &str,
        note: &str,
    ) -> Result<(), StoreError> {
        let (id, reason, note) = (own(id), own(reason), own(note));
        self.blocking(move |s| s.annotate(&id, seq, &reason, &note))
            .await
    }

    async fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError> {
        let id = own(id);
        self.blocking(move |s| s.audit(&id)).await
    }

    async fn record_call(
        &self,
        id: &str,
        seq: u64,
        tool: &str,
        facts: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let (id, tool, facts) = (own(id), own(tool), facts.to_string());
        self.blocking(move |s| s.record_call(&id, seq, &tool, &facts))
            .await
    }

    async fn calls(&self, id: &str) -> Result<Vec<CallRecord>, StoreError> {
        let id = own(id);
        self.blocking(move |s| s.calls(&id)).await
    }

    async fn begin_run(&self, id: &str, prompt: Option<&str>) -> Result<String, StoreError> {
        let (id, prompt) = (own(id), prompt.map(own));
        self.blocking(move |s| s.begin_run(&id, prompt.as_deref()))
            .await
    }

    async fn append_queued_prompts(&self, id: &str) -> Result<Vec<u64>, StoreError> {
        let id = own(id);
        self.blocking(move |s| s.append_queued_prompts(&id)).await
    }

    async fn end_run(&self, id: &str, end: &RunEnd) -> Result<(), StoreError> {
        self.queue.flush().await;
        let (id, end) = (own(id), end.clone());
        self.blocking(move |s| s.end_run(&id, &end)).await
    }

    fn push_event(
        &self,
        run_id: &str,
        kind: &str,
        data: serde_json::Map<String, serde_json::Value>,
    ) {
        self.queue.push(PendingEvent {
            run_id: own(run_id),
            kind: own(kind),
            data,
        });
    }

    async fn flush_events(&self) {
        self.queue.flush().await;
    }

    async fn run(&self, run_id: &str) -> Result<RunRecord, StoreError> {
        let run_id = own(run_id);
        self.blocking(move |s| s.run(&run_id)).await
    }

    async fn latest_run(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        let id = own(id);
        self.blocking(move |s| s.latest_run(&id)).await
    }

    async fn events(&self, run_id: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
        let run_id = own(run_id);
        self.blocking(move |s| s.events(&run_id, after)).await
    }

    async fn request_cancel(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        let id = own(id);
        self.blocking(move |s| s.request_cancel(&id)).await
    }

    fn subscribe(&self, topic: Topic) -> Subscription {
        let subscription = self.inner.signals.subscribe(topic, POLL);
        self.watcher.ensure(&self.inner);
        subscription
    }

    fn subscriptions(&self) -> usize {
        self.inner.signals.subscriptions()
    }

    async fn config(&self) -> Result<Vec<(String, serde_json::Value)>, StoreError> {
        self.blocking(Inner::config).await
    }

    async fn set_config(&self, values: &[(String, serde_json::Value)]) -> Result<(), StoreError> {
        let values = values.to_vec();
        self.blocking(move |s| s.set_config(&values)).await
    }

    async fn decide(&self, id: &str, call_id: &str, decision: Decision) -> Result<(), StoreError> {
        let (id, call_id) = (own(id), own(call_id));
        self.blocking(move |s| s.decide(&id, &call_id, decision))
            .await
    }

    async fn decision(&self, id: &str, call_id: &str) -> Result<Option<Decision>, StoreError> {
        let (id, call_id) = (own(id), own(call_id));
        self.blocking(move |s| s.decision(&id, &call_id)).await
    }

    async fn record_action(
        &self,
        session: Option<&str>,
        actor: &str,
        action: Action,
        detail: Option<&str>,
    ) -> Result<(), StoreError> {
        let (session, actor, detail) = (session.map(own), own(actor), detail.map(own));
        self.blocking(move |s| {
            s.record_action(session.as_deref(), &actor, action, detail.as_deref())
        })
        .await
    }

    async fn actions(&self, session: Option<&str>) -> Result<Vec<ActionRecord>, StoreError> {
        let session = session.map(own);
        self.blocking(move |s| s.actions(session.as_deref())).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::params;

    fn open() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("sessions.db")).unwrap();
        (dir, store)
    }

    fn plan(store: &SqliteStore, sql: &str) -> String {
        let conn = store.inner.conn();
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
        let conn = store.inner.conn();
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
