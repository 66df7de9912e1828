//! The runs this server executes, and reading any run's events from the store.
//!
//! One run per session: the store decides ([`sluice_agent::Agent::claim`],
//! [`sluice_store::Store::begin_run`]), so the rule holds across every process and replica
//! sharing the store. A run this server executes is registered here once the store has
//! granted it, for its cancellation token and for `?wait=true`.
//!
//! Events live in the store (docs/replicas.md#running-several-replicas): the run's `started`
//! and `finished` events are written with its claim and its end; the loop's events in
//! between are queued ([`sluice_store::Store::push_event`]) and stored in order. Any replica streams any run
//! from them, and replays it from `seq` 1 after it ended, also after a restart.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Map, Value, json};
use sluice_agent::{AgentError, Outcome, RunEvent};
use sluice_protocol::SessionStatus;
use sluice_store::StoredEvent;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// A run this server executes.
pub(crate) struct LocalRun {
    /// The run's id (`r-` and 12 characters), as the store recorded it.
    pub(crate) id: String,
    /// The session.
    pub(crate) session: String,
    /// Fires to cancel the run.
    pub(crate) cancel: CancellationToken,
    /// How it ended, once it has.
    end: watch::Sender<Option<RunEnd>>,
}

impl LocalRun {
    /// Records how the run ended and wakes its waiters.
    pub(crate) fn finish(&self, end: RunEnd) {
        self.end.send_replace(Some(end));
    }

    /// Waits for the run to end.
    pub(crate) async fn wait(&self) -> RunEnd {
        let mut rx = self.end.subscribe();
        loop {
            if let Some(end) = rx.borrow_and_update().clone() {
                return end;
            }
            // The sender lives as long as `self`.
            if rx.changed().await.is_err() {
                tokio::task::yield_now().await;
            }
        }
    }
}

/// The fields of a loop event, as stored (camelCase, without `type`), and its type.
pub(crate) fn event_fields(e: &RunEvent) -> Option<(String, Map<String, Value>)> {
    let Ok(Value::Object(mut fields)) = serde_json::to_value(e) else {
        return None;
    };
    let kind = match fields.remove("type") {
        Some(Value::String(k)) => k,
        _ => "event".to_string(),
    };
    Some((kind, fields))
}

/// A stored event as the API shows it: `{"type", "runId", "seq", …its fields}`.
pub(crate) fn event_json(run_id: &str, e: &StoredEvent) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!(e.kind));
    out.insert("runId".into(), json!(run_id));
    out.insert("seq".into(), json!(e.seq));
    out.extend(e.data.clone());
    Value::Object(out)
}

/// How a run ended, as its `finished` event and `?wait=true` replies say.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunEnd {
    pub(crate) status: SessionStatus,
    pub(crate) last_error: Option<String>,
    pub(crate) answer: Option<String>,
    pub(crate) requests: Option<u32>,
}

impl RunEnd {
    /// The end of a run from what [`sluice_agent::Agent::run_claimed`] returned.
    pub(crate) fn from_result(result: Result<Outcome, AgentError>) -> RunEnd {
        match result {
            Ok(o) => RunEnd {
                status: o.status,
                last_error: o.last_error,
                answer: o.answer,
                requests: Some(o.requests),
            },
            Err(e @ AgentError::AwaitingApproval { .. }) => RunEnd {
                status: SessionStatus::AwaitingApproval,
                last_error: Some(e.to_string()),
                answer: None,
                requests: Some(0),
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
            requests: None,
        }
    }

    /// The end a `finished` event's fields record.
    pub(crate) fn from_event(data: &Map<String, Value>) -> RunEnd {
        RunEnd {
            status: data
                .get("status")
                .and_then(Value::as_str)
                .and_then(SessionStatus::parse)
                .unwrap_or(SessionStatus::Error),
            last_error: data
                .get("lastError")
                .and_then(Value::as_str)
                .map(str::to_string),
            answer: data
                .get("answer")
                .and_then(Value::as_str)
                .map(str::to_string),
            requests: data
                .get("requests")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok()),
        }
    }
}

/// The runs this server executes, by session.
#[derive(Default)]
pub(crate) struct Runs {
    running: Mutex<HashMap<String, Arc<LocalRun>>>,
}

impl Runs {
    fn running(&self) -> MutexGuard<'_, HashMap<String, Arc<LocalRun>>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers run `id` of `session`, which the store has granted.
    pub(crate) fn begin(&self, session: &str, id: &str) -> Arc<LocalRun> {
        let run = Arc::new(LocalRun {
            id: id.to_string(),
            session: session.to_string(),
            cancel: CancellationToken::new(),
            end: watch::Sender::new(None),
        });
        self.running().insert(session.to_string(), run.clone());
        run
    }

    /// Forgets `run`, which has ended.
    pub(crate) fn ended(&self, run: &LocalRun) {
        let mut running = self.running();
        if running.get(&run.session).is_some_and(|r| r.id == run.id) {
            running.remove(&run.session);
        }
    }

    /// The run of `session` this server executes, if any.
    pub(crate) fn current(&self, session: &str) -> Option<Arc<LocalRun>> {
        self.running().get(session).cloned()
    }

    /// Every run this server executes.
    pub(crate) fn all(&self) -> Vec<Arc<LocalRun>> {
        self.running().values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_camel_cased_with_their_type_apart() {
        let (kind, fields) = event_fields(&RunEvent::ToolFinished {
            call_id: "c1".into(),
            name: "read_file".into(),
            bytes: 10,
            full_bytes: 10,
            truncated: false,
            paged: true,
            error: false,
        })
        .unwrap();
        assert_eq!(kind, "tool_finished");
        let stored = StoredEvent {
            seq: 3,
            kind,
            data: fields,
        };
        assert_eq!(
            event_json("r-1", &stored),
            json!({"type": "tool_finished", "runId": "r-1", "seq": 3, "callId": "c1", "name": "read_file", "bytes": 10, "fullBytes": 10, "truncated": false, "paged": true, "error": false})
        );
    }

    #[test]
    fn the_runs_of_this_server() {
        let runs = Runs::default();
        let a = runs.begin("s-1", "r-1");
        runs.begin("s-2", "r-2");
        assert_eq!(runs.current("s-1").unwrap().id, "r-1");
        a.finish(RunEnd::failed("x".into()));
        assert_eq!(
            a.end.borrow().as_ref().unwrap().status,
            SessionStatus::Error
        );
        runs.ended(&a);
        assert!(runs.current("s-1").is_none());
        assert_eq!(runs.all().len(), 1);
    }
}
