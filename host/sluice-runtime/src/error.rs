//! Errors of the runtime itself (as opposed to tool errors, which are observations).

use std::sync::Arc;

use crate::secrets::SecretError;

/// Why the runtime could not start, load a tool, or set up a call. A tool that fails while
/// running is not a `RuntimeError`: it becomes a tool-error observation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The wasmtime engine could not be built.
    #[error("failed to start the WebAssembly engine: {0}")]
    Engine(String),
    /// A component could not be compiled, or its imports cannot be satisfied.
    #[error("failed to load {what}: {reason}")]
    Load {
        /// The component (built-in name or file path).
        what: String,
        /// Why, in the words of the validator or linker. Not this error's `source`: its
        /// text is already in the message, which `{e:#}` would show twice.
        reason: LoadFailure,
    },
    /// A tool's export cannot be offered to a model.
    #[error("{what}: {reason}")]
    Tool {
        /// The component and export.
        what: String,
        /// Why.
        reason: String,
    },
    /// Two tools have the same name.
    #[error("two tools are named {name:?} ({first} and {second}); give one another name: {fix}")]
    DuplicateTool {
        /// The name both have.
        name: String,
        /// Where the first comes from.
        first: String,
        /// Where the second comes from.
        second: String,
        /// The keys that rename either (`prefix = "…" or [functions.read-file] name = "…"
        /// in /d/fs.toml; or …`).
        fix: String,
    },
    /// The component's digest is not the one its policy pins.
    #[error("refusing to load {what}: its sha256 is {actual}, but the policy pins {expected}")]
    Pin {
        /// The component.
        what: String,
        /// The pinned digest.
        expected: String,
        /// The component's digest.
        actual: String,
    },
    /// The component imports interfaces the host does not provide.
    #[error(
        "failed to load {what}: it imports interfaces the host does not provide: {}; the host provides WASI 0.2 (cli, clocks, filesystem, http, io, random, sockets), wasi:config/store@0.2.0-rc.1 and sluice:tools/budget, key-policy, listing and tool-calls",
        missing.join(", ")
    )]
    MissingImports {
        /// The component.
        what: String,
        /// The imports not provided.
        missing: Vec<String>,
    },
    /// The component uses the component model's async ABI (WASIp3): async functions in
    /// its exports or imports, or WASIp3 interfaces among its imports
    /// (`component::async_abi`).
    #[error("failed to load {what}: {}", async_reason(exports, imports))]
    AsyncComponent {
        /// The component.
        what: String,
        /// Its async exported functions (`count-words`, `acme:tools/query@0.1.0/run`).
        exports: Vec<String>,
        /// Its WASIp3 imports (`wasi:cli/stdout@0.3.0`) and imported async functions.
        imports: Vec<String>,
    },
    /// A root granted to a tool cannot be opened.
    #[error("root {name:?} of tool {tool:?} cannot be opened at {dir}: {reason}")]
    Root {
        /// The tool.
        tool: String,
        /// The root's name.
        name: String,
        /// The host directory.
        dir: String,
        /// Why.
        reason: String,
    },
}

/// Why a component did not load ([`RuntimeError::Load`]): the text after `failed to load
/// WHAT: `. A wasmtime error it holds is kept whole, but as a field rather than a `source`:
/// the message shows its every cause already (`{:#}`), and the CLI, which prints an error
/// with its sources (`{e:#}`), would show them twice.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadFailure {
    /// wasmtime could not compile the component, or not link it (an import it lacks that
    /// is not [`RuntimeError::MissingImports`]): its error with every cause.
    #[error("{0:#}")]
    Wasmtime(wasmtime::Error),
    /// A secret of the component's policy (or of its `http_credentials`) cannot be read.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// The bytes are not a WebAssembly component: why
    /// ([`sluice_operator_files::not_a_component`]).
    #[error("{0}")]
    NotAComponent(&'static str),
    /// The baseline compiler (Winch) was asked for by an engine built without it.
    #[error("there is no baseline compiler")]
    NoBaselineCompiler,
    /// The component's code, compiled in the background while its tools were offered
    /// (docs/components.md#compiled-components), did not load: that error, which names the
    /// component again.
    #[error(transparent)]
    Compiled(Arc<RuntimeError>),
}

/// The most names a refusal lists of each kind (a WASIp3 component imports a dozen
/// interfaces); the rest are counted.
const MAX_NAMED: usize = 8;

/// Why a component of the async ABI is refused, and what to build instead: the reason of
/// [`RuntimeError::AsyncComponent`] (docs/components.md#async-wasip3-components).
fn async_reason(exports: &[String], imports: &[String]) -> String {
    let mut what = Vec::new();
    match exports {
        [] => {}
        [one] => what.push(format!("its export {one} is an async function")),
        many => what.push(format!("its exports {} are async functions", list(many))),
    }
    if !imports.is_empty() {
        what.push(format!(
            "it imports {} (WASIp3 interfaces or async functions)",
            list(imports)
        ));
    }
    let fix = match exports {
        [] => {
            "build it against the WASI 0.2 interfaces the host provides (wasm32-wasip2)".to_string()
        }
        exports => {
            let them = match exports {
                [one] => one.as_str(),
                _ => "each",
            };
            let mut fix = format!(
                "build {them} as a sync `func` (not `async func`) of a WASI 0.2 component (wasm32-wasip2)"
            );
            if !imports.is_empty() {
                fix.push_str(", against the WASI 0.2 interfaces the host provides");
            }
            fix
        }
    };
    format!(
        "{} (the component model's async ABI, WASIp3's); Sluice runs WASI 0.2 components only: wasmtime 48.0.8, its engine, calls its support for that ABI very incomplete and its WASIp3 host experimental, so Sluice leaves both off; {fix}",
        what.join(", and ")
    )
}

/// `names`, comma-separated, the ones past [`MAX_NAMED`] counted.
fn list(names: &[String]) -> String {
    let shown = names
        .iter()
        .take(MAX_NAMED)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    match names.len().saturating_sub(MAX_NAMED) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_names_the_functions_and_the_fix() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let why = "(the component model's async ABI, WASIp3's); Sluice runs WASI 0.2 components only: wasmtime 48.0.8, its engine, calls its support for that ABI very incomplete and its WASIp3 host experimental, so Sluice leaves both off;";
        assert_eq!(
            async_reason(&names(&["count-words"]), &[]),
            format!(
                "its export count-words is an async function {why} build count-words as a sync `func` (not `async func`) of a WASI 0.2 component (wasm32-wasip2)"
            )
        );
        assert_eq!(
            async_reason(&names(&["a", "b"]), &names(&["wasi:cli/stdout@0.3.0"])),
            format!(
                "its exports a, b are async functions, and it imports wasi:cli/stdout@0.3.0 (WASIp3 interfaces or async functions) {why} build each as a sync `func` (not `async func`) of a WASI 0.2 component (wasm32-wasip2), against the WASI 0.2 interfaces the host provides"
            )
        );
        let many: Vec<String> = (0..10).map(|i| format!("wasi:x/i{i}@0.3.0")).collect();
        assert_eq!(
            async_reason(&[], &many),
            format!(
                "it imports {} and 2 more (WASIp3 interfaces or async functions) {why} build it against the WASI 0.2 interfaces the host provides (wasm32-wasip2)",
                many[..8].join(", ")
            )
        );
    }
}
