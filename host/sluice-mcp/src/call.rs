//! The one adapter between MCP and Sluice's tool call path ([`Toolbox::call`], the path
//! `sluice call` takes): a call either ends with the observation `sluice call` would print
//! for it, byte for byte, or, when the client cancels it, with nothing.
//!
//! Today's [`Toolbox`] has no cancellation or concurrency bound of its own, so this adapter
//! adds the two things MCP needs on top of it:
//! - **a bound on calls in flight** ([`CallLimits::max_concurrent_calls`]): a call waits
//!   for a slot at most [`CallLimits::queue_timeout`], then is answered with a tool error of
//!   kind `busy` naming the limit (never a hang);
//! - **cancellation**: the call runs in a task of its own; when the client cancels, the
//!   caller stops waiting at once and the response is dropped. The guest itself then runs
//!   on until it returns or its own timeout stops it (the epoch deadline), still holding its
//!   slot, so the bound counts the guests really running.
//!
//! When the runtime gains per-call options with a cancellation token (interrupting the
//! guest) and its own bounded pool, [`Calls::call`] is the one place to switch to them.

use std::sync::Arc;
use std::time::Duration;

use sluice_runtime::observation::{DEFAULT_HINT, paging_hint};
use sluice_runtime::{Observation, Toolbox};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// How many calls may run at once, and how long a call waits for a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallLimits {
    /// Calls running at once, at least 1. Default: 2 × the available cores.
    pub max_concurrent_calls: usize,
    /// How long a call waits for a slot before it is answered `busy`. Default 10,000 ms.
    pub queue_timeout: Duration,
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits {
            max_concurrent_calls: std::thread::available_parallelism().map_or(2, |n| n.get() * 2),
            queue_timeout: Duration::from_millis(10_000),
        }
    }
}

/// The bound on calls in flight.
pub(crate) struct Calls {
    slots: Arc<Semaphore>,
    limits: CallLimits,
}

impl Calls {
    pub(crate) fn new(limits: CallLimits) -> Self {
        Calls {
            slots: Arc::new(Semaphore::new(limits.max_concurrent_calls.max(1))),
            limits,
        }
    }

    /// Calls tool `name` of `toolbox` (the one current when the call arrived; the call
    /// keeps it whatever replaces it) with the JSON text `args` under the cap `cap`
    /// (bytes): the observation `sluice call` prints for the same call, or `None` when
    /// `cancel` fired first (nothing is to be sent for a cancelled request).
    pub(crate) async fn call(
        &self,
        toolbox: Arc<Toolbox>,
        name: &str,
        args: String,
        cap: u32,
        cancel: &CancellationToken,
    ) -> Option<Observation> {
        let permit = tokio::select! {
            _ = cancel.cancelled() => return None,
            permit = tokio::time::timeout(
                self.limits.queue_timeout,
                self.slots.clone().acquire_owned(),
            ) => permit,
        };
        let Ok(Ok(permit)) = permit else {
            return Some(self.busy(name, cap));
        };
        let tool = name.to_string();
        let task = tokio::spawn(async move {
            let observation = toolbox.call(&tool, &args, cap).await;
            drop(permit);
            observation
        });
        tokio::select! {
            _ = cancel.cancelled() => None,
            done = task => Some(done.unwrap_or_else(|e| {
                // A panic in the call path is a host bug; the client still gets a tool error.
                tracing::error!(tool = name, "the tool call stopped unexpectedly: {e}");
                Observation::error(
                    &format!("the tool call stopped unexpectedly: {e}"),
                    Some("host-error"),
                )
                .finish(name, cap as usize, paging_hint(name))
            })),
        }
    }

    /// The `busy` observation: every slot stayed taken for the whole queue timeout.
    fn busy(&self, name: &str, cap: u32) -> Observation {
        Observation::error(
            &format!(
                "the server is busy: {} tool calls are running (runtime.max_concurrent_calls) and none ended within {} ms; try again shortly",
                self.limits.max_concurrent_calls,
                self.limits.queue_timeout.as_millis()
            ),
            Some("busy"),
        )
        .finish(name, cap as usize, DEFAULT_HINT)
    }
}
