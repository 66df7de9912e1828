//! The PostgreSQL schema: versioned migrations, recorded in `sluice_schema`.

use super::{Fail, PgInner};
use crate::{StoreError, now_rfc3339};

/// The migrations, one per version: migration `i` takes the schema from version `i` to
/// `i + 1`. Append new versions; never edit one that has shipped.
///
/// Version 1 mirrors SQLite's version 3 (`crate::sqlite::schema`), with these differences:
/// - free text that may hold a NUL character (message contents, tool-call ids, audit
///   texts, `last_error`, queued prompts) is `BYTEA` holding UTF-8, because PostgreSQL's
///   `TEXT` refuses NUL;
/// - `sessions.last_seq` counts the messages, so an append is one `UPDATE` of the session
///   row (which also serialises appends to one session) and one `INSERT`, whatever the
///   length of the transcript;
/// - `sessions.runner` is the token of the store running the session; `sessions.ord`
///   orders sessions created in the same millisecond.
///
/// Version 2 mirrors SQLite's version 4: `call_facts`, what each call cost (its `tool`
/// `BYTEA`, as a name the model gave may hold NUL).
///
/// Version 3 mirrors SQLite's version 5 (tenancy): `sessions.owner` (`admin`,
/// `crate::DEFAULT_OWNER`, for every session made before), indexed with the order of a
/// list, and `actions`, the actions log (its `detail` `BYTEA`, free text that may hold NUL).
pub(crate) const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    ord         BIGINT GENERATED ALWAYS AS IDENTITY,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    status      TEXT NOT NULL,
    last_error  BYTEA,
    last_seq    BIGINT NOT NULL DEFAULT 0,
    run_id      TEXT,
    runner      TEXT
);
CREATE INDEX sessions_by_created_at ON sessions (created_at DESC, ord DESC);

CREATE TABLE messages (
    session_id   TEXT NOT NULL REFERENCES sessions (id),
    seq          BIGINT NOT NULL CHECK (seq >= 1),
    role         TEXT NOT NULL,
    content      BYTEA NOT NULL,
    tool_calls   TEXT,
    tool_call_id BYTEA,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE audit (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id  TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    changed_at  TEXT NOT NULL,
    reason      BYTEA NOT NULL,
    original    BYTEA NOT NULL,
    replacement BYTEA NOT NULL,
    FOREIGN KEY (session_id, seq) REFERENCES messages (session_id, seq)
);
CREATE INDEX audit_by_session ON audit (session_id, id);

CREATE TABLE approvals (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    call_id    TEXT NOT NULL,
    decision   TEXT NOT NULL,
    decided_at TEXT NOT NULL,
    PRIMARY KEY (session_id, call_id)
);

CREATE TABLE queued_prompts (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id),
    content    BYTEA NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX queued_prompts_by_session ON queued_prompts (session_id, id);

CREATE TABLE runs (
    id               TEXT PRIMARY KEY,
    session_id       TEXT NOT NULL REFERENCES sessions (id),
    started_at       TEXT NOT NULL,
    ended_at         TEXT,
    status           TEXT,
    cancel_requested BOOLEAN NOT NULL DEFAULT false,
    last_event       BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE run_events (
    run_id TEXT NOT NULL REFERENCES runs (id),
    seq    BIGINT NOT NULL CHECK (seq >= 1),
    kind   TEXT NOT NULL,
    data   TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE config (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
",
    "
CREATE TABLE call_facts (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id  TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    tool        BYTEA NOT NULL,
    recorded_at TEXT NOT NULL,
    facts       TEXT NOT NULL,
    FOREIGN KEY (session_id, seq) REFERENCES messages (session_id, seq)
);
CREATE INDEX call_facts_by_session ON call_facts (session_id, id);
",
    "
ALTER TABLE sessions ADD COLUMN owner TEXT NOT NULL DEFAULT 'admin';
CREATE INDEX sessions_by_owner ON sessions (owner, created_at DESC, ord DESC);

CREATE TABLE actions (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id TEXT REFERENCES sessions (id),
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    detail     BYTEA,
    at         TEXT NOT NULL
);
CREATE INDEX actions_by_session ON actions (session_id, id);
",
];

/// The newest schema version this build knows.
pub(crate) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The key of the transaction-level advisory lock migrations take, so that replicas
/// starting at once apply each migration once.
const MIGRATION_LOCK: i64 = 0x736c_7569_6365_0001;

impl PgInner {
    /// Applies the missing migrations in one transaction; returns the version before and
    /// after. Refuses a schema newer than [`SCHEMA_VERSION`].
    pub(super) async fn migrate(&self) -> Result<(i64, i64), StoreError> {
        let what = "cannot migrate the schema";
        let result: Result<(i64, i64), Fail> = async {
            let mut conn = self.conn().await?;
            let tx = conn.transaction().await?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                .await?;
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS sluice_schema (
                    version    INTEGER PRIMARY KEY,
                    applied_at TEXT NOT NULL
                )",
            )
            .await?;
            let found: i64 = tx
                .query_one(
                    "SELECT COALESCE(MAX(version), 0)::BIGINT FROM sluice_schema",
                    &[],
                )
                .await?
                .get(0);
            if found > SCHEMA_VERSION {
                return Err(Fail::Store(StoreError::TooNew {
                    path: self.shown.clone(),
                    found,
                    known: SCHEMA_VERSION,
                }));
            }
            for (index, sql) in MIGRATIONS.iter().enumerate().skip(found.max(0) as usize) {
                tx.batch_execute(sql).await?;
                let version = index as i32 + 1;
                tx.execute(
                    "INSERT INTO sluice_schema (version, applied_at) VALUES ($1, $2)",
                    &[&version, &now_rfc3339()],
                )
                .await?;
            }
            tx.commit().await?;
            Ok((found, SCHEMA_VERSION))
        }
        .await;
        result.map_err(|e| self.error(what, "", e))
    }
}
