//! Who did what: the actions log ([`crate::Store::record_action`], [`crate::Store::actions`]),
//! and the owner of a session ([`DEFAULT_OWNER`]).

/// The owner of sessions created without one ([`crate::Store::create_session`],
/// [`crate::Store::create_named_session`]) and of every session made before sessions had
/// owners (SQLite schema version 5, PostgreSQL version 3): `admin`, the principal of the
/// single server token (the same name as `sluice_config::ADMIN_PRINCIPAL`, which this crate
/// does not depend on).
pub const DEFAULT_OWNER: &str = "admin";

/// What a principal did, as the actions log records it. Stored as its name
/// ([`Action::as_str`]), unconstrained in SQL, so a later version can add one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Created a session.
    Create,
    /// Sent a prompt to a session (a run began with it).
    Prompt,
    /// Resumed a session without a prompt.
    Resume,
    /// Asked for the cancellation of a session's run.
    Cancel,
    /// Approved a call that waited for approval.
    Approve,
    /// Denied a call that waited for approval.
    Deny,
    /// Changed the run-time configuration (`PUT /agent/config`); recorded with no session.
    Config,
}

impl Action {
    /// Every action, in declaration order.
    pub const ALL: [Action; 7] = [
        Action::Create,
        Action::Prompt,
        Action::Resume,
        Action::Cancel,
        Action::Approve,
        Action::Deny,
        Action::Config,
    ];

    /// The stored (and JSON) name: `create`, `prompt`, `resume`, `cancel`, `approve`,
    /// `deny` or `config`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Prompt => "prompt",
            Action::Resume => "resume",
            Action::Cancel => "cancel",
            Action::Approve => "approve",
            Action::Deny => "deny",
            Action::Config => "config",
        }
    }

    /// The action named `s` ([`Action::as_str`]), if any.
    pub fn parse(s: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

/// One entry of the actions log: who did what to which session, and when.
///
/// JSON (camelCase): `{"session": "s-…" | null, "actor": "alice", "action": "prompt",
/// "detail": "…" | null, "at": "2026-11-30T08:15:02.123Z"}`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionRecord {
    /// The session acted on; `None` for a change of the run-time configuration.
    pub session: Option<String>,
    /// The principal that acted (a token's name, `admin`, `oauth:<sub>`).
    pub actor: String,
    /// What it did.
    pub action: Action,
    /// What the caller chose to add (a call id, the keys changed), if anything.
    pub detail: Option<String>,
    /// When it was recorded, RFC 3339 UTC with milliseconds (`2026-11-30T08:15:02.123Z`).
    pub at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_the_json() {
        for action in Action::ALL {
            assert_eq!(Action::parse(action.as_str()), Some(action));
            assert_eq!(
                serde_json::to_value(action).unwrap(),
                serde_json::Value::from(action.as_str())
            );
        }
        assert_eq!(Action::parse("Prompt"), None);
        assert_eq!(Action::parse(""), None);
    }

    #[test]
    fn a_record_is_camel_case_json() {
        let record = ActionRecord {
            session: None,
            actor: "alice".into(),
            action: Action::Config,
            detail: Some("max_turns".into()),
            at: "2026-11-30T08:15:02.123Z".into(),
        };
        assert_eq!(
            serde_json::to_string(&record).unwrap(),
            r#"{"session":null,"actor":"alice","action":"config","detail":"max_turns","at":"2026-11-30T08:15:02.123Z"}"#
        );
    }
}
