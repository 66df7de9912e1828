//! `GET /sessions/{id}/events`: a run's events as server-sent events.
//!
//! Each SSE message has `event: <type>`, `id: <seq>` and `data: <the event as JSON>`.
//! Types: `started`, `model_request`, `model_reply`, `tool_started`, `tool_finished`,
//! `shrunk`, `awaiting_approval`, and last `finished` (with `status`: `completed`, `error`,
//! `aborted` or `awaiting_approval`), after which the stream ends. A subscriber always gets
//! the run from its first event, however late it subscribes.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use serde_json::Value;
use tokio::sync::{broadcast, watch};

use crate::runs::Run;
use crate::state::AppState;

/// How often an idle stream sends a comment, so proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Which run a stream follows.
pub(crate) enum Follow {
    /// This run, from its first event.
    Run(Arc<Run>),
    /// The session's next run, when it starts (the receiver was subscribed before looking
    /// for a run in progress, so none is missed).
    Next(broadcast::Receiver<Arc<Run>>),
}

enum Phase {
    Waiting(broadcast::Receiver<Arc<Run>>),
    Streaming {
        run: Arc<Run>,
        next: usize,
        changes: watch::Receiver<usize>,
    },
    Done,
}

struct Tail {
    state: AppState,
    session: String,
    phase: Phase,
    buffer: VecDeque<Arc<Value>>,
}

/// The SSE response following `follow` for `session`.
pub(crate) fn stream(
    state: AppState,
    session: String,
    follow: Follow,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let phase = match follow {
        Follow::Run(run) => streaming(run),
        Follow::Next(rx) => Phase::Waiting(rx),
    };
    let tail = Tail {
        state,
        session,
        phase,
        buffer: VecDeque::new(),
    };
    let events = futures_util::stream::unfold(tail, |mut tail| async move {
        let event = tail.next().await?;
        Some((Ok(event), tail))
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
}

fn streaming(run: Arc<Run>) -> Phase {
    // Subscribe before reading the log: an event logged after this wakes the stream.
    let changes = run.subscribe();
    Phase::Streaming {
        run,
        next: 0,
        changes,
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
            match &mut self.phase {
                Phase::Done => return None,
                Phase::Waiting(rx) => {
                    let shutdown = self.state.shutdown_token().clone();
                    let started = tokio::select! {
                        r = rx.recv() => r,
                        () = shutdown.cancelled() => return None,
                    };
                    match started {
                        Ok(run) if run.session == self.session => self.phase = streaming(run),
                        Ok(_) => {}
                        Err(broadcast::error::RecvError::Lagged(_)) => {
                            if let Some(run) = self.state.runs().current(&self.session) {
                                self.phase = streaming(run);
                            }
                        }
                        Err(broadcast::error::RecvError::Closed) => return None,
                    }
                }
                Phase::Streaming { run, next, changes } => {
                    let (events, done) = run.events_from(*next);
                    if !events.is_empty() {
                        *next += events.len();
                        self.buffer.extend(events);
                        continue;
                    }
                    if done {
                        self.phase = Phase::Done;
                        continue;
                    }
                    // The run's sender lives as long as the run; a closed channel cannot
                    // happen while we hold it, but end the stream rather than spin if it does.
                    if changes.changed().await.is_err() {
                        return None;
                    }
                }
            }
        }
    }
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
