//! A component's types without its code (docs/components.md#compiled-components): a
//! stand-in component with the same imports and exports as the real one and functions that
//! do nothing, built from the WIT world the real one carries. Compiling it takes
//! milliseconds where the real one takes seconds (a componentize-py tool: tens of seconds),
//! so its tools (names, schemas, descriptions) and whether the host provides its imports
//! are known at once, while the real code compiles in the background.

use wasmtime::component::Component;
use wit_component::{ComponentEncoder, StringEncoding, dummy_module, embed_component_metadata};
use wit_parser::decoding::{DecodedWasm, decode};
use wit_parser::{LiftLowerAbi, ManglingAndAbi};

use crate::engine::ToolEngine;

/// Why a component has no stand-in (it is only logged: the caller then compiles the real
/// component, whose error says more). An error of wit-parser, wit-component or wasmtime is
/// shown with every cause (`{:#}`), so it is a field, not the `source`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StandInError {
    /// The bytes are not a WebAssembly component: why
    /// ([`sluice_operator_files::not_a_component`]).
    #[error("{0}")]
    NotAComponent(&'static str),
    /// Its WIT world cannot be decoded.
    #[error("{0:#}")]
    Decode(anyhow::Error),
    /// The bytes are a WIT package.
    #[error("it is a WIT package, not a component")]
    WitPackage,
    /// The stand-in's module cannot be made a component of that world.
    #[error("{0:#}")]
    Encode(anyhow::Error),
    /// The stand-in does not compile.
    #[error("{0:#}")]
    Compile(wasmtime::Error),
}

/// The stand-in of the component `wasm`, compiled for `engine`; or why there is none (the
/// bytes are not a component whose type is a WIT world), in which case the caller compiles
/// the real component to find out more.
pub(crate) fn stand_in(engine: &ToolEngine, wasm: &[u8]) -> Result<Component, StandInError> {
    if let Some(reason) = sluice_operator_files::not_a_component(wasm) {
        return Err(StandInError::NotAComponent(reason));
    }
    let (resolve, world) = match decode(wasm).map_err(StandInError::Decode)? {
        DecodedWasm::Component(resolve, world) => (resolve, world),
        DecodedWasm::WitPackage(..) => return Err(StandInError::WitPackage),
    };
    let mut module = dummy_module(&resolve, world, ManglingAndAbi::Legacy(LiftLowerAbi::Sync));
    embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8)
        .map_err(StandInError::Encode)?;
    let bytes = ComponentEncoder::default()
        .module(&module)
        .and_then(|encoder| encoder.validate(true).encode())
        .map_err(StandInError::Encode)?;
    Component::new(engine.engine(), &bytes).map_err(StandInError::Compile)
}
