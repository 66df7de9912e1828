//! `sluice mcp` as MCP clients drive it: rmcp's own client over stdio (the child-process
//! transport) against the built binary, raw JSON-RPC for bad input, and clients Sluice did
//! not write (the official Python SDK, the official conformance suite).

mod bad_input; // Malformed JSON-RPC, unknown methods, wrong versions, oversized lines, EOF, a client that stops reading.
mod clients; // The official Python SDK (stdio and HTTP, both handshakes) and the conformance suite.
mod code_mode; // run_script through sluice call, a session and MCP: the same observation; limits, cancel, 16 at once.
mod cold_start; // An empty cache with two interpreter tools: the handshake is answered while they compile.
mod http; // POST /mcp of `sluice serve` and `sluice mcp --listen`: token, Host, Origin, body limit.
mod oauth; // As an OAuth resource server: metadata, 401 challenge, expired and foreign tokens, 403 naming the scope, the Python SDK signed in.
mod stdio; // rmcp's client: list, each built-in byte for byte, paging 5 MB, keys, errors, limits, concurrency.
mod surface;
mod tls; // HTTPS from sluice.toml and the flags: serve, its metrics listener, mcp --listen; start-up errors; the plain-HTTP warning. // The cap declared to Claude Code, tool-search words, instructions, rmcp's logs, backpressure.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

// The clients Sluice did not write, where install.sh puts them.
use sluice_test_support::mcp_clients;

/// The script the Python SDK runs, `python_client.py` beside this file (its usage is in its
/// docstring).
pub(crate) fn python_client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/mcp/python_client.py")
}

/// The binary under test.
pub(crate) const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// `sluice ARGS…` with the shared cache and no cap from the environment.
pub(crate) fn command(args: &[&str]) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(SLUICE);
    c.args(args)
        .env("SLUICE_CACHE_DIR", crate::warm_cache())
        .env_remove("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES")
        .env_remove("SLUICE_MCP_ALLOW_DESTRUCTIVE")
        .env_remove("SLUICE_SERVER_TOKEN")
        .env("SLUICE_LOG", "warn")
        .kill_on_drop(true);
    c
}

/// An rmcp client of `sluice ARGS… mcp` over stdio (`mcp` is added unless `args` has it,
/// followed by its own flags).
pub(crate) async fn client(args: &[&str]) -> RunningService<RoleClient, ()> {
    let mut all: Vec<&str> = args.to_vec();
    if !all.contains(&"mcp") {
        all.push("mcp");
    }
    let mut cmd = command(&all);
    cmd.stderr(Stdio::inherit());
    let transport = TokioChildProcess::new(cmd).expect("sluice mcp starts");
    ().serve(transport)
        .await
        .expect("the MCP handshake succeeds")
}

/// What `sluice ARGS… call TOOL ARGS_JSON` prints (without its newline).
pub(crate) async fn sluice_call(args: &[&str], tool: &str, json: &str) -> String {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["call", tool, json]);
    let out = command(&all).output().await.expect("sluice call runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    text.strip_suffix('\n').expect("a line").to_string()
}

/// Calls `tool` with `args` (a JSON object).
pub(crate) async fn call<S: rmcp::Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let mut params = CallToolRequestParams::new(tool.to_string());
    if let Value::Object(map) = args {
        params = params.with_arguments(map);
    }
    client.call_tool(params).await.expect("tools/call answers")
}

/// The one text block of a result.
pub(crate) fn text(result: &CallToolResult) -> &str {
    assert_eq!(result.content.len(), 1, "one content block: {result:?}");
    &result.content[0].as_text().expect("a text block").text
}

/// `--root DIR` for `dir`.
pub(crate) fn root_flag(dir: &Path) -> String {
    format!("root={}", dir.display())
}
