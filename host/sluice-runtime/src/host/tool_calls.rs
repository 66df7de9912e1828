//! `sluice:tools/tool-calls`: a running tool calling Sluice's other tools (code mode,
//! docs/code-mode.md). The host answers for a call that was given a
//! [`ToolCaller`](crate::host::state::ToolCaller) (the built-in `run_script`, through its
//! policy's `tool_calls`); every other component's `call` gets a `denied` error
//! observation, so importing the interface grants nothing.

use crate::host::state::CallState;

/// The observation a component without the grant gets.
pub(crate) const DENIED: &str = r#"{"ok":false,"error":"this tool may not call other tools: only run_script's calls are answered (sluice:tools/tool-calls)","kind":"denied"}"#;

impl crate::host::bindings::tool_calls::Host for CallState {
    async fn call(&mut self, name: String, arguments: String) -> wasmtime::Result<String> {
        match self.tool_caller.as_mut() {
            Some(caller) => caller.call(name, arguments).await,
            None => Ok(DENIED.to_string()),
        }
    }
}
