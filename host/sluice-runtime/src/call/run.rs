//! How one call runs ([`Run`]): its cap, its cancellation, what a script it runs may call,
//! and where its guest code runs ([`Place`]).

use tokio_util::sync::CancellationToken;

/// How one call runs (the crate's view of [`CallOptions`](crate::CallOptions)).
#[derive(Clone, Debug)]
pub(crate) struct Run {
    /// The cap on its observation, in bytes.
    pub(crate) cap: u32,
    /// Fires to cancel it.
    pub(crate) cancel: CancellationToken,
    /// Whether a script it runs may call destructive tools (the run is auto-approved).
    pub(crate) allow_destructive: bool,
    /// Whether its arguments text was written from parsed JSON (see
    /// `CallOptions::arguments_reencoded`).
    pub(crate) arguments_reencoded: bool,
    /// Where the call runs.
    pub(crate) place: Place,
}

/// Where a call's guest code runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// On the engine's call pool, in a slot of its own (a call from the model).
    Pool,
    /// On the calling thread: a script's tool call, inside the script's own slot and
    /// deadline.
    Inline,
}
