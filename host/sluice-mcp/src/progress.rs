//! `notifications/progress` for a call whose request carries a `progressToken`.
//!
//! The host reports progress, not the guest: `progress` is the time the call has run, in
//! seconds (it only grows, as MCP asks), with a message naming the tool. `grep_files`
//! reports at once and then every second; any other tool after its first second, then every
//! second. A search's own measure of progress (files walked) has no total without a second
//! walk, and its time budget (80% of the tool's timeout) already bounds it, so the guest
//! does not report progress itself and the shared WIT (`sluice:tools/budget`) is unchanged.

use std::time::{Duration, Instant};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How often progress is reported.
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// The tools that report progress from their start, not only after a second.
pub const PROGRESS_FROM_START: &[&str] = &["grep_files"];

/// Reports the progress of one call until [`Ticker::stop`].
pub(crate) struct Ticker {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Ticker {
    /// Starts reporting the progress of a call of `tool` to `peer` under `token`; a tool of
    /// [`PROGRESS_FROM_START`] reports once before this returns.
    pub(crate) async fn start(peer: Peer<RoleServer>, token: ProgressToken, tool: &str) -> Ticker {
        let stop = CancellationToken::new();
        let started = Instant::now();
        if PROGRESS_FROM_START.contains(&tool) {
            let param = ProgressNotificationParam::new(token.clone(), 0.0)
                .with_message(format!("{tool}: started"));
            let _ = peer.notify_progress(param).await;
        }
        let tool = tool.to_string();
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            let mut next = tokio::time::Instant::now() + PROGRESS_INTERVAL;
            loop {
                tokio::select! {
                    _ = stopped.cancelled() => return,
                    _ = tokio::time::sleep_until(next) => {}
                }
                let elapsed = started.elapsed().as_secs_f64();
                let param = ProgressNotificationParam::new(token.clone(), elapsed)
                    .with_message(format!("{tool}: running for {elapsed:.1} s"));
                if peer.notify_progress(param).await.is_err() {
                    // The client is gone; the call's own end (or cancellation) follows.
                    return;
                }
                next += PROGRESS_INTERVAL;
            }
        });
        Ticker { stop, task }
    }

    /// Stops reporting and waits until no progress notification is in flight, so none
    /// follows the call's response.
    pub(crate) async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}
