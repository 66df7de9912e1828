//! The MCP clients Sluice did not write, where `host/sluice-mcp/clients/install.sh` (run by
//! `.ci/run`) installs them under `target/mcp-clients/`: the official Python SDK (the venv
//! `venv/`, driving host/sluice's `tests/all/mcp/python_client.py`), Node 22 and the official
//! conformance suite, and npm `oauth2-mock-server` ([`crate::oauth_mock`]). Without one a
//! test says it is skipped and passes; under `CI=true` it fails ([`crate::skip_or_fail`]).

use std::path::{Path, PathBuf};

/// Where install.sh puts the clients.
pub fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-clients")
}

/// `path` when it exists; else `None` after saying that `what` is not installed (a failure
/// under `CI=true`).
pub fn installed(path: PathBuf, what: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    crate::skip_or_fail(&format!(
        "{what} is not installed at {} (run host/sluice-mcp/clients/install.sh)",
        path.display()
    ));
    None
}

/// The venv's Python, when installed (see [`installed`]).
pub fn python() -> Option<PathBuf> {
    installed(clients_dir().join("venv/bin/python"), "the MCP Python SDK")
}

/// The one JSON line the script printed, once it exited successfully (else a failure
/// showing what it printed).
pub fn answer(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "the Python client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON line")
}
