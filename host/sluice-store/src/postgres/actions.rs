//! The actions log in PostgreSQL: who did what to which session, and the configuration
//! changes.

use tokio_postgres::Row;

use super::sessions::{require_session, text};
use super::{Fail, PgInner};
use crate::{Action, ActionRecord, StoreError, now_rfc3339};

fn action_record(row: &Row) -> Result<ActionRecord, Fail> {
    let action: String = row.get(2);
    let action = Action::parse(&action)
        .ok_or_else(|| Fail::Other(format!("an action has unknown name {action:?}")))?;
    Ok(ActionRecord {
        session: row.get(0),
        actor: row.get(1),
        action,
        detail: row
            .get::<_, Option<Vec<u8>>>(3)
            .map(|b| text(b, "an action's detail"))
            .transpose()?,
        at: row.get(4),
    })
}

impl PgInner {
    pub(super) async fn record_action(
        &self,
        session: Option<&str>,
        actor: &str,
        action: Action,
        detail: Option<&str>,
    ) -> Result<(), StoreError> {
        let result: Result<(), Fail> = async {
            let conn = self.conn().await?;
            // One statement: the row is inserted only when the session exists (a session
            // is never deleted, so nothing can remove it before the insert commits).
            let inserted = conn
                .execute(
                    "INSERT INTO actions (session_id, actor, action, detail, at)
                     SELECT $1, $2, $3, $4, $5
                     WHERE $1::TEXT IS NULL OR EXISTS (SELECT 1 FROM sessions WHERE id = $1)",
                    &[
                        &session,
                        &actor,
                        &action.as_str(),
                        &detail.map(str::as_bytes),
                        &now_rfc3339(),
                    ],
                )
                .await?;
            match session {
                Some(id) if inserted == 0 => Err(Fail::Store(StoreError::NoSession(id.to_owned()))),
                _ => Ok(()),
            }
        }
        .await;
        result.map_err(|e| self.error("record an action on session", session.unwrap_or(""), e))
    }

    pub(super) async fn actions(
        &self,
        session: Option<&str>,
    ) -> Result<Vec<ActionRecord>, StoreError> {
        let result: Result<Vec<ActionRecord>, Fail> = async {
            let conn = self.conn().await?;
            // One statement per case: `session_id = NULL` matches nothing, and both search
            // `actions_by_session`.
            let rows = match session {
                Some(id) => {
                    require_session(&conn, id).await?;
                    conn.query(
                        "SELECT session_id, actor, action, detail, at FROM actions
                         WHERE session_id = $1 ORDER BY id",
                        &[&id],
                    )
                    .await?
                }
                None => {
                    conn.query(
                        "SELECT session_id, actor, action, detail, at FROM actions
                         WHERE session_id IS NULL ORDER BY id",
                        &[],
                    )
                    .await?
                }
            };
            rows.iter().map(action_record).collect()
        }
        .await;
        result.map_err(|e| self.error("read the actions on session", session.unwrap_or(""), e))
    }
}
