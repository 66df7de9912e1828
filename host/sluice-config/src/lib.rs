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
mod http_entry;
pub mod keys;
mod live_keys;
mod mcp;
mod model;
mod policy_file;
mod registry;
mod roots;
mod runtime;
mod secrets;
mod server;
mod server_oauth;
mod server_tls;
mod server_tokens;
mod sources;
mod store;
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
pub use functions::{BOUND_RULE, ENUM_RULE, PATTERN_RULE};
pub use live_keys::{
    Allowed, BOOT_ONLY_KEYS, RUNTIME_KEYS, RUNTIME_ORIGIN, RuntimeKey, RuntimeSetting, runtime_key,
    runtime_value,
};
pub use mcp::{DEFAULT_TOOLS_PER_PAGE, MAX_TOOLS_PER_PAGE, McpConfig};
pub use model::{ModelConfig, ProviderName, ToolChoice};
pub use roots::RootConfig;
pub use runtime::{
    DEFAULT_QUEUE_TIMEOUT_MS, MAX_MAX_CONCURRENT_CALLS, MAX_QUEUE_TIMEOUT_MS, RuntimeConfig,
    default_max_concurrent_calls,
};
pub use secrets::CONFIG_KEY_RULE;
pub use server::{
    ALLOWED_HOST_RULE, DEFAULT_HEADER_READ_TIMEOUT_MS, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_EVENT_STREAMS, DEFAULT_MAX_UNAUTHENTICATED_CONNECTIONS, ServerConfig, ServerLimits,
    valid_allowed_host,
};
pub use server_oauth::{
    DEFAULT_LEEWAY_SECS, IntrospectionConfig, MAX_LEEWAY_SECS, OAUTH_URL_RULE, OAuthConfig,
    valid_oauth_url,
};
pub use server_tls::{FLAG_TLS_CERT, FLAG_TLS_KEY, TLS_FILES_RULE, TlsFiles};
pub use server_tokens::{ADMIN_PRINCIPAL, ServerToken, TOKEN_NAME_RULE, valid_token_name};
pub use sources::{Explained, Origin, REDACTED, Setting};
pub use store::STORE_URL_RULE;
pub use telemetry::TelemetryConfig;
pub use tools::{
    BUILTIN_TOOLS, DEFAULT_MEMORY_MIB, DEFAULT_TIMEOUT_MS, MAX_MEMORY_MIB, MAX_TIMEOUT_MS,
    OciSource, PREFIX_RULE, TOOL_NAME_RULE, ToolConfig, ToolSource,
};
pub use tools_dir::RejectedTool;

/// How many keys have a variable.
const ENV_KEY_COUNT: usize = keys::count_env(keys::KEYS);

/// Every environment variable that sets a configuration key, with that key (from
/// [`keys::KEYS`]).
pub const ENV_KEYS: &[(&str, &str)] = &keys::env_pairs::<ENV_KEY_COUNT>(keys::KEYS);

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
            let allowed = if Some(*var) == keys::STORE_PATH.env {
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
    tools: BTreeMap<String, policy_file::PolicyFile>,
    #[serde(default)]
    store: store::FileStore,
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
        let layers = keys::Layers {
            env,
            file_label: &file_label,
        };
        let base = file.and_then(Path::parent).unwrap_or(Path::new("."));
        let a = &parsed.agent;
        let agent = AgentConfig {
            max_tool_result_bytes: keys::AGENT_MAX_TOOL_RESULT_BYTES.integer_or_default(
                overrides.max_tool_result_bytes.as_deref(),
                a.max_tool_result_bytes.as_ref(),
                &layers,
            )? as u32,
            max_turns: keys::AGENT_MAX_TURNS.integer_or_default(
                overrides.max_turns.as_deref(),
                a.max_turns.as_ref(),
                &layers,
            )? as u32,
            auto_approve: keys::AGENT_AUTO_APPROVE.boolean(
                overrides.auto_approve,
                a.auto_approve.as_ref(),
                &layers,
            )?,
            system_prompt: a.system_prompt.clone(),
        };
        let (store, store_url) = parsed.store.resolve(
            overrides.store.as_deref(),
            overrides.store_url.as_deref(),
            base,
            &layers,
        )?;
        let roots = roots::resolve(&overrides.roots, &parsed.roots, base, &file_label)?;
        let resolver = tools::Resolver { roots: &roots, env };
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
        let model = parsed
            .model
            .resolve(overrides.model.as_deref(), base, &file_label)?;
        let runtime = parsed.runtime.resolve(overrides, &layers)?;
        let mut server = parsed.server.resolve(
            &overrides.allowed_hosts,
            keys::SERVER_ALLOWED_HOSTS.env_value(env),
            &file_label,
        )?;
        server.tls = server_tls::resolve(
            overrides.tls_cert.as_deref(),
            overrides.tls_key.as_deref(),
            parsed.server.tls.as_ref(),
            base,
            &file_label,
        )?;
        let mcp = parsed.mcp.resolve(overrides.allow_destructive, &layers)?;
        let registry = parsed.registry.resolve(&file_label)?;
        let cache_max_bytes = parsed.cache.resolve(&file_label)?;
        let code_mode = parsed.code_mode.resolve(&layers)?;
        let telemetry = parsed.telemetry.resolve(&layers)?;
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
            agent,
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
