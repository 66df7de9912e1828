//! Sessions and their transcripts (docs/storage.md).
//!
//! The [`Store`] trait is what the agent loop needs; [`SqliteStore`] is the embedded
//! default (one SQLite file in WAL mode). A message is appended as one row in its own
//! transaction: an append costs O(size of that message) and never rewrites earlier rows.
//! The one change to a stored message — shrinking an observation after a context-window
//! rejection — keeps the original in the `audit` table with the time and the reason.
//!
//! One run per session holds across every process that opens the same file: the store
//! decides ([`Store::begin_run`]). A run is claimed in one transaction together with the
//! prompt that starts it, so a prompt is either accepted with its run or refused with
//! [`StoreError::Busy`], never accepted and then dropped. An accepted prompt waits in the
//! store until the run appends it ([`Store::append_queued_prompts`]) after any tool results
//! the transcript still owes, and survives a crash in between.
//!
//! ```
//! use sluice_protocol::Message;
//! use sluice_store::{SqliteStore, Store, now_rfc3339};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let store = SqliteStore::open(&dir.path().join("sessions.db"))?;
//! let session = store.create_session().await?;
//! let seq = store
//!     .append(&session.id, &Message::user("hello", now_rfc3339()))
//!     .await?;
//! assert_eq!(seq, 1);
//! assert_eq!(store.messages(&session.id).await?[0].message.content, "hello");
//! # Ok(())
//! # }
//! ```

use sluice_protocol::{Message, SessionStatus};

mod actions;
mod clock;
mod ids;
mod metrics;
mod name;
mod postgres;
mod queue;
mod runner;
mod signals;
mod sqlite;
mod url;

pub use actions::{Action, ActionRecord, DEFAULT_OWNER};
pub use clock::now_rfc3339;
pub use name::{SESSION_NAME_RULE, valid_session_name};
pub use postgres::{MAX_RUNS, POOL_SIZE, PgStore, is_postgres_url};
pub use signals::Woken;
pub use sqlite::SqliteStore;
pub use url::redact_url;

/// A session as listed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// The session's id (a short, unique, URL-safe string).
    pub id: String,
    /// When it was created, RFC 3339 UTC with milliseconds (`2026-11-30T08:15:02.123Z`).
    pub created_at: String,
    /// When it last changed (a message appended or changed, a run begun or ended, a
    /// decision recorded), RFC 3339 UTC with milliseconds.
    pub updated_at: String,
    /// Where it stands.
    pub status: SessionStatus,
    /// Why the last run failed or stopped early, if it did.
    pub last_error: Option<String>,
    /// Number of messages in its transcript (also the `seq` of the last one).
    pub message_count: u64,
    /// The principal that created it ([`Store::create_owned_session`]); [`DEFAULT_OWNER`]
    /// for a session created without one, or before sessions had owners.
    pub owner: String,
}

/// A stored message with its position in the transcript (1-based, gapless).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredMessage {
    /// Position in the transcript, from 1.
    pub seq: u64,
    /// The message.
    #[serde(flatten)]
    pub message: Message,
}

/// One change to a stored message: what it was before.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// The session.
    pub session_id: String,
    /// The message that changed.
    pub seq: u64,
    /// When, RFC 3339 UTC with milliseconds.
    pub changed_at: String,
    /// Why (for example the provider's context-window message).
    pub reason: String,
    /// The content before the change.
    pub original: String,
    /// The content after the change.
    pub replacement: String,
}

/// What one tool call cost inside its sandbox, kept beside its observation (message `seq`):
/// the runtime's facts as a JSON object (`outcome`, `queueWaitUs`, `guestUs`,
/// `peakMemoryBytes`, `peakDescriptors`, `httpRequests`, `httpDenied`, `digest`;
/// docs/telemetry.md#sandbox-facts).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRecord {
    /// The message holding the call's observation.
    pub seq: u64,
    /// The tool called, as the model named it.
    pub tool: String,
    /// When it was recorded, RFC 3339 UTC with milliseconds.
    pub recorded_at: String,
    /// The facts, as the runtime gave them.
    pub facts: serde_json::Value,
}

/// What `sluice session audit ID` and `GET /sessions/{id}/audit` show of a session:
/// `{"session": ID, "audit": [AuditEntry…], "calls": [CallRecord…], "actions":
/// [ActionRecord…]}`, each oldest first.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SessionAudit {
    /// The session.
    pub session: String,
    /// Every change to (or note on) a message ([`Store::audit`]).
    pub audit: Vec<AuditEntry>,
    /// What each tool call cost ([`Store::calls`]).
    pub calls: Vec<CallRecord>,
    /// Who did what to it ([`Store::actions`]).
    pub actions: Vec<ActionRecord>,
}

impl SessionAudit {
    /// The audit of session `id` in `store`.
    ///
    /// # Errors
    /// [`StoreError::NoSession`] when there is no such session; the store's errors.
    pub async fn read(store: &dyn Store, id: &str) -> Result<SessionAudit, StoreError> {
        Ok(SessionAudit {
            session: id.to_string(),
            audit: store.audit(id).await?,
            calls: store.calls(id).await?,
            actions: store.actions(Some(id)).await?,
        })
    }
}

/// The operator's decision on a call that waits for approval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run the call.
    Approve,
    /// Do not run it; its observation says it was denied.
    Deny,
}

impl Decision {
    /// The stored name: `approve` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::Deny => "deny",
        }
    }

    /// The decision stored as `s`, if any.
    pub fn parse(s: &str) -> Option<Decision> {
        match s {
            "approve" => Some(Decision::Approve),
            "deny" => Some(Decision::Deny),
            _ => None,
        }
    }
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No session has this id.
    #[error("no session {0:?}")]
    NoSession(String),
    /// The session already has a run in progress (one run per session, in every process
    /// that uses the store); nothing was changed, no prompt was added.
    #[error(
        "session {0:?} already has a run in progress (one run per session, across every process using this store); nothing was added: wait for that run to end"
    )]
    Busy(String),
    /// A session name the operator chose is not allowed ([`SESSION_NAME_RULE`]).
    #[error("session name {name:?} is not allowed: a session name is {SESSION_NAME_RULE}")]
    BadSessionName {
        /// The name as given.
        name: String,
    },
    /// A session with this name exists already.
    #[error("a session named {0:?} exists already")]
    SessionExists(String),
    /// No run has this id (in this session, where a session is given).
    #[error("no run {0:?}")]
    NoRun(String),
    /// No message has this position.
    #[error("session {session:?} has no message {seq}")]
    NoMessage {
        /// The session.
        session: String,
        /// The position asked for.
        seq: u64,
    },
    /// The database could not be opened, read or written.
    #[error("session store {path}: {message}")]
    Database {
        /// The database file, or the PostgreSQL URL without its password.
        path: String,
        /// What was being done and what went wrong (usually SQLite's message).
        message: String,
    },
    /// The file at the store's path is not a Sluice session store: not a SQLite database,
    /// or a SQLite database of something else. Nothing was written to it.
    #[error(
        "{path} is not a Sluice session store: {what}; refusing to use it (nothing was written). Give --store (SLUICE_STORE, store.path) a new file or an existing session store"
    )]
    NotAStore {
        /// The file.
        path: String,
        /// What it is instead (`a file of 6 bytes that is not a SQLite database`).
        what: String,
    },
    /// The store cannot be written (a read-only mount, no write permission, an immutable
    /// file): a command that writes cannot use it. Commands that only read open it for
    /// reading ([`SqliteStore::open_for_reading`]).
    #[error(
        "session store {path} is read-only ({reason}); this needs to write to it. `sluice session list`, `show` and `audit` can read it as it is; to write, give --store (SLUICE_STORE, store.path) a file on a writable file system"
    )]
    ReadOnly {
        /// The database file.
        path: String,
        /// What cannot be written and why, in the operating system's words.
        reason: String,
    },
    /// The database was written by a newer Sluice.
    #[error(
        "session store {path} has schema version {found}; this Sluice knows up to {known}: upgrade Sluice"
    )]
    TooNew {
        /// The database file, or the PostgreSQL URL without its password.
        path: String,
        /// Its schema version.
        found: i64,
        /// The newest this build knows.
        known: i64,
    },
}

/// A run of a session, as the store keeps it: its frame (`started` … `finished` events) and
/// whether it is still going on.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    /// The run's id: `r-` and 12 characters of lowercase Crockford base32.
    pub id: String,
    /// The session it runs.
    pub session_id: String,
    /// When it began, RFC 3339 UTC with milliseconds.
    pub started_at: String,
    /// When it ended, if it has.
    pub ended_at: Option<String>,
    /// How it ended, if it has.
    pub status: Option<SessionStatus>,
    /// A cancellation was requested ([`Store::request_cancel`]).
    pub cancel_requested: bool,
    /// The run is in progress: not ended, still the session's run, and its runner (a
    /// process, or a PostgreSQL connection holding the session's lock) is alive. A run whose
    /// runner died is not live, and the session's next run closes it.
    pub live: bool,
}

/// One stored event of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    /// Position in the run's events, from 1, gapless.
    pub seq: u64,
    /// The event's type (`started`, `tool_finished`, …, `finished`).
    pub kind: String,
    /// Its fields, a JSON object.
    pub data: serde_json::Map<String, serde_json::Value>,
}

/// How a run ended: what [`Store::end_run`] records on the session and in the run's
/// `finished` event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunEnd {
    /// The session's status after the run.
    pub status: SessionStatus,
    /// Why it stopped early or failed (`None` clears the session's `lastError`).
    pub last_error: Option<String>,
    /// The model's final answer, if it gave one.
    pub answer: Option<String>,
    /// Model requests made, when known.
    pub requests: Option<u32>,
}

impl RunEnd {
    /// A run end with only a status and a `lastError`.
    pub fn status(status: SessionStatus, last_error: Option<&str>) -> RunEnd {
        RunEnd {
            status,
            last_error: last_error.map(str::to_owned),
            answer: None,
            requests: None,
        }
    }

    /// The fields of the `finished` event: `session`, `status`, `lastError`, `answer`,
    /// `requests`.
    pub fn finished_event(&self, session: &str) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("session".into(), session.into());
        m.insert("status".into(), self.status.as_str().into());
        m.insert("lastError".into(), self.last_error.clone().into());
        m.insert("answer".into(), self.answer.clone().into());
        m.insert("requests".into(), self.requests.into());
        m
    }
}

/// `lastError` of a run closed because its runner stopped before it ended.
pub const ORPHANED_RUN: &str = "the process running this run stopped before the run ended (it was killed, or lost its connection to the store); resume the session to go on";

/// What the store's change signals are about ([`Store::subscribe`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Topic {
    /// New events of this run (or its end).
    Events(String),
    /// A cancellation of this run was requested.
    Cancel(String),
    /// A run of this session began.
    Runs(String),
}

pub use signals::Subscription;

/// What the agent loop and the operator API need from a session store: sessions,
/// transcripts, the audit, one run per session with its events, cancellation, decisions
/// and the run-time configuration. Every method that changes something is one transaction:
/// after it returns `Ok`, the change survives a crash of the process.
///
/// Both backends implement it: [`SqliteStore`] (the embedded default) and [`PgStore`]
/// (several `sluice serve` replicas on one PostgreSQL database); the test suite in
/// `tests/store` runs against both.
///
/// The trait is async: a network database waits on round trips, and those must not block a
/// runtime worker. [`SqliteStore`] runs each call on a thread of its own, one after another
/// (its calls take microseconds, but a write may wait up to 5 s for another process's write
/// lock). Calls need a tokio runtime.
///
/// Errors common to every method: [`StoreError::NoSession`] when no session has the id
/// given, and [`StoreError::Database`] when the database cannot be read or written (a
/// lock held longer than the busy timeout, a lost connection).
#[async_trait::async_trait]
pub trait Store: Send + Sync {
    /// Where the store is, for messages: the SQLite file, or the PostgreSQL URL without
    /// its password.
    fn location(&self) -> String;

    /// Whether the store answers now: one cheap read (SQLite: `PRAGMA user_version`, from
    /// the file; PostgreSQL: `SELECT 1` on a pooled connection). `GET /healthz` reports it.
    ///
    /// Errors: [`StoreError::Database`] when the database cannot be read (a file that is
    /// gone or unreadable, a database that is down or refuses connections). Bound the wait
    /// yourself: PostgreSQL waits up to 10 s for a connection.
    async fn ping(&self) -> Result<(), StoreError>;

    /// Creates a session (status `idle`, no messages) with a fresh id, owned by
    /// [`DEFAULT_OWNER`]: [`Store::create_owned_session`] with that owner.
    async fn create_session(&self) -> Result<SessionRecord, StoreError> {
        self.create_owned_session(DEFAULT_OWNER).await
    }

    /// Creates a session (status `idle`, no messages) with a fresh id, owned by the
    /// principal `owner` (stored as given; the caller names principals).
    async fn create_owned_session(&self, owner: &str) -> Result<SessionRecord, StoreError>;

    /// Creates a session (status `idle`, no messages) whose id is `name`, as the operator
    /// chose it (`sluice run --session NAME`), owned by [`DEFAULT_OWNER`].
    ///
    /// Errors: [`StoreError::BadSessionName`] when `name` breaks [`SESSION_NAME_RULE`];
    /// [`StoreError::SessionExists`] when a session has that id already.
    async fn create_named_session(&self, name: &str) -> Result<SessionRecord, StoreError>;

    /// The session `id`.
    async fn session(&self, id: &str) -> Result<SessionRecord, StoreError>;

    /// Every session, newest (by creation) first: [`Store::list_owned_sessions`] with no
    /// owner.
    async fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        self.list_owned_sessions(None).await
    }

    /// The sessions owned by `owner` (exactly that name), or every session when `None`,
    /// newest (by creation) first; sessions created in the same millisecond, the later
    /// created first.
    async fn list_owned_sessions(
        &self,
        owner: Option<&str>,
    ) -> Result<Vec<SessionRecord>, StoreError>;

    /// The transcript of session `id`, in order (seq 1, 2, …), exactly as appended apart
    /// from contents changed by [`Store::replace_content`].
    async fn messages(&self, id: &str) -> Result<Vec<StoredMessage>, StoreError>;

    /// Appends `message` to session `id` and returns its position (1 for the first
    /// message; positions are gapless). Writes one row (and bumps the session's
    /// `updatedAt`): O(size of the message), whatever the length of the transcript. The
    /// message's `created_at` is stored as given.
    async fn append(&self, id: &str, message: &Message) -> Result<u64, StoreError>;

    /// Replaces the content of message `seq` of session `id` with `content`, keeping the
    /// original in the audit with `reason` and the time, in the same transaction.
    ///
    /// Errors: [`StoreError::NoMessage`] when the session has no message `seq`.
    async fn replace_content(
        &self,
        id: &str,
        seq: u64,
        content: &str,
        reason: &str,
    ) -> Result<(), StoreError>;

    /// Adds an entry to the audit of session `id` for message `seq` that records what made
    /// the message without changing it: `original` is `note` (for a `run_script`
    /// observation, its program and tool calls as JSON, docs/code-mode.md#the-audit), and
    /// `replacement` the message's content, so the entry reads "this is what the message
    /// came from".
    ///
    /// Errors: [`StoreError::NoMessage`] when the session has no message `seq`.
    async fn annotate(
        &self,
        id: &str,
        seq: u64,
        reason: &str,
        note: &str,
    ) -> Result<(), StoreError>;

    /// The audit of session `id`, oldest first.
    async fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError>;

    /// Records what the call of `tool` whose observation is message `seq` of session `id`
    /// cost (`facts`, a JSON object), for [`Store::calls`].
    ///
    /// Errors: [`StoreError::NoMessage`] when the session has no message `seq`.
    async fn record_call(
        &self,
        id: &str,
        seq: u64,
        tool: &str,
        facts: &serde_json::Value,
    ) -> Result<(), StoreError>;

    /// The calls recorded by [`Store::record_call`] for session `id`, oldest first.
    async fn calls(&self, id: &str) -> Result<Vec<CallRecord>, StoreError>;

    /// Claims the run of session `id` for this process and returns the new run's id, unless
    /// a run is in progress. With `prompt`, accepts the prompt for the run. One
    /// transaction: the claim, the run's record, its `started` event (`session`,
    /// `prompt`) and the prompt are stored together or not at all. The prompt waits in the
    /// store (queued, time-stamped now) until [`Store::append_queued_prompts`] puts it in
    /// the transcript; a run that stops before that leaves it queued for the session's
    /// next run.
    ///
    /// A session whose runner has died (a killed process; for PostgreSQL, a lost
    /// connection) is taken over: its unfinished run is closed with a `finished` event of
    /// status `error` and lastError [`ORPHANED_RUN`].
    ///
    /// Errors: [`StoreError::Busy`] when a live runner (this process through any handle,
    /// another process, another replica) has the session; nothing is stored then.
    async fn begin_run(&self, id: &str, prompt: Option<&str>) -> Result<String, StoreError>;

    /// Appends the prompts queued for session `id` by [`Store::begin_run`] to its
    /// transcript, oldest first, as user messages with the time each was accepted, and
    /// returns their positions (empty when none waits). One transaction: each queued prompt
    /// is appended exactly once.
    async fn append_queued_prompts(&self, id: &str) -> Result<Vec<u64>, StoreError>;

    /// Ends the run of session `id`: stores `end.status` and `end.last_error` on the
    /// session and, when a run is open, writes the run's `finished` event
    /// ([`RunEnd::finished_event`]) after every event pushed before this call
    /// ([`Store::push_event`]), all in one transaction, and lets go of the session. Always
    /// allowed, whoever runs the session.
    async fn end_run(&self, id: &str, end: &RunEnd) -> Result<(), StoreError>;

    /// Queues event `kind` with `data` (a JSON object) for run `run_id`, to be stored after
    /// every event queued before it; never blocks. The store writes queued events in the
    /// background, in batches, and [`Store::end_run`] waits for them. A failed write is
    /// logged, not retried (events are a view of the run; the transcript is the record).
    fn push_event(
        &self,
        run_id: &str,
        kind: &str,
        data: serde_json::Map<String, serde_json::Value>,
    );

    /// Waits until every event queued by [`Store::push_event`] so far is stored (or failed).
    async fn flush_events(&self);

    /// The run `run_id`. Errors: [`StoreError::NoRun`].
    async fn run(&self, run_id: &str) -> Result<RunRecord, StoreError>;

    /// The latest run of session `id`, if it ever ran.
    async fn latest_run(&self, id: &str) -> Result<Option<RunRecord>, StoreError>;

    /// The events of run `run_id` after position `after` (0 for all), in order.
    /// Errors: [`StoreError::NoRun`].
    async fn events(&self, run_id: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError>;

    /// Requests the cancellation of the run in progress of session `id` and returns that
    /// run (with `cancel_requested` set), or `None` when no run is open. The runner sees it
    /// through [`Store::subscribe`] with [`Topic::Cancel`], wherever it runs.
    async fn request_cancel(&self, id: &str) -> Result<Option<RunRecord>, StoreError>;

    /// A subscription to changes about `topic`. Subscribe first, then read the store, then
    /// wait on [`Subscription::changed`]: nothing is missed. Changes made through this
    /// handle wake it at once; changes made elsewhere soon after they commit (PostgreSQL:
    /// LISTEN/NOTIFY, at once; SQLite: within 100 ms, found by one watcher per store, not by
    /// each subscription). Either way a subscription is also woken once a second without a
    /// change ([`Woken::Polled`]), to check what no change announces, such as a runner that
    /// died.
    fn subscribe(&self, topic: Topic) -> Subscription;

    /// How many subscriptions ([`Store::subscribe`]) are alive now, over every topic: each
    /// is dropped with whoever waited on it (an event stream whose client went away, a run
    /// that ended).
    fn subscriptions(&self) -> usize;

    /// The run-time configuration values set with [`Store::set_config`], by key, as JSON
    /// values, sorted by key.
    async fn config(&self) -> Result<Vec<(String, serde_json::Value)>, StoreError>;

    /// Sets run-time configuration values (already checked by the caller), all in one
    /// transaction.
    async fn set_config(&self, values: &[(String, serde_json::Value)]) -> Result<(), StoreError>;

    /// Records the operator's decision on call `call_id` of session `id`, replacing an
    /// earlier decision on the same call.
    async fn decide(&self, id: &str, call_id: &str, decision: Decision) -> Result<(), StoreError>;

    /// The decision on call `call_id` of session `id`, if one was made.
    async fn decision(&self, id: &str, call_id: &str) -> Result<Option<Decision>, StoreError>;

    /// Records in the actions log that principal `actor` did `action` to session `session`
    /// (`None` for a change of the run-time configuration), with an optional `detail`,
    /// time-stamped now. Changes nothing else (not the session's `updatedAt`).
    ///
    /// Errors: [`StoreError::NoSession`] when `session` names no session (nothing is
    /// recorded then).
    async fn record_action(
        &self,
        session: Option<&str>,
        actor: &str,
        action: Action,
        detail: Option<&str>,
    ) -> Result<(), StoreError>;

    /// The actions log, oldest first: with `Some(id)`, what was done to session `id`; with
    /// `None`, the entries recorded with no session (the configuration changes).
    ///
    /// Errors: [`StoreError::NoSession`] when `id` names no session.
    async fn actions(&self, session: Option<&str>) -> Result<Vec<ActionRecord>, StoreError>;
}
