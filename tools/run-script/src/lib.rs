//! The built-in `run_script` tool (code mode): the `run-script` world of `sluice:tools`, a
//! JavaScript program run in Boa whose `tools.call` is the host's `tool-calls.call`
//! ([`script`] holds everything but the bindings).

#![allow(unsafe_code)] // The generated export glue is unsafe.

pub mod script;

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({
        world: "run-script",
        path: "../../wit",
    });
}

use bindings::sluice::tools::script::{RunScriptArgs, ScriptError, ScriptOutput};
use bindings::sluice::tools::tool_calls;

struct Tool;

impl bindings::Guest for Tool {
    fn run_script(args: RunScriptArgs) -> Result<ScriptOutput, ScriptError> {
        script::run(
            &args.script,
            Box::new(|name: &str, arguments: &str| tool_calls::call(name, arguments)),
        )
        .map(|out| ScriptOutput {
            calls: out.calls,
            inner_bytes: out.inner_bytes,
            result_bytes: out.result_bytes,
            result: out.result,
            log: out.log,
        })
        .map_err(|e| match e {
            script::ScriptError::InvalidArgument(m) => ScriptError::InvalidArgument(m),
            script::ScriptError::Syntax(m) => ScriptError::SyntaxError(m),
            script::ScriptError::Uncaught(m) => ScriptError::UncaughtError(m),
            script::ScriptError::InvalidResult(m) => ScriptError::InvalidResult(m),
        })
    }
}

bindings::export!(Tool with_types_in bindings);
