//! Clients Sluice did not write, installed by `host/sluice-mcp/clients/install.sh` (which
//! `.ci/run` runs) under `target/mcp-clients/`: the official Python SDK (PyPI `mcp`) and the
//! official conformance suite (npm `@modelcontextprotocol/conformance`). Without them the
//! tests print why and pass; under `CI=true` they fail.

use std::path::Path;

use serde_json::{Value, json};

use super::http::listen;
use super::{SLUICE, mcp_clients, root_flag};

/// Runs the Python SDK script; returns the JSON line it printed.
async fn python(transport: &str, handshake: &str, target: &str) -> Option<Value> {
    let python = mcp_clients::python()?;
    let out = tokio::process::Command::new(python)
        .arg(crate::mcp::python_client_script())
        .args([transport, handshake, target])
        .env("SLUICE_CACHE_DIR", crate::warm_cache())
        .env_remove("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES")
        .output()
        .await
        .unwrap();
    Some(mcp_clients::answer(&out))
}

/// What the script must see, whatever the transport and handshake.
fn check(out: &Value, version: Value) {
    assert_eq!(
        out,
        &json!({
            "server": "sluice",
            "version": version,
            "tools": ["read_file", "tail_file", "grep_files", "list_dir", "run_script"],
            "readOnly": [true, true, true, true, true],
            // What Claude Code reads to keep a result whole: the cap (default 65,536).
            "maxResultSizeChars": [65_536, 65_536, 65_536, 65_536, 65_536],
            "page": "{\"ok\":true,\"result\":{\"path\":\"f.txt\",\"size\":8,\"offset\":0,\"startLine\":1,\"endLine\":2,\"totalLines\":2,\"contentBytes\":8,\"content\":\"one\\ntwo\\n\"}}",
            "pageIsError": false,
            "unknown": "{\"ok\":false,\"error\":\"unknown_tool\",\"name\":\"no_such_tool\",\"tools\":[\"list_dir\",\"run_script\",\"read_file\",\"tail_file\",\"grep_files\"]}",
            "unknownIsError": true,
            "grep": 1,
            "progress": true,
        })
    );
}

fn supported() -> Value {
    json!(["2025-06-18", "2025-11-25", "2026-07-28"])
}

/// The stdio command line of `sluice mcp` over a root like [`listen`]'s.
fn stdio_argv(dir: &Path) -> String {
    std::fs::write(dir.join("f.txt"), "one\ntwo\n").unwrap();
    std::fs::write(dir.join("app.log"), "INFO a\nERROR b\n").unwrap();
    let root = root_flag(dir);
    json!([SLUICE, "--root", root, "mcp"]).to_string()
}

#[tokio::test]
async fn python_sdk_over_stdio_with_discover() {
    let dir = tempfile::tempdir().unwrap();
    if let Some(out) = python("stdio", "discover", &stdio_argv(dir.path())).await {
        check(&out, supported());
    }
}

#[tokio::test]
async fn python_sdk_over_stdio_with_initialize() {
    let dir = tempfile::tempdir().unwrap();
    if let Some(out) = python("stdio", "initialize", &stdio_argv(dir.path())).await {
        check(&out, json!("2025-11-25"));
    }
}

#[tokio::test]
async fn python_sdk_over_http_with_discover() {
    let server = listen(&["mcp", "--listen", "127.0.0.1:0"], &[]).await;
    let url = format!("{}/mcp", server.url);
    if let Some(out) = python("http", "discover", &url).await {
        check(&out, supported());
    }
}

#[tokio::test]
async fn python_sdk_over_http_with_initialize() {
    let server = listen(&["serve", "--listen", "127.0.0.1:0"], &[]).await;
    let url = format!("{}/mcp", server.url);
    if let Some(out) = python("http", "initialize", &url).await {
        check(&out, json!("2025-11-25"));
    }
}

/// The official conformance suite against `POST /mcp` of `sluice serve`: every scenario
/// that applies to a tools-only server passes; the others are in
/// `tests/all/mcp/conformance-baseline-<revision>.yml`, each with its reason. Run once per revision
/// Sluice serves over HTTP with a handshake of its own (2025-11-25 with `initialize`,
/// 2026-07-28 stateless).
#[tokio::test]
async fn conformance_suite_passes_with_its_baseline() {
    let dir = mcp_clients::clients_dir();
    let Some(node) = mcp_clients::installed(dir.join("node/bin/node"), "Node 22") else {
        return;
    };
    let Some(cli) = mcp_clients::installed(
        dir.join("conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"),
        "the MCP conformance suite",
    ) else {
        return;
    };
    let server = listen(&["serve", "--listen", "127.0.0.1:0"], &[]).await;
    let url = format!("{}/mcp", server.url);
    let work = tempfile::tempdir().unwrap();
    for revision in ["2025-11-25", "2026-07-28"] {
        let baseline = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/all/mcp/conformance-baseline-{revision}.yml"));
        let out = tokio::process::Command::new(&node)
            .arg(&cli)
            .args(["server", "--url", &url, "--requirements", revision])
            .arg("--expected-failures")
            .arg(&baseline)
            .current_dir(work.path())
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "conformance {revision} failed:\n{stdout}\n{stderr}"
        );
    }
}
