//! Whose sessions a principal sees, and who did what (docs/api.md#tenancy).
//!
//! A session belongs to the principal that created it. Every route naming a session asks
//! [`owned`] first: another principal without `admin` gets the very 404 of a session that
//! does not exist, so ids cannot be probed. Prompts, resumes, cancels, decisions and
//! configuration changes are recorded with their actor ([`record`]) and shown in the audit.

use sluice_store::{Action, SessionRecord, StoreError};

use crate::error::ApiError;
use crate::principal::Principal;
use crate::state::AppState;

/// Session `id`, when `principal` may see it.
///
/// # Errors
/// 404 (`no session …`, as for a missing one) when it does not exist or belongs to another
/// principal and `principal` is not `admin`; the store's errors.
pub(crate) async fn owned(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<SessionRecord, ApiError> {
    let session = state.store().session(id).await?;
    if principal.owns(&session.owner) {
        Ok(session)
    } else {
        Err(StoreError::NoSession(id.to_string()).into())
    }
}

/// Records that `principal` did `action` (on `session`; `None`: the configuration), with
/// `detail` (a run id, a call id, the keys changed).
///
/// # Errors
/// The store's.
pub(crate) async fn record(
    state: &AppState,
    principal: &Principal,
    session: Option<&str>,
    action: Action,
    detail: Option<&str>,
) -> Result<(), ApiError> {
    state
        .store()
        .record_action(session, principal.name(), action, detail)
        .await?;
    Ok(())
}
