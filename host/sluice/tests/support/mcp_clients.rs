//! The MCP clients Sluice did not write, where `host/sluice-mcp/clients/install.sh` (run by
//! `.ci/run`) installs them under `target/mcp-clients/`: the official Python SDK (the venv
//! `venv/`, driving `tests/mcp/python_client.py`), Node 22 and the official conformance suite.
//! Without one a test prints `skipped: …` and passes; under `CI=true` it fails. Include with
//! `#[path = "../support/mcp_clients.rs"] mod mcp_clients;`.

use std::path::{Path, PathBuf};

/// Where install.sh puts the clients.
pub(crate) fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-clients")
}

/// `path` when it exists; else `None` after saying that `what` is not installed (a failure
/// under `CI=true`).
pub(crate) fn installed(path: PathBuf, what: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    let reason = format!(
        "skipped: {what} is not installed at {} (run host/sluice-mcp/clients/install.sh)",
        path.display()
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{reason}");
    #[allow(clippy::print_stderr)]
    {
        eprintln!("{reason}");
    }
    None
}

/// The venv's Python, when installed (see [`installed`]).
pub(crate) fn python() -> Option<PathBuf> {
    installed(clients_dir().join("venv/bin/python"), "the MCP Python SDK")
}

/// The script the Python SDK runs (its usage is in its docstring).
pub(crate) fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/python_client.py")
}

/// The one JSON line the script printed, once it exited successfully (else a failure
/// showing what it printed).
pub(crate) fn answer(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "the Python client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON line")
}
