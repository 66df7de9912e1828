//! The OpenAI Chat, OpenAI-compatible and Anthropic backends (and, for the error envelopes,
//! Bedrock) against the fake provider of `tests/support` on 127.0.0.1: every wire format as
//! JSON and as a stream, the request bodies (snapshots), every row of the provider
//! context-window signature table of `docs/agent-loop.md#detection`, retries, the pre-send
//! estimate, and row P12 (`docs/regressions.md#p12`) through the real agent loop.

#[path = "../support/mod.rs"]
mod support;

mod bodies; // Request bodies per provider: snapshots, system slot, pairing, merging, headers.
mod decode; // Replies: text + 2 tool calls, JSON and streamed, into the exact ModelReply.
mod llama; // llama-cpp-python's real behaviours (issue 13), faked: "" content, empty 200s, sized recovery.
mod p12; // Row P12: the real OpenAI backend and the real agent loop against a 20,000-byte window.
mod retries; // 429 with retry-after, 529/503, in-stream overload, cut streams, no retry of overflow.
mod signatures; // Every row of the signature table: context_window_exceeded, sent once; 429 is not.

use std::sync::Arc;

use sluice_backends::http::RetryPolicy;
use sluice_backends::provider::{Provider, ProviderConfig, Secret, connect};
use sluice_backends::{Backend, ModelRequest};
use sluice_protocol::Message;

use support::Fake;

/// The model name each provider is configured with.
fn model(provider: Provider) -> &'static str {
    match provider {
        Provider::OpenAi => "gpt-4.1-mini",
        Provider::OpenAiCompatible => "qwen2.5:7b-instruct",
        Provider::Anthropic => "claude-sonnet-4-5",
        Provider::Bedrock => "anthropic.claude-3-5-sonnet-20240620-v1:0",
    }
}

/// A configuration for `provider` pointed at `fake`, with key `test-key`, streaming or not,
/// and retries that wait 1 ms (3 retries).
fn config(provider: Provider, fake: &Fake, stream: bool) -> ProviderConfig {
    let mut c = ProviderConfig::new(provider, model(provider));
    c.base_url = Some(fake.base_url());
    c.api_key = Some(Secret::new("test-key"));
    c.stream = stream;
    c.retry = RetryPolicy {
        max_retries: 3,
        base_delay_ms: 1,
        max_delay_ms: 50,
    };
    c
}

/// The real backend for `config`, through `provider::connect`.
fn backend(config: ProviderConfig) -> Arc<dyn Backend> {
    connect(config).unwrap()
}

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
