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
//! let dir = tempfile::tempdir()?;
//! let store = SqliteStore::open(&dir.path().join("sessions.db"))?;
//! let session = store.create_session()?;
//! let seq = store.append(&session.id, &Message::user("hello", now_rfc3339()))?;
//! assert_eq!(seq, 1);
//! assert_eq!(store.messages(&session.id)?[0].message.content, "hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use sluice_protocol::{Message, SessionStatus};

mod clock;
mod name;
mod runner;
mod schema;
mod sqlite;

pub use clock::now_rfc3339;
pub use name::{SESSION_NAME_RULE, valid_session_name};
pub use sqlite::SqliteStore;

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
        /// The database file.
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
    /// The database was written by a newer Sluice.
    #[error(
        "session store {path} has schema version {found}; this Sluice knows up to {known}: upgrade Sluice"
    )]
    TooNew {
        /// The database file.
        path: String,
        /// Its schema version.
        found: i64,
        /// The newest this build knows.
        known: i64,
    },
}

/// What the agent loop needs from a session store. Every method is one transaction: after
/// it returns `Ok`, the change survives a crash of the process (see [`SqliteStore`] for
/// what a power loss may undo).
///
/// Errors common to every method: [`StoreError::NoSession`] when no session has the id
/// given, and [`StoreError::Database`] when the database cannot be read or written (for
/// example another process held its write lock longer than the busy timeout).
pub trait Store: Send + Sync {
    /// Creates a session (status `idle`, no messages) with a fresh id.
    fn create_session(&self) -> Result<SessionRecord, StoreError>;

    /// Creates a session (status `idle`, no messages) whose id is `name`, as the operator
    /// chose it (`sluice run --session NAME`).
    ///
    /// Errors: [`StoreError::BadSessionName`] when `name` breaks [`SESSION_NAME_RULE`];
    /// [`StoreError::SessionExists`] when a session has that id already.
    fn create_named_session(&self, name: &str) -> Result<SessionRecord, StoreError>;

    /// The session `id`.
    fn session(&self, id: &str) -> Result<SessionRecord, StoreError>;

    /// Every session, newest (by creation) first.
    fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError>;

    /// The transcript of session `id`, in order (seq 1, 2, …), exactly as appended apart
    /// from contents changed by [`Store::replace_content`].
    fn messages(&self, id: &str) -> Result<Vec<StoredMessage>, StoreError>;

    /// Appends `message` to session `id` and returns its position (1 for the first
    /// message; positions are gapless). Writes one row; the message's `created_at` is
    /// stored as given.
    fn append(&self, id: &str, message: &Message) -> Result<u64, StoreError>;

    /// Replaces the content of message `seq` of session `id` with `content`, keeping the
    /// original in the audit with `reason` and the time, in the same transaction.
    ///
    /// Errors: [`StoreError::NoMessage`] when the session has no message `seq`.
    fn replace_content(
        &self,
        id: &str,
        seq: u64,
        content: &str,
        reason: &str,
    ) -> Result<(), StoreError>;

    /// The audit of session `id`, oldest first.
    fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError>;

    /// Claims the run of session `id` for this process, unless a run is in progress (a
    /// session left `running` by a process that no longer exists is taken over), and with
    /// `prompt` accepts it for the run: both in one transaction, so the prompt is stored
    /// exactly when the claim succeeds. The prompt waits in the store (queued, time-stamped
    /// now) until [`Store::append_queued_prompts`] puts it in the transcript; a run that
    /// stops before that (a crash, a cancellation, a call that waits for approval) leaves
    /// it queued for the session's next run.
    ///
    /// Errors: [`StoreError::Busy`] when another live process runs the session, or this
    /// process already does (a `begin_run` not yet followed by [`Store::end_run`], through
    /// this or any other handle on the file); the prompt is then not stored.
    fn begin_run(&self, id: &str, prompt: Option<&str>) -> Result<(), StoreError>;

    /// Appends the prompts queued for session `id` by [`Store::begin_run`] to its
    /// transcript, oldest first, as user messages with the time each was accepted, and
    /// returns their positions (empty when none waits). One transaction: each queued prompt
    /// is appended exactly once.
    fn append_queued_prompts(&self, id: &str) -> Result<Vec<u64>, StoreError>;

    /// Ends the run of session `id` with `status` and `last_error` (`None` clears it).
    /// Always allowed, whoever runs the session: the run's process is forgotten.
    fn end_run(
        &self,
        id: &str,
        status: SessionStatus,
        last_error: Option<&str>,
    ) -> Result<(), StoreError>;

    /// Records the operator's decision on call `call_id` of session `id`, replacing an
    /// earlier decision on the same call.
    fn decide(&self, id: &str, call_id: &str, decision: Decision) -> Result<(), StoreError>;

    /// The decision on call `call_id` of session `id`, if one was made.
    fn decision(&self, id: &str, call_id: &str) -> Result<Option<Decision>, StoreError>;
}
