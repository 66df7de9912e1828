//! The test harness: one suite, two stores. Each test is an `async fn(Kind)`; the `both!`
//! macro (main.rs) runs it once against SQLite and once against PostgreSQL. The PostgreSQL
//! half needs `SLUICE_TEST_POSTGRES_URL` (a role with CREATEDB; each test gets a scratch
//! database of its own): without it, it prints that it skipped, and fails under `CI=true`.

use std::path::PathBuf;
use std::sync::Arc;

use sluice_protocol::{Message, ToolCall};
use sluice_store::{PgStore, SqliteStore, Store};
use tempfile::TempDir;

/// The variable naming the PostgreSQL server for tests.
pub(crate) const POSTGRES_URL_VAR: &str = "SLUICE_TEST_POSTGRES_URL";

/// Which store a test runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Sqlite,
    Postgres,
}

/// The PostgreSQL server URL for tests, or `None` (said on stderr) when there is none and
/// `CI` is not `true`. Under `CI=true` a missing URL fails the test.
pub(crate) fn postgres_url(test: &str) -> Option<String> {
    match std::env::var(POSTGRES_URL_VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            sluice_test_support::skip_or_fail(&format!(
                "{test} (PostgreSQL): {POSTGRES_URL_VAR} is not set (.ci/run starts a server)"
            ));
            None
        }
    }
}

/// A store of either kind in a fresh place: a temporary SQLite file, or a scratch
/// PostgreSQL database (dropped with the harness).
pub(crate) struct Harness {
    pub(crate) store: Arc<dyn Store>,
    /// The SQLite file (also set for PostgreSQL, unused).
    pub(crate) path: PathBuf,
    /// The scratch database's URL.
    pub(crate) url: Option<String>,
    _db: Option<ScratchDb>,
    _dir: TempDir,
}

/// Drops its scratch database when dropped.
struct ScratchDb(String);

impl Harness {
    /// A fresh store of `kind`, or `None` when PostgreSQL is not available (skipped).
    pub(crate) async fn new(kind: Kind, test: &str) -> Option<Harness> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let (store, url): (Arc<dyn Store>, _) = match kind {
            Kind::Sqlite => (Arc::new(SqliteStore::open(&path).unwrap()), None),
            Kind::Postgres => {
                let server = postgres_url(test)?;
                let url = PgStore::create_scratch_database(&server).await.unwrap();
                (Arc::new(PgStore::connect(&url).await.unwrap()), Some(url))
            }
        };
        Some(Harness {
            store,
            path,
            _db: url.clone().map(ScratchDb),
            url,
            _dir: dir,
        })
    }

    /// Another handle on the same store, with its own connections, as another process or
    /// replica has.
    pub(crate) async fn reopen(&self) -> Arc<dyn Store> {
        match &self.url {
            None => Arc::new(SqliteStore::open(&self.path).unwrap()),
            Some(url) => Arc::new(PgStore::connect(url).await.unwrap()),
        }
    }

    /// Makes the runner of every session in progress die, as a killed process (SQLite: its
    /// pid no longer exists) or a lost connection (PostgreSQL: the server ends the
    /// connections holding run locks, and waits until they are gone).
    pub(crate) async fn kill_runners(&self) {
        match &self.url {
            None => {
                raw(&self.path)
                    .execute(
                        "UPDATE sessions SET runner_pid = 4294967000 WHERE status = 'running'",
                        [],
                    )
                    .unwrap();
            }
            Some(url) => {
                let config: tokio_postgres::Config = url.parse().unwrap();
                let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
                tokio::spawn(connection);
                let ended: i64 = client
                    .query_one(
                        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
                         WHERE datname = current_database() AND application_name = 'sluice run'
                           AND pid <> pg_backend_pid()) AS t",
                        &[],
                    )
                    .await
                    .unwrap()
                    .get(0);
                assert!(ended >= 1, "no run connection to end");
            }
        }
    }
}

impl Drop for ScratchDb {
    fn drop(&mut self) {
        let url = std::mem::take(&mut self.0);
        {
            // Best effort, on a thread of its own (drop cannot wait in async code).
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let _ = rt.block_on(PgStore::drop_scratch_database(&url));
            })
            .join();
        }
    }
}

/// A plain connection to a SQLite file, to look behind the store's back.
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
