//! The real agent loop over the real provider backends, against the fake provider that
//! `sluice-models`' own tests use (`host/sluice-models/tests/support`, on 127.0.0.1).
//! These tests link the agent loop, the runtime and the store, which is why they live here
//! and not in `sluice-models` (whose tests must not build wasmtime or the guests).

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// The fake is shared with `sluice-models/tests/providers`, which uses all of it; these
// tests use a part.
#[allow(dead_code)]
#[path = "../../host/sluice-models/tests/support/mod.rs"]
mod support;

mod llama; // The agent loop recovering llama-cpp-python-like sessions (issue 13), faked.
mod p12; // Row P12: the real OpenAI backend and the real agent loop against a 20,000-byte window.

use support::{backend, config};
