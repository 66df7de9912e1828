//! What an operator grants one tool: roots, limits, environment, config and secrets. Deny
//! by default.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use sluice_protocol::limits::{
    DEFAULT_HTTP_MAX_CONNECTIONS, DEFAULT_TOOL_MEMORY_MIB as DEFAULT_MEMORY_MIB,
    DEFAULT_TOOL_TIMEOUT_MS as DEFAULT_TIMEOUT_MS,
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
    /// `http_private`, `http_max_response_bytes`). The default grants no host: every request
    /// is refused.
    pub http: HttpGrant,
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

/// `http_max_response_bytes` when not configured: 10 MiB.
pub const DEFAULT_HTTP_MAX_RESPONSE_BYTES: u64 = 10 << 20;

/// What a tool may reach over `wasi:http` (docs/configuration.md#outbound-http).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpGrant {
    /// `http`: the hosts it may send requests to; empty: none.
    pub allow: Vec<HttpAllow>,
    /// `http_methods`: the methods it may use, uppercase (`GET`); empty: any.
    pub methods: Vec<String>,
    /// `http_private`: allowed host names may resolve to loopback, private and link-local
    /// addresses (any address that is not globally reachable,
    /// [`special_range`](crate::address::special_range)). IP literals of those ranges are
    /// allowed when listed, whatever this says.
    pub private: bool,
    /// `http_max_response_bytes`: the most body bytes one response may have (default
    /// [`DEFAULT_HTTP_MAX_RESPONSE_BYTES`]); a longer one fails the call with a
    /// `resource-limit` error naming the limit.
    pub max_response_bytes: u64,
    /// `http_max_connections`: the most requests one call may have open at once (default
    /// [`DEFAULT_HTTP_MAX_CONNECTIONS`], at most
    /// [`MAX_OPEN_DESCRIPTORS`](crate::limits::MAX_OPEN_DESCRIPTORS)); a request is open
    /// from `outgoing-handler.handle` until its connection is closed. One more stops the
    /// call with a `resource-limit` error naming the key. Open requests also count against
    /// the call's [`MAX_OPEN_DESCRIPTORS`](crate::limits::MAX_OPEN_DESCRIPTORS), with its
    /// open files.
    pub max_connections: usize,
    /// Recorded responses that answer its requests in place of the network (`sluice test`'s
    /// `[[http]]` tables; no policy key sets it). When set, a request the checks above allow
    /// (`allow`, `methods`) gets the recording of its method and URL, its body within
    /// `max_response_bytes` as a real one; no name is resolved (`private` plays no part) and
    /// nothing is sent. A request no recording matches is refused (`http-denied`, naming
    /// them). `None` (the default): requests go to the network.
    pub recordings: Option<HttpRecordings>,
    /// `http_credentials`: headers the host adds to requests to single hosts of `allow`,
    /// with secrets read when the component loads and never given to the guest
    /// ([`crate::host::http`], docs/configuration.md#credentials-the-tool-never-holds).
    /// Default: none.
    pub credentials: Vec<HttpCredential>,
}

/// One credential of `http_credentials`: after the allowlist, method and address checks
/// pass, a request to `entry`'s host and port gets `header: value`, `{secret}` in `value`
/// replaced by the secret (a header of that name the guest set is replaced).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpCredential {
    /// The entry of `allow` it goes to: one host name or IP address (not
    /// [`HttpHost::Subdomains`]) and its port (`None`: the scheme's default port, as in
    /// `allow`).
    pub entry: HttpAllow,
    /// The header's name (`authorization`).
    pub header: String,
    /// The header's value, with `{secret}` once where the secret goes (`Bearer {secret}`).
    pub value: String,
    /// Where the secret is read from when the component loads; one that cannot be read, or
    /// is shorter than [`MIN_SECRET_BYTES`](crate::secrets::MIN_SECRET_BYTES), makes the
    /// component unavailable.
    pub secret: SecretSource,
}

impl Default for HttpGrant {
    fn default() -> Self {
        HttpGrant {
            allow: Vec::new(),
            methods: Vec::new(),
            private: false,
            max_response_bytes: DEFAULT_HTTP_MAX_RESPONSE_BYTES,
            max_connections: DEFAULT_HTTP_MAX_CONNECTIONS,
            recordings: None,
            credentials: Vec::new(),
        }
    }
}

/// One entry of `http`: a host and optionally a port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpAllow {
    /// Which hosts the entry covers.
    pub host: HttpHost,
    /// The port; `None`: the default port of the request's scheme only (80 for `http`,
    /// 443 for `https`).
    pub port: Option<u16>,
}

/// The host part of an [`HttpAllow`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpHost {
    /// This host name exactly (lowercase, no trailing dot): `api.example.com`.
    Name(String),
    /// Every name below this domain, at any depth, but not the domain itself:
    /// `*.example.com` is `Subdomains("example.com")`.
    Subdomains(String),
    /// This IP address, given as a literal; the only way to reach a loopback, private or
    /// link-local address by address.
    Ip(std::net::IpAddr),
}

impl std::fmt::Display for HttpAllow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            HttpHost::Name(n) => f.write_str(n)?,
            HttpHost::Subdomains(d) => write!(f, "*.{d}")?,
            HttpHost::Ip(std::net::IpAddr::V6(ip)) if self.port.is_some() => write!(f, "[{ip}]")?,
            HttpHost::Ip(ip) => write!(f, "{ip}")?,
        }
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => Ok(()),
        }
    }
}

/// The settings of one function of a component (`[tools.NAME.functions.FUNC]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionPolicy {
    /// The tool's name, instead of the one derived from the export (and without the
    /// prefix): 1 to 64 characters of `A-Z a-z 0-9 _ -`.
    pub name: Option<String>,
    /// What the model is told the tool does: replaces the WIT doc comment and the policy's
    /// `description`.
    pub description: Option<String>,
    /// `args.<a>`: refinements of single arguments, by the argument's WIT name
    /// (`start-line`) or the name the model gives it (`startLine`); top-level arguments only
    /// (a record argument's fields are not addressed). Checked against the argument's type
    /// when the component loads ([`crate::component::refine`]): an argument that does not
    /// exist, or a refinement its type cannot take, refuses the component.
    pub args: BTreeMap<String, ArgPolicy>,
}

/// The refinements of one argument (`[tools.NAME.functions.FUNC.args.ARG]`), each narrowing
/// what its WIT type allows: the JSON schema the model sees shows them, and a call that
/// breaks one is an `invalid-argument` error before the component runs. A key set here
/// replaces what the argument's WIT doc comment says (`@minimum`, `@maximum`, the text).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArgPolicy {
    /// What the model is told the argument is.
    pub description: Option<String>,
    /// The least value, inclusive: an integer within the type's range for an integer
    /// argument, any finite number for an `f32` or `f64`. Other types refuse it.
    pub minimum: Option<serde_json::Number>,
    /// The greatest value, inclusive; as `minimum`, and not below it.
    pub maximum: Option<serde_json::Number>,
    /// `enum`: the values a `string` argument may take, or the cases of a WIT `enum`
    /// argument it may take (each one of its cases); not empty, each once.
    pub one_of: Option<Vec<String>>,
    /// `pattern`: a regular expression a `string` argument must match somewhere, in JSON
    /// Schema's dialect (ECMA-262, not anchored; no look-around or backreferences); not with
    /// `one_of`.
    pub pattern: Option<String>,
}

/// Where a policy is configured, for messages that name the key to change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyOrigin {
    /// A `[tools.NAME]` table of `sluice.toml` (`NAME` is the table's key).
    Table(String),
    /// A built-in tool offered through `builtins` (or by default), with no table.
    Builtins(String),
    /// The sibling `*.toml` policy of a component in the tools directory (which may not
    /// exist yet).
    Sibling(PathBuf),
}

impl PolicyOrigin {
    /// The keys that rename tool `tool` (exported as `export`) of this policy, in words:
    /// `prefix = "…" or [tools.fs.functions.read-file] name = "…" in sluice.toml`.
    pub fn rename_keys(&self, export: &str) -> String {
        match self {
            PolicyOrigin::Table(name) => format!(
                "[tools.{}] prefix = \"…\" or [tools.{}.functions.{}] name = \"…\" in the configuration file",
                toml_key(name),
                toml_key(name),
                toml_key(export)
            ),
            PolicyOrigin::Builtins(name) => format!(
                "[tools.{name}] prefix = \"…\" or [tools.{name}.functions.{}] name = \"…\" in the configuration file, or leave {name} out of `builtins = [...]`",
                toml_key(export)
            ),
            PolicyOrigin::Sibling(file) => format!(
                "prefix = \"…\" or [functions.{}] name = \"…\" in {}",
                toml_key(export),
                file.display()
            ),
        }
    }
}

impl PolicyOrigin {
    /// Where policy key `key` (`memory_mib`) of this policy is set, in words:
    /// `tools.stats.memory_mib in the configuration file`, `memory_mib in tools/stats.toml`.
    pub fn key_at(&self, key: &str) -> String {
        match self {
            PolicyOrigin::Table(name) | PolicyOrigin::Builtins(name) => {
                format!("tools.{}.{key} in the configuration file", toml_key(name))
            }
            PolicyOrigin::Sibling(file) => format!("{key} in {}", file.display()),
        }
    }
}

/// `key` as a TOML key: bare when it can be, quoted otherwise (`"iface/read-file"`).
pub(crate) fn toml_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        key.to_string()
    } else {
        format!("{key:?}")
    }
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
