//! `GET /healthz`: whether the server can serve, its store included. The store is asked
//! with [`sluice_store::Store::ping`] at most once per [`FRESH`], each time for at most
//! [`PING_TIMEOUT`]; concurrent checks share one ping.
//!
//! 200 `{"ok": true, "store": {"ok": true, "location": …}, "runsInProgress": n,
//! "eventStreams": n}` when the store answers; 503 `{"ok": false, "error": …, "store":
//! {"ok": false, "location": …, "error": …}, "runsInProgress": n, "eventStreams": n}` when
//! it does not (the database is down, the file is gone), so a load balancer takes the
//! replica out while session reads would fail. `eventStreams` counts the event streams open
//! now (each gives its place back when its client goes away).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_store::Store;
use tokio::sync::Mutex;

/// How long a store check is reused: 1 s.
pub(crate) const FRESH: Duration = Duration::from_secs(1);

/// How long a store check may take before the store counts as down: 2 s.
pub(crate) const PING_TIMEOUT: Duration = Duration::from_secs(2);

/// The last store check: when it was made and what it found (`None`: it answered).
#[derive(Default)]
pub(crate) struct Health(Mutex<Option<(Instant, Option<String>)>>);

impl Health {
    /// The store's state, checked now unless a check within [`FRESH`] is at hand: `None`
    /// when it answers, else why not.
    pub(crate) async fn store(&self, store: &dyn Store) -> Option<String> {
        let mut last = self.0.lock().await;
        if let Some((at, found)) = &*last
            && at.elapsed() < FRESH
        {
            return found.clone();
        }
        let found = match tokio::time::timeout(PING_TIMEOUT, store.ping()).await {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some(format!(
                "session store {}: no answer within {} ms",
                store.location(),
                PING_TIMEOUT.as_millis()
            )),
        };
        *last = Some((Instant::now(), found.clone()));
        found
    }
}

/// What this server is doing now, as `/healthz` reports it.
pub(crate) struct Load {
    /// Runs in progress here.
    pub(crate) runs: usize,
    /// Event streams open.
    pub(crate) streams: usize,
}

/// The body of `/healthz` and whether it is healthy.
pub(crate) fn body(location: String, store: Option<String>, load: &Load) -> (bool, Value) {
    match store {
        None => (
            true,
            json!({
                "ok": true,
                "store": {"ok": true, "location": location},
                "runsInProgress": load.runs,
                "eventStreams": load.streams,
            }),
        ),
        Some(error) => (
            false,
            json!({
                "ok": false,
                "error": format!("the session store is not answering: {error}"),
                "store": {"ok": false, "location": location, "error": error},
                "runsInProgress": load.runs,
                "eventStreams": load.streams,
            }),
        ),
    }
}
