//! Errors of the runtime itself (as opposed to tool errors, which are observations).

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
        /// Why, in the words of the validator or linker.
        reason: String,
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
    #[error(
        "failed to load {what}: {}",
        crate::component::async_abi::reason(exports, imports)
    )]
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
