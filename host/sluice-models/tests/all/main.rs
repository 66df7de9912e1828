//! The model backends against fake providers on 127.0.0.1 (`sluice-test-support`): the
//! OpenAI Chat, OpenAI-compatible and Anthropic backends (and, for the error envelopes,
//! Bedrock) against its fake provider: every wire format as JSON and as a stream, the request
//! bodies (snapshots), every row of the provider context-window signature table of
//! `docs/agent-loop.md#detection`, retries and the pre-send estimate; the Bedrock Converse
//! backend against its fake Bedrock. Row P12 (`docs/regressions.md#p12`) and the other runs of
//! the real agent loop against the same fake live in `tests/all/agent_backends` of
//! `sluice-tests`, so that testing this crate does not build the runtime.

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod base_url; // Where requests go: Anthropic bases with or without /v1; a 404 names the URL.
mod bedrock; // Bedrock Converse: JSON and event-stream replies, errors, retries, the body, SigV4 and keys.
mod bodies; // Request bodies per provider: snapshots, system slot, pairing, merging, headers.
mod decode; // Replies: text + 2 tool calls, JSON and streamed, into the exact ModelReply.
mod llama; // llama-cpp-python 0.3.36's real behaviours, faked: "" content, empty 200s, sizes.
mod retries; // 429 with retry-after, 529/503, in-stream overload, cut streams, no retry of overflow.
mod signatures; // Every row of the signature table: context_window_exceeded, sent once; 429 is not.

use sluice_models::ModelRequest;
use sluice_models::provider::Provider;
use sluice_protocol::Message;

use sluice_test_support::fake_provider::{backend, config};

/// A one-message request.
fn prompt(text: &str) -> ModelRequest {
    ModelRequest {
        system: "You are a test agent.".into(),
        messages: vec![Message::user(text, "2026-01-01T00:00:00Z")],
        tools: vec![],
    }
}

/// The providers whose codecs this crate implements, each with its two modes.
const CODECS: [(Provider, bool); 6] = [
    (Provider::OpenAi, false),
    (Provider::OpenAi, true),
    (Provider::OpenAiCompatible, false),
    (Provider::OpenAiCompatible, true),
    (Provider::Anthropic, false),
    (Provider::Anthropic, true),
];
