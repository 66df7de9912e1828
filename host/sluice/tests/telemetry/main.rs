//! What an operator sees of a running Sluice: traces exported over OTLP to a real receiver
//! (`traces`) and metrics scraped by a real Prometheus (`metrics`), both from the built
//! binary.

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/listening.rs"]
mod listening; // The address a server prints.
mod metrics; // `GET /metrics` of `serve` and `mcp --listen`, scraped by Prometheus.
mod traces;
#[path = "../support/warm_cache.rs"]
mod warm_cache; // The compiled-component cache, warmed once. // Spans received by an OTLP receiver: one tree per run, traceparent continued.
