//! The host's own `wasi:http/outgoing-handler.handle`, which bounds the requests a call
//! has open
//! (docs/configuration.md#outbound-http).
//!
//! Each request holds a host file descriptor (its connection's socket) from the guest's
//! `handle` until the host is done with it: the response failed, or its body was read to
//! the end, or the guest dropped it. A guest that starts requests without finishing them
//! would otherwise hold one descriptor each, up to the resource table's 10,000 per call.
//! So `handle` is wasmtime-wasi-http's own behind two checks that stop the call with a
//! [`HostLimit`](crate::limits::HostLimit) (kind `resource-limit`):
//!
//! 1. at most `http_max_connections` requests open at once ([`HostLimit::Connections`](crate::limits::HostLimit::Connections));
//! 2. open requests and open files together at most
//!    [`MAX_OPEN_DESCRIPTORS`](crate::limits::MAX_OPEN_DESCRIPTORS) ([`HostLimit::Descriptors`](crate::limits::HostLimit::Descriptors)).
//!
//! What a call left open when it ends is closed then: the store's resources abort their
//! tasks, and the call thread drops the tasks of a call that left any
//! ([`crate::pool`]), so no socket outlives its call.

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi_http::RequestOptions;
use wasmtime_wasi_http::WasiHttpView;
use wasmtime_wasi_http::p2::bindings::http::{outgoing_handler, types::ErrorCode};
use wasmtime_wasi_http::p2::types::{HostFutureIncomingResponse, HostOutgoingRequest};

use crate::host::open_requests::refuse;
use crate::host::state::{CallState, WASI_VERSION};

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
