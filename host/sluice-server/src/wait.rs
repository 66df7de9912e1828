//! Waiting for a run that may execute on another replica to end, through its events in the
//! store (`POST /sessions/{id}/cancel?wait=true`).

use sluice_store::{ORPHANED_RUN, Topic, Woken};

use crate::error::ApiError;
use crate::runs::RunEnd;
use crate::state::AppState;

/// How run `run_id` ended: its `finished` event, once stored. A run whose runner died
/// without ending it ends `error` with [`ORPHANED_RUN`].
pub(crate) async fn finished(state: &AppState, run_id: &str) -> Result<RunEnd, ApiError> {
    let store = state.store();
    let mut changes = store.subscribe(Topic::Events(run_id.to_string()));
    let mut next = 0;
    loop {
        let events = store.events(run_id, next).await?;
        if let Some(end) = events.iter().find(|e| e.kind == "finished") {
            return Ok(RunEnd::from_event(&end.data));
        }
        if let Some(last) = events.last() {
            next = last.seq;
            continue;
        }
        if changes.changed().await == Woken::Polled && !store.run(run_id).await?.live {
            let events = store.events(run_id, next).await?;
            if let Some(end) = events.iter().find(|e| e.kind == "finished") {
                return Ok(RunEnd::from_event(&end.data));
            }
            return Ok(RunEnd::failed(ORPHANED_RUN.to_string()));
        }
    }
}
