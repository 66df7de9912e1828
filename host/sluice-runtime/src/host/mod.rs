//! The host side of one call: what a component's imports reach. One module per interface
//! the host answers or bounds, over the call's store data ([`state::CallState`]):
//!
//! - WASI 0.2 from wasmtime-wasi, with the host's own non-blocking `open-at`
//!   (`open_at`) beneath the roots (`preopens`, refusing `refused` files), and
//!   `wasi:random` bounded by [`MAX_RANDOM_BYTES`](crate::limits::MAX_RANDOM_BYTES)
//!   (`random`);
//! - `wasi:http` to the policy's allowlist only ([`http`], `http_open`,
//!   `open_requests`, addresses judged by [`crate::address`]), or answered from recordings
//!   ([`http_recorded`]);
//! - `wasi:config/store` from the policy's values and secrets (`config_store`);
//! - the `sluice:tools` interfaces (`bindings`): `budget` and `key-policy`
//!   (`budget`), `listing` ([`listing`]), `key-carries` ([`key_carries`]) and `whole-files`
//!   ([`whole_files`]);
//! - `sluice:tools/tool-calls`, answered for `run_script` only (`tool_calls`);
//! - the guest's stderr, its tail kept for messages (`stderr`).

use wasmtime::component::Linker;

use crate::host::state::CallState;

pub(crate) mod bindings;
mod budget;
pub(crate) mod config_store;
pub mod http;
mod http_open;
pub mod http_recorded;
pub mod key_carries;
pub mod listing;
mod open_at;
mod open_requests;
pub(crate) mod preopens;
mod random;
pub(crate) mod refused;
pub mod state;
pub(crate) mod stderr;
pub(crate) mod tool_calls;
pub mod whole_files;

/// Adds WASI 0.2 (`wasi:http` included, sent by [`HttpHooks`](crate::host::http::HttpHooks)), `wasi:config/store` and the
/// `sluice:tools` host interfaces to `linker`.
///
/// # Errors
/// wasmtime's error when an interface is defined twice.
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)?;
    wasmtime_wasi_config::add_to_linker(linker, |s: &mut CallState| {
        wasmtime_wasi_config::WasiConfig::from(&s.config.vars)
    })?;
    crate::host::open_at::shadow(linker)?;
    crate::host::http_open::shadow(linker)?;
    crate::host::random::shadow(linker)?;
    crate::host::bindings::add_to_linker(linker)?;
    Ok(())
}
