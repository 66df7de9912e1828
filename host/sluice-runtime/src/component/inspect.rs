//! `sluice tools inspect`: a component described without instantiating it.

use crate::component::imports::{ImportInfo, imports};
use crate::component::reflect::{ToolInfo, reflect};
use crate::component::source::{Source, sha256_hex};
use crate::engine::ToolEngine;
use crate::error::RuntimeError;
use crate::policy::ToolPolicy;

/// Everything `sluice tools inspect` shows about a component.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Inspection {
    /// The SHA-256 of the component, for a pin in its policy.
    pub sha256: String,
    /// The tools it would provide.
    pub tools: Vec<ToolInfo>,
    /// What it imports, and whether the host provides each.
    pub imports: Vec<ImportInfo>,
}

/// Compiles `source` and describes it without instantiating it: its tools (as they would be
/// offered under `policy`) and its imports.
///
/// # Errors
/// A component that does not compile, or whose exports cannot be offered to a model.
pub fn inspect(
    engine: &ToolEngine,
    source: &Source,
    policy: &ToolPolicy,
) -> Result<Inspection, RuntimeError> {
    let wasm = source.bytes();
    let sha256 = sha256_hex(wasm);
    let what = source.describe();
    let component = engine
        .compile(&what, wasm, &sha256)
        .map_err(|e| crate::component::async_abi::refusal_or(e, &what, wasm))?;
    let tools = reflect(engine, &component, source, policy)?
        .into_iter()
        .map(|d| d.info)
        .collect();
    Ok(Inspection {
        sha256,
        tools,
        imports: imports(engine, &component),
    })
}
