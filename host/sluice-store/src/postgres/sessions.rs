//! Sessions, transcripts, the audit and decisions, in PostgreSQL.

use sluice_protocol::{Message, Role, SessionStatus, ToolCall};
use tokio_postgres::Row;

use super::{Fail, PgInner};
use crate::{
    AuditEntry, CallRecord, Decision, SessionRecord, StoreError, StoredMessage, now_rfc3339,
    valid_session_name,
};

/// The one statement that appends a message: it counts the message on the session row
/// (taking that row's lock, so appends to one session are serialised) and inserts it.
/// One index lookup and one insert, whatever the length of the transcript.
pub(super) const APPEND_SQL: &str = "
WITH s AS (
    UPDATE sessions SET last_seq = last_seq + 1, updated_at = $7 WHERE id = $1 RETURNING last_seq
)
INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id, created_at)
SELECT $1, s.last_seq, $2, $3, $4, $5, $6 FROM s
RETURNING seq";

const SESSION_SQL: &str =
    "SELECT id, created_at, updated_at, status, last_error, last_seq, owner FROM sessions";

/// Text stored as `BYTEA`, read back.
pub(super) fn text(bytes: Vec<u8>, what: &str) -> Result<String, Fail> {
    String::from_utf8(bytes).map_err(|_| Fail::Other(format!("{what} is not UTF-8")))
}

fn session_record(row: &Row) -> Result<SessionRecord, Fail> {
    let id: String = row.get(0);
    let status: String = row.get(3);
    let status = SessionStatus::parse(&status)
        .ok_or_else(|| Fail::Other(format!("session {id:?} has unknown status {status:?}")))?;
    let last_error = row
        .get::<_, Option<Vec<u8>>>(4)
        .map(|b| text(b, "a lastError"))
        .transpose()?;
    Ok(SessionRecord {
        created_at: row.get(1),
        updated_at: row.get(2),
        status,
        last_error,
        message_count: row.get::<_, i64>(5).max(0) as u64,
        owner: row.get(6),
        id,
    })
}

/// Fails with [`StoreError::NoSession`] unless session `id` exists.
pub(super) async fn require_session(
    client: &impl deadpool_postgres::GenericClient,
    id: &str,
) -> Result<(), Fail> {
    let found = client
        .query_opt("SELECT 1 FROM sessions WHERE id = $1", &[&id])
        .await?;
    found
        .map(drop)
        .ok_or_else(|| Fail::Store(StoreError::NoSession(id.to_owned())))
}

/// Sets `updated_at` of session `id`; fails with [`StoreError::NoSession`] unless it exists.
pub(super) async fn touch_session(
    client: &impl deadpool_postgres::GenericClient,
    id: &str,
    now: &str,
) -> Result<(), Fail> {
    let changed = client
        .execute(
            "UPDATE sessions SET updated_at = $2 WHERE id = $1",
            &[&id, &now],
        )
        .await?;
    if changed == 0 {
        return Err(Fail::Store(StoreError::NoSession(id.to_owned())));
    }
    Ok(())
}

impl PgInner {
    /// Creates session `name` (a fresh id when `None`) owned by `owner`.
    pub(super) async fn create_session(
        &self,
        name: Option<&str>,
        owner: &str,
    ) -> Result<SessionRecord, StoreError> {
        if let Some(name) = name.filter(|n| !valid_session_name(n)) {
            return Err(StoreError::BadSessionName {
                name: name.to_owned(),
            });
        }
        let result: Result<SessionRecord, Fail> = async {
            let conn = self.conn().await?;
            let insert = conn
                .prepare_cached(
                    "INSERT INTO sessions (id, created_at, updated_at, status, owner)
                     VALUES ($1, $2, $2, $3, $4) ON CONFLICT (id) DO NOTHING",
                )
                .await?;
            let now = now_rfc3339();
            let idle = SessionStatus::Idle.as_str();
            let record = |id: String| SessionRecord {
                id,
                created_at: now.clone(),
                updated_at: now.clone(),
                status: SessionStatus::Idle,
                last_error: None,
                message_count: 0,
                owner: owner.to_owned(),
            };
            if let Some(name) = name {
                if conn.execute(&insert, &[&name, &now, &idle, &owner]).await? == 0 {
                    return Err(Fail::Store(StoreError::SessionExists(name.to_owned())));
                }
                return Ok(record(name.to_owned()));
            }
            for _ in 0..8 {
                let id = crate::ids::new_id('s').map_err(|e| Fail::Other(e.to_string()))?;
                if conn.execute(&insert, &[&id, &now, &idle, &owner]).await? == 1 {
                    return Ok(record(id));
                }
            }
            Err(Fail::Other("eight fresh session ids were all taken".into()))
        }
        .await;
        result.map_err(|e| self.error("create session", name.unwrap_or(""), e))
    }

    pub(super) async fn session(&self, id: &str) -> Result<SessionRecord, StoreError> {
        let result: Result<SessionRecord, Fail> = async {
            let conn = self.conn().await?;
            let stmt = conn
                .prepare_cached(&format!("{SESSION_SQL} WHERE id = $1"))
                .await?;
            let row = conn
                .query_opt(&stmt, &[&id])
                .await?
                .ok_or_else(|| Fail::Store(StoreError::NoSession(id.to_owned())))?;
            session_record(&row)
        }
        .await;
        result.map_err(|e| self.error("read session", id, e))
    }

    pub(super) async fn list_sessions(
        &self,
        owner: Option<&str>,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let result: Result<Vec<SessionRecord>, Fail> = async {
            let conn = self.conn().await?;
            // One statement per case, so one owner's list searches `sessions_by_owner`.
            let rows = match owner {
                None => {
                    let stmt = conn
                        .prepare_cached(&format!(
                            "{SESSION_SQL} ORDER BY created_at DESC, ord DESC"
                        ))
                        .await?;
                    conn.query(&stmt, &[]).await?
                }
                Some(owner) => {
                    let stmt = conn
                        .prepare_cached(&format!(
                            "{SESSION_SQL} WHERE owner = $1 ORDER BY created_at DESC, ord DESC"
                        ))
                        .await?;
                    conn.query(&stmt, &[&owner]).await?
                }
            };
            rows.iter().map(session_record).collect()
        }
        .await;
        let what = match owner {
            Some(_) => "list the sessions of",
            None => "list sessions",
        };
        result.map_err(|e| self.error(what, owner.unwrap_or(""), e))
    }

    pub(super) async fn messages(&self, id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        let result: Result<Vec<StoredMessage>, Fail> = async {
            let mut conn = self.conn().await?;
            // One snapshot: the session's existence and its messages.
            let tx = conn
                .build_transaction()
                .read_only(true)
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .start()
                .await?;
            require_session(&tx, id).await?;
            let stmt = tx
                .prepare_cached(
                    "SELECT seq, role, content, tool_calls, tool_call_id, created_at
                     FROM messages WHERE session_id = $1 ORDER BY seq",
                )
                .await?;
            let rows = tx.query(&stmt, &[&id]).await?;
            tx.commit().await?;
            rows.into_iter()
                .map(|row| {
                    let seq: i64 = row.get(0);
                    let role: String = row.get(1);
                    let role = Role::parse(&role).ok_or_else(|| {
                        Fail::Other(format!("message {seq} has unknown role {role:?}"))
                    })?;
                    let tool_calls: Vec<ToolCall> = match row.get::<_, Option<String>>(3) {
                        None => Vec::new(),
                        Some(json) => serde_json::from_str(&json).map_err(|e| {
                            Fail::Other(format!("message {seq} has unreadable tool calls: {e}"))
                        })?,
                    };
                    Ok(StoredMessage {
                        seq: seq.max(0) as u64,
                        message: Message {
                            role,
                            content: text(row.get(2), "a message")?,
                            tool_calls,
                            tool_call_id: row
                                .get::<_, Option<Vec<u8>>>(4)
                                .map(|b| text(b, "a tool call id"))
                                .transpose()?,
                            created_at: row.get(5),
                        },
                    })
                })
                .collect()
        }
        .await;
        result.map_err(|e| self.error("read the transcript of session", id, e))
    }

    pub(super) async fn append(&self, id: &str, message: &Message) -> Result<u64, StoreError> {
        let result: Result<u64, Fail> = async {
            let tool_calls = if message.tool_calls.is_empty() {
                None
            } else {
                Some(
                    serde_json::to_string(&message.tool_calls)
                        .map_err(|e| Fail::Other(format!("cannot encode the tool calls: {e}")))?,
                )
            };
            let conn = self.writer(id).await?;
            let stmt = conn.prepare_cached(APPEND_SQL).await?;
            let row = conn
                .query_opt(
                    &stmt,
                    &[
                        &id,
                        &message.role.as_str(),
                        &message.content.as_bytes(),
                        &tool_calls,
                        &message.tool_call_id.as_ref().map(|c| c.as_bytes()),
                        &message.created_at,
                        &now_rfc3339(),
                    ],
                )
                .await?
                .ok_or_else(|| Fail::Store(StoreError::NoSession(id.to_owned())))?;
            Ok(row.get::<_, i64>(0).max(0) as u64)
        }
        .await;
        result.map_err(|e| self.error("append to session", id, e))
    }

    pub(super) async fn replace_content(
        &self,
        id: &str,
        seq: u64,
        content: &str,
        reason: &str,
    ) -> Result<(), StoreError> {
        let result: Result<(), Fail> = async {
            let no_message = || {
                Fail::Store(StoreError::NoMessage {
                    session: id.to_owned(),
                    seq,
                })
            };
            let mut conn = self.writer(id).await?;
            let tx = conn.transaction().await?;
            let now = now_rfc3339();
            touch_session(&tx, id, &now).await?;
            let seq = i64::try_from(seq).map_err(|_| no_message())?;
            let original: Vec<u8> = tx
                .query_opt(
                    "SELECT content FROM messages WHERE session_id = $1 AND seq = $2 FOR UPDATE",
                    &[&id, &seq],
                )
                .await?
                .ok_or_else(no_message)?
                .get(0);
            tx.execute(
                "INSERT INTO audit (session_id, seq, changed_at, reason, original, replacement)
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    &id,
                    &seq,
                    &now,
                    &reason.as_bytes(),
                    &original,
                    &content.as_bytes(),
                ],
            )
            .await?;
            tx.execute(
                "UPDATE messages SET content = $3 WHERE session_id = $1 AND seq = $2",
                &[&id, &seq, &content.as_bytes()],
            )
            .await?;
            tx.commit().await?;
            Ok(())
        }
        .await;
        result.map_err(|e| self.error("change a message of session", id, e))
    }

    pub(super) async fn annotate(
        &self,
        id: &str,
        seq: u64,
        reason: &str,
        note: &str,
    ) -> Result<(), StoreError> {
        self.insert_beside_message(
            "annotate a message of session",
            id,
            seq,
            "INSERT INTO audit (session_id, seq, changed_at, reason, original, replacement)
             SELECT session_id, seq, $3, $4, $5, content FROM messages
             WHERE session_id = $1 AND seq = $2",
            &[&now_rfc3339(), &reason.as_bytes(), &note.as_bytes()],
        )
        .await
    }

    /// Runs `sql`, an `INSERT … SELECT … FROM messages WHERE session_id = $1 AND seq = $2`
    /// whose parameters from `$3` are `rest`: a row beside message `seq` of session `id`
    /// (the audit, a call's facts).
    ///
    /// Errors: [`StoreError::NoMessage`] when the session has no message `seq`.
    async fn insert_beside_message(
        &self,
        what: &str,
        id: &str,
        seq: u64,
        sql: &str,
        rest: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<(), StoreError> {
        let result: Result<(), Fail> = async {
            let no_message = || {
                Fail::Store(StoreError::NoMessage {
                    session: id.to_owned(),
                    seq,
                })
            };
            let seq = i64::try_from(seq).map_err(|_| no_message())?;
            let mut all: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&id, &seq];
            all.extend_from_slice(rest);
            let conn = self.writer(id).await?;
            if conn.execute(sql, &all).await? == 0 {
                return Err(no_message());
            }
            Ok(())
        }
        .await;
        result.map_err(|e| self.error(what, id, e))
    }

    pub(super) async fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError> {
        let result: Result<Vec<AuditEntry>, Fail> = async {
            let conn = self.conn().await?;
            require_session(&conn, id).await?;
            let rows = conn
                .query(
                    "SELECT session_id, seq, changed_at, reason, original, replacement
                     FROM audit WHERE session_id = $1 ORDER BY id",
                    &[&id],
                )
                .await?;
            rows.into_iter()
                .map(|row| {
                    Ok(AuditEntry {
                        session_id: row.get(0),
                        seq: row.get::<_, i64>(1).max(0) as u64,
                        changed_at: row.get(2),
                        reason: text(row.get(3), "an audit reason")?,
                        original: text(row.get(4), "an audit original")?,
                        replacement: text(row.get(5), "an audit replacement")?,
                    })
                })
                .collect()
        }
        .await;
        result.map_err(|e| self.error("read the audit of session", id, e))
    }

    pub(super) async fn record_call(
        &self,
        id: &str,
        seq: u64,
        tool: &str,
        facts: &str,
    ) -> Result<(), StoreError> {
        self.insert_beside_message(
            "record a call of session",
            id,
            seq,
            "INSERT INTO call_facts (session_id, seq, tool, recorded_at, facts)
             SELECT session_id, seq, $3, $4, $5 FROM messages
             WHERE session_id = $1 AND seq = $2",
            &[&tool.as_bytes(), &now_rfc3339(), &facts],
        )
        .await
    }

    pub(super) async fn calls(&self, id: &str) -> Result<Vec<CallRecord>, StoreError> {
        let result: Result<Vec<CallRecord>, Fail> = async {
            let conn = self.conn().await?;
            require_session(&conn, id).await?;
            let rows = conn
                .query(
                    "SELECT seq, tool, recorded_at, facts FROM call_facts
                     WHERE session_id = $1 ORDER BY id",
                    &[&id],
                )
                .await?;
            rows.into_iter()
                .map(|row| {
                    let facts: String = row.get(3);
                    Ok(CallRecord {
                        seq: row.get::<_, i64>(0).max(0) as u64,
                        tool: text(row.get(1), "a call's tool")?,
                        recorded_at: row.get(2),
                        facts: serde_json::from_str(&facts).map_err(|e| {
                            Fail::Other(format!("the facts of a call are not JSON: {e}"))
                        })?,
                    })
                })
                .collect()
        }
        .await;
        result.map_err(|e| self.error("read the calls of session", id, e))
    }

    pub(super) async fn decide(
        &self,
        id: &str,
        call_id: &str,
        decision: Decision,
    ) -> Result<(), StoreError> {
        let result: Result<(), Fail> = async {
            let mut conn = self.conn().await?;
            let tx = conn.transaction().await?;
            let now = now_rfc3339();
            touch_session(&tx, id, &now).await?;
            tx.execute(
                "INSERT INTO approvals (session_id, call_id, decision, decided_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (session_id, call_id) DO UPDATE
                 SET decision = excluded.decision, decided_at = excluded.decided_at",
                &[&id, &call_id, &decision.as_str(), &now],
            )
            .await?;
            tx.commit().await?;
            Ok(())
        }
        .await;
        result.map_err(|e| self.error("record a decision in session", id, e))
    }

    pub(super) async fn decision(
        &self,
        id: &str,
        call_id: &str,
    ) -> Result<Option<Decision>, StoreError> {
        let result: Result<Option<Decision>, Fail> = async {
            let conn = self.conn().await?;
            require_session(&conn, id).await?;
            let stored: Option<String> = conn
                .query_opt(
                    "SELECT decision FROM approvals WHERE session_id = $1 AND call_id = $2",
                    &[&id, &call_id],
                )
                .await?
                .map(|row| row.get(0));
            stored
                .map(|s| {
                    Decision::parse(&s).ok_or_else(|| {
                        Fail::Other(format!("call {call_id:?} has unknown decision {s:?}"))
                    })
                })
                .transpose()
        }
        .await;
        result.map_err(|e| self.error("read a decision in session", id, e))
    }
}
