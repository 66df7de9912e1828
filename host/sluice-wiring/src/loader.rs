//! Loading the configured tools for the life of a process: components from files, built-ins
//! and `oci://` references (fetched and verified by `sluice-registry` before anything is
//! compiled), through one engine, so live reload can load every replacement the same way.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice_config::{Config, OciSource, ToolConfig, ToolSource};
use sluice_registry::{
    Fetched, Fetcher, Lock, PublicKey, RegistryError, Request, Resolve, SignatureStatus,
};
use sluice_runtime::host::http_recorded::HttpRecordings;
use sluice_runtime::{
    Compilers, ComponentSpec, RuntimeError, Source, ToolEngine, ToolPolicy, Toolbox,
};

use crate::report::{self, ToolReport};
use crate::{
    WiringError, cache_dir, component_spec, engine_with, fetcher_for, policy_of, spec_with,
};

/// What loads tools for the life of a process: one engine (its epoch thread, its pooled
/// memories, its call pool, its cache of compiled components), and the fetcher of
/// components from registries with its content-addressed cache ([`oci_cache_dir`]). Live
/// reload loads every replacement through the same loader, so replacements share the
/// engine and its bound on calls in flight.
#[derive(Clone, Debug)]
pub struct ToolLoader {
    engine: Arc<ToolEngine>,
    fetcher: Fetcher,
    /// Secret files named outside the configuration (the server's `--token-file`).
    refused: Vec<PathBuf>,
    /// Recorded responses every tool's HTTP requests are answered from (`sluice test`).
    http_recordings: Option<HttpRecordings>,
}

/// The tools one load produced, and what they were made from.
pub struct Loaded {
    /// The tools (with the components that failed to load in
    /// [`Toolbox::unavailable`], when not `strict`).
    pub toolbox: Toolbox,
    /// Every component (its name, its bytes' sha256, its policy), in load order: two loads
    /// with equal fingerprints offer the same tools.
    pub fingerprint: Vec<(String, String, ToolPolicy)>,
    /// The components fetched from registries.
    pub fetched: Vec<Fetched>,
    /// The configured components that loaded, each named as messages name it (a
    /// path, `built-in NAME`, or an `oci://` reference as configured).
    pub available: BTreeSet<String>,
    /// The configured components that did not load, named the same way, each with the
    /// message that says why (`… is unavailable, its tools are not offered: …`).
    pub unavailable: BTreeMap<String, String>,
    /// Every tool offered, then every component that did not load, as `sluice doctor` and
    /// `GET /tools` show them.
    pub report: Vec<ToolReport>,
}

impl ToolLoader {
    /// A loader with a new engine as `config` sets it up ([`engine_for`](crate::engine_for): the call pool of
    /// `[runtime]`, read once: a reload keeps the engine) and a fetcher over
    /// [`oci_cache_dir`] with the limits of `[registry]`.
    ///
    /// # Errors
    /// [`WiringError::Runtime`] when no engine can be built.
    pub fn new(config: &Config) -> Result<ToolLoader, WiringError> {
        ToolLoader::compiling_with(config, Compilers::Optimizing)
    }

    /// [`ToolLoader::new`] whose engine compiles with `compilers` ([`server_compilers`](crate::server_compilers),
    /// [`authoring_compilers`](crate::authoring_compilers)).
    ///
    /// # Errors
    /// [`WiringError::Runtime`] when no engine can be built.
    pub fn compiling_with(
        config: &Config,
        compilers: Compilers,
    ) -> Result<ToolLoader, WiringError> {
        Ok(ToolLoader::with(
            Arc::new(engine_with(config, compilers)?),
            fetcher_for(config),
        ))
    }

    /// A loader over `engine` and `fetcher`.
    pub fn with(engine: Arc<ToolEngine>, fetcher: Fetcher) -> ToolLoader {
        ToolLoader {
            engine,
            fetcher,
            refused: Vec::new(),
            http_recordings: None,
        }
    }

    /// This loader, every tool it loads answering its HTTP requests from `recordings` in
    /// place of the network
    /// ([`ToolPolicy::http_recordings`](sluice_runtime::ToolPolicy::http_recordings):
    /// `sluice test`'s `[[http]]`); the policies' HTTP checks still apply first.
    #[must_use]
    pub fn with_http_recordings(mut self, recordings: HttpRecordings) -> ToolLoader {
        self.http_recordings = Some(recordings);
        self
    }

    /// This loader, its tools also refusing `file` (a secret named outside the
    /// configuration, such as the server's `--token-file`) as they refuse the
    /// configuration's [secret files](sluice_config::Config::secret_files).
    #[must_use]
    pub fn refusing(mut self, file: Option<&Path>) -> ToolLoader {
        self.refused.extend(file.map(Path::to_path_buf));
        self
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<ToolEngine> {
        &self.engine
    }

    /// The fetcher.
    pub fn fetcher(&self) -> &Fetcher {
        &self.fetcher
    }

    /// Loads the configured tools (only the built-in `only`, when given and not renamed):
    /// fetches and verifies every `oci://` component first (honouring and updating
    /// `sluice.lock`), then compiles and checks every component, as at start. A component
    /// that fails stops the load under `config.strict`; otherwise it is logged (warning),
    /// listed in [`Toolbox::unavailable`], and the others load.
    ///
    /// # Errors
    /// [`WiringError`] when `sluice.lock` cannot be read or written, two tools share a
    /// name, or (under `strict`) a component cannot be fetched, fails verification
    /// (nothing is compiled then), cannot be read, or cannot be loaded.
    pub async fn load(&self, config: &Config, only: Option<&str>) -> Result<Toolbox, WiringError> {
        Ok(self.load_checked(config, only).await?.toolbox)
    }

    /// [`ToolLoader::load`], with the fingerprint of what was loaded and which components
    /// loaded.
    ///
    /// # Errors
    /// As [`ToolLoader::load`].
    pub async fn load_checked(
        &self,
        config: &Config,
        only: Option<&str>,
    ) -> Result<Loaded, WiringError> {
        // Only a built-in that keeps its own name: a renamed one, or another component, may
        // offer a tool of that name.
        // Not run_script: its scripts call the other tools, so they are all loaded.
        let single = only
            .filter(|name| *name != sluice_config::SCRIPT_TOOL)
            .and_then(|name| {
                config.tools.iter().find(|t| {
                    matches!(&t.source, ToolSource::Builtin(b) if b == name)
                        && t.prefix.is_none()
                        && t.functions.values().all(|f| f.name.is_none())
                })
            });
        let selected: Vec<&ToolConfig> = match single {
            Some(t) => vec![t],
            None => config.tools.iter().collect(),
        };
        let mut fetches = self
            .fetch_each(config, &selected, Resolve::Locked)
            .await?
            .into_iter();
        let mut secret_files = config.secret_files();
        secret_files.extend(self.refused.iter().cloned());
        let mut specs = Vec::new();
        // The configuration of each spec, and for `oci://` its manifest digest and signature.
        let mut entries: Vec<(&ToolConfig, Option<(String, SignatureStatus)>)> = Vec::new();
        let mut fetched = Vec::new();
        let mut failed = Vec::new();
        // The runtime names an unavailable component by its source; map that back to the
        // configured component.
        let mut configured: HashMap<String, String> = HashMap::new();
        for t in &selected {
            let spec = match &t.source {
                ToolSource::Oci(_) => match fetches.next() {
                    Some(Ok(f)) => {
                        let spec = spec_with(t, oci_source(&f));
                        entries.push((t, Some((f.digest.clone(), f.signature.clone()))));
                        fetched.push(f);
                        Ok(spec)
                    }
                    Some(Err(e)) => Err(WiringError::Registry(e)),
                    None => Err(WiringError::NotFetched(t.name.clone())),
                },
                _ => component_spec(t).inspect(|_| entries.push((t, None))),
            };
            match spec {
                Ok(mut spec) => {
                    // Every tool refuses every secret file of the configuration, the tools
                    // not loaded now included (docs/keys.md#secret-files).
                    spec.policy.refused_files.clone_from(&secret_files);
                    spec.policy
                        .http_recordings
                        .clone_from(&self.http_recordings);
                    configured.insert(spec.source.describe(), source_of(t));
                    specs.push(spec);
                }
                Err(e) if !config.strict => failed.push((source_of(t), e.to_string())),
                Err(e) => return Err(e),
            }
        }
        let fingerprint = specs
            .iter()
            .map(|s| {
                let digest = s.source.bytes();
                let digest = sluice_runtime::component::source::sha256_hex(digest);
                (s.source.describe(), digest, s.policy.clone())
            })
            .collect();
        let entries: Vec<report::Entry<'_>> = specs
            .iter()
            .zip(entries)
            .map(|(s, (t, oci))| {
                let (digest, signature) = match oci {
                    Some((digest, signature)) => (digest, Some(signature)),
                    None => (
                        format!(
                            "sha256:{}",
                            sluice_runtime::component::source::sha256_hex(s.source.bytes())
                        ),
                        None,
                    ),
                };
                report::Entry {
                    described: s.source.describe(),
                    config: t,
                    digest,
                    signature,
                }
            })
            .collect();
        let engine = self.engine.clone();
        let strict = config.strict;
        let mut toolbox = tokio::task::spawn_blocking(move || load(engine, &specs, strict))
            .await
            .map_err(|e| RuntimeError::Engine(format!("loading the tools stopped: {e}")))??;
        for (source, reason) in failed {
            toolbox.mark_unavailable(source, reason);
        }
        // One built-in alone (`sluice call`): the secrets of the components not loaded are
        // withheld from its observations all the same, as a whole load would
        // (docs/observations.md#secrets-are-withheld).
        if let Some(t) = single {
            toolbox.withhold_secrets_of(
                config
                    .tools
                    .iter()
                    .filter(|other| !std::ptr::eq(*other, t))
                    .map(policy_of)
                    .collect::<Vec<_>>()
                    .iter(),
            );
        }
        // The tools directory's entries whose policy or name is wrong: unavailable, as a
        // component that fails to load (docs/configuration.md#tools-directory).
        if single.is_none() {
            for r in &config.rejected {
                toolbox.mark_unavailable(r.component.display().to_string(), r.reason.clone());
            }
        }
        for u in toolbox.unavailable() {
            tracing::warn!("{u} (set strict = true or pass --strict to refuse to start instead)");
        }
        let unavailable: BTreeMap<String, String> = toolbox
            .unavailable()
            .iter()
            .map(|u| {
                let component = configured.get(&u.source).unwrap_or(&u.source).clone();
                (component, u.to_string())
            })
            .collect();
        // The tools come in load order, each component's together: two components may be
        // named alike (a built-in offered twice, renamed), so match them in order.
        let mut next = 0;
        let mut reports: Vec<ToolReport> = toolbox
            .tools()
            .filter_map(|info| {
                let found = entries[next..]
                    .iter()
                    .position(|e| e.described == info.source)?;
                next += found;
                Some(report::offered(info, &entries[next]))
            })
            .collect();
        for u in toolbox.unavailable() {
            let component = configured.get(&u.source).unwrap_or(&u.source);
            let t = selected.iter().find(|t| source_of(t) == *component);
            reports.push(report::unavailable(u, t.copied()));
        }
        let available = selected
            .iter()
            .map(|t| source_of(t))
            .filter(|s| !unavailable.contains_key(s))
            .collect();
        Ok(Loaded {
            toolbox,
            fingerprint,
            fetched,
            available,
            unavailable,
            report: reports,
        })
    }

    /// Fetches and verifies the `oci://` components among `tools` (in their order), with
    /// `resolve` for tags, recording their digests in `lock` (not saved: the caller decides,
    /// as `sluice tools update` does once every one was fetched).
    ///
    /// # Errors
    /// [`WiringError::Registry`] for the first that fails, naming the reference, the digest
    /// and what failed; the ones after it are not fetched.
    pub async fn fetch(
        &self,
        tools: &[&ToolConfig],
        lock: &mut Lock,
        resolve: Resolve,
    ) -> Result<Vec<Fetched>, WiringError> {
        let mut fetched = Vec::new();
        for source in oci_sources(tools) {
            fetched.push(self.fetch_one(source, lock, resolve).await?);
        }
        Ok(fetched)
    }

    /// Fetches and verifies each `oci://` component among `tools` (in their order), with
    /// `resolve` for tags: its component or why not. `sluice.lock` gets the digests of those
    /// fetched (and is saved when that changed it).
    async fn fetch_each(
        &self,
        config: &Config,
        tools: &[&ToolConfig],
        resolve: Resolve,
    ) -> Result<Vec<Result<Fetched, RegistryError>>, WiringError> {
        let sources = oci_sources(tools);
        if sources.is_empty() {
            return Ok(Vec::new());
        }
        let mut lock = Lock::load(&config.lock_file)?;
        let before = lock.clone();
        let mut results = Vec::new();
        for source in sources {
            results.push(self.fetch_one(source, &mut lock, resolve).await);
        }
        if lock != before {
            lock.save()?;
        }
        Ok(results)
    }

    async fn fetch_one(
        &self,
        source: &OciSource,
        lock: &mut Lock,
        resolve: Resolve,
    ) -> Result<Fetched, RegistryError> {
        let keys = source
            .keys
            .iter()
            .map(|p| PublicKey::load(p))
            .collect::<Result<Vec<_>, _>>()?;
        let request = Request {
            reference: &source.reference,
            keys: &keys,
            insecure: source.insecure,
        };
        let f = self.fetcher.fetch(&request, lock, resolve).await?;
        tracing::info!(
            reference = %source.reference,
            digest = %f.digest,
            from_cache = f.from_cache,
            pull_ms = f.pull_time.as_millis() as u64,
            verify_ms = f.verify_time.as_millis() as u64,
            "fetched a component"
        );
        Ok(f)
    }
}

/// The `oci://` sources among `tools`, in order.
fn oci_sources<'a>(tools: &[&'a ToolConfig]) -> Vec<&'a OciSource> {
    tools
        .iter()
        .filter_map(|t| match &t.source {
            ToolSource::Oci(o) => Some(o),
            _ => None,
        })
        .collect()
}

/// `specs` loaded: every one or an error under `strict`, else those that load.
fn load(
    engine: Arc<ToolEngine>,
    specs: &[ComponentSpec],
    strict: bool,
) -> Result<Toolbox, RuntimeError> {
    if strict {
        Toolbox::load(engine, specs)
    } else {
        Toolbox::load_available(engine, specs)
    }
}

/// How messages name the component of `t`: `built-in NAME`, its path, or its `oci://`
/// reference as configured.
pub(crate) fn source_of(t: &ToolConfig) -> String {
    match &t.source {
        ToolSource::Builtin(name) => format!("built-in {name}"),
        ToolSource::Component(path) => path.display().to_string(),
        ToolSource::Oci(o) => o.reference.to_string(),
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
