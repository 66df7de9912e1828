//! What an operator grants one tool: roots, limits, environment, config and secrets. Deny
//! by default. The value types it shares with the configuration (functions and argument
//! refinements, the HTTP grant, the policy's origin) are declared in [`sluice_grants`] and
//! re-exported here under the paths they always had.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use sluice_protocol::limits::{
    DEFAULT_HTTP_MAX_CONNECTIONS, DEFAULT_TOOL_MEMORY_MIB as DEFAULT_MEMORY_MIB,
    DEFAULT_TOOL_TIMEOUT_MS as DEFAULT_TIMEOUT_MS,
};

pub(crate) use sluice_grants::toml_key;
pub use sluice_grants::{
    ArgPolicy, DEFAULT_HTTP_MAX_RESPONSE_BYTES, FunctionPolicy, HttpAllow, HttpCredential,
    HttpGrant, HttpHost, PolicyOrigin,
};

use crate::host::http_recorded::HttpRecordings;
use crate::secrets::SecretSource;

/// A named host directory granted to a tool; the guest sees it preopened at `/<name>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RootGrant {
    /// The root's name (what the model passes as `root`).
    pub name: String,
    /// The host directory.
    pub dir: PathBuf,
    /// Whether the tool may write under it (read-only otherwise).
    pub write: bool,
}

/// Everything a tool may use. [`ToolPolicy::default`] grants nothing: no roots, no
/// environment, the default limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolPolicy {
    /// Directories the tool may see, in order; the first is its default root.
    pub roots: Vec<RootGrant>,
    /// Environment variables the guest sees (name, value).
    pub env: Vec<(String, String)>,
    /// Linear memory limit, in bytes.
    pub memory_bytes: u64,
    /// Wall-clock limit of one call.
    pub timeout: Duration,
    /// File-name patterns refused as key material (see `sluice:tools/key-policy`).
    pub key_names: Vec<String>,
    /// The component's expected SHA-256 (64 hex digits); a component with another digest
    /// refuses to load.
    pub sha256: Option<String>,
    /// The description of the component's tools whose WIT carries no doc comment.
    pub description: Option<String>,
    /// The tools change things: calls wait for the operator's approval. Granting a root
    /// with write access makes a tool destructive too.
    pub destructive: bool,
    /// Put before the name of each of the component's tools, with `_` between
    /// (`prefix = "fs"`: `read-file` is offered as `fs_read_file`); not before a name given
    /// in [`ToolPolicy::functions`].
    pub prefix: Option<String>,
    /// Settings of single functions, by the function's name as the component exports it
    /// (`read-file`, or `iface/read-file` for a function of an exported interface) or by
    /// the tool name it would get (`read_file`). A key that names no function refuses the
    /// component.
    pub functions: BTreeMap<String, FunctionPolicy>,
    /// Where the operator configured this policy, so that messages can name the key that
    /// changes it. `None` for a policy built in code.
    pub origin: Option<PolicyOrigin>,
    /// Outbound HTTP through `wasi:http` (policy keys `http`, `http_methods`,
    /// `http_private`, `http_max_response_bytes`, `http_max_connections`,
    /// `http_credentials`; the credentials' secrets are withheld as [`crate::secrets`] says and
    /// attached by [`crate::host::http`]). The default grants no host: every request is
    /// refused.
    pub http: HttpGrant,
    /// Recorded responses that answer its requests in place of the network (`sluice test`'s
    /// `[[http]]` tables; no policy key sets it). When set, a request the checks of `http`
    /// allow (`allow`, `methods`) gets the recording of its method and URL, its body within
    /// `max_response_bytes` as a real one; no name is resolved (`private` plays no part) and
    /// nothing is sent. A request no recording matches is refused (`http-denied`, naming
    /// them). `None` (the default): requests go to the network.
    pub http_recordings: Option<HttpRecordings>,
    /// Plain values of the component's `wasi:config/store`, by config key (`[config]`).
    pub config: BTreeMap<String, String>,
    /// Secrets of the component's `wasi:config/store`, by config key (`[secrets]`): read
    /// when the component loads (a secret that cannot be read makes it unavailable) and
    /// withheld from every observation of its tools ([`crate::secrets`]).
    pub secrets: BTreeMap<String, SecretSource>,
    /// Files no open of the component reaches: the sources of secrets and keys the whole
    /// configuration names (every tool's secret files, `model.api_key_file`), whichever
    /// components are loaded. Refused by name (as key material) and by device and inode
    /// (a hard link, a symlink); the component's own secret files are refused without
    /// being listed here (docs/keys.md#secret-files). Default: none.
    pub refused_files: Vec<PathBuf>,
    /// Whether its calls may call the toolbox's other tools (`sluice:tools/tool-calls`), and
    /// within which limits: set for the built-in `run_script` only (`None`: they may not).
    pub tool_calls: Option<ToolCallLimits>,
}

impl Default for ToolPolicy {
    fn default() -> Self {
        ToolPolicy {
            roots: Vec::new(),
            env: Vec::new(),
            memory_bytes: DEFAULT_MEMORY_MIB << 20,
            timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            key_names: sluice_keys::DEFAULT_DENIED_NAMES
                .iter()
                .map(|s| s.to_string())
                .collect(),
            sha256: None,
            description: None,
            destructive: false,
            prefix: None,
            functions: BTreeMap::new(),
            origin: None,
            http: HttpGrant::default(),
            http_recordings: None,
            config: BTreeMap::new(),
            secrets: BTreeMap::new(),
            refused_files: Vec::new(),
            tool_calls: None,
        }
    }
}

/// What a tool that calls other tools (the built-in `run_script`) may take through them
/// (`[code_mode]`, docs/code-mode.md#limits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolCallLimits {
    /// `code_mode.inner_max_result_bytes`: the cap on each observation a call returns to
    /// the script, in bytes (default 4 MiB, at most 16 MiB).
    pub inner_max_result_bytes: u32,
    /// `code_mode.max_inner_calls`: the most tool calls one script may make (default 1,000).
    pub max_calls: u32,
    /// `code_mode.max_inner_bytes`: the most bytes of observations one script's calls may
    /// return in all (default 1 GiB).
    pub max_bytes: u64,
}

impl Default for ToolCallLimits {
    fn default() -> Self {
        use sluice_protocol::limits as l;
        ToolCallLimits {
            inner_max_result_bytes: l::DEFAULT_INNER_MAX_RESULT_BYTES,
            max_calls: l::DEFAULT_MAX_INNER_CALLS,
            max_bytes: l::DEFAULT_MAX_INNER_BYTES,
        }
    }
}

impl ToolPolicy {
    /// True when calls need approval: `destructive` is set or a root is writable.
    pub fn is_destructive(&self) -> bool {
        self.destructive || self.roots.iter().any(|r| r.write)
    }

    /// The default policy with read-only `roots`.
    pub fn read_only(roots: impl IntoIterator<Item = (String, PathBuf)>) -> Self {
        ToolPolicy {
            roots: roots
                .into_iter()
                .map(|(name, dir)| RootGrant {
                    name,
                    dir,
                    write: false,
                })
                .collect(),
            ..ToolPolicy::default()
        }
    }
}
