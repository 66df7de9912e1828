//! The tools of a session: components turned into named tools with JSON schemas, and the
//! call path from a model's JSON arguments to a capped observation.
//!
//! One [`InstancePre`] per component (imports resolved once), a fresh [`Store`] per call
//! (a trapped instance is poisoned, and calls must not share state), with the policy's
//! preopens, memory limit, epoch deadline and a bound on the bytes lifted out of the guest.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use wasmtime::component::types::Type;
use wasmtime::component::{ComponentExportIndex, InstancePre, Linker, Val};
use wasmtime::{Store, Trap};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use crate::component::{Shape, ToolInfo};
use crate::docs::FuncDocs;
use crate::engine::{EPOCH_TICK_MS, ToolEngine};
use crate::error::RuntimeError;
use crate::host::{CallBudget, CallState, MemoryLimiter};
use crate::observation::{DEFAULT_HINT, Draft, Observation};
use crate::policy::ToolPolicy;
use crate::value::{object_to_fields, to_json};

/// Bytes of a guest's stderr kept for error messages.
const STDERR_BYTES: usize = 64 * 1024;

/// Bytes the host lifts out of a guest in one call at most, before capping (16 MiB, or
/// 16 × the cap when that is more). A larger result is a tool error, not an allocation.
const MIN_LIFT_BYTES: usize = 16 << 20;

/// Where a tool's component comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A built-in tool embedded in the binary (`read_file`, …).
    Builtin(&'static str),
    /// Component bytes, named for messages (usually a file path).
    Bytes {
        /// What to call it in messages.
        name: String,
        /// The component.
        wasm: Arc<Vec<u8>>,
    },
}

impl Source {
    /// How messages name it: `built-in read_file`, or the name given.
    pub fn describe(&self) -> String {
        match self {
            Source::Builtin(name) => format!("built-in {name}"),
            Source::Bytes { name, .. } => name.clone(),
        }
    }

    /// The component's bytes.
    ///
    /// # Errors
    /// [`RuntimeError::Load`] for a built-in name that does not exist.
    pub fn bytes(&self) -> Result<&[u8], RuntimeError> {
        match self {
            Source::Builtin(name) => {
                sluice_builtins::component(name).ok_or_else(|| RuntimeError::Load {
                    what: self.describe(),
                    reason: format!(
                        "there is no built-in tool of that name; built-in tools are: {}",
                        sluice_builtins::BUILTINS
                            .iter()
                            .map(|(n, _)| *n)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                })
            }
            Source::Bytes { wasm, .. } => Ok(wasm.as_slice()),
        }
    }
}

/// A component to load and the policy its tools run under.
#[derive(Clone, Debug)]
pub struct ComponentSpec {
    /// Where the component comes from.
    pub source: Source,
    /// What its tools may use.
    pub policy: ToolPolicy,
}

struct Loaded {
    pre: InstancePre<CallState>,
    policy: Arc<ToolPolicy>,
    key_names: Arc<sluice_pager::KeyNames>,
}

struct Tool {
    info: ToolInfo,
    loaded: Arc<Loaded>,
    export: ComponentExportIndex,
    shape: Shape,
    result: Option<Type>,
    docs: FuncDocs,
    hint: &'static str,
}

/// A set of named tools ready to call.
pub struct Toolbox {
    engine: Arc<ToolEngine>,
    tools: Vec<Tool>,
    by_name: HashMap<String, usize>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolbox")
            .field("tools", &self.by_name.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Toolbox {
    /// Loads every component in `specs` and collects their tools.
    ///
    /// # Errors
    /// A component that does not compile or whose imports the host does not provide, an
    /// export with an invalid name, or two tools with the same name.
    pub fn load(engine: Arc<ToolEngine>, specs: &[ComponentSpec]) -> Result<Toolbox, RuntimeError> {
        let mut linker = Linker::new(engine.engine());
        crate::host::add_to_linker(&mut linker)
            .map_err(|e| RuntimeError::Engine(format!("{e:#}")))?;
        let mut toolbox = Toolbox {
            engine: engine.clone(),
            tools: Vec::new(),
            by_name: HashMap::new(),
        };
        for spec in specs {
            for tool in load_component(&engine, &linker, spec)? {
                if let Some(&i) = toolbox.by_name.get(&tool.info.name) {
                    return Err(RuntimeError::DuplicateTool {
                        name: tool.info.name.clone(),
                        first: toolbox.tools[i].info.source.clone(),
                        second: tool.info.source.clone(),
                    });
                }
                toolbox
                    .by_name
                    .insert(tool.info.name.clone(), toolbox.tools.len());
                toolbox.tools.push(tool);
            }
        }
        Ok(toolbox)
    }

    /// The tools, in load order.
    pub fn tools(&self) -> impl Iterator<Item = &ToolInfo> {
        self.tools.iter().map(|t| &t.info)
    }

    /// Calls tool `name` with the JSON text `args` under the cap `cap` (bytes) and returns
    /// the observation to store: the key scan and the cap are already applied.
    pub async fn call(&self, name: &str, args: &str, cap: u32) -> Observation {
        let Some(&i) = self.by_name.get(name) else {
            return Observation::unknown_tool(name).finish(name, cap as usize, DEFAULT_HINT);
        };
        let tool = &self.tools[i];
        let draft = self.invoke(tool, args, cap).await;
        draft.finish(&tool.info.name, cap as usize, tool.hint)
    }

    async fn invoke(&self, tool: &Tool, args: &str, cap: u32) -> Draft {
        let args: Value =
            match serde_json::from_str(if args.trim().is_empty() { "{}" } else { args }) {
                Ok(v) => v,
                Err(e) => {
                    return Observation::error(
                        &format!("arguments are not valid JSON: {e}"),
                        Some("invalid-argument"),
                    );
                }
            };
        let params = match lower_args(tool, &args) {
            Ok(p) => p,
            Err(message) => return Observation::error(&message, Some("invalid-argument")),
        };
        let policy = &tool.loaded.policy;
        let mut store = match self.store(tool, cap) {
            Ok(s) => s,
            Err(message) => return Observation::error(&message, Some("io")),
        };
        let mut results = vec![Val::Bool(false); usize::from(tool.result.is_some())];
        let outcome = async {
            let instance = tool.loaded.pre.instantiate_async(&mut store).await?;
            let func = instance
                .get_func(&mut store, tool.export)
                .ok_or_else(|| wasmtime::Error::msg("the export is not a function"))?;
            func.call_async(&mut store, &params, &mut results).await
        }
        .await;
        match outcome {
            Ok(()) => lift_result(results.first(), tool.result.as_ref()),
            Err(e) => {
                let (message, kind) = explain_failure(&e, &store, policy);
                Observation::error(&message, Some(kind))
            }
        }
    }

    /// A fresh store for one call of `tool`: preopens, limits, deadline, lift bound.
    fn store(&self, tool: &Tool, cap: u32) -> Result<Store<CallState>, String> {
        let policy = &tool.loaded.policy;
        let mut wasi = WasiCtxBuilder::new();
        // File operations run on the calling thread instead of a blocking-pool hop: measured
        // 4x faster for file tools.
        wasi.allow_blocking_current_thread(true);
        for root in &policy.roots {
            let perms = if root.write {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            wasi.preopened_dir(&root.dir, format!("/{}", root.name), perms)
                .map_err(|e| {
                    format!(
                        "root {} ({}) is not available: {e}",
                        root.name,
                        root.dir.display()
                    )
                })?;
        }
        for (k, v) in &policy.env {
            wasi.env(k, v);
        }
        let stderr = MemoryOutputPipe::new(STDERR_BYTES);
        wasi.stderr(stderr.clone());
        let state = CallState {
            wasi: wasi.build(),
            table: wasmtime::component::ResourceTable::new(),
            limiter: MemoryLimiter::new(policy.memory_bytes),
            budget: CallBudget::new(cap, policy.timeout, tool.loaded.key_names.clone()),
            stderr,
        };
        let mut store = Store::new(self.engine.engine(), state);
        store.limiter(|s| &mut s.limiter);
        store.set_epoch_deadline(deadline_ticks(policy.timeout));
        store.epoch_deadline_trap();
        store.set_hostcall_fuel(MIN_LIFT_BYTES.max(cap as usize * 16));
        Ok(store)
    }
}

/// The epoch ticks of `timeout`, rounded up, plus one for the tick in progress.
fn deadline_ticks(timeout: Duration) -> u64 {
    (timeout.as_millis() as u64).div_ceil(EPOCH_TICK_MS) + 1
}

fn lower_args(tool: &Tool, args: &Value) -> Result<Vec<Val>, String> {
    let obj = args.as_object().ok_or_else(|| {
        format!(
            "arguments must be a JSON object; got {}",
            crate::value::short_json(args)
        )
    })?;
    let fields = object_to_fields(tool.shape.fields(), obj, "", Some(&tool.docs.args))?;
    Ok(match tool.shape {
        Shape::Record(_) => vec![Val::Record(fields)],
        Shape::Params(_) => fields.into_iter().map(|(_, v)| v).collect(),
    })
}

/// Turns what the guest returned into an observation draft: `result<T, E>` becomes ok or
/// error, anything else is the result.
fn lift_result(val: Option<&Val>, ty: Option<&Type>) -> Draft {
    match (val, ty) {
        (Some(Val::Result(Ok(v))), Some(Type::Result(r))) => {
            let json = match (v, r.ok()) {
                (Some(v), Some(t)) => to_json(v, &t),
                _ => Value::Null,
            };
            Observation::success(&json)
        }
        (Some(Val::Result(Err(e))), Some(Type::Result(r))) => {
            let (message, kind) = match (e, r.err()) {
                (Some(e), Some(t)) => error_message(e, &t),
                _ => (
                    "the tool reported an error without a message".to_string(),
                    None,
                ),
            };
            Observation::error(&message, kind.as_deref())
        }
        (Some(v), Some(t)) => Observation::success(&to_json(v, t)),
        _ => Observation::success(&Value::Null),
    }
}

/// The message and kind of a tool's error value: a string is the message; a variant case
/// carrying a string is that string with the case as kind; an enum case is both; a record
/// with a `message` string field is that message (and its `kind` string field, if any);
/// anything else is its compact JSON.
fn error_message(val: &Val, ty: &Type) -> (String, Option<String>) {
    match val {
        Val::String(s) => (s.clone(), None),
        Val::Variant(case, Some(payload)) => match payload.as_ref() {
            Val::String(s) => (s.clone(), Some(case.clone())),
            other => {
                let payload_ty = match ty {
                    Type::Variant(v) => v.cases().find(|c| c.name == case).and_then(|c| c.ty),
                    _ => None,
                };
                let text =
                    payload_ty.map_or_else(|| case.clone(), |t| to_json(other, &t).to_string());
                (text, Some(case.clone()))
            }
        },
        Val::Variant(case, None) | Val::Enum(case) => (case.clone(), Some(case.clone())),
        Val::Record(fields) => {
            let text = |name: &str| {
                fields.iter().find_map(|(n, v)| match v {
                    Val::String(s) if n == name => Some(s.clone()),
                    _ => None,
                })
            };
            match text("message") {
                Some(m) => (m, text("kind")),
                None => (to_json(val, ty).to_string(), None),
            }
        }
        other => (to_json(other, ty).to_string(), None),
    }
}

/// Names the limit a failed call hit, for the model: `(message, kind)`.
fn explain_failure(
    e: &wasmtime::Error,
    store: &Store<CallState>,
    policy: &ToolPolicy,
) -> (String, &'static str) {
    let state = store.data();
    if let Some(asked) = state.limiter.refused {
        return (
            format!(
                "the tool hit its memory limit of {} MiB (it asked for {} MiB) and was stopped",
                state.limiter.limit_bytes >> 20,
                asked.div_ceil(1 << 20)
            ),
            "memory-limit",
        );
    }
    if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
        return (
            format!(
                "the tool ran past its timeout of {} ms and was stopped",
                policy.timeout.as_millis()
            ),
            "timeout",
        );
    }
    let text = format!("{e:#}");
    if text.contains("fuel allocated for hostcalls has been exhausted") {
        return (
            "the tool returned more data than the host accepts from one call; ask for less"
                .to_string(),
            "result-too-large",
        );
    }
    let stderr = String::from_utf8_lossy(&state.stderr.contents())
        .trim()
        .to_string();
    // The trap says what happened; the error's outer context is only a backtrace header.
    let trap = e.downcast_ref::<Trap>();
    let what = match trap {
        Some(trap) => trap.to_string(),
        None => text.lines().next().unwrap_or("failed").to_string(),
    };
    let message = if stderr.is_empty() {
        format!("the tool crashed: {what}")
    } else {
        format!(
            "the tool crashed: {what}; its stderr ends: {}",
            tail_chars(&stderr, 500)
        )
    };
    (message, if trap.is_some() { "trap" } else { "host-error" })
}

fn tail_chars(s: &str, n: usize) -> &str {
    let count = s.chars().count();
    match s.char_indices().nth(count.saturating_sub(n)) {
        Some((i, _)) => &s[i..],
        None => s,
    }
}

/// Loads one component: checks its pin, compiles it, resolves its imports, and makes a tool
/// of every exported function.
fn load_component(
    engine: &ToolEngine,
    linker: &Linker<CallState>,
    spec: &ComponentSpec,
) -> Result<Vec<Tool>, RuntimeError> {
    let what = spec.source.describe();
    let wasm = spec.source.bytes()?;
    if let Some(expected) = &spec.policy.sha256 {
        let actual = crate::component::sha256_hex(wasm);
        if !actual.eq_ignore_ascii_case(expected.trim()) {
            return Err(RuntimeError::Pin {
                what,
                expected: expected.clone(),
                actual,
            });
        }
    }
    let component = engine.compile(&what, wasm)?;
    let pre = linker.instantiate_pre(&component).map_err(|e| {
        let missing = crate::component::missing_imports(engine, &component);
        if missing.is_empty() {
            RuntimeError::Load {
                what: what.clone(),
                reason: format!("{e:#}"),
            }
        } else {
            RuntimeError::MissingImports {
                what: what.clone(),
                missing,
            }
        }
    })?;
    let loaded =
        Arc::new(Loaded {
            pre,
            key_names: Arc::new(sluice_pager::KeyNames::new(&spec.policy.key_names).map_err(
                |e| RuntimeError::Tool {
                    what: what.clone(),
                    reason: format!("its key-material name patterns are invalid: {e}"),
                },
            )?),
            policy: Arc::new(spec.policy.clone()),
        });
    let defs = crate::component::reflect(engine, &component, &spec.source, &spec.policy)?;
    Ok(defs
        .into_iter()
        .map(|def| Tool {
            hint: crate::observation::paging_hint(&def.info.name),
            info: def.info,
            loaded: loaded.clone(),
            export: def.export,
            shape: def.shape,
            result: def.result,
            docs: def.docs,
        })
        .collect())
}
