//! `sluice-kit`'s integration tests, one binary: the projects `sluice new` writes, `build` on
//! them with each toolchain and on hand-written ones, and `sluice test`'s recorded HTTP.

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod build_and_call; // Each language's project built with its toolchain, loaded and called; its tests.toml.
mod build_errors; // A bad manifest, a failing command, a missing or wrong output.
mod new_project; // Every language's project file by file; what `new_project` refuses.
mod recorded_http; // `sluice test` with recorded HTTP responses: no request reaches the network.
