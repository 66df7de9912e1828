//! The queue of run events ([`crate::Store::push_event`]): pushed without waiting, stored
//! in order and in batches by one writer task per store, flushed by
//! [`crate::Store::end_run`] before the run's `finished` event.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::StoreError;

/// The most events one batch (one transaction) writes.
const MAX_BATCH: usize = 256;

/// An event waiting to be stored.
pub(crate) struct PendingEvent {
    pub(crate) run_id: String,
    pub(crate) kind: String,
    pub(crate) data: Map<String, Value>,
}

/// Where the writer stores a batch: one transaction, positions after each run's last.
#[async_trait::async_trait]
pub(crate) trait EventSink: Send + Sync + 'static {
    async fn write_events(self: Arc<Self>, batch: Vec<PendingEvent>) -> Result<(), StoreError>;
}

enum Item {
    Event(PendingEvent),
    Flush(oneshot::Sender<()>),
}

/// The queue and its writer (started on first use, in the runtime of the caller, and
/// started again if that runtime has gone).
pub(crate) struct EventQueue {
    tx: Mutex<Option<mpsc::UnboundedSender<Item>>>,
    sink: Arc<dyn EventSink>,
}

impl EventQueue {
    pub(crate) fn new(sink: Arc<dyn EventSink>) -> EventQueue {
        EventQueue {
            tx: Mutex::new(None),
            sink,
        }
    }

    pub(crate) fn push(&self, event: PendingEvent) {
        if !self.send(Item::Event(event)) {
            tracing::warn!("a run event was dropped: no async runtime to store it from");
        }
    }

    /// Waits until everything pushed before is written (or failed).
    pub(crate) async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.send(Item::Flush(tx)) {
            let _ = rx.await;
        }
    }

    fn send(&self, item: Item) -> bool {
        let mut guard = self.tx.lock().unwrap_or_else(PoisonError::into_inner);
        let item = match guard.as_ref() {
            Some(tx) => match tx.send(item) {
                Ok(()) => return true,
                Err(mpsc::error::SendError(item)) => item,
            },
            None => item,
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return false;
        };
        let (tx, rx) = mpsc::unbounded_channel();
        handle.spawn(write(rx, self.sink.clone()));
        let sent = tx.send(item).is_ok();
        *guard = Some(tx);
        sent
    }
}

async fn write(mut rx: mpsc::UnboundedReceiver<Item>, sink: Arc<dyn EventSink>) {
    while let Some(first) = rx.recv().await {
        let mut batch = Vec::new();
        let mut flushes = Vec::new();
        let mut next = Some(first);
        while let Some(item) = next.take() {
            match item {
                Item::Event(e) => batch.push(e),
                Item::Flush(f) => flushes.push(f),
            }
            if batch.len() < MAX_BATCH {
                next = rx.try_recv().ok();
            }
        }
        if !batch.is_empty() {
            let n = batch.len();
            if let Err(e) = sink.clone().write_events(batch).await {
                tracing::warn!("{n} run event(s) could not be stored: {e}");
            }
        }
        for f in flushes {
            let _ = f.send(());
        }
    }
}
