//! The tools of a session: components turned into named tools with JSON schemas, and the
//! call path from a model's JSON arguments to a capped observation.
//!
//! One `InstancePre` per component (imports resolved once), a fresh store per call (a
//! trapped instance is poisoned, and calls must not share state), with the policy's
//! preopens, memory limit, deadline, the host's resource limits ([`crate::limits`]) and a
//! bound on the bytes lifted out of the guest. Calls run on the engine's
//! [`CallPool`](crate::pool::CallPool), never on the caller's async runtime.

use std::collections::HashMap;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::call::load::load_component;
use crate::call::observation::Observation;
use crate::call::run::{Place, Run};
use crate::call::tool_set::{Tool, ToolSet};
use crate::component::reflect::ToolInfo;
use crate::component::source::ComponentSpec;
use crate::engine::ToolEngine;
use crate::error::{LoadFailure, RuntimeError};
use crate::policy::ToolPolicy;

/// How one call runs: the cap and, optionally, a cancellation token.
///
/// Built with [`CallOptions::new`] and its `with_…` methods; the struct is
/// `#[non_exhaustive]`, so more options (such as a progress sink an MCP server forwards as
/// progress notifications) can be added without breaking callers.
///
/// ```
/// use sluice_runtime::CallOptions;
/// use tokio_util::sync::CancellationToken;
///
/// let run = CancellationToken::new();
/// let options = CallOptions::new(65_536).with_cancel(run.clone());
/// assert_eq!(options.cap, 65_536);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CallOptions {
    /// `agent.max_tool_result_bytes`: the cap on the observation, in bytes.
    pub cap: u32,
    /// Fires to cancel the call: one waiting for a slot gives up, one running is stopped
    /// within milliseconds (its store dropped), and the observation is a `cancelled` tool
    /// error. `None`: never cancelled.
    pub cancel: Option<CancellationToken>,
    /// Whether a script the call runs (`run_script`) may call destructive tools: true when
    /// the run approves calls without asking (`agent.auto_approve`, `mcp.allow_destructive`).
    /// Default false.
    pub allow_destructive: bool,
    /// Whether the arguments text was written from already parsed JSON (an MCP client's
    /// arguments, parsed by rmcp): an integer literal beyond 64 bits was then read as a float
    /// before Sluice saw it, so a float with no fraction at or above 2^64 is judged as such
    /// an integer (too large; clamped where the field saturates), not as a fraction. Default
    /// false: the text is as the caller wrote it.
    pub arguments_reencoded: bool,
}

impl CallOptions {
    /// Options with cap `cap` (bytes), no cancellation, and no destructive calls from scripts.
    pub fn new(cap: u32) -> Self {
        CallOptions {
            cap,
            cancel: None,
            allow_destructive: false,
            arguments_reencoded: false,
        }
    }

    /// The same options, for arguments text written from parsed JSON
    /// ([`CallOptions::arguments_reencoded`]).
    #[must_use]
    pub fn with_reencoded_arguments(mut self) -> Self {
        self.arguments_reencoded = true;
        self
    }

    /// The same options; scripts may call destructive tools when `allowed`.
    #[must_use]
    pub fn with_destructive_allowed(mut self, allowed: bool) -> Self {
        self.allow_destructive = allowed;
        self
    }

    /// The same options, cancelled when `token` fires.
    #[must_use]
    pub fn with_cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }
}

/// A component that could not be loaded, and why: its tools are not offered.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Unavailable {
    /// The component (built-in name or file path).
    pub source: String,
    /// Why it did not load: the error that [`Toolbox::load`] would have stopped on.
    pub reason: String,
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is unavailable, its tools are not offered: {}",
            self.source, self.reason
        )
    }
}

/// A set of named tools ready to call.
pub struct Toolbox {
    set: Arc<ToolSet>,
    unavailable: Vec<Unavailable>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolbox")
            .field("tools", &self.set.by_name.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Toolbox {
    /// Loads every component in `specs` and collects their tools; the first component that
    /// fails to load stops it (`strict = true`).
    ///
    /// # Errors
    /// A component that does not compile or whose imports the host does not provide, an
    /// export with an invalid name, or two tools with the same name.
    pub fn load(engine: Arc<ToolEngine>, specs: &[ComponentSpec]) -> Result<Toolbox, RuntimeError> {
        Toolbox::load_with(engine, specs, true)
    }

    /// Loads every component in `specs` that can be loaded and collects their tools; a
    /// component that cannot (it does not compile, imports what the host lacks, fails its
    /// pin, or exports what cannot be a tool) is left out and listed in
    /// [`Toolbox::unavailable`] with its reason, and the others (built-ins included) load.
    ///
    /// # Errors
    /// Two tools with the same name (the configuration must rename one), or an engine that
    /// cannot link the host's interfaces.
    pub fn load_available(
        engine: Arc<ToolEngine>,
        specs: &[ComponentSpec],
    ) -> Result<Toolbox, RuntimeError> {
        Toolbox::load_with(engine, specs, false)
    }

    fn load_with(
        engine: Arc<ToolEngine>,
        specs: &[ComponentSpec],
        strict: bool,
    ) -> Result<Toolbox, RuntimeError> {
        let linkers = crate::call::load::Linkers::new(&engine)?;
        let mut set = ToolSet {
            engine: engine.clone(),
            tools: Vec::new(),
            by_name: HashMap::new(),
            secrets: Arc::default(),
        };
        let mut unavailable = Vec::new();
        let mut compiling = Vec::new();
        for spec in specs {
            let (loaded, defs) = match load_component(&engine, &linkers, spec) {
                Ok(loaded) => loaded,
                Err(e) if !strict => {
                    unavailable.push(Unavailable {
                        source: spec.source.describe(),
                        reason: e.to_string(),
                    });
                    continue;
                }
                Err(e) => return Err(e),
            };
            if strict && loaded.compiled.is_compiling() {
                compiling.push(loaded.clone());
            }
            for (at, def) in defs.into_iter().enumerate() {
                let tool = Tool {
                    hint: crate::call::hint::paging_hint(&def.info.input_schema),
                    info: def.info,
                    loaded: loaded.clone(),
                    at,
                    shape: def.shape,
                    result: def.result,
                    docs: def.docs,
                    naming: def.naming,
                    metrics: Default::default(),
                };
                if let Some(first) = set.tool(&tool.info.name) {
                    return Err(RuntimeError::DuplicateTool {
                        name: tool.info.name.clone(),
                        first: first.info.source.clone(),
                        second: tool.info.source.clone(),
                        fix: crate::component::names::collision_fix(&first.naming, &tool.naming),
                    });
                }
                set.by_name.insert(tool.info.name.clone(), set.tools.len());
                set.tools.push(tool);
            }
        }
        // Strictly, every component compiles before the toolbox is used (all at once, on
        // the engine's compile threads); the first that fails, in order, is the error.
        for loaded in compiling {
            loaded
                .compiled
                .wait_blocking()
                .map_err(|e| RuntimeError::Load {
                    what: loaded.what.clone(),
                    reason: LoadFailure::Compiled(e),
                })?;
        }
        set.secrets = Arc::new(crate::secrets::Secrets::union(
            set.tools.iter().map(|t| &*t.loaded.config.secrets),
        ));
        Ok(Toolbox {
            set: Arc::new(set),
            unavailable,
        })
    }

    /// Records that component `source` is unavailable because of `reason` (for a
    /// component that failed before it reached [`Toolbox::load_available`], such as a
    /// file that cannot be read).
    pub fn mark_unavailable(&mut self, source: String, reason: String) {
        self.unavailable.push(Unavailable { source, reason });
    }

    /// Withholds the secrets of `policies` (components configured but not loaded, such as
    /// the others of a `sluice call` that loads one built-in) from every observation, as
    /// the secrets of the loaded components are. A secret that cannot be read is skipped:
    /// its component could not have loaded either. Call it before the toolbox is shared;
    /// calls already holding it keep the secrets they had.
    pub fn withhold_secrets_of<'a>(&mut self, policies: impl Iterator<Item = &'a ToolPolicy>) {
        let env = |var: &str| std::env::var_os(var);
        let others: Vec<_> = policies
            .filter_map(|p| crate::host::config_store::resolve_policy(p, &env).ok())
            .collect();
        if others.is_empty() {
            return;
        }
        let all = crate::secrets::Secrets::union(
            std::iter::once(&*self.set.secrets).chain(others.iter().map(|c| &*c.secrets)),
        );
        match Arc::get_mut(&mut self.set) {
            Some(set) => set.secrets = Arc::new(all),
            None => tracing::warn!("the toolbox is in use: more secrets cannot be withheld now"),
        }
    }

    /// The components that failed to load, in configuration order (always empty after
    /// [`Toolbox::load`]).
    pub fn unavailable(&self) -> &[Unavailable] {
        &self.unavailable
    }

    /// The components whose code is still being compiled in the background, in load order,
    /// named as messages name them; their tools are listed, and a call of one waits for the
    /// code.
    pub fn compiling(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for tool in &self.set.tools {
            let what = tool.loaded.what.as_str();
            if tool.loaded.compiled.is_compiling() && names.last() != Some(&what) {
                names.push(what);
            }
        }
        names
    }

    /// The tools, in load order.
    pub fn tools(&self) -> impl Iterator<Item = &ToolInfo> {
        self.set.tools.iter().map(|t| &t.info)
    }

    /// Calls tool `name` with the JSON text `args` under the cap `cap` (bytes) and returns
    /// the observation to store: the key scan and the cap are already applied. Never
    /// cancelled; see [`Toolbox::call_with`].
    pub async fn call(&self, name: &str, args: &str, cap: u32) -> Observation {
        self.call_with(name, args, &CallOptions::new(cap)).await
    }

    /// Calls tool `name` with the JSON text `args` as `options` say and returns the
    /// observation to store (key scan and cap applied). The call runs on the engine's call
    /// pool; it ends within its timeout plus
    /// [`WATCHDOG_GRACE`](crate::pool::WATCHDOG_GRACE) whatever the guest does, and within
    /// milliseconds of a cancellation. A call that finds no free slot within
    /// `runtime.queue_timeout_ms` is a `busy` tool error.
    pub async fn call_with(&self, name: &str, args: &str, options: &CallOptions) -> Observation {
        let started = std::time::Instant::now();
        let Some(tool) = self.set.tool(name) else {
            let observation = self.set.unknown(name, options.cap);
            let metrics = crate::call::report::unknown_tool_metrics();
            crate::call::report::report(None, metrics, &observation, started.elapsed());
            return observation;
        };
        let run = Run {
            cap: options.cap,
            cancel: options.cancel.clone().unwrap_or_default(),
            allow_destructive: options.allow_destructive,
            arguments_reencoded: options.arguments_reencoded,
            place: Place::Pool,
        };
        let ran = self.set.invoke(tool, args, &run).await;
        let observation = self.set.finish(tool, ran, options.cap);
        crate::call::report::report(Some(name), &tool.metrics, &observation, started.elapsed());
        observation
    }
}
