//! `sluice-config`'s integration tests, one binary: configurations refused at boot with what
//! is wrong, `[config]` and `[secrets]`, `http_credentials`.

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod config_secrets; // [tools.x.config] values and [tools.x.secrets] sources; bad keys and shapes.
mod errors; // Every bad configuration refused at boot naming the key, the value or the line.
mod http_credentials; // [http_credentials."HOST"]: keyed by an http entry, its header, its secret.
