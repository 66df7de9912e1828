//! The defaults of the limits that the configuration resolves and the runtime and the agent
//! loop enforce, each written once (docs/configuration.md). The configuration, the runtime,
//! the agent and the MCP server re-export or read these; none writes the number again.

/// `agent.max_tool_result_bytes` when not set: the cap on every observation, in bytes
/// (64 KiB). The guests' own default page budget (`sluice_pager::budget`) is the same number;
/// a test in sluice-config holds the two together.
pub const DEFAULT_MAX_TOOL_RESULT_BYTES: u32 = 65_536;

/// `agent.max_turns` when not set: the most model requests one run makes.
pub const DEFAULT_MAX_TURNS: u32 = 50;

/// A tool's wall-clock limit per call when its policy sets no `timeout_ms`, in ms.
pub const DEFAULT_TOOL_TIMEOUT_MS: u64 = 10_000;

/// A tool's linear-memory limit when its policy sets no `memory_mib`, in MiB.
pub const DEFAULT_TOOL_MEMORY_MIB: u64 = 256;

/// The largest `memory_mib` a tool policy may set, in MiB (4 GiB, the wasm32 limit).
pub const MAX_TOOL_MEMORY_MIB: u64 = 4096;

/// `runtime.queue_timeout_ms` when not set: how long a call waits for a free slot of the call
/// pool before it is refused as `busy`, in ms.
pub const DEFAULT_QUEUE_TIMEOUT_MS: u64 = 10_000;

/// `mcp.tools_per_page` when not set: tools in one MCP `tools/list` page.
pub const DEFAULT_MCP_TOOLS_PER_PAGE: u32 = 100;

/// The most files, directories and HTTP requests one tool call may hold open at once,
/// besides its preopened roots (`sluice_runtime::limits::MAX_OPEN_DESCRIPTORS`, which
/// enforces it); also the largest `http_max_connections`.
pub const MAX_OPEN_DESCRIPTORS: usize = 256;

/// `http_max_connections` when a tool policy does not set it: the most `wasi:http` requests
/// one call may have open at once.
pub const DEFAULT_HTTP_MAX_CONNECTIONS: usize = 16;
