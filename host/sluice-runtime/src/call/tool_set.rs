//! The tools behind a [`Toolbox`](crate::Toolbox) and the path of one call: the model's JSON
//! arguments lowered to the export's values, the component's code (waiting for a background
//! compile), one [`Call`] on the engine's pool (or, for a script's tool call, on the
//! script's own thread), and the draft observation, which [`ToolSet::finish`] withholds,
//! key-scans and caps.
//!
//! Shared (`Arc`) so that a call of `run_script` can call the other tools of the set it
//! belongs to (docs/code-mode.md).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use wasmtime::component::Val;
use wasmtime::component::types::Type;

use crate::call::facts::CallFacts;
use crate::call::integers::Literals;
use crate::call::invoke::Call;
use crate::call::load::{Loaded, NotCompiled};
use crate::call::observation::{DEFAULT_HINT, Draft, Observation};
use crate::call::run::{Place, Run};
use crate::call::script::{ScriptCalls, ScriptTools};
use crate::call::value::object_to_fields_with;
use crate::component::argument_error::{ArgumentError, short_json};
use crate::component::docs::FuncDocs;
use crate::component::reflect::{Shape, ToolInfo};
use crate::engine::ToolEngine;
use crate::pool::PoolError;
use crate::secrets::Secrets;

/// One tool: what the model is told, and what a call of it needs.
pub(crate) struct Tool {
    pub(crate) info: ToolInfo,
    pub(crate) loaded: Arc<Loaded>,
    /// Its place among the exports of its component's linked code.
    pub(crate) at: usize,
    pub(crate) shape: Shape,
    pub(crate) result: Option<Type>,
    pub(crate) docs: FuncDocs,
    pub(crate) hint: String,
    pub(crate) naming: crate::component::names::Naming,
    /// The handles of its calls' metrics.
    pub(crate) metrics: crate::call::report::ToolMetricsCell,
}

/// The tools of a toolbox, by name.
pub(crate) struct ToolSet {
    pub(crate) engine: Arc<ToolEngine>,
    pub(crate) tools: Vec<Tool>,
    pub(crate) by_name: HashMap<String, usize>,
    /// The secrets of every loaded component: withheld from the observations of every tool,
    /// since a built-in granted the directory of a secret file could otherwise read it.
    pub(crate) secrets: Arc<Secrets>,
}

impl ToolSet {
    /// The tool called `name`, if any.
    pub(crate) fn tool(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// The unknown-tool observation for `name`, capped at `cap`.
    pub(crate) fn unknown(&self, name: &str, cap: u32) -> Observation {
        let known = self.tools.iter().map(|t| t.info.name.as_str());
        Observation::unknown_tool_among(name, known).finish(name, cap as usize, DEFAULT_HINT)
    }

    /// `draft` of a call of `tool` made an observation: the secrets withheld, the key scan,
    /// the cap `cap`; with the call's `facts`.
    pub(crate) fn finish(
        &self,
        tool: &Tool,
        (draft, facts): (Draft, CallFacts),
        cap: u32,
    ) -> Observation {
        draft
            .withholding(self.secrets.clone())
            .finish(&tool.info.name, cap as usize, &tool.hint)
            .with_facts(facts)
    }

    /// Runs one call of `tool` with the JSON text `args` as `run` says, and returns its draft
    /// observation and what it cost.
    pub(crate) async fn invoke(
        self: &Arc<Self>,
        tool: &Tool,
        args: &str,
        run: &Run,
    ) -> (Draft, CallFacts) {
        let digest = &tool.loaded.digest;
        let (draft, mut facts) = match self.call(tool, args, run).await {
            Ok(ran) => ran,
            Err(draft) => (draft, CallFacts::default()),
        };
        facts.digest.clone_from(digest);
        (draft, facts)
    }

    /// [`ToolSet::invoke`] but the digest; `Err` for a call refused before it reached the
    /// pool (bad arguments, no code). A call the pool did not run to its end has no facts,
    /// but a script keeps the record of what it did.
    async fn call(
        self: &Arc<Self>,
        tool: &Tool,
        args: &str,
        run: &Run,
    ) -> Result<(Draft, CallFacts), Draft> {
        let text = if args.trim().is_empty() { "{}" } else { args };
        let args: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                return Err(Observation::error(
                    &format!("arguments are not valid JSON: {e}"),
                    Some("invalid-argument"),
                ));
            }
        };
        let literals = if run.arguments_reencoded {
            Literals::none()
        } else {
            Literals::of(text, &args)
        };
        let params = match lower_args(tool, &args, &literals) {
            Ok(p) => p,
            Err(e) => return Err(Observation::error(&e.to_string(), Some("invalid-argument"))),
        };
        let linked = match tool.loaded.compiled.wait(&run.cancel).await {
            Ok(linked) => linked,
            Err(NotCompiled::Failed(reason)) => {
                return Err(Observation::error(
                    &format!("the tool's component could not be compiled: {reason}"),
                    Some("host-error"),
                ));
            }
            Err(NotCompiled::Cancelled { waited }) => {
                return Err(Observation::cancelled(&format!(
                    "the call was cancelled while its component was still being compiled ({} ms)",
                    waited.as_millis()
                )));
            }
        };
        let policy = tool.loaded.policy.clone();
        // A tool that calls tools (run_script) gets this set, under its limits.
        let script = policy.tool_calls.map(|limits| {
            let program = args.get("script").and_then(Value::as_str).unwrap_or("");
            ScriptCalls::new(self.clone(), &tool.info.name, program, limits, run)
        });
        let record = script.as_ref().map(ScriptCalls::record);
        let call = Call {
            pre: linked.pre.clone(),
            policy: policy.clone(),
            preopens: tool.loaded.preopens.clone(),
            http: tool.loaded.http.clone(),
            key_names: tool.loaded.key_names.clone(),
            config: tool.loaded.config.clone(),
            refused: tool.loaded.refused.clone(),
            key_carries: tool.loaded.key_carries.clone(),
            export: linked.exports[tool.at],
            result: tool.result.clone(),
            params,
            cap: run.cap,
            json_fields: tool.docs.json_fields.clone(),
            tool_caller: script.map(|s| Box::new(s) as _),
        };
        let (draft, facts) = match run.place {
            Place::Inline => call.run(run.cancel.clone()).await,
            Place::Pool => {
                let asked = Instant::now();
                let ran = self
                    .engine
                    .pool()
                    .run(&run.cancel, policy.timeout, move |token| {
                        let waited = asked.elapsed();
                        async move {
                            let (draft, mut facts) = call.run(token).await;
                            facts.queue_wait_us = waited.as_micros() as u64;
                            (draft, facts)
                        }
                    })
                    .await;
                match ran {
                    Ok(ran) => ran,
                    // A script stopped in its slot keeps the record of what it did.
                    Err(e) => (pool_failure(&e, &policy), CallFacts::default()),
                }
            }
        };
        Ok(match record {
            Some(record) => (draft.with_script(record.take()), facts),
            None => (draft, facts),
        })
    }
}

/// A script's tool calls reach the other tools of the set its own tool belongs to.
impl ScriptTools for ToolSet {
    fn info(&self, name: &str) -> Option<&ToolInfo> {
        self.tool(name).map(|t| &t.info)
    }

    fn unknown(&self, name: &str, cap: u32) -> Observation {
        ToolSet::unknown(self, name, cap)
    }

    fn call<'a>(
        self: Arc<Self>,
        name: &'a str,
        arguments: &'a str,
        run: &'a Run,
    ) -> Pin<Box<dyn Future<Output = Observation> + Send + 'a>> {
        Box::pin(async move {
            match self.tool(name) {
                Some(tool) => {
                    let draft = self.invoke(tool, arguments, run).await;
                    self.finish(tool, draft, run.cap)
                }
                None => ToolSet::unknown(&self, name, run.cap),
            }
        })
    }
}

/// The draft observation of a call the pool did not run to its end, and the count of a
/// refusal for want of a slot (`sluice_busy_refusals_total{what="calls"}`).
fn pool_failure(e: &PoolError, policy: &crate::policy::ToolPolicy) -> Draft {
    match e {
        PoolError::Busy { .. } => {
            metrics::counter!("sluice_busy_refusals_total", "what" => "calls").increment(1);
            Observation::error(&e.to_string(), Some("busy"))
        }
        PoolError::Cancelled { .. } => Observation::cancelled(&e.to_string()),
        PoolError::Stuck { .. } => Observation::error(
            &format!(
                "the tool ran past its timeout of {} ms: {e}",
                policy.timeout.as_millis()
            ),
            Some("timeout"),
        ),
        _ => Observation::error(&e.to_string(), Some("host-error")),
    }
}

/// The model's arguments as the export's parameters.
fn lower_args(tool: &Tool, args: &Value, lits: &Literals) -> Result<Vec<Val>, ArgumentError> {
    let obj = args
        .as_object()
        .ok_or_else(|| ArgumentError::expected("arguments", "a JSON object", short_json(args)))?;
    let fields = object_to_fields_with(tool.shape.fields(), obj, Some(&tool.docs.args), lits)?;
    Ok(match tool.shape {
        Shape::Record(_) => vec![Val::Record(fields)],
        Shape::Params(_) => fields.into_iter().map(|(_, v)| v).collect(),
    })
}
