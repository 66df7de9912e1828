//! `sluice:tools/tool-calls`: a running tool calling Sluice's other tools (code mode,
//! docs/code-mode.md). The host answers for a call that was given a [`ToolCaller`] (the
//! built-in `run_script`, through its policy's `tool_calls`); every other component's
//! `call` gets a `denied` error observation, so importing the interface grants nothing.

use std::future::Future;
use std::pin::Pin;

use crate::host::state::CallState;

/// What answers one call's `tool-calls.call`: the caller's toolbox, under the script's
/// limits. Implemented by the call wing (`crate::call::script`).
pub(crate) trait ToolCaller: Send {
    /// Calls tool `name` with the JSON text `arguments` and returns the observation's JSON
    /// text; an error ends the calling tool (a limit it passed).
    fn call<'a>(
        &'a mut self,
        name: String,
        arguments: String,
    ) -> Pin<Box<dyn Future<Output = wasmtime::Result<String>> + Send + 'a>>;
}

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
