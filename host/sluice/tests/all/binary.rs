//! Running the `sluice` binary from a test (`drop_in.rs`, `help.rs`, `http_example.rs`).

use std::process::{Command, Output};

/// Runs `sluice` with `args`, sharing one compiled-component cache across tests, without the
/// operator's `SLUICE_AGENT_MAX_TOOL_RESULT_BYTES` and `SLUICE_LOG`.
pub(crate) fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .env("SLUICE_CACHE_DIR", crate::warm_cache())
        .env_remove("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES")
        .env_remove("SLUICE_LOG")
        .output()
        .expect("sluice runs")
}

/// `bytes` (a process's stdout or stderr) as text.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
