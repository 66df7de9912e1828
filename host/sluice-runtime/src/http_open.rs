//! How many `wasi:http` requests a call has open, and the host's own
//! `wasi:http/outgoing-handler.handle` that bounds them
//! (docs/configuration.md#outbound-http).
//!
//! Each request holds a host file descriptor (its connection's socket) from the guest's
//! `handle` until the host is done with it: the response failed, or its body was read to
//! the end, or the guest dropped it. A guest that starts requests without finishing them
//! would otherwise hold one descriptor each, up to the resource table's 10,000 per call.
//! So `handle` is wasmtime-wasi-http's own behind two checks that stop the call with a
//! [`HostLimit`] (kind `resource-limit`):
//!
//! 1. at most `http_max_connections` requests open at once ([`HostLimit::Connections`]);
//! 2. open requests and open files together at most
//!    [`MAX_OPEN_DESCRIPTORS`] ([`HostLimit::Descriptors`]).
//!
//! What a call left open when it ends is closed then: the store's resources abort their
//! tasks, and the call thread drops the tasks of a call that left any
//! ([`crate::pool`]), so no socket outlives its call.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi_http::RequestOptions;
use wasmtime_wasi_http::WasiHttpView;
use wasmtime_wasi_http::p2::bindings::http::{outgoing_handler, types::ErrorCode};
use wasmtime_wasi_http::p2::types::{HostFutureIncomingResponse, HostOutgoingRequest};

use crate::host::{CallState, WASI_VERSION};
use crate::limits::{HostLimit, MAX_OPEN_DESCRIPTORS};

/// The number of requests a call has open, shared by its hooks and the tasks that hold
/// its connections.
#[derive(Clone, Debug, Default)]
pub(crate) struct OpenRequests(Arc<AtomicUsize>);

impl OpenRequests {
    /// How many are open now.
    pub(crate) fn count(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }

    /// Counts one more open request until the returned guard is dropped.
    pub(crate) fn hold(&self) -> Held {
        self.0.fetch_add(1, Ordering::AcqRel);
        Held(self.0.clone())
    }
}

/// One open request: dropped when the host is done with its connection.
#[derive(Debug)]
pub(crate) struct Held(Arc<AtomicUsize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Why the call may not open one more request now, if it may not: `max` is the policy's
/// `http_max_connections`, `files` the files and directories the call holds open.
pub(crate) fn refuse(open: usize, max: usize, files: usize) -> Option<HostLimit> {
    if open >= max {
        Some(HostLimit::Connections { max })
    } else if open + files >= MAX_OPEN_DESCRIPTORS {
        Some(HostLimit::Descriptors)
    } else {
        None
    }
}

/// Replaces `handle` of `wasi:http/outgoing-handler` in `linker` (which already holds
/// wasmtime-wasi-http's) with the checks of the module docs before it.
///
/// # Errors
/// wasmtime's error when the function cannot be defined.
pub(crate) fn shadow(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    linker
        .instance(&format!("wasi:http/outgoing-handler@{WASI_VERSION}"))?
        .func_wrap(
            "handle",
            |mut store: StoreContextMut<'_, CallState>,
             (request, options): (
                Resource<HostOutgoingRequest>,
                Option<Resource<RequestOptions>>,
            )|
             -> wasmtime::Result<(Result<Resource<HostFutureIncomingResponse>, ErrorCode>,)> {
                let state = store.data_mut();
                state.descriptors.retain(|d| d.strong_count() > 0);
                let open = state.http.open_requests().count();
                if let Some(limit) =
                    refuse(open, state.http.max_connections(), state.descriptors.len())
                {
                    return Err(limit.into());
                }
                let mut view = state.http();
                match outgoing_handler::Host::handle(&mut view, request, options) {
                    Ok(future) => Ok((Ok(future),)),
                    Err(e) => Ok((Err(e.downcast()?),)),
                }
            },
        )?;
    linker.allow_shadowing(false);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_count_until_their_guards_drop_and_both_bounds_hold() {
        let open = OpenRequests::default();
        let a = open.hold();
        let b = open.clone().hold();
        assert_eq!(open.count(), 2);
        drop(a);
        assert_eq!(open.count(), 1);
        drop(b);
        assert_eq!(open.count(), 0);
        assert_eq!(refuse(15, 16, 0), None);
        assert_eq!(refuse(16, 16, 0), Some(HostLimit::Connections { max: 16 }));
        assert_eq!(
            refuse(16, 256, MAX_OPEN_DESCRIPTORS - 16),
            Some(HostLimit::Descriptors)
        );
        assert_eq!(refuse(16, 256, MAX_OPEN_DESCRIPTORS - 17), None);
        assert_eq!(
            HostLimit::Connections { max: 16 }.to_string(),
            "the tool had 16 HTTP requests open at once and started another; one call may have at most 16 open at once (policy key http_max_connections, at most 256); a request is open until its response has been read to the end or dropped"
        );
    }
}
