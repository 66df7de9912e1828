//! The one adapter between MCP and Sluice's tool call path ([`Toolbox::call_with`], the
//! path `sluice call` takes): a call either ends with the observation `sluice call` would
//! print for it, byte for byte, or, when the client cancels it, with nothing.
//!
//! The runtime bounds calls in flight itself (`runtime.max_concurrent_calls`, with a `busy`
//! tool error after `runtime.queue_timeout_ms`) and stops a cancelled guest within
//! milliseconds; this adapter only maps MCP's cancellation (`notifications/cancelled`, or
//! the HTTP response stream closed) onto the call's [`CancellationToken`], and answers
//! nothing for a cancelled request.

use std::sync::Arc;

use sluice_runtime::{CallOptions, Observation, Toolbox};
use tokio_util::sync::CancellationToken;

/// Calls tool `name` of `toolbox` (the one current when the call arrived: the call holds
/// it to the end, whatever live reload puts in its place) with the JSON text `args` under
/// the cap `cap` (bytes): the observation `sluice call` prints for the same call, or `None`
/// when `cancel` fired first (nothing is to be sent for a cancelled request). A script it
/// runs (`run_script`) may call destructive tools when `allow_destructive`
/// (`mcp.allow_destructive`: the client approves them).
///
/// The guest is stopped when `cancel` fires, and also when this future is dropped (rmcp
/// drops a handler whose HTTP client went away): the call's own token is a child of
/// `cancel` that fires on drop.
pub(crate) async fn call(
    toolbox: Arc<Toolbox>,
    name: &str,
    args: String,
    (cap, allow_destructive): (u32, bool),
    cancel: &CancellationToken,
) -> Option<Observation> {
    let call = cancel.child_token();
    let _stop_on_drop = call.clone().drop_guard();
    let options = CallOptions::new(cap)
        .with_cancel(call)
        .with_destructive_allowed(allow_destructive)
        // rmcp parsed the arguments, and `args` is their JSON written again.
        .with_reencoded_arguments();
    let observation = toolbox.call_with(name, &args, &options).await;
    (!cancel.is_cancelled()).then_some(observation)
}
