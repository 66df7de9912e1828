//! What Sluice's integration tests share, across crates: fake model providers on 127.0.0.1
//! ([`fake_provider`], [`fake_bedrock`] with its [`event_stream`] frames, [`held_model`]),
//! the OAuth authorization server ([`oauth_mock`]), [`skip_or_fail`] for a test whose service
//! or toolchain is missing, and the helpers of tests that run the `sluice` binary
//! ([`listening`], [`warm_cache`], [`mcp_clients`]).
//!
//! It builds no runtime (no wasmtime): `sluice-models` tests with it and stays light. The
//! real-component helpers (the built-in tools over a temporary root, the test components)
//! are `sluice-tests`' library.

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;

pub mod event_stream;
pub mod fake_bedrock;
pub mod fake_provider;
pub mod held_model;
pub mod listening;
pub mod mcp_clients;
pub mod oauth_mock;
pub mod warm_cache;

/// Whether the tests run under CI (`CI=true`), where nothing may be skipped.
pub fn under_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// Says on stderr that a test is skipped and why (`skipped: REASON`), past the test
/// harness's capture so that a plain `cargo test` shows it; the caller then returns and the
/// test passes. Under `CI=true` a skip is a failure instead.
///
/// # Panics
/// Under `CI=true`, with `skipped: REASON`.
pub fn skip_or_fail(reason: &str) {
    let message = format!("skipped: {reason}");
    assert!(!under_ci(), "{message}");
    let _ = writeln!(std::io::stderr(), "{message}");
}
