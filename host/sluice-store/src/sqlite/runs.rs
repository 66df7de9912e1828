//! Runs: the claim of a session with its prompt, the run's events, its end, cancellation;
//! and the run-time configuration.

use std::sync::Arc;

use rusqlite::{OptionalExtension, Transaction, params};
use serde_json::{Map, Value};
use sluice_protocol::{Role, SessionStatus};

use super::{APPEND_SQL, Fail, Inner, new_id, require_session, touch_session};
use crate::queue::{EventSink, PendingEvent};
use crate::runner::{process_is_live, process_token};
use crate::{ORPHANED_RUN, RunEnd, RunRecord, StoreError, StoredEvent, Topic, now_rfc3339};

/// A run with what decides whether it is live.
const RUN_SQL: &str = "
SELECT r.id, r.session_id, r.started_at, r.ended_at, r.status, r.cancel_requested,
       s.run_id IS r.id AND s.status = 'running', s.runner_pid, s.runner_token
FROM runs r JOIN sessions s ON s.id = r.session_id";

/// Whether the runner recorded on a session (`pid`, `token`) is alive: this process (with
/// its token), or another live process.
fn runner_alive(pid: Option<i64>, token: Option<&str>) -> bool {
    match pid.and_then(|p| u32::try_from(p).ok()) {
        Some(p) if p == std::process::id() => token == Some(process_token()),
        Some(p) => process_is_live(p),
        None => false,
    }
}

fn run_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<(RunRecord, Option<String>)> {
    let status: Option<String> = row.get(4)?;
    let current: bool = row.get(6)?;
    let pid: Option<i64> = row.get(7)?;
    let token: Option<String> = row.get(8)?;
    let ended_at: Option<String> = row.get(3)?;
    Ok((
        RunRecord {
            id: row.get(0)?,
            session_id: row.get(1)?,
            started_at: row.get(2)?,
            live: ended_at.is_none() && current && runner_alive(pid, token.as_deref()),
            ended_at,
            status: status.as_deref().and_then(SessionStatus::parse),
            cancel_requested: row.get::<_, i64>(5)? != 0,
        },
        status,
    ))
}

/// Appends event `kind` to run `run_id`, after its last; returns its position.
fn append_event(
    tx: &Transaction<'_>,
    run_id: &str,
    kind: &str,
    data: &Map<String, Value>,
) -> Result<u64, Fail> {
    let seq: Option<i64> = tx
        .prepare_cached(
            "UPDATE runs SET last_event = last_event + 1 WHERE id = ?1 RETURNING last_event",
        )?
        .query_row([run_id], |row| row.get(0))
        .optional()?;
    let seq = seq.ok_or_else(|| Fail::Store(StoreError::NoRun(run_id.to_owned())))?;
    let data = serde_json::to_string(data)
        .map_err(|e| Fail::Other(format!("cannot encode an event: {e}")))?;
    tx.prepare_cached("INSERT INTO run_events (run_id, seq, kind, data) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![run_id, seq, kind, data])?;
    Ok(seq.max(0) as u64)
}

/// Closes run `run_id` if it is still open: its status, the time, and its `finished` event.
fn close_run(
    tx: &Transaction<'_>,
    session: &str,
    run_id: &str,
    end: &RunEnd,
    now: &str,
) -> Result<bool, Fail> {
    let closed = tx
        .prepare_cached(
            "UPDATE runs SET ended_at = ?2, status = ?3 WHERE id = ?1 AND ended_at IS NULL",
        )?
        .execute(params![run_id, now, end.status.as_str()])?;
    if closed == 1 {
        append_event(tx, run_id, "finished", &end.finished_event(session))?;
    }
    Ok(closed == 1)
}

impl Inner {
    pub(super) fn begin_run(&self, id: &str, prompt: Option<&str>) -> Result<String, StoreError> {
        let ours = std::process::id();
        let token = process_token();
        let (run_id, closed) = self.write("begin a run of session", id, |tx| {
            let (status, pid, runner, previous): (
                String,
                Option<i64>,
                Option<String>,
                Option<String>,
            ) = tx
                .prepare_cached(
                    "SELECT status, runner_pid, runner_token, run_id FROM sessions WHERE id = ?1",
                )?
                .query_row([id], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
                })
                .optional()?
                .ok_or_else(|| StoreError::NoSession(id.to_owned()))?;
            if status == SessionStatus::Running.as_str() && runner_alive(pid, runner.as_deref())
            {
                return Err(StoreError::Busy(id.to_owned()).into());
            }
            let now = now_rfc3339();
            // A run its runner left open (the runner died) is closed first.
            let mut closed = None;
            if let Some(previous) = previous {
                let end = RunEnd::status(SessionStatus::Error, Some(ORPHANED_RUN));
                if close_run(tx, id, &previous, &end, &now)? {
                    closed = Some(previous);
                }
            }
            let run_id = new_id('r')?;
            tx.prepare_cached("INSERT INTO runs (id, session_id, started_at) VALUES (?1, ?2, ?3)")?
                .execute(params![run_id, id, now])?;
            tx.prepare_cached(
                "UPDATE sessions SET status = ?2, runner_pid = ?3, runner_token = ?4, updated_at = ?5, run_id = ?6
                 WHERE id = ?1",
            )?
            .execute(params![id, SessionStatus::Running.as_str(), ours, token, now, run_id])?;
            if let Some(prompt) = prompt {
                tx.prepare_cached(
                    "INSERT INTO queued_prompts (session_id, content, created_at) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![id, prompt, now])?;
            }
            let mut started = Map::new();
            started.insert("session".into(), id.into());
            started.insert("prompt".into(), prompt.into());
            append_event(tx, &run_id, "started", &started)?;
            Ok((run_id, closed))
        })?;
        if let Some(closed) = closed {
            self.signals.notify(&Topic::Events(closed));
        }
        self.signals.notify(&Topic::Runs(id.to_owned()));
        Ok(run_id)
    }

    pub(super) fn append_queued_prompts(&self, id: &str) -> Result<Vec<u64>, StoreError> {
        self.write("append the queued prompts of session", id, |tx| {
            require_session(tx, id)?;
            let queued: Vec<(i64, String, String)> = tx
                .prepare_cached(
                    "SELECT id, content, created_at FROM queued_prompts WHERE session_id = ?1 ORDER BY id",
                )?
                .query_map([id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
                .collect::<Result<_, _>>()?;
            let Some((last, _, _)) = queued.last() else {
                return Ok(Vec::new());
            };
            touch_session(tx, id, &now_rfc3339())?;
            let mut seqs = Vec::with_capacity(queued.len());
            let mut append = tx.prepare_cached(APPEND_SQL)?;
            for (_, content, created_at) in &queued {
                let seq: i64 = append.query_row(
                    params![id, Role::User.as_str(), content, None::<String>, None::<String>, created_at],
                    |row| row.get(0),
                )?;
                seqs.push(seq.max(0) as u64);
            }
            tx.prepare_cached("DELETE FROM queued_prompts WHERE session_id = ?1 AND id <= ?2")?
                .execute(params![id, last])?;
            Ok(seqs)
        })
    }

    pub(super) fn end_run(&self, id: &str, end: &RunEnd) -> Result<(), StoreError> {
        let closed = self.write("end the run of session", id, |tx| {
            let now = now_rfc3339();
            let run: Option<Option<String>> = tx
                .prepare_cached(
                    "UPDATE sessions SET status = ?2, last_error = ?3, runner_pid = NULL, runner_token = NULL,
                     updated_at = ?4 WHERE id = ?1 RETURNING run_id",
                )?
                .query_row(params![id, end.status.as_str(), end.last_error, now], |row| {
                    row.get(0)
                })
                .optional()?;
            let run = run.ok_or_else(|| StoreError::NoSession(id.to_owned()))?;
            match run {
                Some(run) if close_run(tx, id, &run, end, &now)? => Ok(Some(run)),
                _ => Ok(None),
            }
        })?;
        if let Some(run) = closed {
            self.signals.notify(&Topic::Events(run));
        }
        Ok(())
    }

    pub(super) fn run(&self, run_id: &str) -> Result<RunRecord, StoreError> {
        self.read("read run", run_id, |tx| {
            let (run, _) = tx
                .prepare_cached(&format!("{RUN_SQL} WHERE r.id = ?1"))?
                .query_row([run_id], run_row)
                .optional()?
                .ok_or_else(|| StoreError::NoRun(run_id.to_owned()))?;
            Ok(run)
        })
    }

    pub(super) fn latest_run(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        self.read("read the latest run of session", id, |tx| {
            require_session(tx, id)?;
            let run = tx
                .prepare_cached(&format!("{RUN_SQL} WHERE r.id = s.run_id AND s.id = ?1"))?
                .query_row([id], run_row)
                .optional()?;
            Ok(run.map(|(run, _)| run))
        })
    }

    pub(super) fn events(&self, run_id: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
        self.read("read the events of run", run_id, |tx| {
            let found = tx
                .prepare_cached("SELECT 1 FROM runs WHERE id = ?1")?
                .query_row([run_id], |_| Ok(()))
                .optional()?;
            found.ok_or_else(|| StoreError::NoRun(run_id.to_owned()))?;
            let after = i64::try_from(after).unwrap_or(i64::MAX);
            let rows: Vec<(i64, String, String)> = tx
                .prepare_cached(
                    "SELECT seq, kind, data FROM run_events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq",
                )?
                .query_map(params![run_id, after], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                })?
                .collect::<Result<_, _>>()?;
            rows.into_iter()
                .map(|(seq, kind, data)| {
                    let data = serde_json::from_str(&data).map_err(|e| {
                        Fail::Other(format!("event {seq} is not a JSON object: {e}"))
                    })?;
                    Ok(StoredEvent {
                        seq: seq.max(0) as u64,
                        kind,
                        data,
                    })
                })
                .collect()
        })
    }

    pub(super) fn request_cancel(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        let run = self.write("cancel the run of session", id, |tx| {
            require_session(tx, id)?;
            let open: Option<String> = tx
                .prepare_cached(
                    "UPDATE runs SET cancel_requested = 1
                     WHERE id = (SELECT run_id FROM sessions WHERE id = ?1) AND ended_at IS NULL
                     RETURNING id",
                )?
                .query_row([id], |row| row.get(0))
                .optional()?;
            let Some(open) = open else { return Ok(None) };
            let (run, _) = tx
                .prepare_cached(&format!("{RUN_SQL} WHERE r.id = ?1"))?
                .query_row([&open], run_row)?;
            Ok(Some(run))
        })?;
        if let Some(run) = &run {
            self.signals.notify(&Topic::Cancel(run.id.clone()));
        }
        Ok(run)
    }

    pub(super) fn config(&self) -> Result<Vec<(String, Value)>, StoreError> {
        self.read("read the run-time configuration", "", |tx| {
            let rows: Vec<(String, String)> = tx
                .prepare_cached("SELECT key, value FROM config ORDER BY key")?
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect::<Result<_, _>>()?;
            rows.into_iter()
                .map(|(key, value)| {
                    let value = serde_json::from_str(&value).map_err(|e| {
                        Fail::Other(format!("configuration key {key:?} is not JSON: {e}"))
                    })?;
                    Ok((key, value))
                })
                .collect()
        })
    }

    pub(super) fn set_config(&self, values: &[(String, Value)]) -> Result<(), StoreError> {
        self.write("change the run-time configuration", "", |tx| {
            let now = now_rfc3339();
            let mut upsert = tx.prepare_cached(
                "INSERT INTO config (key, value, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            )?;
            for (key, value) in values {
                upsert.execute(params![key, value.to_string(), now])?;
            }
            Ok(())
        })
    }
}

#[async_trait::async_trait]
impl EventSink for Inner {
    async fn write_events(self: Arc<Self>, batch: Vec<PendingEvent>) -> Result<(), StoreError> {
        self.call(move |s| s.write_events_now(&batch)).await
    }
}

impl Inner {
    /// Stores `batch` in one transaction and wakes the subscriptions to its runs' events.
    fn write_events_now(&self, batch: &[PendingEvent]) -> Result<(), StoreError> {
        let runs = self.write("store run events", "", |tx| {
            let mut runs: Vec<String> = Vec::new();
            for e in batch {
                append_event(tx, &e.run_id, &e.kind, &e.data)?;
                if !runs.contains(&e.run_id) {
                    runs.push(e.run_id.clone());
                }
            }
            Ok(runs)
        })?;
        for run in runs {
            self.signals.notify(&Topic::Events(run));
        }
        Ok(())
    }
}
