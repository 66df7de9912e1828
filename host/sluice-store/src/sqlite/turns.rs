//! How the SQLite store's calls reach its one connection, and how it learns of changes other
//! processes commit.
//!
//! - **One call at a time on the blocking pool.** Every call runs on tokio's blocking pool
//!   (a write may wait up to 5 s for another process's write lock, which must not stall a
//!   runtime worker), but only once the call before it has returned: they all take the one
//!   connection anyway, so a second thread could only wait for it. Callers wait for their
//!   turn as tasks, not as threads. Before, each waiting call held a thread of its own, and
//!   a few thousand idle event streams, each reading the store ten times a second, kept
//!   tokio's 512 blocking threads alive, each with its stack and its own malloc arena, which
//!   glibc keeps after the thread ends (4,000 streams held 1,250 MiB, and kept it after they
//!   closed).
//! - **One watcher per store.** While anyone waits on a subscription, a task asks SQLite
//!   every [`WATCH`] whether another connection has committed (`PRAGMA data_version`, which
//!   changes only for other connections' commits), and wakes every subscription when one
//!   has. Changes made through this store wake their topics at once. So a subscription no
//!   longer reads the store on a timer to find other processes' changes; it is woken once a
//!   second ([`crate::Woken::Polled`]) only to check what no change announces (a runner
//!   that died).

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::task::JoinHandle;

use super::Inner;
use crate::StoreError;

/// How often the watcher asks whether another process has committed: 100 ms.
pub(super) const WATCH: Duration = Duration::from_millis(100);

impl Inner {
    /// Runs `f` on the blocking pool once no other call of this store runs there. The turn
    /// is held until `f` returns, even when the caller stops waiting (a client that went
    /// away), so no second thread ever waits for the connection.
    pub(super) async fn call<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Inner) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let stopped = |message: String| StoreError::Database {
            path: self.path.clone(),
            message,
        };
        let turn = self
            .turns
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| stopped(format!("a store call stopped: {e}")))?;
        let inner = self.clone();
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            f(&inner)
        })
        .await
        .map_err(|e| stopped(format!("a store call stopped: {e}")))?
    }

    /// `PRAGMA data_version` of the store's connection: it changes when another connection
    /// (another process) commits.
    fn data_version(&self) -> Result<i64, StoreError> {
        self.conn()
            .query_row("PRAGMA data_version", [], |row| row.get(0))
            .map_err(|e| StoreError::Database {
                path: self.path.clone(),
                message: format!("cannot read the data version: {e}"),
            })
    }
}

/// The store's watcher task, started by the first subscription (in the caller's runtime,
/// and again if that runtime has gone) and stopped with the store.
#[derive(Default)]
pub(super) struct Watcher(Mutex<Option<JoinHandle<()>>>);

impl Watcher {
    /// Starts the watcher of `inner` unless it runs.
    pub(super) fn ensure(&self, inner: &Arc<Inner>) {
        let mut task = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if task.as_ref().is_some_and(|t| !t.is_finished()) {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            *task = Some(runtime.spawn(watch(Arc::downgrade(inner))));
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        if let Some(task) = self.0.get_mut().unwrap_or_else(PoisonError::into_inner) {
            task.abort();
        }
    }
}

/// Every [`WATCH`] while someone is subscribed: wakes every subscription when another
/// connection has committed since the last look, when the version cannot be read, and on
/// the first look after nobody was subscribed (a change may have come in between a
/// subscriber's read and that look).
async fn watch(store: Weak<Inner>) {
    let mut seen: Option<i64> = None;
    loop {
        tokio::time::sleep(WATCH).await;
        let Some(inner) = store.upgrade() else { return };
        if inner.signals.subscriptions() == 0 {
            seen = None;
            continue;
        }
        let version = inner.call(|s| s.data_version()).await.ok();
        if version.is_none() || version != seen {
            inner.signals.notify_all();
        }
        seen = version;
    }
}
