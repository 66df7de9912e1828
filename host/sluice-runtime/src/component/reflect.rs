//! A component's exported functions as tools: their names, JSON schemas and descriptions,
//! reflected from its types.

use serde_json::Value;
use wasmtime::component::types::{ComponentFunc, ComponentItem, Type};
use wasmtime::component::{Component, ComponentExportIndex};

use crate::component::docs::{ComponentDocs, FuncDocs};
use crate::component::names::{Export, Naming, TOOL_NAME_RULE, valid_tool_name};
use crate::component::refine::refine;
use crate::component::schema::{Unsupported, object_schema, schema_of};
use crate::component::source::Source;
use crate::engine::ToolEngine;
use crate::error::RuntimeError;
use crate::policy::ToolPolicy;

/// Exports that a toolchain leaves in every component it builds and that are not tools, as
/// (exported interface, function): componentize-py's pre-initialisation entry point, which
/// it calls once at build time (`exports` / `init(app-name, symbols, stub-wasi)`).
pub const TOOLCHAIN_EXPORTS: &[(&str, &str)] = &[("exports", "init")];

/// True when function `func` of the exported interface `interface` is toolchain plumbing
/// ([`TOOLCHAIN_EXPORTS`]), not a tool.
pub fn is_toolchain_export(interface: &str, func: &str) -> bool {
    TOOLCHAIN_EXPORTS
        .iter()
        .any(|&(i, f)| i == interface && f == func)
}

/// What a model is told about a tool.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolInfo {
    /// The tool's name, `[A-Za-z0-9_.-]{1,64}`.
    pub name: String,
    /// What it does: the policy's `functions.<f>.description`, else its WIT doc comment,
    /// else the policy's `description`, else a sentence naming the export.
    pub description: String,
    /// JSON schema of its arguments (an object), with the policy's refinements of them
    /// (`functions.<f>.args.<a>`, [`crate::component::refine`]).
    pub input_schema: Value,
    /// Where it comes from (built-in name or component path).
    pub source: String,
    /// Calls wait for approval (the policy says destructive, or grants write access).
    pub destructive: bool,
    /// Its calls may reach hosts outside Sluice: the policy grants outbound HTTP to some
    /// host (`http`). Left out of the JSON of `sluice tools inspect`, which shows no policy.
    #[serde(skip)]
    pub open_world: bool,
    /// Its calls run scripts that call the other tools (the policy grants `tool_calls`:
    /// `run_script`), so what those tools may do, it may do too. Left out of the JSON of
    /// `sluice tools inspect`.
    #[serde(skip)]
    pub calls_tools: bool,
}

/// The arguments of an export: the fields of its single record parameter, or its
/// parameters.
#[derive(Clone, Debug)]
pub(crate) enum Shape {
    /// One record parameter whose fields are the arguments.
    Record(Vec<(String, Type)>),
    /// The parameters themselves are the arguments.
    Params(Vec<(String, Type)>),
}

impl Shape {
    pub(crate) fn fields(&self) -> &[(String, Type)] {
        match self {
            Shape::Record(f) | Shape::Params(f) => f,
        }
    }
}

/// Where an exported function is: in the component's world, or in one of its exported
/// instances. The same in a component and in its [stand-in](crate::component::stand_in).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ExportPath {
    /// The exported instance (`acme:tools/query@0.1.0`), or `None` at the world's level.
    pub(crate) instance: Option<String>,
    /// The function's name.
    pub(crate) function: String,
}

impl ExportPath {
    /// The export's index in `component`, if it has it.
    pub(crate) fn index(&self, component: &Component) -> Option<ComponentExportIndex> {
        let instance = match &self.instance {
            Some(name) => Some(component.get_export_index(None, name)?),
            None => None,
        };
        component.get_export_index(instance.as_ref(), &self.function)
    }
}

impl std::fmt::Display for ExportPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.instance {
            Some(instance) => write!(f, "{instance}/{}", self.function),
            None => f.write_str(&self.function),
        }
    }
}

/// A tool as reflected from a component's types.
pub(crate) struct ToolDef {
    pub(crate) info: ToolInfo,
    /// Its export.
    pub(crate) path: ExportPath,
    pub(crate) shape: Shape,
    pub(crate) result: Option<Type>,
    pub(crate) docs: FuncDocs,
    pub(crate) naming: Naming,
    /// The keys of the policy's `functions` that name this export.
    pub(crate) exports_as: Vec<String>,
}

/// Makes a tool of every exported function of `component`: world-level functions are named
/// `<function>`, functions of an exported interface `<interface>_<function>`, with `-`
/// replaced by `_`; then the policy's `prefix` and `functions.<f>.name` apply
/// ([`crate::component::names`]).
pub(crate) fn reflect(
    engine: &ToolEngine,
    component: &Component,
    source: &Source,
    policy: &ToolPolicy,
) -> Result<Vec<ToolDef>, RuntimeError> {
    let what = source.describe();
    let docs = match source {
        // The Rust toolchain drops doc comments from components; the built-ins' come from
        // the WIT they are built from.
        Source::Builtin { name, .. } => {
            ComponentDocs::from_wit(crate::component::docs::TOOLS_WIT, &name.replace('_', "-"))
                .unwrap_or_default()
        }
        Source::Bytes { wasm, .. } => ComponentDocs::from_component(wasm),
    };
    let cx = Reflect {
        what: &what,
        docs: &docs,
        policy,
        builtin: matches!(source, Source::Builtin { .. }),
    };
    // Only an engine with the component model's async feature compiles such a component.
    let exports = crate::component::async_abi::async_exports(engine, component);
    if !exports.is_empty() {
        return Err(RuntimeError::AsyncComponent {
            what,
            exports,
            imports: Vec::new(),
        });
    }
    let mut tools = Vec::new();
    let ty = component.component_type();
    for (export, item) in ty.exports(engine.engine()) {
        match item.ty {
            ComponentItem::ComponentFunc(f) => {
                let index = component.get_export_index(None, export);
                let at = ExportPath {
                    instance: None,
                    function: export.to_string(),
                };
                let e = Export {
                    derived: export.replace('-', "_"),
                    function: export,
                    path: export,
                    world_level: true,
                };
                tools.push(cx.tool(index, at, &e, &f)?);
            }
            ComponentItem::ComponentInstance(inst) => {
                let Some(inst_index) = component.get_export_index(None, export) else {
                    continue;
                };
                let short = export.rsplit('/').next().unwrap_or(export);
                let short = short.split('@').next().unwrap_or(short);
                for (fname, fitem) in inst.exports(engine.engine()) {
                    if is_toolchain_export(export, fname) {
                        continue;
                    }
                    if let ComponentItem::ComponentFunc(f) = fitem.ty {
                        let index = component.get_export_index(Some(&inst_index), fname);
                        let at = ExportPath {
                            instance: Some(export.to_string()),
                            function: fname.to_string(),
                        };
                        let path = at.to_string();
                        let e = Export {
                            derived: format!("{short}_{fname}").replace('-', "_"),
                            function: fname,
                            path: &path,
                            world_level: false,
                        };
                        tools.push(cx.tool(index, at, &e, &f)?);
                    }
                }
            }
            _ => {}
        }
    }
    if tools.is_empty() {
        return Err(RuntimeError::Tool {
            what,
            reason: "it exports no functions, so it offers no tools".into(),
        });
    }
    if let Some(key) = policy
        .functions
        .keys()
        .find(|k| !tools.iter().any(|t| t.exports_as.iter().any(|e| e == *k)))
    {
        let exported: Vec<String> = tools.iter().map(|t| t.naming.key.clone()).collect();
        return Err(RuntimeError::Tool {
            what,
            reason: format!(
                "its policy sets functions.{key}, but it exports no function of that name; its functions are: {}",
                exported.join(", ")
            ),
        });
    }
    Ok(tools)
}

struct Reflect<'a> {
    what: &'a str,
    docs: &'a ComponentDocs,
    policy: &'a ToolPolicy,
    builtin: bool,
}

impl Reflect<'_> {
    fn tool(
        &self,
        index: Option<ComponentExportIndex>,
        at: ExportPath,
        e: &Export<'_>,
        func: &ComponentFunc,
    ) -> Result<ToolDef, RuntimeError> {
        let export_path = e.path;
        let naming = Naming {
            key: e.key(),
            origin: self.policy.origin.clone(),
        };
        let (tool_name, own) = e.named(self.policy);
        let fail = |reason: String| RuntimeError::Tool {
            what: format!("{}: export {export_path}", self.what),
            reason,
        };
        if !valid_tool_name(&tool_name) {
            return Err(fail(format!(
                "its tool name {tool_name:?} is not {TOOL_NAME_RULE}; name it with {}",
                naming.fix()
            )));
        }
        if index.is_none() {
            return Err(fail("the export cannot be found".into()));
        }
        let params: Vec<(String, Type)> = func.params().map(|(n, t)| (n.to_string(), t)).collect();
        let shape = match params.as_slice() {
            [(_, Type::Record(r))] => {
                Shape::Record(r.fields().map(|f| (f.name.to_string(), f.ty)).collect())
            }
            _ => Shape::Params(params),
        };
        let mut docs = self.docs.func(export_path).cloned().unwrap_or_default();
        if let Some((key, f)) = own {
            let key_at = |k: &str| match &self.policy.origin {
                Some(origin) => origin.key_at(k),
                None => k.to_string(),
            };
            refine(shape.fields(), &mut docs, key, &f.args, &key_at)
                .map_err(|e| fail(e.to_string()))?;
        }
        let input_schema =
            object_schema(shape.fields(), Some(&docs)).map_err(|Unsupported(t)| {
                fail(format!(
                    "an argument is {t}, which a model cannot give as JSON"
                ))
            })?;
        let result = func.results().next();
        if let Some(t) = &result {
            schema_of(t).map_err(|Unsupported(t)| {
                fail(format!(
                    "its result holds {t}, which cannot be shown as JSON"
                ))
            })?;
        }
        let mut description = own
            .and_then(|(_, f)| f.description.clone())
            .or_else(|| docs.description.clone())
            .or_else(|| self.policy.description.clone())
            .unwrap_or_else(|| format!("The {export_path} function of {}.", self.what));
        if !self.builtin
            && let Some(mounts) =
                crate::component::mounts::sentence(shape.fields(), &self.policy.roots)
        {
            description.push(' ');
            description.push_str(&mounts);
        }
        Ok(ToolDef {
            info: ToolInfo {
                name: tool_name,
                description,
                input_schema,
                source: self.what.to_string(),
                destructive: self.policy.is_destructive(),
                open_world: !self.policy.http.allow.is_empty(),
                calls_tools: self.policy.tool_calls.is_some(),
            },
            path: at,
            shape,
            result,
            docs,
            naming,
            exports_as: self
                .policy
                .functions
                .keys()
                .filter(|k| e.is_named_by(k))
                .cloned()
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolchain_plumbing_is_not_a_tool() {
        assert!(is_toolchain_export("exports", "init"));
        assert!(!is_toolchain_export("exports", "summarize"));
        assert!(!is_toolchain_export("acme:tools/exports@0.1.0", "init"));
    }
}
