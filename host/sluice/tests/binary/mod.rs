//! Running the `sluice` binary from an integration test (`drop_in.rs`, `http_example.rs`):
//! include with `mod binary;`.

#[path = "../support/warm_cache.rs"]
mod warm_cache;

use std::process::{Command, Output};

/// Runs `sluice` with `args`, sharing one compiled-component cache across tests, without the
/// operator's `SLUICE_AGENT_MAX_TOOL_RESULT_BYTES` and `SLUICE_LOG`.
pub(crate) fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .env("SLUICE_CACHE_DIR", warm_cache::warm_cache())
        .env_remove("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES")
        .env_remove("SLUICE_LOG")
        .output()
        .expect("sluice runs")
}

/// `bytes` (a process's stdout or stderr) as text.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
