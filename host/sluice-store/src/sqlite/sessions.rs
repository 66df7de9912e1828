//! Sessions, transcripts, the audit and decisions.

use rusqlite::{OptionalExtension, params};
use sluice_protocol::{Message, Role, SessionStatus, ToolCall};

use super::{
    APPEND_SQL, Fail, Inner, SESSION_SQL, new_id, require_session, session_record, session_row,
    touch_session,
};
use crate::{
    AuditEntry, CallRecord, DEFAULT_OWNER, Decision, SessionRecord, StoreError, StoredMessage,
    now_rfc3339, valid_session_name,
};

/// Inserts a new idle session: `?1` its id, `?2` the time, `?3` the status, `?4` its owner.
const INSERT_SESSION_SQL: &str = "
INSERT INTO sessions (id, created_at, updated_at, status, owner) VALUES (?1, ?2, ?2, ?3, ?4)
ON CONFLICT (id) DO NOTHING";

/// The list of sessions, newest first (rowid breaks ties between sessions created in the
/// same millisecond); `owned`: only those whose owner is `?1`.
pub(super) fn list_sql(owned: bool) -> String {
    let filter = if owned { "WHERE s.owner = ?1 " } else { "" };
    format!("{SESSION_SQL} {filter}ORDER BY s.created_at DESC, s.rowid DESC")
}

/// A new idle session with no messages.
fn new_session(id: String, now: String, owner: &str) -> SessionRecord {
    SessionRecord {
        id,
        created_at: now.clone(),
        updated_at: now,
        status: SessionStatus::Idle,
        last_error: None,
        message_count: 0,
        owner: owner.to_owned(),
    }
}

impl Inner {
    pub(super) fn create_session(&self, owner: &str) -> Result<SessionRecord, StoreError> {
        self.write("create session", "", |tx| {
            let now = now_rfc3339();
            let mut insert = tx.prepare_cached(INSERT_SESSION_SQL)?;
            // 60 random bits: a clash is all but impossible, but costs nothing to survive.
            for _ in 0..8 {
                let id = new_id('s')?;
                if insert.execute(params![id, now, SessionStatus::Idle.as_str(), owner])? == 1 {
                    return Ok(new_session(id, now, owner));
                }
            }
            Err(Fail::Other("eight fresh session ids were all taken".into()))
        })
    }

    pub(super) fn create_named_session(&self, name: &str) -> Result<SessionRecord, StoreError> {
        if !valid_session_name(name) {
            return Err(StoreError::BadSessionName {
                name: name.to_owned(),
            });
        }
        self.write("create session", name, |tx| {
            let now = now_rfc3339();
            let inserted = tx.prepare_cached(INSERT_SESSION_SQL)?.execute(params![
                name,
                now,
                SessionStatus::Idle.as_str(),
                DEFAULT_OWNER
            ])?;
            if inserted == 0 {
                return Err(StoreError::SessionExists(name.to_owned()).into());
            }
            Ok(new_session(name.to_owned(), now, DEFAULT_OWNER))
        })
    }

    pub(super) fn session(&self, id: &str) -> Result<SessionRecord, StoreError> {
        self.read("read session", id, |tx| {
            let row = tx
                .prepare_cached(&format!("{SESSION_SQL} WHERE s.id = ?1"))?
                .query_row([id], session_row)
                .optional()?
                .ok_or_else(|| StoreError::NoSession(id.to_owned()))?;
            session_record(row)
        })
    }

    pub(super) fn list_sessions(
        &self,
        owner: Option<&str>,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let what = match owner {
            Some(_) => "list the sessions of",
            None => "list sessions",
        };
        self.read(what, owner.unwrap_or(""), |tx| {
            // One statement per case, so one owner's list searches `sessions_by_owner`.
            let rows = match owner {
                None => tx
                    .prepare_cached(&list_sql(false))?
                    .query_map([], session_row)?
                    .collect::<Result<Vec<_>, _>>()?,
                Some(owner) => tx
                    .prepare_cached(&list_sql(true))?
                    .query_map([owner], session_row)?
                    .collect::<Result<Vec<_>, _>>()?,
            };
            rows.into_iter().map(session_record).collect()
        })
    }

    pub(super) fn messages(&self, id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        self.read("read the transcript of session", id, |tx| {
            require_session(tx, id)?;
            let mut stmt = tx.prepare_cached(
                "SELECT seq, role, content, tool_calls, tool_call_id, created_at
                 FROM messages WHERE session_id = ?1 ORDER BY seq",
            )?;
            let rows = stmt.query_map([id], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, Option<String>>(3)?,
                    row.get::<_, Option<String>>(4)?,
                    row.get::<_, String>(5)?,
                ))
            })?;
            let mut messages = Vec::new();
            for row in rows {
                let (seq, role, content, tool_calls, tool_call_id, created_at) = row?;
                let role = Role::parse(&role).ok_or_else(|| {
                    Fail::Other(format!("message {seq} has unknown role {role:?}"))
                })?;
                let tool_calls: Vec<ToolCall> = match tool_calls {
                    None => Vec::new(),
                    Some(json) => serde_json::from_str(&json).map_err(|e| {
                        Fail::Other(format!("message {seq} has unreadable tool calls: {e}"))
                    })?,
                };
                messages.push(StoredMessage {
                    seq: seq.max(0) as u64,
                    message: Message {
                        role,
                        content,
                        tool_calls,
                        tool_call_id,
                        created_at,
                    },
                });
            }
            Ok(messages)
        })
    }

    pub(super) fn append(&self, id: &str, message: &Message) -> Result<u64, StoreError> {
        let tool_calls = if message.tool_calls.is_empty() {
            None
        } else {
            Some(
                serde_json::to_string(&message.tool_calls).map_err(|e| StoreError::Database {
                    path: self.path.clone(),
                    message: format!("append to session {id:?}: cannot encode the tool calls: {e}"),
                })?,
            )
        };
        self.write("append to session", id, |tx| {
            touch_session(tx, id, &now_rfc3339())?;
            let seq: i64 = tx.prepare_cached(APPEND_SQL)?.query_row(
                params![
                    id,
                    message.role.as_str(),
                    message.content,
                    tool_calls,
                    message.tool_call_id,
                    message.created_at,
                ],
                |row| row.get(0),
            )?;
            Ok(seq.max(0) as u64)
        })
    }

    pub(super) fn replace_content(
        &self,
        id: &str,
        seq: u64,
        content: &str,
        reason: &str,
    ) -> Result<(), StoreError> {
        self.write("change a message of session", id, |tx| {
            let now = now_rfc3339();
            touch_session(tx, id, &now)?;
            let no_message = || {
                Fail::Store(StoreError::NoMessage {
                    session: id.to_owned(),
                    seq,
                })
            };
            let seq = i64::try_from(seq).map_err(|_| no_message())?;
            let original: String = tx
                .prepare_cached("SELECT content FROM messages WHERE session_id = ?1 AND seq = ?2")?
                .query_row(params![id, seq], |row| row.get(0))
                .optional()?
                .ok_or_else(no_message)?;
            tx.prepare_cached(
                "INSERT INTO audit (session_id, seq, changed_at, reason, original, replacement)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![id, seq, now, reason, original, content])?;
            tx.prepare_cached(
                "UPDATE messages SET content = ?3 WHERE session_id = ?1 AND seq = ?2",
            )?
            .execute(params![id, seq, content])?;
            Ok(())
        })
    }

    pub(super) fn annotate(
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
             SELECT session_id, seq, ?3, ?4, ?5, content FROM messages
             WHERE session_id = ?1 AND seq = ?2",
            &[&now_rfc3339(), &reason, &note],
        )
    }

    /// Runs `sql`, an `INSERT … SELECT … FROM messages WHERE session_id = ?1 AND seq = ?2`
    /// whose parameters from `?3` are `rest`, in a write transaction: a row beside message
    /// `seq` of session `id` (the audit, a call's facts).
    ///
    /// Errors: [`StoreError::NoMessage`] when the session has no message `seq`.
    fn insert_beside_message(
        &self,
        what: &str,
        id: &str,
        seq: u64,
        sql: &str,
        rest: &[&dyn rusqlite::ToSql],
    ) -> Result<(), StoreError> {
        self.write(what, id, |tx| {
            let no_message = || {
                Fail::Store(StoreError::NoMessage {
                    session: id.to_owned(),
                    seq,
                })
            };
            let seq = i64::try_from(seq).map_err(|_| no_message())?;
            let mut all: Vec<&dyn rusqlite::ToSql> = vec![&id, &seq];
            all.extend_from_slice(rest);
            if tx.prepare_cached(sql)?.execute(&*all)? == 0 {
                return Err(no_message());
            }
            Ok(())
        })
    }

    pub(super) fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError> {
        self.read("read the audit of session", id, |tx| {
            require_session(tx, id)?;
            let mut stmt = tx.prepare_cached(
                "SELECT session_id, seq, changed_at, reason, original, replacement
                 FROM audit WHERE session_id = ?1 ORDER BY id",
            )?;
            let entries = stmt
                .query_map([id], |row| {
                    Ok(AuditEntry {
                        session_id: row.get(0)?,
                        seq: row.get::<_, i64>(1)?.max(0) as u64,
                        changed_at: row.get(2)?,
                        reason: row.get(3)?,
                        original: row.get(4)?,
                        replacement: row.get(5)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(entries)
        })
    }

    pub(super) fn record_call(
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
             SELECT session_id, seq, ?3, ?4, ?5 FROM messages
             WHERE session_id = ?1 AND seq = ?2",
            &[&tool, &now_rfc3339(), &facts],
        )
    }

    pub(super) fn calls(&self, id: &str) -> Result<Vec<CallRecord>, StoreError> {
        self.read("read the calls of session", id, |tx| {
            require_session(tx, id)?;
            let mut stmt = tx.prepare_cached(
                "SELECT seq, tool, recorded_at, facts FROM call_facts
                 WHERE session_id = ?1 ORDER BY id",
            )?;
            let rows = stmt
                .query_map([id], |row| {
                    Ok((
                        row.get::<_, i64>(0)?.max(0) as u64,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, String>(3)?,
                    ))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            rows.into_iter()
                .map(|(seq, tool, recorded_at, facts)| {
                    Ok(CallRecord {
                        seq,
                        tool,
                        recorded_at,
                        facts: serde_json::from_str(&facts).map_err(|e| {
                            Fail::Other(format!("the facts of a call are not JSON: {e}"))
                        })?,
                    })
                })
                .collect()
        })
    }

    pub(super) fn decide(
        &self,
        id: &str,
        call_id: &str,
        decision: Decision,
    ) -> Result<(), StoreError> {
        self.write("record a decision in session", id, |tx| {
            let now = now_rfc3339();
            touch_session(tx, id, &now)?;
            tx.prepare_cached(
                "INSERT INTO approvals (session_id, call_id, decision, decided_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (session_id, call_id) DO UPDATE
                 SET decision = excluded.decision, decided_at = excluded.decided_at",
            )?
            .execute(params![id, call_id, decision.as_str(), now])?;
            Ok(())
        })
    }

    pub(super) fn decision(&self, id: &str, call_id: &str) -> Result<Option<Decision>, StoreError> {
        self.read("read a decision in session", id, |tx| {
            require_session(tx, id)?;
            let stored: Option<String> = tx
                .prepare_cached(
                    "SELECT decision FROM approvals WHERE session_id = ?1 AND call_id = ?2",
                )?
                .query_row([id, call_id], |row| row.get(0))
                .optional()?;
            stored
                .map(|s| {
                    Decision::parse(&s).ok_or_else(|| {
                        Fail::Other(format!("call {call_id:?} has unknown decision {s:?}"))
                    })
                })
                .transpose()
        })
    }
}
