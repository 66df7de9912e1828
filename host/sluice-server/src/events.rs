//! `GET /sessions/{id}/events`: a run's events as server-sent events, read from the store,
//! so a run executing on another replica streams here too.
//!
//! Each SSE message has `event: <type>`, `id: <seq>` and `data: <the event as JSON>`.
//! Types: `started`, `model_request`, `model_reply`, `tool_started`, `tool_finished`,
//! `shrunk`, `awaiting_approval`, and last `finished` (with `status`: `completed`, `error`,
//! `aborted` or `awaiting_approval`), after which the stream ends. A subscriber always gets
//! the run from its first event, however late it subscribes. New events arrive as the store
//! signals them (at once on this replica; through LISTEN/NOTIFY from another PostgreSQL
//! replica; within 100 ms from another process on a SQLite file). A run whose runner died
//! (its process killed, its connection lost) ends the stream with a `finished` event of
//! status `error` that is not stored (the session's next run stores one). A stream reads the
//! store only when it is signalled, and once a second while it follows a run, whether that
//! run is live: an idle stream costs no store reads (docs/storage.md#change-signals).
//!
//! At most `server.max_event_streams` streams are open at once (one principal today: the
//! token's holder); one more is answered 429 naming the limit and the key.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use serde_json::{Value, json};
use sluice_store::{ORPHANED_RUN, Store, StoredEvent, Subscription, Topic, Woken};
use tokio::sync::OwnedSemaphorePermit;

use crate::runs::event_json;
use crate::state::AppState;

/// How often an idle stream sends a comment, so proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Which run a stream follows.
pub(crate) enum Follow {
    /// This run, from its first event.
    Run(String),
    /// The session's next run, when it starts: the first run whose id is not this one
    /// (the session's latest run when the stream was opened, if any).
    Next(Option<String>),
}

enum Phase {
    /// Reads the session's latest run at first and after each signal, and nothing while
    /// nothing changes.
    Waiting {
        after: Option<String>,
        changes: Subscription,
    },
    Streaming {
        run: String,
        next: u64,
        changes: Subscription,
        /// Whether to read the run's events again: at first, and after each signal.
        stale: bool,
    },
    Done,
}

struct Tail {
    state: AppState,
    session: String,
    phase: Phase,
    buffer: VecDeque<Value>,
    /// The stream's place among `server.max_event_streams`, given back when it is dropped.
    _permit: OwnedSemaphorePermit,
}

/// The SSE response following `follow` for `session`.
pub(crate) fn stream(
    state: AppState,
    session: String,
    follow: Follow,
    permit: OwnedSemaphorePermit,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let phase = match follow {
        Follow::Run(run) => streaming(&state, run),
        Follow::Next(after) => Phase::Waiting {
            after,
            changes: state.store().subscribe(Topic::Runs(session.clone())),
        },
    };
    let tail = Tail {
        state,
        session,
        phase,
        buffer: VecDeque::new(),
        _permit: permit,
    };
    let events = futures_util::stream::unfold(tail, |mut tail| async move {
        let event = tail.next().await?;
        Some((Ok(event), tail))
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
}

fn streaming(state: &AppState, run: String) -> Phase {
    // Subscribe before reading the store: an event stored after this wakes the stream.
    let changes = state.store().subscribe(Topic::Events(run.clone()));
    Phase::Streaming {
        run,
        next: 0,
        changes,
        stale: true,
    }
}

impl Tail {
    /// The next SSE message, or `None` when the stream ends.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.buffer.pop_front() {
                if event.get("type").and_then(Value::as_str) == Some("finished") {
                    self.phase = Phase::Done;
                    self.buffer.clear();
                }
                return Some(sse(&event));
            }
            let shutdown = self.state.shutdown_token().clone();
            let store = self.state.store();
            match &mut self.phase {
                Phase::Done => return None,
                Phase::Waiting { after, changes } => {
                    let latest = match store.latest_run(&self.session).await {
                        Ok(latest) => latest,
                        Err(e) => return self.failed(&e),
                    };
                    if let Some(run) = latest.filter(|r| Some(&r.id) != after.as_ref()) {
                        self.phase = streaming(&self.state, run.id);
                        continue;
                    }
                    // A run that begins anywhere is signalled (docs/storage.md#change-signals):
                    // nothing to poll for.
                    tokio::select! {
                        () = changes.signalled() => {}
                        () = shutdown.cancelled() => return None,
                    }
                }
                Phase::Streaming {
                    run,
                    next,
                    changes,
                    stale,
                } => {
                    if *stale {
                        let events = match store.events(run, *next).await {
                            Ok(events) => events,
                            Err(e) => return self.failed(&e),
                        };
                        if let Some(last) = events.last() {
                            *next = last.seq;
                            let run = run.clone();
                            self.buffer
                                .extend(events.iter().map(|e| event_json(&run, e)));
                            continue;
                        }
                    }
                    let woken = tokio::select! {
                        w = changes.changed() => w,
                        () = shutdown.cancelled() => return None,
                    };
                    *stale = woken == Woken::Signalled;
                    if woken == Woken::Polled {
                        match orphaned(store, run, *next).await {
                            Orphan::Live => {}
                            Orphan::Ended(finished) => self.buffer.push_back(finished),
                            Orphan::Unknown => *stale = true,
                        }
                    }
                }
            }
        }
    }

    /// Ends the stream after a store error (logged; the client sees the stream end).
    fn failed(&mut self, e: &sluice_store::StoreError) -> Option<Event> {
        tracing::warn!(session = %self.session, "an event stream ended: {e}");
        self.phase = Phase::Done;
        None
    }
}

/// What the poll found about a run that has no event after the stream's last.
enum Orphan {
    /// Its runner is alive: nothing to do until a signal.
    Live,
    /// Its runner died before ending it: the `finished` event to end the stream with.
    Ended(Value),
    /// The store did not say, or the run has new events: read them.
    Unknown,
}

/// Whether run `run`, whose stream has sent up to `next`, lost its runner.
async fn orphaned(store: &dyn Store, run: &str, next: u64) -> Orphan {
    let Ok(record) = store.run(run).await else {
        return Orphan::Unknown;
    };
    if record.live {
        return Orphan::Live;
    }
    // Read again: the run may have ended between the two reads.
    if !matches!(store.events(run, next).await, Ok(events) if events.is_empty()) {
        return Orphan::Unknown;
    }
    let mut data = serde_json::Map::new();
    data.insert("session".into(), json!(record.session_id));
    data.insert("status".into(), json!("error"));
    data.insert("lastError".into(), json!(ORPHANED_RUN));
    data.insert("answer".into(), Value::Null);
    data.insert("requests".into(), Value::Null);
    Orphan::Ended(event_json(
        run,
        &StoredEvent {
            seq: next + 1,
            kind: "finished".into(),
            data,
        },
    ))
}

/// One event as an SSE message.
fn sse(event: &Value) -> Event {
    let mut e = Event::default().data(event.to_string());
    if let Some(kind) = event.get("type").and_then(Value::as_str) {
        e = e.event(kind);
    }
    if let Some(seq) = event.get("seq").and_then(Value::as_u64) {
        e = e.id(seq.to_string());
    }
    e
}
