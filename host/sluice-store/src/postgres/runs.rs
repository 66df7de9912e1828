//! Runs in PostgreSQL: the claim (an advisory lock on a held connection, and the rows), the
//! run's events, its end, cancellation; and the run-time configuration.

use std::sync::Arc;

use deadpool_postgres::{Object, Transaction};
use serde_json::{Map, Value};
use sluice_protocol::{Role, SessionStatus};
use tokio_postgres::Row;

use super::sessions::{APPEND_SQL, require_session};
use super::{CHANNEL, Fail, Held, PgInner, lock_key};
use crate::queue::{EventSink, PendingEvent};
use crate::signals::Signals;
use crate::{ORPHANED_RUN, RunEnd, RunRecord, StoreError, StoredEvent, Topic, now_rfc3339};

/// A run, and whether it is still the session's run in progress by the rows.
const RUN_SQL: &str = "
SELECT r.id, r.session_id, r.started_at, r.ended_at, r.status, r.cancel_requested,
       (s.run_id = r.id AND s.status = 'running')
FROM runs r JOIN sessions s ON s.id = r.session_id";

/// Takes a session's advisory lock (column 0: whether it was free) on a run's connection,
/// and asks the server to end that connection, and so free the lock, within 10 s of its
/// host vanishing without closing it (a power cut, a lost network): TCP keepalive probes
/// after 5 s of silence, one a second, the connection ended after 5 unanswered; and data
/// unacknowledged for 10 s ends it too (`tcp_user_timeout`, PostgreSQL 12 or newer). The
/// server's defaults leave such a lock held for over two hours (docs/replicas.md#failover).
/// A process that dies on a host that lives closes its connections as it exits: that frees
/// its locks at once, without these.
const LOCK_SQL: &str = "SELECT pg_try_advisory_lock($1),
    set_config('tcp_keepalives_idle', '5', false),
    set_config('tcp_keepalives_interval', '1', false),
    set_config('tcp_keepalives_count', '5', false),
    set_config('tcp_user_timeout', '10000', false)";

/// Sends `topic` to every replica when the transaction commits.
async fn notify(tx: &Transaction<'_>, topic: &Topic) -> Result<(), Fail> {
    tx.execute(
        "SELECT pg_notify($1, $2)",
        &[&CHANNEL, &Signals::payload(topic)],
    )
    .await?;
    Ok(())
}

/// Appends event `kind` to run `run_id`, after its last; returns its position.
async fn append_event(
    tx: &Transaction<'_>,
    run_id: &str,
    kind: &str,
    data: &Map<String, Value>,
) -> Result<u64, Fail> {
    let data = serde_json::to_string(data)
        .map_err(|e| Fail::Other(format!("cannot encode an event: {e}")))?;
    let stmt = tx
        .prepare_cached(
            "WITH r AS (UPDATE runs SET last_event = last_event + 1 WHERE id = $1 RETURNING last_event)
             INSERT INTO run_events (run_id, seq, kind, data) SELECT $1, r.last_event, $2, $3 FROM r
             RETURNING seq",
        )
        .await?;
    let row = tx
        .query_opt(&stmt, &[&run_id, &kind, &data])
        .await?
        .ok_or_else(|| Fail::Store(StoreError::NoRun(run_id.to_owned())))?;
    Ok(row.get::<_, i64>(0).max(0) as u64)
}

/// Closes run `run_id` if it is open: its status, the time, its `finished` event, and a
/// notification. True when it was open.
async fn close_run(
    tx: &Transaction<'_>,
    session: &str,
    run_id: &str,
    end: &RunEnd,
    now: &str,
) -> Result<bool, Fail> {
    let closed = tx
        .execute(
            "UPDATE runs SET ended_at = $2, status = $3 WHERE id = $1 AND ended_at IS NULL",
            &[&run_id, &now, &end.status.as_str()],
        )
        .await?;
    if closed == 1 {
        append_event(tx, run_id, "finished", &end.finished_event(session)).await?;
        notify(tx, &Topic::Events(run_id.to_owned())).await?;
    }
    Ok(closed == 1)
}

impl PgInner {
    /// A run record from a [`RUN_SQL`] row, with its liveness: its session's lock is held
    /// (by this store, on a connection still open, or by another).
    async fn run_record(&self, row: &Row) -> Result<RunRecord, Fail> {
        let ended_at: Option<String> = row.get(3);
        let current: Option<bool> = row.get(6);
        let session_id: String = row.get(1);
        let live = ended_at.is_none() && current == Some(true) && self.locked(&session_id).await?;
        let status: Option<String> = row.get(4);
        Ok(RunRecord {
            id: row.get(0),
            started_at: row.get(2),
            ended_at,
            status: status.as_deref().and_then(SessionStatus::parse),
            cancel_requested: row.get(5),
            live,
            session_id,
        })
    }

    /// Whether some connection holds session `id`'s advisory lock.
    async fn locked(&self, id: &str) -> Result<bool, Fail> {
        let ours = self
            .held()
            .get(id)
            .map(|h| h.conn.try_lock().map_or(true, |c| !c.is_closed()));
        if ours == Some(true) {
            return Ok(true);
        }
        let key = lock_key(id) as u64;
        let (hi, lo) = ((key >> 32) as u32, key as u32);
        let conn = self.conn().await?;
        let stmt = conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM pg_locks
                 WHERE locktype = 'advisory' AND granted AND objsubid = 1
                   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                   AND classid = $1 AND objid = $2)",
            )
            .await?;
        Ok(conn.query_one(&stmt, &[&hi, &lo]).await?.get(0))
    }

    pub(super) async fn begin_run(
        &self,
        id: &str,
        prompt: Option<&str>,
    ) -> Result<String, StoreError> {
        let what = "begin a run of session";
        // This store runs it already (on a connection still open).
        let stale = match self.held().get(id) {
            Some(h) => match h.conn.try_lock() {
                Ok(c) if c.is_closed() => true,
                _ => return Err(StoreError::Busy(id.to_owned())),
            },
            None => false,
        };
        if stale {
            self.held().remove(id);
        }
        let key = lock_key(id);
        let mut conn = self.runs.get().await.map_err(|e| {
            self.error(
                what,
                id,
                Fail::Other(format!(
                    "no connection for a run (at most {} runs at once per process): {e}",
                    super::MAX_RUNS
                )),
            )
        })?;
        let locked: bool = conn
            .query_one(LOCK_SQL, &[&key])
            .await
            .map_err(|e| self.error(what, id, e.into()))?
            .get(0);
        if !locked {
            return Err(StoreError::Busy(id.to_owned()));
        }
        match self.claim(&mut conn, id, prompt).await {
            Ok(run_id) => {
                self.held().insert(
                    id.to_owned(),
                    Held {
                        conn: Arc::new(tokio::sync::Mutex::new(conn)),
                        key,
                    },
                );
                self.notify(&Topic::Runs(id.to_owned()));
                Ok(run_id)
            }
            Err(e) => {
                release(conn, key).await;
                Err(self.error(what, id, e))
            }
        }
    }

    /// The rows of a claim, on the connection holding the session's lock.
    async fn claim(
        &self,
        conn: &mut Object,
        id: &str,
        prompt: Option<&str>,
    ) -> Result<String, Fail> {
        let tx = conn.transaction().await?;
        let previous: Option<String> = tx
            .query_opt(
                "SELECT run_id FROM sessions WHERE id = $1 FOR UPDATE",
                &[&id],
            )
            .await?
            .ok_or_else(|| Fail::Store(StoreError::NoSession(id.to_owned())))?
            .get(0);
        let now = now_rfc3339();
        // We hold the lock, so a run left open lost its runner: close it.
        if let Some(previous) = previous {
            let end = RunEnd::status(SessionStatus::Error, Some(ORPHANED_RUN));
            close_run(&tx, id, &previous, &end, &now).await?;
        }
        let run_id = crate::ids::new_id('r').map_err(|e| Fail::Other(e.to_string()))?;
        tx.execute(
            "INSERT INTO runs (id, session_id, started_at) VALUES ($1, $2, $3)",
            &[&run_id, &id, &now],
        )
        .await?;
        tx.execute(
            "UPDATE sessions SET status = $2, runner = $3, updated_at = $4, run_id = $5 WHERE id = $1",
            &[&id, &SessionStatus::Running.as_str(), &self.token, &now, &run_id],
        )
        .await?;
        if let Some(prompt) = prompt {
            tx.execute(
                "INSERT INTO queued_prompts (session_id, content, created_at) VALUES ($1, $2, $3)",
                &[&id, &prompt.as_bytes(), &now],
            )
            .await?;
        }
        let mut started = Map::new();
        started.insert("session".into(), id.into());
        started.insert("prompt".into(), prompt.into());
        append_event(&tx, &run_id, "started", &started).await?;
        notify(&tx, &Topic::Runs(id.to_owned())).await?;
        tx.commit().await?;
        Ok(run_id)
    }

    pub(super) async fn append_queued_prompts(&self, id: &str) -> Result<Vec<u64>, StoreError> {
        let result: Result<Vec<u64>, Fail> = async {
            let mut conn = self.writer(id).await?;
            let tx = conn.transaction().await?;
            require_session(&tx, id).await?;
            let queued = tx
                .query(
                    "SELECT id, content, created_at FROM queued_prompts WHERE session_id = $1 ORDER BY id FOR UPDATE",
                    &[&id],
                )
                .await?;
            let Some(last) = queued.last().map(|row| row.get::<_, i64>(0)) else {
                return Ok(Vec::new());
            };
            let append = tx.prepare_cached(APPEND_SQL).await?;
            let now = now_rfc3339();
            let mut seqs = Vec::with_capacity(queued.len());
            for row in &queued {
                let content: Vec<u8> = row.get(1);
                let created_at: String = row.get(2);
                let seq: i64 = tx
                    .query_one(
                        &append,
                        &[&id, &Role::User.as_str(), &content, &None::<String>, &None::<Vec<u8>>, &created_at, &now],
                    )
                    .await?
                    .get(0);
                seqs.push(seq.max(0) as u64);
            }
            tx.execute(
                "DELETE FROM queued_prompts WHERE session_id = $1 AND id <= $2",
                &[&id, &last],
            )
            .await?;
            tx.commit().await?;
            Ok(seqs)
        }
        .await;
        result.map_err(|e| self.error("append the queued prompts of session", id, e))
    }

    pub(super) async fn end_run(&self, id: &str, end: &RunEnd) -> Result<(), StoreError> {
        let what = "end the run of session";
        let held = self.held().remove(id);
        let result = match &held {
            Some(h) => {
                let mut conn = h.conn.clone().lock_owned().await;
                match self.finish(&mut conn, id, end, None).await {
                    // The connection holding the lock is gone: end the run through another,
                    // unless another runner has taken the session over meanwhile.
                    Err(Fail::Pg(e)) if e.is_closed() => match self.conn().await {
                        Ok(mut other) => self.finish(&mut other, id, end, Some(&self.token)).await,
                        Err(p) => Err(p),
                    },
                    other => other,
                }
            }
            None => match self.conn().await {
                Ok(mut conn) => self.finish(&mut conn, id, end, None).await,
                Err(p) => Err(p),
            },
        };
        if let Some(h) = held {
            match Arc::try_unwrap(h.conn) {
                Ok(conn) => release(conn.into_inner(), h.key).await,
                // Someone still uses it (cannot happen once the run has stopped): unlock it
                // there; it returns to the pool when they are done.
                Err(conn) => {
                    let conn = conn.lock_owned().await;
                    let _ = conn
                        .execute("SELECT pg_advisory_unlock($1)", &[&h.key])
                        .await;
                }
            }
        }
        result.map_err(|e| self.error(what, id, e))
    }

    /// The rows of a run's end: the session's status, and the run closed with its
    /// `finished` event. With `fence`, only while the session's runner is that token.
    async fn finish(
        &self,
        conn: &mut Object,
        id: &str,
        end: &RunEnd,
        fence: Option<&str>,
    ) -> Result<(), Fail> {
        let tx = conn.transaction().await?;
        let now = now_rfc3339();
        let row = tx
            .query_opt(
                "UPDATE sessions SET status = $2, last_error = $3, runner = NULL, updated_at = $4
                 WHERE id = $1 AND ($5::TEXT IS NULL OR runner = $5) RETURNING run_id",
                &[
                    &id,
                    &end.status.as_str(),
                    &end.last_error.as_ref().map(|e| e.as_bytes()),
                    &now,
                    &fence,
                ],
            )
            .await?;
        let Some(row) = row else {
            require_session(&tx, id).await?;
            // Fenced out: another runner has the session now; ours changes nothing.
            return Ok(());
        };
        if let Some(run) = row.get::<_, Option<String>>(0) {
            close_run(&tx, id, &run, end, &now).await?;
        }
        tx.commit().await?;
        self.notify(&Topic::Events(String::new()));
        Ok(())
    }

    pub(super) async fn run(&self, run_id: &str) -> Result<RunRecord, StoreError> {
        let result: Result<RunRecord, Fail> = async {
            let row = {
                let conn = self.conn().await?;
                let stmt = conn
                    .prepare_cached(&format!("{RUN_SQL} WHERE r.id = $1"))
                    .await?;
                conn.query_opt(&stmt, &[&run_id])
                    .await?
                    .ok_or_else(|| Fail::Store(StoreError::NoRun(run_id.to_owned())))?
            };
            self.run_record(&row).await
        }
        .await;
        result.map_err(|e| self.error("read run", run_id, e))
    }

    pub(super) async fn latest_run(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        let result: Result<Option<RunRecord>, Fail> = async {
            let row = {
                let conn = self.conn().await?;
                require_session(&conn, id).await?;
                let stmt = conn
                    .prepare_cached(&format!("{RUN_SQL} WHERE r.id = s.run_id AND s.id = $1"))
                    .await?;
                conn.query_opt(&stmt, &[&id]).await?
            };
            match row {
                Some(row) => Ok(Some(self.run_record(&row).await?)),
                None => Ok(None),
            }
        }
        .await;
        result.map_err(|e| self.error("read the latest run of session", id, e))
    }

    pub(super) async fn events(
        &self,
        run_id: &str,
        after: u64,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let result: Result<Vec<StoredEvent>, Fail> = async {
            let conn = self.conn().await?;
            let after = i64::try_from(after).unwrap_or(i64::MAX);
            let stmt = conn
                .prepare_cached(
                    "SELECT e.seq, e.kind, e.data FROM runs r
                     LEFT JOIN run_events e ON e.run_id = r.id AND e.seq > $2
                     WHERE r.id = $1 ORDER BY e.seq",
                )
                .await?;
            let rows = conn.query(&stmt, &[&run_id, &after]).await?;
            if rows.is_empty() {
                return Err(Fail::Store(StoreError::NoRun(run_id.to_owned())));
            }
            rows.into_iter()
                .filter_map(|row| row.get::<_, Option<i64>>(0).map(|seq| (seq, row)))
                .map(|(seq, row)| {
                    let data: String = row.get(2);
                    let data = serde_json::from_str(&data).map_err(|e| {
                        Fail::Other(format!("event {seq} is not a JSON object: {e}"))
                    })?;
                    Ok(StoredEvent {
                        seq: seq.max(0) as u64,
                        kind: row.get(1),
                        data,
                    })
                })
                .collect()
        }
        .await;
        result.map_err(|e| self.error("read the events of run", run_id, e))
    }

    pub(super) async fn request_cancel(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        let result: Result<Option<RunRecord>, Fail> = async {
            let mut conn = self.conn().await?;
            let tx = conn.transaction().await?;
            require_session(&tx, id).await?;
            let open: Option<String> = tx
                .query_opt(
                    "UPDATE runs SET cancel_requested = true
                     WHERE id = (SELECT run_id FROM sessions WHERE id = $1) AND ended_at IS NULL
                     RETURNING id",
                    &[&id],
                )
                .await?
                .map(|row| row.get(0));
            let Some(open) = open else { return Ok(None) };
            notify(&tx, &Topic::Cancel(open.clone())).await?;
            let row = tx
                .query_one(&format!("{RUN_SQL} WHERE r.id = $1"), &[&open])
                .await?;
            // Liveness is judged before the cancel is committed and announced: once it is,
            // the replica running the run may end it and free its lock at once, and the run
            // would read as not live, so a cancel that worked would be answered 409.
            let record = self.run_record(&row).await?;
            tx.commit().await?;
            self.notify(&Topic::Cancel(open));
            Ok(Some(record))
        }
        .await;
        result.map_err(|e| self.error("cancel the run of session", id, e))
    }

    pub(super) async fn config(&self) -> Result<Vec<(String, Value)>, StoreError> {
        let result: Result<Vec<(String, Value)>, Fail> = async {
            let conn = self.conn().await?;
            let rows = conn
                .query("SELECT key, value FROM config ORDER BY key", &[])
                .await?;
            rows.into_iter()
                .map(|row| {
                    let key: String = row.get(0);
                    let value: String = row.get(1);
                    let value = serde_json::from_str(&value).map_err(|e| {
                        Fail::Other(format!("configuration key {key:?} is not JSON: {e}"))
                    })?;
                    Ok((key, value))
                })
                .collect()
        }
        .await;
        result.map_err(|e| self.error("read the run-time configuration", "", e))
    }

    pub(super) async fn set_config(&self, values: &[(String, Value)]) -> Result<(), StoreError> {
        let result: Result<(), Fail> = async {
            let mut conn = self.conn().await?;
            let tx = conn.transaction().await?;
            let now = now_rfc3339();
            for (key, value) in values {
                tx.execute(
                    "INSERT INTO config (key, value, updated_at) VALUES ($1, $2, $3)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                    &[key, &value.to_string(), &now],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(())
        }
        .await;
        result.map_err(|e| self.error("change the run-time configuration", "", e))
    }
}

/// Unlocks session lock `key` on `conn` and returns it to the pool; a connection that
/// cannot unlock is closed instead (which releases the lock).
async fn release(conn: Object, key: i64) {
    let unlocked = conn
        .query_one("SELECT pg_advisory_unlock($1)", &[&key])
        .await
        .map(|row| row.get::<_, bool>(0));
    if !matches!(unlocked, Ok(true)) {
        drop(Object::take(conn));
    }
}

#[async_trait::async_trait]
impl EventSink for PgInner {
    async fn write_events(self: Arc<Self>, batch: Vec<PendingEvent>) -> Result<(), StoreError> {
        let result: Result<Vec<String>, Fail> = async {
            let mut conn = self.conn().await?;
            let tx = conn.transaction().await?;
            let mut runs: Vec<String> = Vec::new();
            for e in &batch {
                append_event(&tx, &e.run_id, &e.kind, &e.data).await?;
                if !runs.contains(&e.run_id) {
                    runs.push(e.run_id.clone());
                }
            }
            for run in &runs {
                notify(&tx, &Topic::Events(run.clone())).await?;
            }
            tx.commit().await?;
            Ok(runs)
        }
        .await;
        let runs = result.map_err(|e| self.error("store run events", "", e))?;
        for run in runs {
            self.notify(&Topic::Events(run));
        }
        Ok(())
    }
}
