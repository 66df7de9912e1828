//! The compiles in progress in this process, for a progress display (the binary shows those
//! that take over a second on stderr: docs/components.md#compiled-components). A compile
//! registers itself for as long as it runs; [`compiling`] lists them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// One compile in progress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compiling {
    /// Unique in this process, for telling one compile from another of the same component.
    pub id: u64,
    /// The component, as errors and the log name it (its path, or `builtin:read_file`).
    pub component: String,
    /// Its size, in bytes.
    pub bytes: usize,
    /// How long it has run.
    pub elapsed: Duration,
}

struct Entry {
    component: String,
    bytes: usize,
    started: Instant,
}

static IN_PROGRESS: Mutex<BTreeMap<u64, Entry>> = Mutex::new(BTreeMap::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Signalled when a compile registers, for [`wait_for_a_compile`].
static STARTED: Condvar = Condvar::new();

/// The compiles running now, oldest first.
pub fn compiling() -> Vec<Compiling> {
    let now = Instant::now();
    IN_PROGRESS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(|(&id, e)| Compiling {
            id,
            component: e.component.clone(),
            bytes: e.bytes,
            elapsed: now.saturating_duration_since(e.started),
        })
        .collect()
}

/// Blocks until a compile is in progress (at once when one is): a display sleeps here
/// while nothing compiles, instead of looking again and again.
pub fn wait_for_a_compile() {
    let in_progress = IN_PROGRESS.lock().unwrap_or_else(PoisonError::into_inner);
    drop(
        STARTED
            .wait_while(in_progress, |running| running.is_empty())
            .unwrap_or_else(PoisonError::into_inner),
    );
}

/// A compile's registration: listed by [`compiling`] until dropped.
pub(crate) struct Registered(u64);

/// Registers the compile of `component` (`bytes` long), starting now.
pub(crate) fn register(component: &str, bytes: usize) -> Registered {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    IN_PROGRESS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(
            id,
            Entry {
                component: component.to_string(),
                bytes,
                started: Instant::now(),
            },
        );
    STARTED.notify_all();
    Registered(id)
}

impl Drop for Registered {
    fn drop(&mut self) {
        IN_PROGRESS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compile_is_listed_while_it_runs() {
        let first = register("a.wasm", 10);
        let second = register("b.wasm", 20);
        let listed = |name: &str| compiling().into_iter().find(|c| c.component == name);
        let a = listed("a.wasm").unwrap();
        let b = listed("b.wasm").unwrap();
        assert_eq!((a.bytes, b.bytes), (10, 20));
        assert!(a.id < b.id);
        drop(first);
        assert_eq!(listed("a.wasm"), None);
        assert!(listed("b.wasm").is_some());
        drop(second);
        assert_eq!(listed("b.wasm"), None);
    }

    /// A display waiting while nothing compiles wakes when a compile registers.
    #[test]
    fn a_waiting_display_wakes_when_a_compile_starts() {
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            wait_for_a_compile();
            tx.send(()).unwrap();
        });
        let registered = register("c.wasm", 30);
        rx.recv().unwrap();
        waiter.join().unwrap();
        drop(registered);
    }
}
