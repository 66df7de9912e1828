//! What an operator grants one tool: roots, limits, environment. Deny by default.

use std::path::PathBuf;
use std::time::Duration;

/// A tool's default timeout, in ms (docs/configuration.md#tool-policies).
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// A tool's default memory limit, in MiB.
pub const DEFAULT_MEMORY_MIB: u64 = 256;

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
}

impl Default for ToolPolicy {
    fn default() -> Self {
        ToolPolicy {
            roots: Vec::new(),
            env: Vec::new(),
            memory_bytes: DEFAULT_MEMORY_MIB << 20,
            timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            key_names: sluice_pager::keys::DEFAULT_DENIED_NAMES
                .iter()
                .map(|s| s.to_string())
                .collect(),
            sha256: None,
            description: None,
            destructive: false,
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
