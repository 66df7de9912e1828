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

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wasmtime::component::types::Type;
use wasmtime::component::{Linker, Val};

use crate::call::integers::Literals;
use crate::call::invoke::Call;
use crate::call::load::{Loaded, NotCompiled, load_component};
use crate::call::observation::{DEFAULT_HINT, Draft, Observation};
use crate::call::value::object_to_fields_with;
use crate::component::docs::FuncDocs;
use crate::component::reflect::{Shape, ToolInfo};
use crate::component::source::ComponentSpec;
use crate::engine::ToolEngine;
use crate::error::RuntimeError;
use crate::pool::PoolError;

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
}

impl CallOptions {
    /// Options with cap `cap` (bytes) and no cancellation.
    pub fn new(cap: u32) -> Self {
        CallOptions { cap, cancel: None }
    }

    /// The same options, cancelled when `token` fires.
    #[must_use]
    pub fn with_cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }
}

struct Tool {
    info: ToolInfo,
    loaded: Arc<Loaded>,
    /// Its place among the exports of its component's [`Linked`] code.
    at: usize,
    shape: Shape,
    result: Option<Type>,
    docs: FuncDocs,
    hint: String,
    naming: crate::component::names::Naming,
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
    engine: Arc<ToolEngine>,
    tools: Vec<Tool>,
    by_name: HashMap<String, usize>,
    unavailable: Vec<Unavailable>,
    /// The secrets of every loaded component: withheld from the observations of every tool,
    /// since a built-in granted the directory of a secret file could otherwise read it.
    secrets: Arc<crate::secrets::Secrets>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolbox")
            .field("tools", &self.by_name.keys().collect::<Vec<_>>())
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
        let mut linker = Linker::new(engine.engine());
        crate::host::add_to_linker(&mut linker)
            .map_err(|e| RuntimeError::Engine(format!("{e:#}")))?;
        let linker = Arc::new(linker);
        let mut toolbox = Toolbox {
            engine: engine.clone(),
            tools: Vec::new(),
            by_name: HashMap::new(),
            unavailable: Vec::new(),
            secrets: Arc::default(),
        };
        let mut compiling = Vec::new();
        for spec in specs {
            let (loaded, defs) = match load_component(&engine, &linker, spec) {
                Ok(loaded) => loaded,
                Err(e) if !strict => {
                    toolbox.mark_unavailable(spec.source.describe(), e.to_string());
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
                };
                if let Some(&i) = toolbox.by_name.get(&tool.info.name) {
                    let first = &toolbox.tools[i];
                    return Err(RuntimeError::DuplicateTool {
                        name: tool.info.name.clone(),
                        first: first.info.source.clone(),
                        second: tool.info.source.clone(),
                        fix: crate::component::names::collision_fix(&first.naming, &tool.naming),
                    });
                }
                toolbox
                    .by_name
                    .insert(tool.info.name.clone(), toolbox.tools.len());
                toolbox.tools.push(tool);
            }
        }
        // Strictly, every component compiles before the toolbox is used (all at once, on
        // the engine's compile threads); the first that fails, in order, is the error.
        for loaded in compiling {
            loaded
                .compiled
                .wait_blocking()
                .map_err(|reason| RuntimeError::Load {
                    what: loaded.what.clone(),
                    reason: reason.to_string(),
                })?;
        }
        toolbox.secrets = Arc::new(crate::secrets::Secrets::union(
            toolbox.tools.iter().map(|t| &*t.loaded.config.secrets),
        ));
        Ok(toolbox)
    }

    /// Records that component `source` is unavailable because of `reason` (for a
    /// component that failed before it reached [`Toolbox::load_available`], such as a
    /// file that cannot be read).
    pub fn mark_unavailable(&mut self, source: String, reason: String) {
        self.unavailable.push(Unavailable { source, reason });
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
        for tool in &self.tools {
            let what = tool.loaded.what.as_str();
            if tool.loaded.compiled.is_compiling() && names.last() != Some(&what) {
                names.push(what);
            }
        }
        names
    }

    /// The tools, in load order.
    pub fn tools(&self) -> impl Iterator<Item = &ToolInfo> {
        self.tools.iter().map(|t| &t.info)
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
        let Some(&i) = self.by_name.get(name) else {
            let known = self.tools.iter().map(|t| t.info.name.as_str());
            return Observation::unknown_tool_among(name, known).finish(
                name,
                options.cap as usize,
                DEFAULT_HINT,
            );
        };
        let tool = &self.tools[i];
        let draft = self.invoke(tool, args, options).await;
        let observation = draft.withholding(self.secrets.clone()).finish(
            &tool.info.name,
            options.cap as usize,
            &tool.hint,
        );
        tracing::debug!(
            tool = name,
            status = ?observation.status(),
            bytes = observation.text().len(),
            full_bytes = observation.full_bytes(),
            withheld = ?observation.withheld(),
            "tool call"
        );
        observation
    }

    async fn invoke(&self, tool: &Tool, args: &str, options: &CallOptions) -> Draft {
        let text = if args.trim().is_empty() { "{}" } else { args };
        let args: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                return Observation::error(
                    &format!("arguments are not valid JSON: {e}"),
                    Some("invalid-argument"),
                );
            }
        };
        let params = match lower_args(tool, &args, &Literals::of(text, &args)) {
            Ok(p) => p,
            Err(message) => return Observation::error(&message, Some("invalid-argument")),
        };
        let cancel = options.cancel.clone().unwrap_or_default();
        let linked = match tool.loaded.compiled.wait(&cancel).await {
            Ok(linked) => linked,
            Err(NotCompiled::Failed(reason)) => {
                return Observation::error(
                    &format!("the tool's component could not be compiled: {reason}"),
                    Some("host-error"),
                );
            }
            Err(NotCompiled::Cancelled { waited }) => {
                return Observation::cancelled(&format!(
                    "the call was cancelled while its component was still being compiled ({} ms)",
                    waited.as_millis()
                ));
            }
        };
        let policy = tool.loaded.policy.clone();
        let call = Call {
            pre: linked.pre.clone(),
            policy: policy.clone(),
            preopens: tool.loaded.preopens.clone(),
            http: tool.loaded.http.clone(),
            key_names: tool.loaded.key_names.clone(),
            config: tool.loaded.config.clone(),
            refused: tool.loaded.refused.clone(),
            export: linked.exports[tool.at],
            result: tool.result.clone(),
            params,
            cap: options.cap,
            tool: tool.info.name.clone(),
        };
        let ran = self
            .engine
            .pool()
            .run(&cancel, policy.timeout, move |token| call.run(token))
            .await;
        match ran {
            Ok(draft) => draft,
            Err(e @ PoolError::Busy { .. }) => Observation::error(&e.to_string(), Some("busy")),
            Err(e @ PoolError::Cancelled { .. }) => Observation::cancelled(&e.to_string()),
            Err(e @ PoolError::Stuck { .. }) => Observation::error(
                &format!(
                    "the tool ran past its timeout of {} ms: {e}",
                    policy.timeout.as_millis()
                ),
                Some("timeout"),
            ),
            Err(e) => Observation::error(&e.to_string(), Some("host-error")),
        }
    }
}

fn lower_args(tool: &Tool, args: &Value, lits: &Literals) -> Result<Vec<Val>, String> {
    let obj = args.as_object().ok_or_else(|| {
        format!(
            "arguments must be a JSON object; got {}",
            crate::call::value::short_json(args)
        )
    })?;
    let fields = object_to_fields_with(tool.shape.fields(), obj, Some(&tool.docs.args), lits)?;
    Ok(match tool.shape {
        Shape::Record(_) => vec![Val::Record(fields)],
        Shape::Params(_) => fields.into_iter().map(|(_, v)| v).collect(),
    })
}
