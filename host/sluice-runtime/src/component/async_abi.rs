//! Components of the component model's async ABI (WASIp3), which Sluice refuses by name
//! (docs/components.md#async-wasip3-components).
//!
//! An `async func` export (wit-bindgen's async support, WASIp3's calling convention) is
//! lifted with the `async` canonical option and a callback, and WASIp3 interfaces are
//! `async func`s too. wasmtime 48 runs them only with its `component-model-async` feature,
//! whose support it calls "very incomplete" (`Config::wasm_component_model_async`), and
//! WASIp3's host (wasmtime-wasi's `p3`) is "experimental, unstable and incomplete". Sluice's
//! engine is built without either, and every sandbox hook of the host (opens, listings,
//! `wasi:http`'s allowlist) is written for WASI 0.2. Without the feature wasmtime's validator
//! refuses such a component with a message that names a canonical built-in
//! (`` `context.get` requires the component model async feature ``); [`refusal_or`] replaces
//! it with one that names the component's async functions and what to build instead. And
//! should an engine ever compile one, [`async_exports`] lets its exports be refused before
//! they become tools.

use wasmtime::component::Component;
use wasmtime::component::types::ComponentItem;
use wit_parser::decoding::{DecodedWasm, decode};
use wit_parser::{Resolve, WorldItem, WorldKey};

use crate::engine::ToolEngine;
use crate::error::RuntimeError;

/// `error`, the failure to compile component `wasm` (named `what`), or, when the
/// component's WIT world has async functions or WASIp3 imports, the refusal that names them
/// ([`RuntimeError::AsyncComponent`]). Only a failed compile pays for decoding the world.
pub(crate) fn refusal_or(error: RuntimeError, what: &str, wasm: &[u8]) -> RuntimeError {
    match async_use(wasm) {
        Some((exports, imports)) => RuntimeError::AsyncComponent {
            what: what.to_string(),
            exports,
            imports,
        },
        None => error,
    }
}

/// What of component `wasm`'s WIT world needs the async ABI: its async exported functions
/// (`count-words`, `acme:tools/query@0.1.0/run`) and its imports that are WASIp3 interfaces
/// (`wasi:cli/environment@0.3.0`) or async functions; `None` when nothing does, or when the
/// bytes are not a component with a WIT world.
pub(crate) fn async_use(wasm: &[u8]) -> Option<(Vec<String>, Vec<String>)> {
    let Ok(DecodedWasm::Component(resolve, world)) = decode(wasm) else {
        return None;
    };
    let world = &resolve.worlds[world];
    let exports: Vec<String> = world
        .exports
        .iter()
        .flat_map(|(key, item)| async_functions(&resolve, key, item))
        .collect();
    let imports: Vec<String> = world
        .imports
        .iter()
        .flat_map(|(key, item)| match item {
            WorldItem::Interface { id, .. } if is_wasip3(&resolve, *id) => {
                vec![interface_name(&resolve, key, *id)]
            }
            _ => async_functions(&resolve, key, item),
        })
        .collect();
    (!exports.is_empty() || !imports.is_empty()).then_some((exports, imports))
}

/// The async functions of one item of a world: itself, or those of its interface, each as
/// `<interface>/<function>`.
fn async_functions(resolve: &Resolve, key: &WorldKey, item: &WorldItem) -> Vec<String> {
    match item {
        WorldItem::Function(f) if f.kind.is_async() => vec![f.name.clone()],
        WorldItem::Interface { id, .. } => {
            let interface = interface_name(resolve, key, *id);
            resolve.interfaces[*id]
                .functions
                .values()
                .filter(|f| f.kind.is_async())
                .map(|f| format!("{interface}/{}", f.name))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// An interface's name as the component's imports and exports show it.
fn interface_name(resolve: &Resolve, key: &WorldKey, id: wit_parser::InterfaceId) -> String {
    resolve
        .id_of(id)
        .unwrap_or_else(|| resolve.name_world_key(key))
}

/// True for an interface of WASI 0.3 (`wasi:*@0.3.*`).
fn is_wasip3(resolve: &Resolve, id: wit_parser::InterfaceId) -> bool {
    let Some(package) = resolve.interfaces[id].package else {
        return false;
    };
    let name = &resolve.packages[package].name;
    name.namespace == "wasi"
        && name
            .version
            .as_ref()
            .is_some_and(|v| v.major == 0 && v.minor == 3)
}

/// The async functions `component` exports, as [`async_use`] names them; for a component an
/// engine compiled (one without the async feature compiles none).
pub(crate) fn async_exports(engine: &ToolEngine, component: &Component) -> Vec<String> {
    let engine = engine.engine();
    let mut names = Vec::new();
    for (name, item) in component.component_type().exports(engine) {
        match item.ty {
            ComponentItem::ComponentFunc(f) if f.async_() => names.push(name.to_string()),
            ComponentItem::ComponentInstance(instance) => names.extend(
                instance
                    .exports(engine)
                    .filter(|(_, f)| matches!(&f.ty, ComponentItem::ComponentFunc(f) if f.async_()))
                    .map(|(f, _)| format!("{name}/{f}")),
            ),
            _ => {}
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use wit_component::{ComponentEncoder, StringEncoding, dummy_module, embed_component_metadata};
    use wit_parser::{LiftLowerAbi, ManglingAndAbi};

    /// A component of the world `world` in the WIT `wit` (and a WASIp3-like package), with
    /// functions that do nothing.
    fn component(wit: &str, world: &str) -> Vec<u8> {
        let mut resolve = Resolve::default();
        resolve
            .push_str(
                "p3.wit",
                "package wasi:random@0.3.0;\n\
                 interface random { get-random-u64: func() -> u64; }",
            )
            .unwrap();
        let package = resolve.push_str("world.wit", wit).unwrap();
        let world = resolve.select_world(&[package], Some(world)).unwrap();
        let mut module = dummy_module(&resolve, world, ManglingAndAbi::Legacy(LiftLowerAbi::Sync));
        embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8).unwrap();
        ComponentEncoder::default()
            .module(&module)
            .unwrap()
            .validate(true)
            .encode()
            .unwrap()
    }

    #[test]
    fn async_exports_and_wasip3_imports_are_named() {
        let wasm = component(
            "package acme:tools@0.1.0;\n\
             interface query { run: async func(q: string) -> string; size: func() -> u32; }\n\
             interface clock { now: async func() -> u64; }\n\
             world w {\n\
               import wasi:random/random@0.3.0;\n\
               import clock;\n\
               export count: async func(text: string) -> u32;\n\
               export plain: func();\n\
               export query;\n\
             }",
            "w",
        );
        assert_eq!(
            async_use(&wasm),
            Some((
                vec![
                    "count".to_string(),
                    "acme:tools/query@0.1.0/run".to_string()
                ],
                vec![
                    "wasi:random/random@0.3.0".to_string(),
                    "acme:tools/clock@0.1.0/now".to_string()
                ],
            ))
        );
    }

    #[test]
    fn a_sync_world_needs_nothing_and_other_bytes_are_not_judged() {
        let wasm = component(
            "package acme:tools@0.1.0;\n\
             world w { export count: func(text: string) -> u32; }",
            "w",
        );
        assert_eq!(async_use(&wasm), None);
        assert_eq!(async_use(b"\0asm\x01\0\0\0"), None);
        let error = RuntimeError::Load {
            what: "x.wasm".into(),
            reason: crate::error::LoadFailure::NoBaselineCompiler,
        };
        assert_eq!(
            refusal_or(error, "x.wasm", &wasm).to_string(),
            "failed to load x.wasm: there is no baseline compiler"
        );
    }
}
