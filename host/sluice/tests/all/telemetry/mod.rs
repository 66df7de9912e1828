//! What an operator sees of a running Sluice: traces exported over OTLP to a real receiver
//! (`traces`) and metrics scraped by a real Prometheus (`metrics`), both from the built
//! binary.

mod metrics; // `GET /metrics` of `serve` and `mcp --listen`, scraped by Prometheus.
mod traces;
