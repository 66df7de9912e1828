//! From a resolved [`Config`] to the parts of an agent: the session store, the tools, the
//! model and the loop's settings. The `sluice` CLI (`run`, `call`, `tools`, `session`) and
//! `sluice serve` both wire themselves through here, so a configuration means the same thing
//! to both.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sluice_registry::{Fetched, Fetcher, Lock, PublicKey, RegistryError, Request, Resolve};

use sluice_agent::Settings;
use sluice_backends::Backend;
use sluice_backends::provider::{Provider, ProviderConfig, Secret, ToolChoice};
use sluice_config::{Config, ModelConfig, OciSource, ToolConfig, ToolSource};
use sluice_runtime::{
    ComponentSpec, EngineOptions, LiveToolbox, PoolOptions, RootGrant, RuntimeError, Source,
    ToolEngine, ToolPolicy, Toolbox,
};
use sluice_store::{SqliteStore, StoreError};

use crate::Services;

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

/// The session store: `config.store` (`--store`, `SLUICE_STORE`, `store.path`), else
/// [`SqliteStore::default_path`].
///
/// # Errors
/// [`WiringError::NoStorePath`] when neither is available, [`WiringError::Store`] when the
/// database cannot be opened.
pub fn open_store(config: &Config) -> Result<SqliteStore, WiringError> {
    let path = match &config.store {
        Some(p) => p.clone(),
        None => SqliteStore::default_path().ok_or(WiringError::NoStorePath)?,
    };
    Ok(SqliteStore::open(&path)?)
}

/// Loads the configured tools with a new engine (see [`ToolLoader::load`]). With `only`
/// naming a built-in tool, only that one is loaded, so one call compiles one component.
///
/// # Errors
/// [`WiringError`] when the engine cannot start or a component cannot be fetched, read or
/// loaded.
pub async fn load_tools(config: &Config, only: Option<&str>) -> Result<Toolbox, WiringError> {
    ToolLoader::new(config)?.load(config, only).await
}

/// What loads tools for the life of a process: one engine (its epoch thread, its pooled
/// memories, its call pool, its cache of compiled components), and the fetcher of components from
/// registries with its content-addressed cache ([`oci_cache_dir`]). Live reload loads every
/// replacement through the same loader, so replacements share the engine.
#[derive(Clone, Debug)]
pub struct ToolLoader {
    engine: Arc<ToolEngine>,
    fetcher: Fetcher,
}

/// The tools one load produced, and what they were made from.
pub struct Loaded {
    /// The tools.
    pub toolbox: Toolbox,
    /// Every component (its name, its bytes' sha256, its policy), in load order: two loads
    /// with equal fingerprints offer the same tools.
    pub fingerprint: Vec<(String, String, ToolPolicy)>,
    /// The components fetched from registries.
    pub fetched: Vec<Fetched>,
}

impl ToolLoader {
    /// A loader with a new engine as `config` sets it up ([`engine_for`]: the call pool of
    /// `[runtime]`, read once: a reload keeps the engine) and a fetcher over
    /// [`oci_cache_dir`].
    ///
    /// # Errors
    /// [`WiringError::Runtime`] when no engine can be built.
    pub fn new(config: &Config) -> Result<ToolLoader, WiringError> {
        Ok(ToolLoader::with(
            Arc::new(engine_for(config)?),
            Fetcher::new(oci_cache_dir()),
        ))
    }

    /// A loader over `engine` and `fetcher`.
    pub fn with(engine: Arc<ToolEngine>, fetcher: Fetcher) -> ToolLoader {
        ToolLoader { engine, fetcher }
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<ToolEngine> {
        &self.engine
    }

    /// The fetcher.
    pub fn fetcher(&self) -> &Fetcher {
        &self.fetcher
    }

    /// Loads the configured tools (only the built-in `only`, when given): fetches and
    /// verifies every `oci://` component first ([`ToolLoader::fetch`], honouring and
    /// updating `sluice.lock`), then compiles and checks every component, as at start.
    ///
    /// # Errors
    /// [`WiringError`] when a component cannot be fetched, fails verification (nothing is
    /// compiled then), cannot be read, or cannot be loaded.
    pub async fn load(&self, config: &Config, only: Option<&str>) -> Result<Toolbox, WiringError> {
        Ok(self.load_checked(config, only).await?.toolbox)
    }

    /// [`ToolLoader::load`], with the fingerprint of what was loaded.
    ///
    /// # Errors
    /// As [`ToolLoader::load`].
    pub async fn load_checked(
        &self,
        config: &Config,
        only: Option<&str>,
    ) -> Result<Loaded, WiringError> {
        let single = only.and_then(|name| {
            config
                .tools
                .iter()
                .find(|t| matches!(&t.source, ToolSource::Builtin(b) if b == name))
        });
        let selected: Vec<&ToolConfig> = match single {
            Some(t) => vec![t],
            None => config.tools.iter().collect(),
        };
        let fetched = self.fetch(config, &selected, Resolve::Locked).await?;
        let mut specs = Vec::new();
        let mut oci = fetched.iter();
        for t in &selected {
            let spec = match &t.source {
                ToolSource::Oci(_) => {
                    let f = oci
                        .next()
                        .ok_or_else(|| WiringError::NotFetched(t.name.clone()))?;
                    spec_with(t, oci_source(f))
                }
                _ => component_spec(t)?,
            };
            specs.push(spec);
        }
        let fingerprint = specs
            .iter()
            .map(|s| {
                let digest = s
                    .source
                    .bytes()
                    .map(sluice_runtime::component::sha256_hex)
                    .unwrap_or_default();
                (s.source.describe(), digest, s.policy.clone())
            })
            .collect();
        let engine = self.engine.clone();
        let toolbox = tokio::task::spawn_blocking(move || Toolbox::load(engine, &specs))
            .await
            .map_err(|e| RuntimeError::Engine(format!("loading the tools stopped: {e}")))??;
        Ok(Loaded {
            toolbox,
            fingerprint,
            fetched,
        })
    }

    /// Fetches and verifies the `oci://` components among `tools` (in their order), with
    /// `resolve` for tags, and saves `sluice.lock` when their digests changed it.
    ///
    /// # Errors
    /// [`WiringError::Registry`] naming the reference, the digest and what failed.
    pub async fn fetch(
        &self,
        config: &Config,
        tools: &[&ToolConfig],
        resolve: Resolve,
    ) -> Result<Vec<Fetched>, WiringError> {
        let sources: Vec<&OciSource> = tools
            .iter()
            .filter_map(|t| match &t.source {
                ToolSource::Oci(o) => Some(o),
                _ => None,
            })
            .collect();
        if sources.is_empty() {
            return Ok(Vec::new());
        }
        let mut lock = Lock::load(&config.lock_file)?;
        let before = lock.clone();
        let mut fetched = Vec::new();
        for source in sources {
            let keys = public_keys(&source.keys)?;
            let request = Request {
                reference: &source.reference,
                keys: &keys,
                insecure: source.insecure,
            };
            let f = self.fetcher.fetch(&request, &mut lock, resolve).await?;
            tracing::info!(
                reference = %source.reference,
                digest = %f.digest,
                from_cache = f.from_cache,
                pull_ms = f.pull_time.as_millis() as u64,
                verify_ms = f.verify_time.as_millis() as u64,
                "fetched a component"
            );
            fetched.push(f);
        }
        if lock != before {
            lock.save()?;
        }
        Ok(fetched)
    }
}

/// The public keys at `paths` (`verify.key`).
///
/// # Errors
/// [`WiringError::Registry`] naming the key file that cannot be used.
pub fn public_keys(paths: &[PathBuf]) -> Result<Vec<PublicKey>, WiringError> {
    paths
        .iter()
        .map(|p| PublicKey::load(p).map_err(|e| WiringError::Registry(e.into())))
        .collect()
}

/// A fetched component as a source, named by its reference and digest
/// (`oci://REGISTRY/REPOSITORY:TAG@sha256:…`).
pub fn oci_source(fetched: &Fetched) -> Source {
    let name = match fetched.reference.digest() {
        Some(_) => fetched.reference.to_string(),
        None => format!("{}@{}", fetched.reference, fetched.digest),
    };
    Source::Bytes {
        name,
        wasm: fetched.wasm.clone(),
    }
}

/// Where components pulled from registries are cached: `oci/` in [`cache_dir`] (beside the
/// compiled components), else `sluice-oci` in the temporary directory.
pub fn oci_cache_dir() -> PathBuf {
    cache_dir()
        .map(|d| d.join("oci"))
        .unwrap_or_else(|| std::env::temp_dir().join("sluice-oci"))
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
    Ok(ToolEngine::new(EngineOptions {
        cache_dir: cache_dir(),
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
        ToolSource::Builtin(name) => Source::Builtin(builtin_name(name)?),
        ToolSource::Component(path) => component_source(path)?,
        ToolSource::Oci(_) => return Err(WiringError::NotFetched(t.name.clone())),
    };
    Ok(spec_with(t, source))
}

/// `t`'s policy over `source`.
fn spec_with(t: &ToolConfig, source: Source) -> ComponentSpec {
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
    let policy = ToolPolicy {
        roots,
        env: t.env.clone(),
        memory_bytes: t.memory_mib << 20,
        timeout: Duration::from_millis(t.timeout_ms),
        sha256: t.sha256.clone(),
        description: t.description.clone(),
        destructive: t.destructive,
        ..ToolPolicy::default()
    };
    ComponentSpec { source, policy }
}

/// The `'static` name of built-in tool `name`.
fn builtin_name(name: &str) -> Result<&'static str, WiringError> {
    sluice_runtime::builtins()
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, _)| *n)
        .ok_or_else(|| WiringError::NoBuiltin(name.to_string()))
}

/// A component file as a source, named by its path.
///
/// # Errors
/// [`WiringError::Read`] when the file cannot be read.
pub fn component_source(path: &Path) -> Result<Source, WiringError> {
    let wasm = std::fs::read(path).map_err(|e| WiringError::Read {
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
/// [`WiringError::Model`] for an unknown provider, a replay script that cannot be read or
/// parsed, or a provider that cannot be set up (a missing key, base URL or region);
/// [`WiringError::Read`] when the API key file cannot be read.
pub fn backend(config: &Config) -> Result<Arc<dyn Backend>, WiringError> {
    let m = &config.model;
    Ok(match m.provider.as_str() {
        "scripted" => Arc::new(sluice_backends::ScriptedModel::new()),
        "replay" => Arc::new(
            sluice_backends::ReplayModel::from_file(Path::new(&m.name))
                .map_err(|e| WiringError::Model(e.to_string()))?,
        ),
        name => {
            let provider = Provider::parse(name)
                .ok_or_else(|| WiringError::Model(format!("unknown model provider {name:?}")))?;
            let mut p = ProviderConfig::new(provider, &m.name);
            p.base_url = m.base_url.clone();
            p.api_key = api_key(m, name)?;
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
            p.tool_choice = m.tool_choice.as_deref().and_then(ToolChoice::parse);
            sluice_backends::provider::connect(p).map_err(|e| WiringError::Model(e.to_string()))?
        }
    })
}

/// The API key: from `model.api_key_file` (its first line), else the variable
/// `model.api_key_env` names, else the provider's usual variable. Never logged, never stored
/// with the session.
fn api_key(m: &ModelConfig, provider: &str) -> Result<Option<Secret>, WiringError> {
    if let Some(file) = &m.api_key_file {
        let text = std::fs::read_to_string(file).map_err(|e| WiringError::Read {
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
    let var = m.api_key_env.clone().or_else(|| {
        match provider {
            "openai" => Some("OPENAI_API_KEY"),
            "anthropic" => Some("ANTHROPIC_API_KEY"),
            "bedrock" => Some("AWS_BEARER_TOKEN_BEDROCK"),
            "openrouter" => Some("OPENROUTER_API_KEY"),
            _ => None,
        }
        .map(str::to_string)
    });
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
    services_with_tools(config, Arc::new(load_tools(config, None).await?))
}

/// [`services`] over tools already loaded (so `sluice serve` can share them with `/mcp`,
/// and swap them live).
///
/// # Errors
/// [`WiringError`] from [`open_store`] or [`backend`].
pub fn services_with_tools(
    config: &Config,
    tools: Arc<dyn sluice_agent::Tools>,
) -> Result<Services, WiringError> {
    Ok(Services {
        store: Arc::new(open_store(config)?),
        backend: backend(config)?,
        tools,
        settings: settings(config),
    })
}

/// The MCP server over `toolbox` (served live: a replacement applies to the next
/// request), as configured: the cap of `[agent]`, `[mcp]`'s `allow_destructive` and
/// `tools_per_page`.
pub fn mcp_server(config: &Config, toolbox: Arc<LiveToolbox>) -> sluice_mcp::McpServer {
    sluice_mcp::McpServer::live(
        toolbox,
        sluice_mcp::McpOptions {
            cap: config.agent.max_tool_result_bytes,
            allow_destructive: config.mcp.allow_destructive,
            tools_per_page: config.mcp.tools_per_page as usize,
        },
    )
}
