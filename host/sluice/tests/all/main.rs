//! The `sluice` binary's integration tests, one binary: the commands as an operator runs them,
//! MCP clients, the console in a browser, registries and live reload, replicas on PostgreSQL,
//! telemetry. Tests that need a service or toolchain the machine lacks say they are skipped,
//! and fail under `CI=true` (`sluice_test_support::skip_or_fail`).

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod binary; // Running the binary with the shared cache; its output as text.
mod cache; // `sluice cache info|prune` over a cache of the test's own.
mod cli; // Exit codes, stdout, stderr of call, run, serve, tools, inspect; boot checks.
mod console; // The operator console in a real browser (chromium through Selenium).
mod doctor; // `sluice doctor`: every configuration of docs/configuration.md, each key's source.
mod drop_in; // Components beside the built-ins: one that cannot load, policy typos, unknown keys.
mod help; // `sluice COMMAND --help`: the options each command takes, shared ones before or after.
mod http_credentials; // Credentials the tool never holds, from the environment and from a file.
mod http_example; // The example tools calling `wasi:http` against a local server.
mod mcp; // `sluice mcp` as MCP clients drive it: rmcp, raw JSON-RPC, the Python SDK, OAuth, TLS.
mod oci; // Components from registries and live reload through the binary.
mod replicas; // Two `sluice serve` replicas on one PostgreSQL database: runs, failover, tenancy.
mod secrets; // Secret files refused by every tool; secrets withheld from observations.
mod shared_store; // Two `sluice` processes on one SQLite store: one run per session.
mod telemetry; // Traces over OTLP to a real receiver, metrics scraped by a real Prometheus.

use std::path::{Path, PathBuf};

/// The compiled-component cache the tests' processes share, warmed once with each built-in
/// (`sluice_test_support::warm_cache`).
pub(crate) fn warm_cache() -> PathBuf {
    sluice_test_support::warm_cache::warm_cache(
        Path::new(env!("CARGO_BIN_EXE_sluice")),
        Path::new(env!("CARGO_TARGET_TMPDIR")),
    )
}
