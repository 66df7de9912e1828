//! How the SQLite store's calls reach its one connection, and how it learns of changes other
//! processes commit.
//!
//! - **One thread per store.** Every call runs on a thread of the store's own, one after
//!   another in the order they came (a write may wait up to 5 s for another process's write
//!   lock, which must not stall a runtime worker; they all take the one connection anyway).
//!   Callers wait for their answer as tasks, not as threads. Before, each call went to
//!   tokio's blocking pool and waited there for the connection: a few thousand idle event
//!   streams, each reading the store ten times a second, kept the pool's 512 threads alive,
//!   each with its stack and a malloc arena that glibc keeps after the thread ends (4,000
//!   streams held 1,250 MiB, and kept it after they closed). Taking turns on the pool was
//!   not enough: a call handed to the pool just as the previous one's thread was finishing
//!   finds no idle thread and starts another, so bursts still grew the pool to hundreds.
//! - **One watcher per store.** While anyone waits on a subscription, a task asks SQLite
//!   every [`WATCH`] whether another connection has committed (`PRAGMA data_version`, which
//!   changes only for other connections' commits), and wakes every subscription when one
//!   has. Changes made through this store wake their topics at once. So a subscription no
//!   longer reads the store on a timer to find other processes' changes; it is woken once a
//!   second ([`crate::Woken::Polled`]) only to check what no change announces (a runner
//!   that died).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::task::JoinHandle;

use super::Inner;
use crate::StoreError;

/// How often the watcher asks whether another process has committed: 100 ms.
pub(super) const WATCH: Duration = Duration::from_millis(100);

/// A call waiting for the store's thread.
type Job = Box<dyn FnOnce() + Send>;

/// Where calls go to the store's thread. The thread ends once this is dropped (with the
/// store) and the calls already sent have run.
pub(super) struct Worker(mpsc::Sender<Job>);

impl Worker {
    /// Starts the thread of the store at `path` (named in the error).
    pub(super) fn start(path: &str) -> Result<Worker, StoreError> {
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("sluice-store".into())
            .spawn(move || {
                for job in queue {
                    // A call that panics drops its answer (its caller gets an error); the
                    // connection is still usable (its transaction rolled back).
                    let _ = catch_unwind(AssertUnwindSafe(job));
                }
            })
            .map_err(|e| StoreError::Database {
                path: path.to_owned(),
                message: format!("cannot start the store's thread: {e}"),
            })?;
        Ok(Worker(jobs))
    }
}

impl Inner {
    /// Runs `f` on the store's thread, after the calls sent before it, and waits (as a task)
    /// for its answer. A caller that stops waiting (a client that went away) does not stop
    /// `f`; its answer is dropped.
    pub(super) async fn call<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Inner) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let stopped = |why: &str| StoreError::Database {
            path: self.path.clone(),
            message: format!("a store call stopped: {why}"),
        };
        let (answer, answered) = tokio::sync::oneshot::channel();
        let inner = self.clone();
        let job: Job = Box::new(move || {
            let result = f(&inner);
            // Let go of the store before answering: a caller that drops the store once
            // answered then drops the last reference, so the file is closed when `drop`
            // returns (a read-only remount right after found it still open: EBUSY).
            drop(inner);
            let _ = answer.send(result);
        });
        self.worker
            .0
            .send(job)
            .map_err(|_| stopped("the store's thread has ended"))?;
        answered
            .await
            .map_err(|_| stopped("it panicked (see the log)"))?
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

#[cfg(test)]
mod tests {
    use crate::{SqliteStore, Store as _};

    /// 200 calls at once from 4 runtime workers all run on the store's one thread, and a
    /// call that panics fails alone: the thread goes on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn every_call_runs_on_the_stores_one_thread() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("sessions.db")).unwrap();
        let calls: Vec<_> = (0..200)
            .map(|_| {
                let inner = store.inner.clone();
                tokio::spawn(async move { inner.call(|_| Ok(std::thread::current().id())).await })
            })
            .collect();
        let mut threads = Vec::new();
        for call in calls {
            threads.push(call.await.unwrap().unwrap());
        }
        threads.dedup();
        assert_eq!(threads.len(), 1, "{threads:?}");
        assert_ne!(threads[0], std::thread::current().id());
        let panicked = store
            .inner
            .call(|_| -> Result<(), crate::StoreError> { panic!("a call that panics") })
            .await
            .unwrap_err();
        assert!(
            panicked
                .to_string()
                .ends_with("a store call stopped: it panicked (see the log)"),
            "{panicked}"
        );
        let after = store.inner.call(|_| Ok(std::thread::current().id())).await;
        assert_eq!(after.unwrap(), threads[0], "the thread goes on");
    }

    /// Once a call has been answered, dropping the store closes its file at once, on the
    /// caller's side: no descriptor of this process still names it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropping_the_store_closes_its_file_before_drop_returns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let open_on = |path: &std::path::Path| -> usize {
            std::fs::read_dir("/proc/self/fd")
                .unwrap()
                .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter(|target| target.starts_with(path))
                .count()
        };
        for _ in 0..200 {
            let store = SqliteStore::open(&path).unwrap();
            store.create_session().await.unwrap();
            assert!(open_on(&path) >= 1);
            drop(store);
            assert_eq!(open_on(dir.path()), 0, "a descriptor outlived the store");
        }
    }
}
