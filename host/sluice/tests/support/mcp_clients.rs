//! The official MCP Python SDK as a client of `sluice mcp`, where
//! `host/sluice-mcp/clients/install.sh` (run by `.ci/run`) installs it: the venv
//! `target/mcp-clients/venv` of the repository, driving `tests/mcp/python_client.py`.
//! Without it a test prints `skipped: …` and passes; under `CI=true` it fails. (The same
//! rule as tests/mcp/clients.rs.) Include with
//! `#[path = "../support/python_mcp.rs"] mod python_mcp;`.

use std::path::{Path, PathBuf};

/// The venv's Python, when installed; else `None` after saying why (a failure under
/// `CI=true`).
pub(crate) fn python() -> Option<PathBuf> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-clients/venv/bin/python");
    if path.exists() {
        return Some(path);
    }
    let reason = format!(
        "skipped: the MCP Python SDK is not installed at {} (run host/sluice-mcp/clients/install.sh)",
        path.display()
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{reason}");
    #[allow(clippy::print_stderr)]
    {
        eprintln!("{reason}");
    }
    None
}

/// The script the Python SDK runs (its usage is in its docstring).
pub(crate) fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/python_client.py")
}
