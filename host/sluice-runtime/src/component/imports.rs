//! What a component asks of the host: its imports, and which of them the host provides.

use wasmtime::component::Component;
use wasmtime::component::types::ComponentItem;

use crate::engine::ToolEngine;

/// Interfaces the host provides to every component (the `sluice:tools` ones are linked
/// from the WIT's `world host`, which a test holds this list to): WASI 0.2 (`wasi:cli`, `clocks`,
/// `filesystem`, `http`, `io`, `random`, `sockets`; any 0.2.x), `wasi:config/store@0.2.0-rc.1`
/// and `sluice:tools` `budget`, `key-policy`, `key-carries`, `listing`, `whole-files` and
/// `tool-calls` (0.1.x). Grants decide what they
/// reach: a tool sees only its preopens, allowed environment and granted config, every socket
/// address is denied, and `wasi:http` requests reach only the hosts of the policy's `http`
/// ([`crate::host::http`]; none by default).
pub const PROVIDED_INTERFACES: &[&str] = &[
    "wasi:cli/",
    "wasi:clocks/",
    "wasi:filesystem/",
    "wasi:http/",
    "wasi:io/",
    "wasi:random/",
    "wasi:sockets/",
    "wasi:config/store@0.2.0-rc.1",
    "sluice:tools/budget@0.1.",
    "sluice:tools/key-policy@0.1.",
    "sluice:tools/key-carries@0.1.",
    "sluice:tools/listing@0.1.",
    "sluice:tools/whole-files@0.1.",
    "sluice:tools/tool-calls@0.1.",
];

/// One import of a component.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ImportInfo {
    /// The import's name, e.g. `wasi:filesystem/types@0.2.6`.
    pub name: String,
    /// The functions it needs from the host (empty for an interface of types only).
    pub functions: Vec<String>,
    /// Whether the host provides it.
    pub provided: bool,
}

/// The imports of `component`.
pub(crate) fn imports(engine: &ToolEngine, component: &Component) -> Vec<ImportInfo> {
    let ty = component.component_type();
    ty.imports(engine.engine())
        .map(|(name, item)| {
            let functions: Vec<String> = match &item.ty {
                ComponentItem::ComponentInstance(inst) => inst
                    .exports(engine.engine())
                    .filter(|(_, e)| matches!(e.ty, ComponentItem::ComponentFunc(_)))
                    .map(|(n, _)| n.to_string())
                    .collect(),
                ComponentItem::ComponentFunc(_) => vec![name.to_string()],
                _ => Vec::new(),
            };
            let provided =
                functions.is_empty() || PROVIDED_INTERFACES.iter().any(|p| provides(p, name));
            ImportInfo {
                name: name.to_string(),
                functions,
                provided,
            }
        })
        .collect()
}

/// True when the provided-interface prefix `prefix` covers import `name` (WASI only at
/// version 0.2.x).
fn provides(prefix: &str, name: &str) -> bool {
    name.starts_with(prefix) && (!prefix.starts_with("wasi:") || name.contains("@0.2."))
}

/// The names of the imports of `component` the host does not provide.
pub(crate) fn missing_imports(engine: &ToolEngine, component: &Component) -> Vec<String> {
    imports(engine, component)
        .into_iter()
        .filter(|i| !i.provided)
        .map(|i| i.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host links `sluice:tools` from the WIT's `world host` (`crate::host::bindings`), so
    /// what it reports as provided must cover every interface of that world, at the WIT's
    /// version.
    #[test]
    fn every_interface_of_the_host_world_is_reported_as_provided() {
        let mut resolve = wit_parser::Resolve::default();
        let package = resolve
            .push_str("sluice-tools.wit", crate::component::docs::TOOLS_WIT)
            .unwrap();
        let world = resolve.select_world(&[package], Some("host")).unwrap();
        let mut with_functions = Vec::new();
        for item in resolve.worlds[world].imports.values() {
            let wit_parser::WorldItem::Interface { id, .. } = item else {
                continue;
            };
            if resolve.interfaces[*id].functions.is_empty() {
                continue;
            }
            let name = resolve.id_of(*id).unwrap();
            assert!(
                PROVIDED_INTERFACES.iter().any(|p| provides(p, &name)),
                "{name} is linked but not in PROVIDED_INTERFACES"
            );
            with_functions.push(name);
        }
        with_functions.sort();
        assert_eq!(
            with_functions,
            [
                "sluice:tools/budget@0.1.5",
                "sluice:tools/key-carries@0.1.5",
                "sluice:tools/key-policy@0.1.5",
                "sluice:tools/listing@0.1.5",
                "sluice:tools/tool-calls@0.1.5",
                "sluice:tools/whole-files@0.1.5"
            ]
        );
    }
}
