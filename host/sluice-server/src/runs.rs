//! Runs in progress and the latest run of each session: who may start a run, its event log,
//! cancellation, and waiting for it to end.
//!
//! One run per session: the store decides ([`sluice_agent::Agent::claim`],
//! [`sluice_store::Store::begin_run`]), so the rule holds across every process sharing the
//! store; a run is registered here only once the store has granted it. A session's latest
//! [`Run`] is kept in [`Runs`] for its events and its cancellation.
//!
//! Every event of a run is kept in its log, so a client that subscribes late (or
//! reconnects) replays the run from its start; the log of a finished run is kept until the
//! session's next run starts, or until [`KEPT_FINISHED_RUNS`] newer runs of other sessions
//! have finished.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Map, Value, json};
use sluice_agent::{AgentError, Outcome, RunEvent};
use sluice_protocol::SessionStatus;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::error::ApiError;

/// How many finished runs keep their event logs (the newest ones), at least.
pub(crate) const KEPT_FINISHED_RUNS: usize = 1024;

/// One run of a session.
pub(crate) struct Run {
    /// The run's id (`r-` and 12 characters), unique within this server.
    pub(crate) id: String,
    /// The session.
    pub(crate) session: String,
    /// Fires to cancel the run.
    pub(crate) cancel: CancellationToken,
    log: Mutex<Log>,
    /// The number of events logged so far; changes wake subscribers.
    version: watch::Sender<usize>,
}

#[derive(Default)]
struct Log {
    events: Vec<Arc<Value>>,
    /// The final event, once the run has ended.
    finished: Option<Arc<Value>>,
}

impl Run {
    fn new(id: String, session: String) -> Run {
        Run {
            id,
            session,
            cancel: CancellationToken::new(),
            log: Mutex::new(Log::default()),
            version: watch::Sender::new(0),
        }
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends an event (`kind` and its fields) to the log, numbered from 1.
    pub(crate) fn push(&self, kind: &str, fields: Map<String, Value>) -> Arc<Value> {
        let mut log = self.log();
        let mut event = Map::new();
        event.insert("type".into(), json!(kind));
        event.insert("runId".into(), json!(self.id));
        event.insert("seq".into(), json!(log.events.len() + 1));
        event.extend(fields);
        let event = Arc::new(Value::Object(event));
        log.events.push(event.clone());
        let n = log.events.len();
        drop(log);
        self.version.send_replace(n);
        event
    }

    /// Logs a loop event (its fields come in camelCase from its serde form).
    pub(crate) fn push_run_event(&self, e: &RunEvent) {
        let Ok(Value::Object(fields)) = serde_json::to_value(e) else {
            return;
        };
        let kind = fields
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("event")
            .to_string();
        let fields = fields.into_iter().filter(|(k, _)| k != "type").collect();
        self.push(&kind, fields);
    }

    /// Logs the final `finished` event: `status`, `lastError`, `answer`, `requests`.
    pub(crate) fn finish(&self, end: &RunEnd) {
        let mut fields = Map::new();
        fields.insert("session".into(), json!(self.session));
        fields.insert("status".into(), json!(end.status));
        fields.insert("lastError".into(), json!(end.last_error));
        fields.insert("answer".into(), json!(end.answer));
        fields.insert("requests".into(), json!(end.requests));
        let event = self.push("finished", fields);
        self.log().finished = Some(event);
        // Wake waiters that saw the `finished` event's number before `finished` was set.
        self.version.send_modify(|_| {});
    }

    /// True while the run has not ended.
    pub(crate) fn running(&self) -> bool {
        self.log().finished.is_none()
    }

    /// Events `from..` (0-based) of the log, and whether the run has ended.
    pub(crate) fn events_from(&self, from: usize) -> (Vec<Arc<Value>>, bool) {
        let log = self.log();
        let events = log.events.get(from..).unwrap_or_default().to_vec();
        (events, log.finished.is_some())
    }

    /// A receiver that changes whenever an event is logged.
    pub(crate) fn subscribe(&self) -> watch::Receiver<usize> {
        self.version.subscribe()
    }

    /// Waits for the run to end and returns its `finished` event.
    pub(crate) async fn wait(&self) -> Arc<Value> {
        let mut rx = self.subscribe();
        loop {
            if let Some(end) = self.log().finished.clone() {
                return end;
            }
            // The sender lives as long as `self`, so `changed` cannot fail while we wait.
            if rx.changed().await.is_err() {
                tokio::task::yield_now().await;
            }
        }
    }
}

/// How a run ended, as its `finished` event and `?wait=true` replies say.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunEnd {
    pub(crate) status: SessionStatus,
    pub(crate) last_error: Option<String>,
    pub(crate) answer: Option<String>,
    pub(crate) requests: u32,
}

impl RunEnd {
    /// The end of a run from what [`sluice_agent::Agent::run`] returned.
    pub(crate) fn from_result(result: Result<Outcome, AgentError>) -> RunEnd {
        match result {
            Ok(o) => RunEnd {
                status: o.status,
                last_error: o.last_error,
                answer: o.answer,
                requests: o.requests,
            },
            Err(e @ AgentError::AwaitingApproval { .. }) => RunEnd {
                status: SessionStatus::AwaitingApproval,
                last_error: Some(e.to_string()),
                answer: None,
                requests: 0,
            },
            Err(e) => RunEnd::failed(e.to_string()),
        }
    }

    /// A run that failed with `message`.
    pub(crate) fn failed(message: String) -> RunEnd {
        RunEnd {
            status: SessionStatus::Error,
            last_error: Some(message),
            answer: None,
            requests: 0,
        }
    }
}

/// The latest run of every session that has one.
pub(crate) struct Runs {
    inner: Mutex<RunsInner>,
    /// Every run that starts, for event streams waiting for a session's next run.
    started: broadcast::Sender<Arc<Run>>,
}

#[derive(Default)]
struct RunsInner {
    latest: HashMap<String, Arc<Run>>,
    /// Finished runs, oldest first, for eviction: (session, run id).
    finished: VecDeque<(String, String)>,
}

impl Runs {
    pub(crate) fn new() -> Runs {
        Runs {
            inner: Mutex::new(RunsInner::default()),
            started: broadcast::Sender::new(256),
        }
    }

    fn inner(&self) -> MutexGuard<'_, RunsInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a new run `id` of `session`, which the store has granted: it becomes the
    /// session's latest run.
    pub(crate) fn begin(&self, session: &str, id: String) -> Arc<Run> {
        let run = Arc::new(Run::new(id, session.to_string()));
        self.inner().latest.insert(session.to_string(), run.clone());
        // Nobody may be listening: that is fine.
        let _ = self.started.send(run.clone());
        run
    }

    /// Notes that `run` has ended, and forgets the logs of the oldest finished runs beyond
    /// [`KEPT_FINISHED_RUNS`].
    pub(crate) fn ended(&self, run: &Run) {
        let mut inner = self.inner();
        inner
            .finished
            .push_back((run.session.clone(), run.id.clone()));
        while inner.finished.len() > KEPT_FINISHED_RUNS {
            let Some((session, id)) = inner.finished.pop_front() else {
                break;
            };
            if inner
                .latest
                .get(&session)
                .is_some_and(|r| r.id == id && !r.running())
            {
                inner.latest.remove(&session);
            }
        }
    }

    /// The latest run of `session`, running or not.
    pub(crate) fn latest(&self, session: &str) -> Option<Arc<Run>> {
        self.inner().latest.get(session).cloned()
    }

    /// The run of `session` in progress, if any.
    pub(crate) fn current(&self, session: &str) -> Option<Arc<Run>> {
        self.latest(session).filter(|r| r.running())
    }

    /// Every run in progress.
    pub(crate) fn all_running(&self) -> Vec<Arc<Run>> {
        self.inner()
            .latest
            .values()
            .filter(|r| r.running())
            .cloned()
            .collect()
    }

    /// A receiver of every run that starts from now on.
    pub(crate) fn subscribe_started(&self) -> broadcast::Receiver<Arc<Run>> {
        self.started.subscribe()
    }
}

/// A fresh run id: `r-` and 12 characters of Crockford-style base32.
pub(crate) fn new_run_id() -> Result<String, ApiError> {
    const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)
        .map_err(|e| ApiError::internal(format!("cannot read random bytes for a run id: {e}")))?;
    let mut bits = u64::from_le_bytes(bytes);
    let mut id = String::with_capacity(14);
    id.push_str("r-");
    for _ in 0..12 {
        id.push(char::from(ALPHABET[(bits & 31) as usize]));
        bits >>= 5;
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_numbered_camel_cased_and_end_with_finished() {
        let run = Run::new("r-1".into(), "s-1".into());
        run.push_run_event(&RunEvent::ToolFinished {
            call_id: "c1".into(),
            name: "read_file".into(),
            bytes: 10,
            full_bytes: 10,
            truncated: false,
            paged: true,
            error: false,
        });
        assert!(run.running());
        run.finish(&RunEnd::failed("x".into()));
        assert!(!run.running());
        let (events, done) = run.events_from(0);
        assert!(done);
        assert_eq!(
            events[0].as_ref(),
            &json!({"type": "tool_finished", "runId": "r-1", "seq": 1, "callId": "c1", "name": "read_file", "bytes": 10, "fullBytes": 10, "truncated": false, "paged": true, "error": false})
        );
        assert_eq!(events[1]["type"], "finished");
        assert_eq!(events[1]["status"], "error");
        assert_eq!(run.events_from(2).0.len(), 0);
        assert_eq!(run.events_from(5).0.len(), 0);
    }

    #[test]
    fn the_latest_run_of_each_session() {
        let runs = Runs::new();
        let a = runs.begin("s-1", new_run_id().unwrap());
        runs.begin("s-2", new_run_id().unwrap());
        assert_eq!(runs.current("s-1").unwrap().id, a.id);
        a.finish(&RunEnd::failed("x".into()));
        runs.ended(&a);
        assert!(runs.current("s-1").is_none());
        assert_eq!(runs.latest("s-1").unwrap().id, a.id);
        let b = runs.begin("s-1", new_run_id().unwrap());
        assert_ne!(a.id, b.id);
        assert_eq!(runs.all_running().len(), 2);
    }
}
