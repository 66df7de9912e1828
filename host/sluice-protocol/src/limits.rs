//! The defaults of the limits that the configuration resolves and the runtime and the agent
//! loop enforce, each written once (docs/configuration.md). The configuration, the runtime,
//! the agent and the MCP server re-export or read these; none writes the number again.

/// `agent.max_tool_result_bytes` when not set: the cap on every observation, in bytes
/// (64 KiB); also the page budget a guest assumes when the host tells it none
/// (`sluice_file_tools::budget`).
pub const DEFAULT_MAX_TOOL_RESULT_BYTES: u32 = 65_536;

/// The smallest `agent.max_tool_result_bytes`, in bytes.
pub const MIN_MAX_TOOL_RESULT_BYTES: u32 = 1_024;

/// The largest `agent.max_tool_result_bytes`, in bytes (1 MiB).
pub const MAX_MAX_TOOL_RESULT_BYTES: u32 = 1_048_576;

/// `agent.max_turns` when not set: the most model requests one run makes.
pub const DEFAULT_MAX_TURNS: u32 = 50;

/// A tool's wall-clock limit per call when its policy sets no `timeout_ms`, in ms.
pub const DEFAULT_TOOL_TIMEOUT_MS: u64 = 10_000;

/// The largest `timeout_ms` a tool policy may set, in ms (one hour).
pub const MAX_TOOL_TIMEOUT_MS: u64 = 3_600_000;

/// A tool's linear-memory limit when its policy sets no `memory_mib`, in MiB.
pub const DEFAULT_TOOL_MEMORY_MIB: u64 = 256;

/// The largest `memory_mib` a tool policy may set, in MiB (4 GiB, the wasm32 limit).
pub const MAX_TOOL_MEMORY_MIB: u64 = 4096;

/// `runtime.queue_timeout_ms` when not set: how long a call waits for a free slot of the call
/// pool before it is refused as `busy`, in ms.
pub const DEFAULT_QUEUE_TIMEOUT_MS: u64 = 10_000;

/// The largest `runtime.max_concurrent_calls`: calls the call pool runs at once.
pub const MAX_MAX_CONCURRENT_CALLS: usize = 1024;

/// `runtime.max_concurrent_calls` when not set: twice the available cores (calls spend part
/// of their time waiting on files), at least 2 and at most [`MAX_MAX_CONCURRENT_CALLS`].
pub fn default_max_concurrent_calls() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    (2 * cores).clamp(2, MAX_MAX_CONCURRENT_CALLS)
}

/// `mcp.tools_per_page` when not set: tools in one MCP `tools/list` page.
pub const DEFAULT_MCP_TOOLS_PER_PAGE: u32 = 100;

/// The most files, directories and HTTP requests one tool call may hold open at once,
/// besides its preopened roots (`sluice_runtime::limits::MAX_OPEN_DESCRIPTORS`, which
/// enforces it); also the largest `http_max_connections`.
pub const MAX_OPEN_DESCRIPTORS: usize = 256;

/// `http_max_connections` when a tool policy does not set it: the most `wasi:http` requests
/// one call may have open at once.
pub const DEFAULT_HTTP_MAX_CONNECTIONS: usize = 16;

/// `code_mode.inner_max_result_bytes` when not set: the cap on each observation a script's
/// tool call returns to the script, in bytes (4 MiB). Inner observations never enter the
/// transcript, so they may be larger than `agent.max_tool_result_bytes`.
pub const DEFAULT_INNER_MAX_RESULT_BYTES: u32 = 4 << 20;

/// The largest `code_mode.inner_max_result_bytes`, in bytes (16 MiB, what the host lifts
/// out of a guest in one go).
pub const MAX_INNER_MAX_RESULT_BYTES: u32 = 16 << 20;

/// `code_mode.max_inner_calls` when not set: the most tool calls one script may make.
pub const DEFAULT_MAX_INNER_CALLS: u32 = 1_000;

/// `code_mode.max_inner_bytes` when not set: the most bytes of observations one script's
/// tool calls may return in all (1 GiB).
pub const DEFAULT_MAX_INNER_BYTES: u64 = 1 << 30;

/// The timeout of the built-in `run_script` when its policy sets none, in ms (a script
/// reads many pages; its inner calls count against it).
pub const DEFAULT_SCRIPT_TIMEOUT_MS: u64 = 30_000;
