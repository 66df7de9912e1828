//! Code mode (docs/code-mode.md): the tool calls of a script. A call of a tool whose policy
//! grants `tool_calls` (the built-in `run_script`) gets a `ScriptCalls`, which answers its
//! `sluice:tools/tool-calls.call` with the observations of the toolbox's other tools, each
//! made by the same path as a call from the model (policy, timeout, limits, key scan,
//! secrets withheld) with the inner cap, on the script's own thread, and recorded for the
//! audit ([`ScriptRecord`]). Inner observations go back to the script only, never into the
//! transcript.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use crate::call::observation::Observation;
use crate::call::run::{Place, Run};
use crate::call::script_record::{InnerCall, ScriptRecord};
use crate::component::reflect::ToolInfo;
use crate::host::state::ToolCaller;
use crate::limits::HostLimit;
use crate::policy::ToolCallLimits;

/// The record a script's calls write and its caller takes when the script ends.
#[derive(Clone, Debug, Default)]
pub(crate) struct RecordHandle(Arc<Mutex<ScriptRecord>>);

impl RecordHandle {
    /// What was recorded, leaving the record empty.
    pub(crate) fn take(&self) -> ScriptRecord {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn push(&self, call: InnerCall) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .calls
            .push(call);
    }
}

/// What a script's tool calls reach: the tools of the set its own tool belongs to
/// (`tool_set`'s `ToolSet`).
pub(crate) trait ScriptTools: Send + Sync {
    /// What the model is told of the tool called `name`; `None` when no tool has that name.
    fn info(&self, name: &str) -> Option<&ToolInfo>;

    /// The unknown-tool observation for `name`, capped at `cap`.
    fn unknown(&self, name: &str, cap: u32) -> Observation;

    /// Calls tool `name` with the JSON text `arguments` as `run` says: its observation,
    /// capped at `run.cap`.
    fn call<'a>(
        self: Arc<Self>,
        name: &'a str,
        arguments: &'a str,
        run: &'a Run,
    ) -> Pin<Box<dyn Future<Output = Observation> + Send + 'a>>;
}

/// What answers one script's tool calls.
pub(crate) struct ScriptCalls {
    set: Arc<dyn ScriptTools>,
    /// The script's own tool (`run_script`), which its calls may not call.
    caller: String,
    limits: ToolCallLimits,
    /// The script's cancellation and whether it may call destructive tools.
    run: Run,
    calls: u32,
    bytes: u64,
    record: RecordHandle,
}

impl ScriptCalls {
    /// The calls of one script (`program`) of tool `caller`, run as `run` says.
    pub(crate) fn new(
        set: Arc<dyn ScriptTools>,
        caller: &str,
        program: &str,
        limits: ToolCallLimits,
        run: &Run,
    ) -> ScriptCalls {
        let record = RecordHandle::default();
        record
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .program = program.to_string();
        ScriptCalls {
            set,
            caller: caller.to_string(),
            run: Run {
                cap: limits.inner_max_result_bytes,
                place: Place::Inline,
                // A script's arguments are the text JSON.stringify wrote.
                arguments_reencoded: false,
                ..run.clone()
            },
            limits,
            calls: 0,
            bytes: 0,
            record,
        }
    }

    /// The record its calls write.
    pub(crate) fn record(&self) -> RecordHandle {
        self.record.clone()
    }

    /// One tool call of the script: its observation (within the inner cap), or a limit it
    /// passed, which ends the script.
    async fn call_tool(&mut self, name: String, arguments: String) -> wasmtime::Result<String> {
        if self.calls >= self.limits.max_calls {
            return Err(HostLimit::InnerCalls {
                max: self.limits.max_calls,
            }
            .into());
        }
        self.calls += 1;
        let cap = self.run.cap;
        let observation = match self.set.info(&name) {
            None => self.set.unknown(&name, cap),
            Some(info) if info.calls_tools => denied(
                &format!(
                    "a script cannot call {name}: {} runs scripts, and one script cannot start another",
                    self.caller
                ),
                cap,
            ),
            Some(info) if info.destructive && !self.run.allow_destructive => denied(
                &format!(
                    "a script cannot call {name}: it is destructive, and this run does not approve calls without asking (agent.auto_approve, or mcp.allow_destructive over MCP); call it directly instead"
                ),
                cap,
            ),
            Some(_) => self.set.clone().call(&name, &arguments, &self.run).await,
        };
        self.bytes += observation.text().len() as u64;
        self.record.push(InnerCall {
            tool: name,
            arguments,
            status: observation.status(),
            bytes: observation.text().len(),
            truncated: observation.truncated(),
        });
        if self.bytes > self.limits.max_bytes {
            return Err(HostLimit::InnerBytes {
                bytes: self.bytes,
                max: self.limits.max_bytes,
            }
            .into());
        }
        Ok(observation.into_text())
    }
}

impl ToolCaller for ScriptCalls {
    fn call<'a>(
        &'a mut self,
        name: String,
        arguments: String,
    ) -> Pin<Box<dyn Future<Output = wasmtime::Result<String>> + Send + 'a>> {
        Box::pin(self.call_tool(name, arguments))
    }
}

/// A `denied` tool error, capped at `cap`.
fn denied(message: &str, cap: u32) -> Observation {
    Observation::error(message, Some("denied")).finish("run_script", cap as usize, "")
}
