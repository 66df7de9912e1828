//! Metrics scraped by a real Prometheus.
