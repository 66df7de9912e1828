//! What one run carries through its steps ([`Run`]), how a step ends it ([`Stop`]), and the
//! clock its records use ([`now`]): below the run's loop ([`crate::run`]) and both turns
//! ([`crate::model_turn`], [`crate::tool_turn`]), so none of them imports another's state.

use tokio_util::sync::CancellationToken;

use crate::{RunEvent, RunUsage};

/// How a step of the run ended when it ends the run.
pub(crate) enum Stop {
    /// The model answered without tool calls (its answer), or `max_turns` ran out (none).
    Completed(Option<String>),
    /// The run was cancelled.
    Aborted,
    /// A destructive call waits for the operator's decision.
    AwaitingApproval,
    /// The model failed; why.
    Failed(String),
}

/// One run in progress, as its steps see it: the session it runs, what cancels it, where
/// its events go and what it has counted so far. [`Agent::run_claimed`] makes one per run
/// and hands it to each step: a step that counts requests takes it `&mut`, the others `&`.
pub(crate) struct Run<'a> {
    /// The session's id.
    pub(crate) session: &'a str,
    /// Cancels the run: it drops the request in flight and stops the call in progress.
    pub(crate) cancel: &'a CancellationToken,
    /// Sees what happens, as it happens.
    pub(crate) events: &'a (dyn Fn(RunEvent) + Send + Sync),
    /// The requests and tokens counted so far.
    pub(crate) tally: Tally,
}

impl Run<'_> {
    /// Reports `event` to the run's events sink.
    pub(crate) fn emit(&self, event: RunEvent) {
        (self.events)(event);
    }
}

/// What a run counts as it goes.
#[derive(Default)]
pub(crate) struct Tally {
    /// Requests sent to the model ([`Outcome::requests`]).
    pub(crate) requests: u32,
    /// The tokens the replies reported ([`Outcome::usage`]).
    pub(crate) usage: RunUsage,
}

/// Now, RFC 3339 UTC with milliseconds (the store's clock, so times sort as text).
pub(crate) fn now() -> String {
    sluice_store::now_rfc3339()
}
