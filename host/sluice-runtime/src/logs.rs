//! What of a tool call may reach a log (docs/observations.md#secrets-are-withheld): secrets
//! are withheld from log lines as from observations.
//!
//! - The call's own line (`tool call`, at `info` when it made HTTP requests) shows each
//!   request's method and authority, which the guest chose: the component's secrets are
//!   withheld from it (each occurrence replaced by `[secret withheld: KEY]`).
//! - wasmtime's WASI crates log every host call a guest makes, with its arguments (paths,
//!   authorities, header values, strings it read from `wasi:config`), at `trace`
//!   (`bindgen!` with `tracing`), and a few guest-chosen names at `debug`; rustls logs the
//!   server name of an `https` request (the guest's host) at `debug`. Nothing below `info`
//!   of [`UNLOGGED_TARGETS`] is logged, whatever `SLUICE_LOG` asks for: a logger applies
//!   [`may_log`] to every span and event.

/// The crates whose spans and events below `info` are never logged: wasmtime's WASI
/// implementations and the TLS client, which log guests' arguments.
pub const UNLOGGED_TARGETS: &[&str] = &[
    "wasmtime_wasi",
    "wasmtime_wasi_io",
    "wasmtime_wasi_http",
    "wasmtime_wasi_config",
    "rustls",
    "tokio_rustls",
];

/// True when a span or event of `meta` may be logged: it is at `info` or above, or its
/// target is not one of [`UNLOGGED_TARGETS`] (a target `wasmtime_wasi::p2::…` is
/// `wasmtime_wasi`'s; `wasmtime_wasi_http` is not `wasmtime_wasi`'s).
pub fn may_log(meta: &tracing::Metadata<'_>) -> bool {
    *meta.level() <= tracing::Level::INFO || !is_unlogged(meta.target())
}

/// True when `target` belongs to one of [`UNLOGGED_TARGETS`].
fn is_unlogged(target: &str) -> bool {
    UNLOGGED_TARGETS.iter().any(|t| {
        target
            .strip_prefix(t)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wasi_crates_and_their_modules_are_unlogged_others_are_not() {
        for t in [
            "wasmtime_wasi",
            "wasmtime_wasi::p2::bindings::sync::wasi::filesystem::types",
            "wasmtime_wasi_http::p2::bindings::generated::wasi::http::types",
            "wasmtime_wasi_config",
        ] {
            assert!(is_unlogged(t), "{t}");
        }
        for t in [
            "wasmtime",
            "wasmtime_wasix",
            "sluice_runtime::call::invoke",
            "wasmtime_cranelift",
        ] {
            assert!(!is_unlogged(t), "{t}");
        }
    }
}
