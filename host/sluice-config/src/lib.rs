//! Sluice's configuration, resolved once into a validated [`Config`].
//!
//! Precedence, highest first: command-line flag, `SLUICE_*` environment variable,
//! `sluice.toml`, default. Every bound is checked here, at boot, with an error that names
//! the key, the value, where it came from, and what is allowed; nothing runs on a bad
//! configuration.
//!
//! ```
//! use sluice_config::{Config, Overrides};
//!
//! let dir = tempfile::tempdir()?;
//! let overrides = Overrides {
//!     roots: vec![format!("logs={}", dir.path().display())],
//!     max_tool_result_bytes: Some("8192".into()),
//!     ..Overrides::default()
//! };
//! let config = Config::resolve(None, &|_| None, &overrides)?;
//! assert_eq!(config.agent.max_tool_result_bytes, 8192);
//! assert_eq!(config.roots[0].name, "logs");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod cache;
mod code_mode;
mod error;
mod file;
mod functions;
pub mod http;
pub mod http_credentials;
mod live_keys;
mod mcp;
mod model;
mod registry;
mod roots;
mod runtime;
mod secrets;
mod server;
mod server_oauth;
mod server_tls;
mod server_tokens;
mod sources;
pub mod telemetry;
mod tools;
mod tools_dir;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::file::{Raw, Source};
pub use cache::KEY_CACHE_MAX_BYTES;
pub use code_mode::{CodeModeConfig, SCRIPT_TOOL};
pub use error::ConfigError;
pub use functions::{ArgConfig, BOUND_RULE, ENUM_RULE, FunctionConfig, PATTERN_RULE};
pub use live_keys::{
    Allowed, BOOT_ONLY_KEYS, RUNTIME_KEYS, RUNTIME_ORIGIN, RuntimeKey, RuntimeSetting, runtime_key,
    runtime_value,
};
pub use mcp::{DEFAULT_TOOLS_PER_PAGE, ENV_MCP_ALLOW_DESTRUCTIVE, MAX_TOOLS_PER_PAGE, McpConfig};
pub use model::{ModelConfig, ProviderName, ToolChoice};
pub use roots::RootConfig;
use roots::{root, root_from_flag, root_key};
pub use runtime::{
    DEFAULT_QUEUE_TIMEOUT_MS, ENV_BASELINE_COMPILER, ENV_MAX_CONCURRENT_CALLS,
    ENV_QUEUE_TIMEOUT_MS, MAX_MAX_CONCURRENT_CALLS, MAX_QUEUE_TIMEOUT_MS, RuntimeConfig,
    default_max_concurrent_calls,
};
pub use secrets::{CONFIG_KEY_RULE, SecretRef};
pub use server::{
    ALLOWED_HOST_RULE, DEFAULT_HEADER_READ_TIMEOUT_MS, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_EVENT_STREAMS, DEFAULT_MAX_UNAUTHENTICATED_CONNECTIONS, ENV_ALLOWED_HOSTS,
    ServerConfig, ServerLimits, valid_allowed_host,
};
pub use server_oauth::{
    DEFAULT_LEEWAY_SECS, IntrospectionConfig, MAX_LEEWAY_SECS, OAUTH_URL_RULE, OAuthConfig,
    valid_oauth_url,
};
pub use server_tls::{FLAG_TLS_CERT, FLAG_TLS_KEY, TLS_FILES_RULE, TlsFiles};
pub use server_tokens::{ADMIN_PRINCIPAL, ServerToken, TOKEN_NAME_RULE, valid_token_name};
use sluice_protocol::limits::DEFAULT_MAX_TOOL_RESULT_BYTES;
use sluice_protocol::limits::{
    MAX_MAX_TOOL_RESULT_BYTES as MAX_MAX_RESULT_BYTES,
    MIN_MAX_TOOL_RESULT_BYTES as MIN_MAX_RESULT_BYTES,
};
pub use sources::{Explained, Origin, REDACTED, Setting};
pub use telemetry::TelemetryConfig;
pub use tools::{
    BUILTIN_TOOLS, ConfiguredBy, DEFAULT_MEMORY_MIB, DEFAULT_TIMEOUT_MS, MAX_MEMORY_MIB,
    MAX_TIMEOUT_MS, OciSource, PREFIX_RULE, TOOL_NAME_RULE, ToolConfig, ToolSource,
};
pub use tools_dir::RejectedTool;

/// The environment variable that sets `agent.max_tool_result_bytes`.
pub const ENV_MAX_TOOL_RESULT_BYTES: &str = "SLUICE_AGENT_MAX_TOOL_RESULT_BYTES";

/// The environment variable that sets `agent.max_turns`.
pub const ENV_MAX_TURNS: &str = "SLUICE_AGENT_MAX_TURNS";

/// The environment variable that sets `agent.auto_approve`.
pub const ENV_AUTO_APPROVE: &str = "SLUICE_AGENT_AUTO_APPROVE";

/// The environment variable that sets `store.path`.
pub const ENV_STORE: &str = "SLUICE_STORE";

/// The environment variable that sets `store.url`.
pub const ENV_STORE_URL: &str = "SLUICE_STORE_URL";

/// What `store.url` may be, as messages say it.
pub const STORE_URL_RULE: &str =
    "a PostgreSQL URL, postgres://USER:PASSWORD@HOST:PORT/DATABASE (or postgresql://…)";

/// Every environment variable that sets a configuration key, with that key.
pub const ENV_KEYS: &[(&str, &str)] = &[
    (ENV_MAX_TOOL_RESULT_BYTES, "agent.max_tool_result_bytes"),
    (ENV_MAX_TURNS, "agent.max_turns"),
    (ENV_AUTO_APPROVE, "agent.auto_approve"),
    (ENV_STORE, "store.path"),
    (ENV_STORE_URL, "store.url"),
    (ENV_ALLOWED_HOSTS, "server.allowed_hosts"),
    (ENV_MCP_ALLOW_DESTRUCTIVE, "mcp.allow_destructive"),
    (ENV_MAX_CONCURRENT_CALLS, "runtime.max_concurrent_calls"),
    (ENV_QUEUE_TIMEOUT_MS, "runtime.queue_timeout_ms"),
    (ENV_BASELINE_COMPILER, "runtime.baseline_compiler"),
    (telemetry::ENV_OTLP_ENDPOINT, "telemetry.otlp_endpoint"),
    (telemetry::ENV_CAPTURE_CONTENT, "telemetry.capture_content"),
    (telemetry::ENV_METRICS, "telemetry.metrics"),
    (telemetry::ENV_METRICS_LISTEN, "telemetry.metrics_listen"),
];

/// Refuses a variable of [`ENV_KEYS`] that is set but is not UTF-8 text, which
/// [`Config::resolve`]'s `env` cannot carry (it would read as unset, and the default would
/// apply silently). `get` reads a variable as the OS holds it (`std::env::var_os`).
///
/// # Errors
/// [`ConfigError::Value`] naming the key, the variable and its bytes.
pub fn check_environment(get: &dyn Fn(&str) -> Option<OsString>) -> Result<(), ConfigError> {
    for (var, key) in ENV_KEYS {
        if let Some(value) = get(var)
            && value.to_str().is_none()
        {
            let allowed = if *var == ENV_STORE {
                "valid UTF-8 text (for a path that is not, use --store FILE)"
            } else {
                "valid UTF-8 text"
            };
            return Err(ConfigError::Value {
                key: (*key).to_string(),
                value: format!("{value:?}"),
                allowed: allowed.to_string(),
                origin: (*var).to_string(),
            });
        }
    }
    Ok(())
}

pub use sluice_protocol::limits::DEFAULT_MAX_TURNS;

/// The largest `agent.max_turns`.
pub const MAX_MAX_TURNS: u32 = 10_000;

/// Values from the command line; `None` or empty means "not given".
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `--root DIR` or `--root NAME=DIR`, in order.
    pub roots: Vec<String>,
    /// `--max-tool-result-bytes`, as typed.
    pub max_tool_result_bytes: Option<String>,
    /// `--tools DIR`: a directory of `*.wasm` components with sibling `*.toml` policies.
    pub tools_dir: Option<PathBuf>,
    /// `--max-turns`, as typed.
    pub max_turns: Option<String>,
    /// `--auto-approve`.
    pub auto_approve: bool,
    /// `--store FILE`.
    pub store: Option<PathBuf>,
    /// `--store-url URL`.
    pub store_url: Option<String>,
    /// `--model PROVIDER:NAME`.
    pub model: Option<String>,
    /// `--max-concurrent-calls`, as typed.
    pub max_concurrent_calls: Option<String>,
    /// `sluice serve --allowed-host NAME`, in order (replaces `server.allowed_hosts`).
    pub allowed_hosts: Vec<String>,
    /// `--tls-cert FILE` (`sluice serve`, `sluice mcp`): with `tls_key`, replaces
    /// `[server.tls]`.
    pub tls_cert: Option<PathBuf>,
    /// `--tls-key FILE`: with `tls_cert`, replaces `[server.tls]`.
    pub tls_key: Option<PathBuf>,
    /// `--allow-destructive` (`sluice mcp`, `sluice serve`): serve destructive tools over MCP.
    pub allow_destructive: bool,
    /// `--strict`: a component that fails to load stops the start (sets `strict`).
    pub strict: bool,
}

/// The resolved configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The `[agent]` table.
    pub agent: AgentConfig,
    /// Named directories tools may be granted; the first is the default root.
    pub roots: Vec<RootConfig>,
    /// The components to load and their policies: the built-ins first, then `[tools.*]`,
    /// then the tools directory.
    pub tools: Vec<ToolConfig>,
    /// The components of the tools directory left out because their policy or their name
    /// is wrong (always empty under `strict`, which refuses them), in file-name order:
    /// loaders list them as unavailable with the reason.
    pub rejected: Vec<RejectedTool>,
    /// `strict` (`--strict`): a component that fails to load stops the start. Default
    /// false: it is reported on stderr, listed by `sluice tools` as unavailable with its
    /// reason, and the other tools (built-ins included) start.
    pub strict: bool,
    /// The session database (`store.path`), if set; `None` means the default location.
    pub store: Option<PathBuf>,
    /// The PostgreSQL session database (`store.url`, `SLUICE_STORE_URL`, `--store-url`),
    /// if set: then `store` is `None` (setting both is an error). It may hold a password:
    /// show it only through `sluice_store::redact_url`.
    pub store_url: Option<String>,
    /// The model (`[model]`, `--model`).
    pub model: ModelConfig,
    /// How tool calls run (`[runtime]`).
    pub runtime: RuntimeConfig,
    /// The `[server]` table (`sluice serve`).
    pub server: ServerConfig,
    /// The MCP server (`[mcp]`).
    pub mcp: McpConfig,
    /// The limits of a script's tool calls (`[code_mode]`), which the built-in
    /// `run_script`'s [`ToolConfig::tool_calls`] carries.
    pub code_mode: CodeModeConfig,
    /// What a fetch reads from a registry, at most (`[registry]`).
    pub registry: sluice_registry_terms::Limits,
    /// `cache.max_bytes`: the most bytes of compiled components the cache keeps (0 to
    /// 1 TiB); `None` when unset: the cache's default, 512 MiB.
    pub cache_max_bytes: Option<u64>,
    /// `sluice.lock`, the digests the `oci://` components resolved to: beside the
    /// configuration file, or in the current directory without one.
    pub lock_file: PathBuf,
    /// The tools directory (`--tools`, `tools_dir`), if any.
    pub tools_dir: Option<PathBuf>,
    /// Traces and metrics (`[telemetry]`).
    pub telemetry: TelemetryConfig,
}

/// Settings of the agent loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentConfig {
    /// `agent.max_tool_result_bytes`: the cap on every observation, in bytes
    /// (1,024 to 1,048,576; default 65,536).
    pub max_tool_result_bytes: u32,
    /// `agent.max_turns`: the most model requests of one run (1 to 10,000; default 50).
    pub max_turns: u32,
    /// `agent.auto_approve`: run destructive tools without waiting for approval (default
    /// false).
    pub auto_approve: bool,
    /// `agent.system_prompt`: replaces the default system prompt.
    pub system_prompt: Option<String>,
}

/// `sluice.toml` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    agent: FileAgent,
    #[serde(default)]
    roots: toml::Table,
    /// Built-in tools to offer; default all.
    builtins: Option<Vec<String>>,
    /// A tools directory, relative to the file.
    tools_dir: Option<String>,
    /// A component that fails to load stops the start.
    strict: Option<bool>,
    #[serde(default)]
    tools: BTreeMap<String, tools::PolicyFile>,
    #[serde(default)]
    store: FileStore,
    #[serde(default)]
    model: model::FileModel,
    #[serde(default)]
    runtime: runtime::FileRuntime,
    #[serde(default)]
    server: server::FileServer,
    #[serde(default)]
    mcp: mcp::FileMcp,
    #[serde(default)]
    code_mode: code_mode::FileCodeMode,
    #[serde(default)]
    registry: registry::FileRegistry,
    #[serde(default)]
    cache: cache::FileCache,
    #[serde(default)]
    telemetry: telemetry::FileTelemetry,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAgent {
    max_tool_result_bytes: Option<Raw>,
    max_turns: Option<Raw>,
    auto_approve: Option<Raw>,
    system_prompt: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileStore {
    path: Option<String>,
    url: Option<String>,
}

/// One setting's value from the highest-precedence place that has it, as text, with where it
/// came from.
fn layered(
    flag: Option<(&str, &str)>,
    env: &dyn Fn(&str) -> Option<String>,
    env_var: &str,
    file: Option<&Raw>,
    file_label: &str,
) -> Option<(String, String)> {
    if let Some((value, flag)) = flag {
        return Some((value.to_string(), flag.to_string()));
    }
    if let Some(value) = env(env_var) {
        return Some((value, env_var.to_string()));
    }
    file.map(|v| (v.shown(), file_label.to_string()))
}

/// `true` or `false` (or `1`, `0`) given as text.
fn boolean(key: &str, text: String, origin: String) -> Result<bool, ConfigError> {
    match text.trim() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(ConfigError::Value {
            key: key.to_string(),
            value: text,
            allowed: "true or false".into(),
            origin,
        }),
    }
}

/// An integer from `min` to `max` given as text.
fn integer(
    key: &str,
    text: &str,
    origin: &str,
    min: u64,
    max: u64,
    unit: &str,
) -> Result<u64, ConfigError> {
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| ConfigError::Value {
            key: key.to_string(),
            value: text.to_string(),
            allowed: format!("an integer from {min} to {max}{unit}"),
            origin: origin.to_string(),
        })
}

impl Config {
    /// Resolves the configuration from the file at `file` (if any), the environment (read
    /// through `env`, so tests need not change the process environment) and `overrides`.
    /// A variable that is set but not UTF-8 cannot be read through `env`: check the
    /// process's variables first with [`check_environment`].
    ///
    /// # Errors
    /// [`ConfigError`] naming what is wrong; see the module docs. An error about a value
    /// of the file names its line (`(from sluice.toml line 3)`); a file that does not
    /// parse says at which line and key.
    pub fn resolve(
        file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
        overrides: &Overrides,
    ) -> Result<Config, ConfigError> {
        let Some(path) = file else {
            return Config::resolve_parsed(File::default(), None, env, overrides);
        };
        let text =
            sluice_operator_files::read_text(path, sluice_operator_files::MAX_CONFIG_FILE_BYTES)
                .map_err(|e| ConfigError::Read {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                })?;
        let source = Source {
            path,
            text: &text,
            label: path.display().to_string(),
        };
        let parsed = source.parse::<File>()?;
        Config::resolve_parsed(parsed, Some(path), env, overrides).map_err(|e| source.locate(e))
    }

    /// [`Config::resolve`] once the file (if any) has been parsed.
    fn resolve_parsed(
        parsed: File,
        file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
        overrides: &Overrides,
    ) -> Result<Config, ConfigError> {
        let file_label = file.map(|p| p.display().to_string()).unwrap_or_default();

        let max_tool_result_bytes = match layered(
            overrides
                .max_tool_result_bytes
                .as_deref()
                .map(|v| (v, "--max-tool-result-bytes")),
            env,
            ENV_MAX_TOOL_RESULT_BYTES,
            parsed.agent.max_tool_result_bytes.as_ref(),
            &file_label,
        ) {
            Some((v, origin)) => integer(
                "agent.max_tool_result_bytes",
                &v,
                &origin,
                MIN_MAX_RESULT_BYTES.into(),
                MAX_MAX_RESULT_BYTES.into(),
                " (bytes)",
            )? as u32,
            None => DEFAULT_MAX_TOOL_RESULT_BYTES,
        };
        let max_turns = match layered(
            overrides.max_turns.as_deref().map(|v| (v, "--max-turns")),
            env,
            ENV_MAX_TURNS,
            parsed.agent.max_turns.as_ref(),
            &file_label,
        ) {
            Some((v, origin)) => {
                integer("agent.max_turns", &v, &origin, 1, MAX_MAX_TURNS.into(), "")? as u32
            }
            None => DEFAULT_MAX_TURNS,
        };
        let auto_approve = match layered(
            overrides.auto_approve.then_some(("true", "--auto-approve")),
            env,
            ENV_AUTO_APPROVE,
            parsed.agent.auto_approve.as_ref(),
            &file_label,
        ) {
            Some((v, origin)) => boolean("agent.auto_approve", v, origin)?,
            None => false,
        };
        let store = match (&overrides.store, env(ENV_STORE), &parsed.store.path) {
            (Some(p), _, _) => Some(p.clone()),
            (None, Some(p), _) => Some(PathBuf::from(p)),
            (None, None, Some(p)) => Some(
                file.and_then(Path::parent)
                    .unwrap_or(Path::new("."))
                    .join(p),
            ),
            (None, None, None) => None,
        };

        let store_url = match (&overrides.store_url, env(ENV_STORE_URL), &parsed.store.url) {
            (Some(u), _, _) => Some((u.clone(), "--store-url".to_string())),
            (None, Some(u), _) if !u.is_empty() => Some((u, ENV_STORE_URL.to_string())),
            (None, _, Some(u)) => Some((u.clone(), file_label.clone())),
            _ => None,
        };
        if let Some((url, origin)) = &store_url {
            if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                return Err(ConfigError::Value {
                    key: "store.url".into(),
                    // The URL may hold a password: name its scheme only.
                    value: match url.split_once("://") {
                        Some((scheme, _))
                            if !scheme.is_empty()
                                && scheme.len() <= 20
                                && scheme.chars().all(|c| {
                                    c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')
                                }) =>
                        {
                            format!("a URL starting {scheme:?} (not shown: it may hold a password)")
                        }
                        _ => "a value that is not a URL (not shown: it may hold a password)"
                            .to_string(),
                    },
                    allowed: STORE_URL_RULE.into(),
                    origin: origin.clone(),
                });
            }
            if store.is_some() {
                return Err(ConfigError::Value {
                    key: "store".into(),
                    value: "both a PostgreSQL URL and a database file".into(),
                    allowed: "either store.url (--store-url, SLUICE_STORE_URL) or store.path (--store, SLUICE_STORE), not both".into(),
                    origin: origin.clone(),
                });
            }
        }
        let store_url = store_url.map(|(url, _)| url);

        let mut roots = Vec::new();
        if !overrides.roots.is_empty() {
            for r in &overrides.roots {
                roots.push(root_from_flag(r, &format!("--root {r}"))?);
            }
        } else if !parsed.roots.is_empty() {
            let base = file.and_then(Path::parent).unwrap_or(Path::new("."));
            for (name, dir) in &parsed.roots {
                let Some(dir) = dir.as_str() else {
                    return Err(ConfigError::Value {
                        key: format!("roots.{name}"),
                        value: dir.to_string(),
                        allowed: "a directory path (a string)".into(),
                        origin: file_label,
                    });
                };
                roots.push(root(
                    name,
                    &base.join(dir),
                    dir,
                    &format!("{} in {file_label}", root_key(name)),
                )?);
            }
        } else {
            let default = "default: the current directory, as no --root and no [roots] is given";
            roots.push(root_from_flag(".", default)?);
        }
        for (i, r) in roots.iter().enumerate() {
            if roots[..i].iter().any(|o| o.name == r.name) {
                return Err(ConfigError::Root {
                    name: r.name.clone(),
                    dir: r.dir.display().to_string(),
                    origin: "--root".into(),
                    reason: "two roots have this name; name them apart with --root NAME=DIR".into(),
                });
            }
        }
        let resolver = tools::Resolver { roots: &roots, env };
        let base = file.and_then(Path::parent).unwrap_or(Path::new("."));
        let builtins = parsed
            .builtins
            .clone()
            .unwrap_or_else(|| BUILTIN_TOOLS.iter().map(|s| s.to_string()).collect());
        let mut tools = resolver.tables(&parsed.tools, &builtins, base, &file_label)?;
        let tools_dir = match (&overrides.tools_dir, &parsed.tools_dir) {
            (Some(dir), _) => Some(dir.clone()),
            (None, Some(dir)) => Some(base.join(dir)),
            (None, None) => None,
        };
        let strict = overrides.strict || parsed.strict.unwrap_or(false);
        let mut rejected = Vec::new();
        if let Some(dir) = &tools_dir {
            for entry in resolver.directory(dir, &tools)? {
                match entry {
                    Ok(t) => tools.push(t),
                    Err((_, e)) if strict => return Err(e),
                    Err((component, e)) => rejected.push(RejectedTool {
                        component,
                        reason: e.to_string(),
                    }),
                }
            }
        }
        let model = parsed.model.resolve(
            overrides.model.as_deref(),
            file.and_then(Path::parent).unwrap_or(Path::new(".")),
            &file_label,
        )?;
        let runtime = parsed.runtime.resolve(overrides, env, &file_label)?;
        let mut server = parsed.server.resolve(
            &overrides.allowed_hosts,
            env(ENV_ALLOWED_HOSTS),
            &file_label,
        )?;
        server.tls = server_tls::resolve(
            overrides.tls_cert.as_deref(),
            overrides.tls_key.as_deref(),
            parsed.server.tls.as_ref(),
            base,
            &file_label,
        )?;
        let mcp = parsed
            .mcp
            .resolve(overrides.allow_destructive, env, &file_label)?;
        let registry = parsed.registry.resolve(&file_label)?;
        let cache_max_bytes = parsed.cache.resolve(&file_label)?;
        let code_mode = parsed.code_mode.resolve(&file_label)?;
        let telemetry = parsed.telemetry.resolve(env, &file_label)?;
        for t in &mut tools {
            if matches!(&t.source, ToolSource::Builtin(b) if b == SCRIPT_TOOL) {
                t.tool_calls = Some(code_mode);
            }
        }
        let lock_file = match file.and_then(Path::parent) {
            Some(dir) if !dir.as_os_str().is_empty() => {
                dir.join(sluice_registry_terms::LOCK_FILE_NAME)
            }
            _ => PathBuf::from(sluice_registry_terms::LOCK_FILE_NAME),
        };
        Ok(Config {
            tools,
            rejected,
            tools_dir,
            lock_file,
            strict,
            store,
            store_url,
            model,
            runtime,
            server,
            mcp,
            code_mode,
            registry,
            cache_max_bytes,
            telemetry,
            agent: AgentConfig {
                max_tool_result_bytes,
                max_turns,
                auto_approve,
                system_prompt: parsed.agent.system_prompt.clone(),
            },
            roots,
        })
    }
}

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;

#[cfg(test)]
mod tool_tests;
