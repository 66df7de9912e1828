//! [`PgStore`]: sessions in PostgreSQL, for several `sluice serve` replicas on one database.
//!
//! Design (the rules it serves: docs/storage.md#replicas and docs/replicas.md):
//! - Client: `tokio-postgres` with two `deadpool-postgres` pools: one for ordinary calls
//!   ([`POOL_SIZE`] connections) and one for the connections runs hold
//!   ([`MAX_RUNS`] at once per process). TLS as libpq's `sslmode` and `sslrootcert` in the
//!   URL say (`tls.rs`; rustls on ring): `require` encrypts, `verify-full` also checks the
//!   certificate's chain and host name.
//! - Schema: versioned migrations (`schema.rs`) applied at connect, under a transaction-level
//!   advisory lock so replicas starting together apply each once; a database whose schema
//!   is newer than this build knows is refused.
//! - One run per session across replicas: a session-level advisory lock
//!   (`pg_try_advisory_lock`, keyed by a hash of the session id) taken on a connection that
//!   the run holds until it ends. Chosen over a lease row with an expiry because the lock
//!   needs no clock and no renewal, and is released by PostgreSQL the moment the runner's
//!   connection closes: a replica killed with `kill -9` frees its sessions at once (a host
//!   that vanishes without closing its sockets frees them once the server's TCP keepalive
//!   gives up). The run's writes go through that same connection, so a runner that lost its
//!   lock cannot write to the session any more (the connection is gone): there is no window
//!   in which two runners write one transcript. The cost: one connection per run in
//!   progress, and it does not work behind a transaction-pooling proxy (PgBouncer in
//!   transaction mode).
//! - Events and cancellation: rows (`run_events`, `runs.cancel_requested`) plus
//!   `NOTIFY sluice, '<topic>'` in the same transaction; each store LISTENs on a connection
//!   of its own and wakes its subscriptions, and polls every [`POLL`] in case a notification
//!   was missed (while reconnecting).

mod actions;
mod runs;
mod schema;
mod sessions;
mod store;
mod tls;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use tokio::task::JoinHandle;

use crate::queue::EventQueue;
use crate::signals::Signals;
use crate::{StoreError, Topic, redact_url};

use schema::SCHEMA_VERSION;

/// Connections for ordinary calls, per store.
pub const POOL_SIZE: usize = 16;

/// Runs in progress at once per store: each holds a connection (and the session's advisory
/// lock) until it ends. A run beyond that waits up to 10 s (`WAIT`) for one to end, then fails.
/// The database's `max_connections` must cover every replica's `POOL_SIZE + MAX_RUNS + 1`.
pub const MAX_RUNS: usize = 64;

/// How long a call waits for a pooled connection, and a new connection for its server.
const WAIT: Duration = Duration::from_secs(10);

/// How often a subscription reads the database again in case a notification was missed.
const POLL: Duration = Duration::from_secs(1);

/// The NOTIFY channel.
const CHANNEL: &str = "sluice";

/// A connection held for a run: its session's advisory lock is taken on it.
struct Held {
    conn: Arc<tokio::sync::Mutex<Object>>,
    key: i64,
}

/// A session store in PostgreSQL. See the module docs for the design;
/// [`Store`](crate::Store) for what each call does. Made by [`PgStore::connect`].
pub struct PgStore {
    inner: Arc<PgInner>,
    queue: EventQueue,
    listener: JoinHandle<()>,
}

pub(crate) struct PgInner {
    /// The URL without its password.
    shown: String,
    pool: Pool,
    runs: Pool,
    /// Sessions this store runs, with the connections holding their locks.
    held: Mutex<HashMap<String, Held>>,
    /// This store's token, recorded on the sessions it runs (`sessions.runner`).
    token: String,
    signals: Arc<Signals>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("url", &self.inner.shown)
            .finish_non_exhaustive()
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

/// Whether `url` names a PostgreSQL database (`postgres://` or `postgresql://`).
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

impl PgStore {
    /// The newest schema version this build knows.
    pub const SCHEMA_VERSION: i64 = SCHEMA_VERSION;

    /// Connects to the database at `url` (`postgres://user:password@host:port/database`,
    /// with tokio-postgres's query parameters such as `connect_timeout` (seconds; default
    /// 10) or `application_name`, and libpq's `sslmode=disable|prefer|require|verify-ca|
    /// verify-full` (default `prefer`) and `sslrootcert=FILE`), brings its schema up to
    /// [`PgStore::SCHEMA_VERSION`] and starts listening for other replicas' notifications.
    ///
    /// Errors ([`StoreError::Database`], naming the URL without its password): a URL that is
    /// not a PostgreSQL URL or does not parse; an `sslmode` that is not a mode or an
    /// `sslrootcert` that cannot be read; a TLS handshake that fails (naming the `sslmode`
    /// and why); a database that cannot be reached or refuses
    /// the login; a failed migration. [`StoreError::TooNew`] when a newer Sluice wrote the
    /// schema.
    pub async fn connect(url: &str) -> Result<PgStore, StoreError> {
        let store = Self::open(url).await?;
        store.inner.migrate().await?;
        Ok(store)
    }

    /// Applies the migrations alone (`sluice store migrate`) and returns the schema
    /// version before and after.
    ///
    /// # Errors
    /// As [`PgStore::connect`].
    pub async fn migrate(url: &str) -> Result<(i64, i64), StoreError> {
        Self::open(url).await?.inner.migrate().await
    }

    async fn open(url: &str) -> Result<PgStore, StoreError> {
        let shown = redact_url(url);
        let fail = |message: String| StoreError::Database {
            path: shown.clone(),
            message,
        };
        if !is_postgres_url(url) {
            return Err(fail(
                "not a PostgreSQL URL: it must start with postgres:// or postgresql://".into(),
            ));
        }
        let (mut config, tls) = tls::configure(url).map_err(|e| fail(without(&e, url)))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(WAIT);
        }
        if config.get_application_name().is_none() {
            config.application_name("sluice");
        }
        let pool = make_pool(config.clone(), &tls, POOL_SIZE, &shown)?;
        let mut run_config = config.clone();
        run_config.application_name(format!(
            "{} run",
            config.get_application_name().unwrap_or("sluice")
        ));
        // A run's connection notices a database that vanished as soon as the database
        // notices a vanished replica (runs.rs, `LOCK_SQL`): within 10 s.
        run_config
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(5))
            .keepalives_interval(Duration::from_secs(1))
            .keepalives_retries(5)
            .tcp_user_timeout(Duration::from_secs(10));
        let runs = make_pool(run_config, &tls, MAX_RUNS, &shown)?;
        // Fail now, with a clear message, when the database cannot be reached.
        drop(pool.get().await.map_err(|e| {
            fail(format!(
                "cannot connect to the database{}: {}",
                match tls.mode() {
                    tls::SslMode::Prefer => String::new(),
                    mode => format!(" (sslmode={})", mode.name()),
                },
                without(&pool_message(&e), url)
            ))
        })?);
        let signals = Arc::new(Signals::default());
        let listener = tokio::spawn(listen(config, tls, signals.clone(), shown.clone()));
        let token = crate::ids::new_id('p').map_err(|e| fail(e.to_string()))?;
        let inner = Arc::new(PgInner {
            shown: shown.clone(),
            pool,
            runs,
            held: Mutex::new(HashMap::new()),
            token,
            signals,
        });
        Ok(PgStore {
            queue: EventQueue::new(inner.clone()),
            inner,
            listener,
        })
    }

    /// The URL, without its password.
    pub fn url(&self) -> &str {
        &self.inner.shown
    }

    /// Creates an empty database with a fresh name (`sluice_scratch_` and 12 characters) on
    /// the server `url` names, as the user it names (who needs `CREATEDB`), and returns its
    /// URL. For tests and benchmarks, each of which wants a database of its own; drop it
    /// with [`PgStore::drop_scratch_database`].
    ///
    /// # Errors
    /// [`StoreError::Database`] when the server cannot be reached or refuses.
    pub async fn create_scratch_database(url: &str) -> Result<String, StoreError> {
        let name = format!(
            "sluice_scratch_{}",
            &crate::ids::new_id('x').map_err(|e| scratch_error(url, &e))?[2..]
        );
        admin(url, &format!("CREATE DATABASE {name}")).await?;
        let mut parsed = ::url::Url::parse(url).map_err(|e| scratch_error(url, &e))?;
        parsed.set_path(&format!("/{name}"));
        Ok(parsed.to_string())
    }

    /// Drops a database [`PgStore::create_scratch_database`] made, disconnecting its users.
    ///
    /// # Errors
    /// [`StoreError::Database`] when the server cannot be reached or refuses, or `url` does
    /// not name a scratch database.
    pub async fn drop_scratch_database(url: &str) -> Result<(), StoreError> {
        let parsed = ::url::Url::parse(url).map_err(|e| scratch_error(url, &e))?;
        let name = parsed.path().trim_start_matches('/').to_owned();
        if !name.starts_with("sluice_scratch_")
            || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(scratch_error(url, &"not a scratch database"));
        }
        let mut other = parsed.clone();
        other.set_path("/postgres");
        admin(
            other.as_str(),
            &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        )
        .await
    }
}

fn scratch_error(url: &str, e: &dyn std::fmt::Display) -> StoreError {
    StoreError::Database {
        path: redact_url(url),
        message: without(e, url),
    }
}

/// Runs `sql` on a connection of its own to `url`.
async fn admin(url: &str, sql: &str) -> Result<(), StoreError> {
    let (config, tls) = tls::configure(url).map_err(|e| scratch_error(url, &e))?;
    let (client, connection) = config
        .connect(tls)
        .await
        .map_err(|e| scratch_error(url, &e))?;
    let driver = tokio::spawn(connection);
    let result = client.batch_execute(sql).await;
    drop(client);
    let _ = driver.await;
    result.map_err(|e| scratch_error(url, &pg_message(&e)))
}

/// A pool of at most `size` connections configured by `config`.
fn make_pool(
    config: tokio_postgres::Config,
    tls: &tls::MakeRustls,
    size: usize,
    shown: &str,
) -> Result<Pool, StoreError> {
    let manager = Manager::from_config(
        config,
        tls.clone(),
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(size)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(WAIT))
        .create_timeout(Some(WAIT))
        .build()
        .map_err(|e| StoreError::Database {
            path: shown.to_owned(),
            message: format!("cannot make a connection pool: {e}"),
        })
}

/// The text of `e` with `url`'s password removed, in case a message ever quotes it.
fn without(e: &dyn std::fmt::Display, url: &str) -> String {
    let text = e.to_string();
    match ::url::Url::parse(url)
        .ok()
        .and_then(|u| u.password().map(str::to_owned))
    {
        Some(p) if !p.is_empty() => text.replace(&p, "***"),
        _ => text,
    }
}

/// Listens for notifications on a connection of its own, reconnecting after a failure
/// (every second), and wakes the subscriptions they name.
async fn listen(
    config: tokio_postgres::Config,
    tls: tls::MakeRustls,
    signals: Arc<Signals>,
    shown: String,
) {
    loop {
        match config.connect(tls.clone()).await {
            Ok((client, mut connection)) => {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
                let driver = tokio::spawn(async move {
                    while let Some(message) =
                        std::future::poll_fn(|cx| connection.poll_message(cx)).await
                    {
                        match message {
                            Ok(tokio_postgres::AsyncMessage::Notification(n)) => {
                                if tx.send(n.payload().to_owned()).is_err() {
                                    return;
                                }
                            }
                            Ok(_) => {}
                            Err(_) => return,
                        }
                    }
                });
                match client.batch_execute(&format!("LISTEN {CHANNEL}")).await {
                    Ok(()) => {
                        // Anything may have changed while we were not listening.
                        signals.notify_all();
                        while let Some(payload) = rx.recv().await {
                            if let Some(topic) = Signals::parse_payload(&payload) {
                                signals.notify(&topic);
                            }
                        }
                        tracing::warn!(store = %shown, "lost the connection listening for other replicas' changes; reconnecting");
                    }
                    Err(e) => tracing::warn!(store = %shown, "cannot LISTEN: {e}"),
                }
                driver.abort();
            }
            Err(e) => {
                tracing::warn!(store = %shown, "cannot connect to listen for other replicas' changes: {e}");
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The advisory-lock key of session `id`: the first 8 bytes of SHA-256 of
/// `sluice-session:<id>`.
fn lock_key(id: &str) -> i64 {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(format!("sluice-session:{id}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(bytes)
}

/// Why an operation failed, before it is named.
pub(crate) enum Fail {
    Pg(tokio_postgres::Error),
    Pool(deadpool_postgres::PoolError),
    Store(StoreError),
    Other(String),
}

impl From<tokio_postgres::Error> for Fail {
    fn from(e: tokio_postgres::Error) -> Self {
        Fail::Pg(e)
    }
}

impl From<deadpool_postgres::PoolError> for Fail {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        Fail::Pool(e)
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Fail::Store(e)
    }
}

impl PgInner {
    fn held(&self) -> MutexGuard<'_, HashMap<String, Held>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The error of `what` on `id` (may be empty) that failed with `fail`.
    fn error(&self, what: &str, id: &str, fail: Fail) -> StoreError {
        let message = match fail {
            Fail::Store(e) => return e,
            Fail::Pg(e) => pg_message(&e),
            Fail::Pool(e) => format!("no database connection: {}", pool_message(&e)),
            Fail::Other(m) => m,
        };
        let message = if id.is_empty() {
            format!("{what}: {message}")
        } else {
            format!("{what} {id:?}: {message}")
        };
        StoreError::Database {
            path: self.shown.clone(),
            message,
        }
    }

    /// A connection from the pool.
    async fn conn(&self) -> Result<Object, Fail> {
        Ok(self.pool.get().await?)
    }

    /// The connection to write session `id` with: the one its run holds when this store
    /// runs it (so a runner that lost its lock cannot write), else one from the pool.
    async fn writer(&self, id: &str) -> Result<Writer, Fail> {
        let held = self.held().get(id).map(|h| h.conn.clone());
        Ok(match held {
            Some(conn) => Writer::Held(conn.lock_owned().await),
            None => Writer::Pooled(Box::new(self.conn().await?)),
        })
    }

    /// Notifies this store's subscriptions of `topic` at once (other replicas learn of it
    /// from the NOTIFY sent with the change).
    fn notify(&self, topic: &Topic) {
        self.signals.notify(topic);
    }
}

/// What went wrong getting a pooled connection: the database's or the network's words.
fn pool_message(e: &deadpool_postgres::PoolError) -> String {
    match e {
        deadpool_postgres::PoolError::Backend(pg) => pg_message(pg),
        other => other.to_string(),
    }
}

/// The database's own message for `e` (severity, message, detail), or the client's.
fn pg_message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => match db.detail() {
            Some(detail) => format!("{}: {} ({detail})", db.severity(), db.message()),
            None => format!("{}: {}", db.severity(), db.message()),
        },
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text.push_str(&format!(": {s}"));
                source = s.source();
            }
            text
        }
    }
}

/// A connection to write with.
enum Writer {
    Held(tokio::sync::OwnedMutexGuard<Object>),
    Pooled(Box<Object>),
}

impl std::ops::Deref for Writer {
    type Target = Object;
    fn deref(&self) -> &Object {
        match self {
            Writer::Held(g) => g,
            Writer::Pooled(o) => o,
        }
    }
}

impl std::ops::DerefMut for Writer {
    fn deref_mut(&mut self) -> &mut Object {
        match self {
            Writer::Held(g) => &mut *g,
            Writer::Pooled(o) => o,
        }
    }
}

#[cfg(test)]
mod tests;
