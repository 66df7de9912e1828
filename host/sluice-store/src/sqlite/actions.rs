//! The actions log: who did what to which session, and the configuration changes.

use rusqlite::params;

use super::{Fail, Inner, require_session};
use crate::{Action, ActionRecord, StoreError, now_rfc3339};

/// The actions on session `?1`, oldest first.
const SESSION_ACTIONS_SQL: &str = "
SELECT session_id, actor, action, detail, at FROM actions WHERE session_id = ?1 ORDER BY id";

/// The actions on no session (the configuration changes), oldest first.
const CONFIG_ACTIONS_SQL: &str = "
SELECT session_id, actor, action, detail, at FROM actions WHERE session_id IS NULL ORDER BY id";

impl Inner {
    pub(super) fn record_action(
        &self,
        session: Option<&str>,
        actor: &str,
        action: Action,
        detail: Option<&str>,
    ) -> Result<(), StoreError> {
        self.write("record an action on session", session.unwrap_or(""), |tx| {
            if let Some(id) = session {
                require_session(tx, id)?;
            }
            tx.prepare_cached(
                "INSERT INTO actions (session_id, actor, action, detail, at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                session,
                actor,
                action.as_str(),
                detail,
                now_rfc3339()
            ])?;
            Ok(())
        })
    }

    pub(super) fn actions(&self, session: Option<&str>) -> Result<Vec<ActionRecord>, StoreError> {
        self.read("read the actions on session", session.unwrap_or(""), |tx| {
            // One statement per case: `session_id = NULL` matches nothing, and both search
            // `actions_by_session`.
            let rows = match session {
                Some(id) => {
                    require_session(tx, id)?;
                    tx.prepare_cached(SESSION_ACTIONS_SQL)?
                        .query_map([id], action_row)?
                        .collect::<Result<Vec<_>, _>>()?
                }
                None => tx
                    .prepare_cached(CONFIG_ACTIONS_SQL)?
                    .query_map([], action_row)?
                    .collect::<Result<Vec<_>, _>>()?,
            };
            rows.into_iter().map(action_record).collect()
        })
    }
}

/// An action row, decoded later: session, actor, action, detail, at.
type ActionRow = (Option<String>, String, String, Option<String>, String);

fn action_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ActionRow> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
    ))
}

fn action_record((session, actor, action, detail, at): ActionRow) -> Result<ActionRecord, Fail> {
    let action = Action::parse(&action)
        .ok_or_else(|| Fail::Other(format!("an action has unknown name {action:?}")))?;
    Ok(ActionRecord {
        session,
        actor,
        action,
        detail,
        at,
    })
}

#[cfg(test)]
mod tests {
    use super::super::SqliteStore;
    use super::super::sessions::list_sql;
    use super::{CONFIG_ACTIONS_SQL, SESSION_ACTIONS_SQL};

    /// What SQLite plans for `sql` (its parameters all `x`).
    fn plan(store: &SqliteStore, sql: &str) -> String {
        let conn = store.inner.conn();
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let params = vec!["x"; stmt.parameter_count()];
        let details = stmt
            .query_map(rusqlite::params_from_iter(params), |row| {
                row.get::<_, String>(3)
            })
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        details.join("\n")
    }

    /// One owner's list, and a session's actions or the configuration's, search their
    /// indexes in the order they are read: no scan of the table, no sort.
    #[test]
    fn owned_lists_and_actions_search_their_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("sessions.db")).unwrap();
        let owned = plan(&store, &list_sql(true));
        assert!(
            owned.contains("SEARCH s USING INDEX sessions_by_owner (owner=?)"),
            "{owned}"
        );
        assert!(!owned.contains("TEMP B-TREE"), "{owned}");
        for (sql, key) in [
            (SESSION_ACTIONS_SQL, "session_id=?"),
            (CONFIG_ACTIONS_SQL, "session_id=?"),
        ] {
            let found = plan(&store, sql);
            assert!(
                found.contains(&format!(
                    "SEARCH actions USING INDEX actions_by_session ({key})"
                )),
                "{found}"
            );
            assert!(!found.contains("TEMP B-TREE"), "{found}");
        }
    }
}
