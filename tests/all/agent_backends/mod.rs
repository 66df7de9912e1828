//! The real agent loop over the real provider backends, against the fake provider that
//! `sluice-models`' own tests use (`sluice_test_support::fake_provider`, on 127.0.0.1).
//! These tests link the agent loop, the runtime and the store, which is why they live here
//! and not in `sluice-models` (whose tests must not build wasmtime or the guests).

mod llama; // The agent loop recovering llama-cpp-python-like sessions, faked.
mod p12; // Row P12: the real OpenAI backend and the real agent loop against a 20,000-byte window.

use sluice_test_support::fake_provider::{backend, config};
