//! `wasi:random` with a bound on the bytes one request may ask for.

use wasmtime::StoreContextMut;
use wasmtime::component::Linker;

use crate::host::state::{CallState, WASI_VERSION};
use crate::limits::{HostLimit, MAX_RANDOM_BYTES};

/// Replaces `get-random-bytes` and `get-insecure-random-bytes` of `wasi:random` with
/// wasmtime-wasi's own, behind a check of [`MAX_RANDOM_BYTES`] that stops the call with
/// [`HostLimit::RandomBytes`] (wasmtime-wasi's own limit, 64 MiB, traps with an error of
/// no type).
pub(crate) fn shadow(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    use wasmtime_wasi::p2::bindings::random::{insecure, random};
    fn check(len: u64) -> wasmtime::Result<()> {
        if len > MAX_RANDOM_BYTES {
            return Err(HostLimit::RandomBytes { asked: len }.into());
        }
        Ok(())
    }
    linker.allow_shadowing(true);
    linker
        .instance(&format!("wasi:random/random@{WASI_VERSION}"))?
        .func_wrap(
            "get-random-bytes",
            |mut store: StoreContextMut<'_, CallState>, (len,): (u64,)| {
                check(len)?;
                Ok((random::Host::get_random_bytes(
                    store.data_mut().wasi.random(),
                    len,
                )?,))
            },
        )?;
    linker
        .instance(&format!("wasi:random/insecure@{WASI_VERSION}"))?
        .func_wrap(
            "get-insecure-random-bytes",
            |mut store: StoreContextMut<'_, CallState>, (len,): (u64,)| {
                check(len)?;
                Ok((insecure::Host::get_insecure_random_bytes(
                    store.data_mut().wasi.random(),
                    len,
                )?,))
            },
        )?;
    linker.allow_shadowing(false);
    Ok(())
}
