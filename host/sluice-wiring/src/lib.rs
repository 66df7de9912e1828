//! From a resolved [`Config`] to the parts of an agent: the session store, the tools, the
//! model and the loop's settings. The `sluice` CLI (`run`, `call`, `tools`, `session`) and
//! `sluice serve` both wire themselves through here, so a configuration means the same thing
//! to both.
//!
//! - [`services`]: everything an agent needs ([`Services`]), from [`open_store`],
//!   [`load_tools`], [`backend`] and [`settings`].
//! - [`ToolLoader`]: the configured tools for the life of a process (one engine; `oci://`
//!   components fetched and verified before anything is compiled), also what live reload
//!   loads replacements through.
//!
//! No HTTP server here: the operator API (`sluice-server`) builds on this crate, and a
//! command that only calls a tool (`sluice call`) needs nothing of it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sluice_agent::Settings;
use sluice_config::{Config, ModelConfig, ProviderName, ToolConfig, ToolSource};
use sluice_models::Backend;
use sluice_models::provider::{ProviderConfig, Secret};
use sluice_registry::RegistryError;
use sluice_runtime::{
    Compilers, ComponentSpec, EngineOptions, PoolOptions, RootGrant, RuntimeError, Source,
    ToolCallLimits, ToolEngine, ToolPolicy, Toolbox,
};
use sluice_store::{PgStore, SqliteStore, Store, StoreError};

mod loader;
pub mod report;

pub use crate::loader::{Loaded, ToolLoader, oci_cache_dir, oci_source, public_keys};

/// What runs the sessions: the parts [`services`] wires from a configuration, which the
/// CLI's `run` and the operator API (`sluice-server`) both run on.
pub struct Services {
    /// The session store.
    pub store: Arc<dyn Store>,
    /// The model, shared by every run (the scripted model and the providers' backends keep
    /// no state between requests).
    pub backend: Arc<dyn Backend>,
    /// The tools.
    pub tools: Arc<dyn sluice_agent::Tools>,
    /// The run-time settings at start (the operator API's `PUT /agent/config` changes its
    /// copy).
    pub settings: Settings,
}

/// Why the configured parts could not be put together.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WiringError {
    /// The session store could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No place for the session database was configured and none could be derived.
    #[error("no place for the session database: set --store FILE, SLUICE_STORE or HOME")]
    NoStorePath,
    /// The engine could not start, or a component could not be loaded.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// A component from a registry could not be fetched, or failed its checks.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A component from a registry was asked for without fetching it first.
    #[error(
        "tool {0:?} comes from a registry: load it with ToolLoader, which fetches and verifies it"
    )]
    NotFetched(String),
    /// A file (a component, an API key file) could not be read.
    #[error("failed to read {what} {path}: {reason}")]
    Read {
        /// What the file is (`the component`, `the API key file`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why, in the operating system's words.
        reason: String,
    },
    /// A built-in tool name that this build does not have.
    #[error("there is no built-in tool called {0:?}")]
    NoBuiltin(String),
    /// The model cannot be used as configured (an unknown provider, a missing key, a bad
    /// replay script).
    #[error("{0}")]
    Model(String),
}

/// The session store: PostgreSQL at `config.store_url` (`--store-url`, `SLUICE_STORE_URL`,
/// `store.url`; its migrations are applied), else SQLite at `config.store` (`--store`,
/// `SLUICE_STORE`, `store.path`), else at [`SqliteStore::default_path`].
///
/// # Errors
/// [`WiringError::NoStorePath`] when no place is available, [`WiringError::Store`] when the
/// database cannot be opened or reached (naming the URL without its password).
pub async fn open_store(config: &Config) -> Result<Arc<dyn Store>, WiringError> {
    if let Some(url) = &config.store_url {
        return Ok(Arc::new(PgStore::connect(url).await?));
    }
    let path = match &config.store {
        Some(p) => p.clone(),
        None => SqliteStore::default_path().ok_or(WiringError::NoStorePath)?,
    };
    Ok(Arc::new(SqliteStore::open(&path)?))
}

/// The session store as [`open_store`] finds it, for a command that only reads it: a SQLite
/// store that cannot be written (a read-only mount, no permission) is opened for reading
/// only ([`SqliteStore::open_for_reading`]) instead of refused. PostgreSQL is connected to
/// as [`open_store`] does.
///
/// # Errors
/// As [`open_store`].
pub async fn open_store_for_reading(config: &Config) -> Result<Arc<dyn Store>, WiringError> {
    if config.store_url.is_some() {
        return open_store(config).await;
    }
    let path = match &config.store {
        Some(p) => p.clone(),
        None => SqliteStore::default_path().ok_or(WiringError::NoStorePath)?,
    };
    Ok(Arc::new(SqliteStore::open_for_reading(&path)?))
}

/// Loads the configured tools with a new engine (see [`ToolLoader::load`]). With `only`
/// naming a built-in tool, only that one is loaded, so one call compiles one component.
///
/// A component that fails to load (it cannot be fetched or read, fails its digest, its
/// signature or its pin, does not compile, imports what the host lacks…) stops the load
/// under `strict`; otherwise it is logged as a warning on stderr with its reason, listed in
/// [`Toolbox::unavailable`], and the other tools load.
///
/// # Errors
/// [`WiringError`] when the engine cannot start, two tools share a name, `sluice.lock`
/// cannot be read or written, or (under `strict`) a component cannot be fetched, read or
/// loaded.
pub async fn load_tools(config: &Config, only: Option<&str>) -> Result<Toolbox, WiringError> {
    ToolLoader::new(config)?.load(config, only).await
}

/// The tool engine, caching compiled components in [`cache_dir`], with the default call
/// pool (for commands that run no calls, such as `sluice tools inspect`).
///
/// # Errors
/// [`WiringError::Runtime`] when no engine can be built.
pub fn engine() -> Result<ToolEngine, WiringError> {
    Ok(ToolEngine::new(EngineOptions {
        cache_dir: cache_dir(),
        ..EngineOptions::default()
    })?)
}

/// The tool engine as `config` sets it up: the component cache and the call pool of
/// `[runtime]` (`max_concurrent_calls`, `queue_timeout_ms`).
///
/// # Errors
/// [`WiringError::Runtime`] when no engine can be built.
pub fn engine_for(config: &Config) -> Result<ToolEngine, WiringError> {
    engine_with(config, Compilers::Optimizing)
}

/// The compilers of a long-running server (`serve`, `mcp`): Winch first, Cranelift's code
/// swapped in ([`Compilers::BaselineFirst`]), with `runtime.baseline_compiler` and not
/// `strict` (a strict start waits for every component's optimized code); else Cranelift's
/// only.
pub fn server_compilers(config: &Config) -> Compilers {
    if config.runtime.baseline_compiler && !config.strict {
        Compilers::BaselineFirst
    } else {
        Compilers::Optimizing
    }
}

/// The compilers of the tool author's loop (`sluice test`, `sluice dev`): Winch only
/// ([`Compilers::BaselineOnly`]: each build is a new component), with
/// `runtime.baseline_compiler`; else Cranelift's only.
pub fn authoring_compilers(config: &Config) -> Compilers {
    if config.runtime.baseline_compiler {
        Compilers::BaselineOnly
    } else {
        Compilers::Optimizing
    }
}

/// The registry client as `config` sets it up: the cache of fetched components
/// ([`oci_cache_dir`]) and the limits of `[registry]`.
pub fn fetcher_for(config: &Config) -> sluice_registry::Fetcher {
    sluice_registry::Fetcher::new(oci_cache_dir()).with_limits(config.registry)
}

/// [`engine_for`] with `compilers`.
///
/// # Errors
/// [`WiringError::Runtime`] when no engine can be built.
pub fn engine_with(config: &Config, compilers: Compilers) -> Result<ToolEngine, WiringError> {
    Ok(ToolEngine::new(EngineOptions {
        compilers,
        cache_dir: cache_dir(),
        cache_max_bytes: config.cache_max_bytes,
        pool: PoolOptions {
            max_concurrent_calls: config.runtime.max_concurrent_calls,
            queue_timeout: Duration::from_millis(config.runtime.queue_timeout_ms),
            ..PoolOptions::default()
        },
        ..EngineOptions::default()
    })?)
}

/// The runtime's view of one configured component: its source and its policy (read-only
/// roots, writable roots, environment, memory in bytes, timeout, pin, destructive).
///
/// # Errors
/// [`WiringError`] when a built-in does not exist or a component file cannot be read;
/// [`WiringError::NotFetched`] for a component from a registry (see [`ToolLoader`]).
pub fn component_spec(t: &ToolConfig) -> Result<ComponentSpec, WiringError> {
    let source = match &t.source {
        ToolSource::Builtin(name) => builtin(name)?,
        ToolSource::Component(path) => component_source(path)?,
        ToolSource::Oci(_) => return Err(WiringError::NotFetched(t.name.clone())),
    };
    Ok(spec_with(t, source))
}

/// `t`'s policy over `source`.
pub(crate) fn spec_with(t: &ToolConfig, source: Source) -> ComponentSpec {
    ComponentSpec {
        source,
        policy: policy_of(t),
    }
}

/// The runtime's policy of `t`: the shared values (`sluice_grants`: functions, HTTP,
/// secret sources, origin) cloned as they are; what the runtime holds in another form
/// converted (roots merged with their write flag, MiB to bytes, ms to a duration, the code-mode
/// limits).
pub(crate) fn policy_of(t: &ToolConfig) -> ToolPolicy {
    let mut roots: Vec<RootGrant> = t
        .read
        .iter()
        .filter(|r| !t.write.iter().any(|w| w.name == r.name))
        .map(|r| RootGrant {
            name: r.name.clone(),
            dir: r.dir.clone(),
            write: false,
        })
        .collect();
    roots.extend(t.write.iter().map(|r| RootGrant {
        name: r.name.clone(),
        dir: r.dir.clone(),
        write: true,
    }));
    ToolPolicy {
        roots,
        env: t.env.clone(),
        memory_bytes: t.memory_mib << 20,
        timeout: Duration::from_millis(t.timeout_ms),
        sha256: t.sha256.clone(),
        description: t.description.clone(),
        destructive: t.destructive,
        prefix: t.prefix.clone(),
        functions: t.functions.clone(),
        origin: Some(t.origin.clone()),
        http: t.http.clone(),
        config: t.config.clone(),
        secrets: t.secrets.clone(),
        tool_calls: t.tool_calls.map(|c| ToolCallLimits {
            inner_max_result_bytes: c.inner_max_result_bytes,
            max_calls: c.max_inner_calls,
            max_bytes: c.max_inner_bytes,
        }),
        ..ToolPolicy::default()
    }
}

/// Built-in tool `name` as a source: its component, as this build embeds it
/// ([`sluice_builtins::BUILTINS`]).
///
/// # Errors
/// [`WiringError::NoBuiltin`] when this build has no built-in tool of that name.
pub fn builtin(name: &str) -> Result<Source, WiringError> {
    sluice_builtins::BUILTINS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(name, wasm)| Source::Builtin { name, wasm })
        .ok_or_else(|| WiringError::NoBuiltin(name.to_string()))
}

/// A component file as a source, named by its path.
///
/// # Errors
/// [`WiringError::Read`] when the file cannot be read, is not a regular file (a FIFO, a
/// device, a directory: refused without blocking) or is larger than 1 GiB
/// ([`MAX_COMPONENT_FILE_BYTES`](sluice_operator_files::MAX_COMPONENT_FILE_BYTES)).
pub fn component_source(path: &Path) -> Result<Source, WiringError> {
    use sluice_operator_files::{MAX_COMPONENT_FILE_BYTES, read_regular};
    let wasm = read_regular(path, MAX_COMPONENT_FILE_BYTES).map_err(|e| WiringError::Read {
        what: "the component",
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    Ok(Source::Bytes {
        name: path.display().to_string(),
        wasm: Arc::new(wasm),
    })
}

/// Where compiled components are cached: `$SLUICE_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/sluice/components`, else `$HOME/.cache/sluice/components`; `None`
/// (no cache) when none is set. Empty variables count as unset.
pub fn cache_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("SLUICE_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    let base = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("sluice").join("components"))
}

/// The configured model (`[model]`, `--model`): `scripted` (the offline default), `replay`
/// (a JSONL script) or a provider's backend.
///
/// # Errors
/// [`WiringError::Model`] for a replay script that cannot be read or parsed, or a provider that cannot be set up (a missing key, base URL or region);
/// [`WiringError::Read`] when the API key file cannot be read.
pub fn backend(config: &Config) -> Result<Arc<dyn Backend>, WiringError> {
    let m = &config.model;
    let Some(provider) = m.provider.wire() else {
        return Ok(match m.provider {
            ProviderName::Replay => Arc::new(
                sluice_models::ReplayModel::from_file(Path::new(&m.name))
                    .map_err(|e| WiringError::Model(e.to_string()))?,
            ),
            // `scripted`, the only other provider without a wire format.
            _ => Arc::new(sluice_models::ScriptedModel::new()),
        });
    };
    let mut p = ProviderConfig::new(provider, &m.name);
    p.base_url = m.base_url.clone();
    p.api_key = api_key(m)?;
    p.region = m
        .region
        .clone()
        .or_else(|| std::env::var("AWS_REGION").ok())
        .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok());
    p.max_tokens = m.max_tokens;
    p.context_window_tokens = m.context_window_tokens;
    p.stream = m.stream;
    p.timeouts.connect_ms = m.connect_timeout_ms;
    p.timeouts.request_ms = m.request_timeout_ms;
    p.retry.max_retries = m.max_retries;
    p.tool_choice = m.tool_choice;
    sluice_models::provider::connect(p).map_err(|e| WiringError::Model(e.to_string()))
}

/// The API key: from `model.api_key_file` (its first line), else the variable
/// `model.api_key_env` names, else the provider's usual variable
/// ([`ProviderName::default_key_env`]). Never logged, never stored with the session.
fn api_key(m: &ModelConfig) -> Result<Option<Secret>, WiringError> {
    if let Some(file) = &m.api_key_file {
        use sluice_operator_files::{MAX_SECRET_FILE_BYTES, read_text};
        let text = read_text(file, MAX_SECRET_FILE_BYTES).map_err(|e| WiringError::Read {
            what: "the API key file",
            path: file.clone(),
            reason: e.to_string(),
        })?;
        let key = text.lines().next().unwrap_or("").trim().to_string();
        if key.is_empty() {
            return Err(WiringError::Model(format!(
                "the API key file {} is empty",
                file.display()
            )));
        }
        return Ok(Some(Secret::new(key)));
    }
    let var = m
        .api_key_env
        .clone()
        .or_else(|| m.provider.default_key_env().map(str::to_string));
    Ok(var
        .and_then(|v| std::env::var(v).ok())
        .filter(|k| !k.is_empty())
        .map(Secret::new))
}

/// The loop's settings from `[agent]`: the cap, `maxTurns`, `autoApprove` and the system
/// prompt (the default one when none is configured).
pub fn settings(config: &Config) -> Settings {
    Settings {
        system_prompt: config
            .agent
            .system_prompt
            .clone()
            .unwrap_or_else(|| sluice_agent::DEFAULT_SYSTEM_PROMPT.to_string()),
        max_tool_result_bytes: config.agent.max_tool_result_bytes,
        max_turns: config.agent.max_turns,
        auto_approve: config.agent.auto_approve,
    }
}

/// Everything an agent needs, wired from `config`: the store, every configured tool, the
/// model and the settings.
///
/// # Errors
/// [`WiringError`] from [`open_store`], [`load_tools`] or [`backend`].
pub async fn services(config: &Config) -> Result<Services, WiringError> {
    services_with_tools(config, Arc::new(load_tools(config, None).await?)).await
}

/// [`services`] over tools already loaded (so `sluice serve` can share them with `/mcp`,
/// and swap them live).
///
/// # Errors
/// [`WiringError`] from [`open_store`] or [`backend`].
pub async fn services_with_tools(
    config: &Config,
    tools: Arc<dyn sluice_agent::Tools>,
) -> Result<Services, WiringError> {
    Ok(Services {
        store: open_store(config).await?,
        backend: backend(config)?,
        tools,
        settings: settings(config),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_component_path_that_is_no_regular_file_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let e = component_source(dir.path()).err().unwrap();
        assert_eq!(
            e.to_string(),
            format!(
                "failed to read the component {}: not a regular file (it is a directory); name a regular file",
                dir.path().display()
            )
        );
    }
}
