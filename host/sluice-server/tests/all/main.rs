//! `sluice-server`'s integration tests, one binary: the operator API over real HTTP, the OAuth
//! resource server's verifier against a real authorization server, live reload in process.

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api; // The operator API on 127.0.0.1: routes, auth, the guard, runs, TLS, tenancy, the console.
mod oauth; // OAuth access tokens: JWTs, keys and their rotation, introspection, the metadata document.
mod reload; // The reloader of `sluice serve` and `sluice mcp` over a tools directory: reloads and logs.
