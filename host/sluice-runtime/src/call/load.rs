//! Loading one component for a toolbox (docs/components.md#compiled-components): its pin,
//! its configuration and secrets, its roots, and its code, compiled at once or in the
//! background.
//!
//! A component the engine's cache holds is ready at once. Otherwise its tools are reflected
//! from a [stand-in](crate::component::stand_in) with its types and no code, its imports
//! are checked against the host on the stand-in, and the real code compiles on the engine's
//! compile threads ([`ToolEngine::compile_in_background`]); a call of one of its tools
//! waits for that compile ([`Compiled::wait`]) before it takes a slot of the call pool, so
//! the tool's timeout counts from when its code runs. A toolbox loaded strictly waits for
//! every compile (they run at once) and fails on the first component that fails.
//!
//! With a baseline compiler ([`crate::Compilers`]) a background compile makes Winch's code
//! first, which calls run as soon as it is ready; with [`Compilers::BaselineFirst`]
//! Cranelift's follows, queued behind every component's first compile and swapped in for the
//! calls that start after it (a call in flight keeps the code it started with).

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use wasmtime::component::{Component, ComponentExportIndex, InstancePre, Linker};

use crate::component::reflect::{ExportPath, ToolDef, reflect};
use crate::component::source::{ComponentSpec, sha256_hex};
use crate::engine::{Compilers, ToolEngine};
use crate::error::{LoadFailure, RuntimeError};
use crate::host::config_store::ComponentConfig;
use crate::host::state::CallState;
use crate::policy::ToolPolicy;

/// The host linked into an engine's linkers, once per toolbox: the optimizing engine's, and
/// the baseline compiler's when the engine has one.
#[derive(Clone)]
pub(crate) struct Linkers {
    pub(crate) optimized: Arc<Linker<CallState>>,
    baseline: Option<Arc<Linker<CallState>>>,
}

impl Linkers {
    /// The host's interfaces linked for `engine`'s engines.
    ///
    /// # Errors
    /// [`RuntimeError::Engine`] when the host's interfaces cannot be linked.
    pub(crate) fn new(engine: &ToolEngine) -> Result<Linkers, RuntimeError> {
        let linker = |engine: &wasmtime::Engine| {
            let mut linker = Linker::new(engine);
            crate::host::add_to_linker(&mut linker)
                .map_err(|e| RuntimeError::Engine(format!("{e:#}")))?;
            Ok(Arc::new(linker))
        };
        Ok(Linkers {
            optimized: linker(engine.engine())?,
            baseline: engine.baseline_engine().map(linker).transpose()?,
        })
    }
}

/// A component's code, linked and ready to instantiate: its pre-instance and the index of
/// each of its tools' exports, in the order of its tools.
pub(crate) struct Linked {
    pub(crate) pre: InstancePre<CallState>,
    pub(crate) exports: Vec<ComponentExportIndex>,
    /// The component, shared with the engine's other toolboxes while any holds it
    /// ([`ToolEngine::cached`]).
    _component: Arc<Component>,
}

/// What a finished compile came to: the linked code, or why there is none.
type Outcome = Result<Arc<Linked>, Arc<RuntimeError>>;

/// A component's code: ready, or compiling in the background until it is.
pub(crate) struct Compiled {
    outcome: Mutex<Option<Outcome>>,
    /// Wakes threads waiting in [`Compiled::wait_blocking`].
    finished: Condvar,
    /// Wakes calls waiting in [`Compiled::wait`].
    notify: Notify,
    /// When the compile started.
    since: Instant,
}

/// Why a call did not get its component's code.
#[derive(Debug)]
pub(crate) enum NotCompiled {
    /// The compile failed; its error.
    Failed(Arc<RuntimeError>),
    /// The call was cancelled while it waited, after `waited`.
    Cancelled {
        /// How long it waited.
        waited: Duration,
    },
}

impl Compiled {
    fn pending() -> Arc<Compiled> {
        Arc::new(Compiled {
            outcome: Mutex::new(None),
            finished: Condvar::new(),
            notify: Notify::new(),
            since: Instant::now(),
        })
    }

    fn ready(linked: Linked) -> Arc<Compiled> {
        let compiled = Compiled::pending();
        compiled.finish(Ok(Arc::new(linked)));
        compiled
    }

    /// Sets the code (or why there is none), waking every waiter; a second call replaces
    /// the first code (Cranelift's after Winch's) for the calls that start after it.
    fn finish(&self, outcome: Outcome) {
        *self.outcome.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
        self.finished.notify_all();
        self.notify.notify_waiters();
    }

    fn outcome(&self) -> Option<Outcome> {
        self.outcome
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// True while the code is still being compiled.
    pub(crate) fn is_compiling(&self) -> bool {
        self.outcome().is_none()
    }

    /// The code, once compiled (at once when it is); a call waits for as long as the
    /// compile takes, unless `cancel` fires first.
    pub(crate) async fn wait(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Arc<Linked>, NotCompiled> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before the check, so a compile that finishes in between wakes it.
            notified.as_mut().enable();
            if let Some(outcome) = self.outcome() {
                return outcome.map_err(NotCompiled::Failed);
            }
            tokio::select! {
                () = &mut notified => {}
                () = cancel.cancelled() => {
                    return Err(NotCompiled::Cancelled { waited: self.since.elapsed() });
                }
            }
        }
    }

    /// The code once compiled, or why it failed to compile (the whole error message),
    /// waiting on this thread.
    pub(crate) fn wait_blocking(&self) -> Outcome {
        let mut outcome = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(outcome) = outcome.as_ref() {
                return outcome.clone();
            }
            outcome = self
                .finished
                .wait(outcome)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// What the tools of one component share: its code and what each call is given.
pub(crate) struct Loaded {
    /// How messages name the component.
    pub(crate) what: String,
    pub(crate) compiled: Arc<Compiled>,
    pub(crate) policy: Arc<ToolPolicy>,
    /// Its roots, opened once and shared by its calls.
    pub(crate) preopens: Arc<crate::host::preopens::Preopens>,
    pub(crate) http: Arc<crate::policy::HttpGrant>,
    pub(crate) key_names: Arc<sluice_keys::KeyNames>,
    /// Its `wasi:config/store` and the secrets withheld from its observations.
    pub(crate) config: Arc<ComponentConfig>,
    /// The files none of its opens reaches: the policy's and its own secret files.
    pub(crate) refused: Arc<crate::host::refused::RefusedFiles>,
    /// Its `sluice:tools/key-carries`, kept across its calls.
    pub(crate) key_carries: Arc<crate::host::key_carries::KeyCarries>,
    /// `sha256:HEX` of its bytes, for the sandbox facts of its calls.
    pub(crate) digest: String,
}

/// Loads one component: checks its pin, resolves its configuration, reflects its tools
/// (from the cached code, or from a stand-in while the code compiles in the background:
/// [`Compiled::wait_blocking`] waits for it) and checks its imports.
///
/// # Errors
/// A failed pin, configuration or key-name pattern, a component that is not one, an import
/// the host does not provide, an export that cannot be a tool; a component that does not
/// compile, when it had no stand-in.
pub(crate) fn load_component(
    engine: &Arc<ToolEngine>,
    linkers: &Linkers,
    spec: &ComponentSpec,
) -> Result<(Arc<Loaded>, Vec<ToolDef>), RuntimeError> {
    let linker = &linkers.optimized;
    let what = spec.source.describe();
    let wasm = spec.source.bytes();
    let sha256 = sha256_hex(wasm);
    if let Some(expected) = &spec.policy.sha256
        && !sha256.eq_ignore_ascii_case(expected.trim())
    {
        return Err(RuntimeError::Pin {
            what,
            expected: expected.clone(),
            actual: sha256,
        });
    }
    let digest = format!("sha256:{sha256}");
    let env = |var: &str| std::env::var_os(var);
    let config = crate::host::config_store::resolve_policy(&spec.policy, &env).map_err(|e| {
        RuntimeError::Load {
            what: what.clone(),
            reason: LoadFailure::Secret(e),
        }
    })?;
    let key_names =
        sluice_keys::KeyNames::new(&spec.policy.key_names).map_err(|e| RuntimeError::Tool {
            what: what.clone(),
            reason: format!("its key-material name patterns are invalid: {e}"),
        })?;
    let cached = engine.cached(&what, &sha256);
    let stand_in = match cached {
        Some(_) => None,
        None => match crate::component::stand_in::stand_in(engine, wasm) {
            Ok(types) => Some(types),
            Err(why) => {
                // Recorded as a string field (quoted in the log line).
                let why = why.to_string();
                tracing::debug!(component = %what, why, "no stand-in; compiling at once");
                None
            }
        },
    };
    let (compiled, defs) = match (cached, stand_in) {
        (Some(component), _) => {
            let defs = reflect(engine, &component, &spec.source, &spec.policy)?;
            let linked = link(engine, linker, &what, &component, &defs)?;
            (Compiled::ready(linked), defs)
        }
        (None, Some(types)) => {
            let types = Arc::new(types);
            let defs = reflect(engine, &types, &spec.source, &spec.policy)?;
            // The stand-in has the real one's imports: a missing one is known now.
            link(engine, linker, &what, &types, &defs)?;
            // One compile per component: a load while it compiles waits for the same one.
            let (compiled, new) = engine.compile_slot(&sha256, Compiled::pending);
            if new {
                let job = Job {
                    engine: engine.clone(),
                    linkers: linkers.clone(),
                    what: what.clone(),
                    source: spec.source.clone(),
                    sha256,
                    paths: defs.iter().map(|d| d.path.clone()).collect(),
                    compiled: compiled.clone(),
                };
                engine.compile_in_background(move || job.run());
            }
            (compiled, defs)
        }
        (None, None) => {
            let component = engine
                .compile(&what, wasm, &sha256)
                .map_err(|e| crate::component::async_abi::refusal_or(e, &what, wasm))?;
            let defs = reflect(engine, &component, &spec.source, &spec.policy)?;
            let linked = link(engine, linker, &what, &component, &defs)?;
            (Compiled::ready(linked), defs)
        }
    };
    let loaded = Arc::new(Loaded {
        what,
        compiled,
        key_names: Arc::new(key_names),
        policy: Arc::new(spec.policy.clone()),
        preopens: Arc::new(crate::host::preopens::Preopens::new(&spec.policy.roots)),
        http: Arc::new(spec.policy.http.clone()),
        config: Arc::new(config),
        refused: Arc::new(crate::host::refused::RefusedFiles::new(refused_files(
            &spec.policy,
        ))),
        key_carries: Arc::default(),
        digest,
    });
    Ok((loaded, defs))
}

/// A compile in the background: the real code of a component whose tools were reflected
/// from its stand-in.
struct Job {
    engine: Arc<ToolEngine>,
    linkers: Linkers,
    what: String,
    source: crate::component::source::Source,
    sha256: String,
    paths: Vec<ExportPath>,
    compiled: Arc<Compiled>,
}

impl Job {
    /// Compiles the code: with a baseline compiler, Winch's (then, with
    /// [`Compilers::BaselineFirst`], Cranelift's behind every first compile); otherwise
    /// Cranelift's.
    fn run(self) {
        let Some(linker) = self.linkers.baseline.clone() else {
            return self.optimize();
        };
        let baseline = self
            .engine
            .compile_baseline(&self.what, self.source.bytes())
            .and_then(|component| {
                link_paths(&self.engine, &linker, &self.what, &component, &self.paths)
            });
        match baseline {
            Ok(linked) => {
                let compiled = self.compiled.clone();
                if self.engine.compilers() == Compilers::BaselineFirst {
                    // Behind every component's first compile, waiting or still to come.
                    let engine = self.engine.clone();
                    engine.compile_after_first_tiers(move || self.optimize());
                }
                compiled.finish(Ok(Arc::new(linked)));
            }
            Err(e) => {
                tracing::debug!(component = %self.what, "{e}; compiling with Cranelift only");
                self.optimize();
            }
        }
    }

    /// Compiles Cranelift's code and sets it as the component's code; when it fails after
    /// Winch's code was set, Winch's stays (with a warning).
    fn optimize(self) {
        let swap = !self.compiled.is_compiling();
        let outcome = self
            .engine
            .compile_shown(&self.what, self.source.bytes(), &self.sha256, !swap)
            .and_then(|component| {
                link_paths(
                    &self.engine,
                    &self.linkers.optimized,
                    &self.what,
                    &component,
                    &self.paths,
                )
            });
        match outcome {
            Ok(linked) => {
                if swap {
                    tracing::info!(component = %self.what, "Cranelift's code swapped in for Winch's");
                }
                self.compiled.finish(Ok(Arc::new(linked)));
            }
            Err(e) if matches!(self.compiled.outcome(), Some(Ok(_))) => {
                tracing::warn!(
                    component = %self.what,
                    "{e}; it keeps running the baseline compiler's code"
                );
            }
            Err(e) => {
                tracing::warn!(
                    component = %self.what,
                    "{e}; its tools fail until it is replaced"
                );
                self.compiled.finish(Err(Arc::new(e)));
            }
        }
    }
}

/// `component` linked: its pre-instance and the exports of `defs`.
fn link(
    engine: &ToolEngine,
    linker: &Linker<CallState>,
    what: &str,
    component: &Arc<Component>,
    defs: &[ToolDef],
) -> Result<Linked, RuntimeError> {
    let paths: Vec<ExportPath> = defs.iter().map(|d| d.path.clone()).collect();
    link_paths(engine, linker, what, component, &paths)
}

/// `component` linked: its pre-instance (imports resolved against the host) and the index
/// of each export of `paths`.
fn link_paths(
    engine: &ToolEngine,
    linker: &Linker<CallState>,
    what: &str,
    component: &Arc<Component>,
    paths: &[ExportPath],
) -> Result<Linked, RuntimeError> {
    let pre = linker.instantiate_pre(component).map_err(|e| {
        // Types are read through the engine that made them: the baseline compiler's code
        // has the imports its stand-in was checked for.
        let missing = if wasmtime::Engine::same(linker.engine(), engine.engine()) {
            crate::component::imports::missing_imports(engine, component)
        } else {
            Vec::new()
        };
        if missing.is_empty() {
            RuntimeError::Load {
                what: what.to_string(),
                reason: LoadFailure::Wasmtime(e),
            }
        } else {
            RuntimeError::MissingImports {
                what: what.to_string(),
                missing,
            }
        }
    })?;
    let exports = paths
        .iter()
        .map(|path| {
            path.index(component).ok_or_else(|| RuntimeError::Tool {
                what: format!("{what}: export {path}"),
                reason: "the export cannot be found".into(),
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(Linked {
        pre,
        exports,
        _component: component.clone(),
    })
}

/// The files `policy` refuses to every open: [`ToolPolicy::refused_files`] and the
/// component's own secret files (of `secrets` and `http_credentials`).
fn refused_files(policy: &ToolPolicy) -> impl Iterator<Item = std::path::PathBuf> + '_ {
    let credentials = policy.http.credentials.iter().map(|c| &c.secret);
    let own = policy
        .secrets
        .values()
        .chain(credentials)
        .filter_map(|s| match s {
            crate::secrets::SecretSource::File(path) => Some(path.clone()),
            crate::secrets::SecretSource::Env(_) => None,
        });
    policy.refused_files.iter().cloned().chain(own)
}
