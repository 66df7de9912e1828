//! WIT documentation of a component's exports: the descriptions the model reads, and the
//! `@minimum N` / `@maximum N` annotations that refine an argument's JSON schema,
//! `@saturate`, which lets an integer above the maximum count as the maximum, and `@json` on
//! a string field of the result, which shows the string as the JSON it holds.
//!
//! Documentation comes from the component's own embedded WIT (`wit_parser::decoding`) when
//! it carries doc comments, or from a WIT source (the built-in tools' `wit/` package).

use std::collections::HashMap;

use serde_json::Number;
use wit_parser::{Docs, Resolve, Type, TypeDefKind, WorldId, WorldItem, WorldKey};

use crate::component::pattern::Pattern;

/// The `sluice:tools` WIT package (`wit/sluice-tools.wit`): the host's interfaces and one
/// world per built-in tool, whose doc comments are the built-ins' descriptions
/// ([`Source::Builtin`](crate::Source::Builtin)).
pub const TOOLS_WIT: &str = include_str!("../../../../wit/sluice-tools.wit");

/// Documentation of every exported function, keyed by export path: `func` for a
/// world-level function, `<interface export name>/<func>` for one inside an interface.
#[derive(Clone, Debug, Default)]
pub struct ComponentDocs {
    funcs: HashMap<String, FuncDocs>,
}

/// Why [`ComponentDocs::from_wit`] read no documentation: wit-parser's error, shown with
/// every cause (`{:#}`). The error is a field, not the `source`, since its text is the
/// message.
#[derive(Debug, thiserror::Error)]
pub enum WitError {
    /// The WIT source does not parse.
    #[error("{0:#}")]
    Parse(anyhow::Error),
    /// The WIT source has no such world.
    #[error("{0:#}")]
    World(anyhow::Error),
}

/// Documentation of one function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FuncDocs {
    /// The function's doc comment.
    pub description: Option<String>,
    /// Per argument (WIT field or parameter name): docs and bounds.
    pub args: HashMap<String, ArgDocs>,
    /// The string fields of its result record (its `ok` record, for a `result`) whose doc
    /// comment has a line `@json`: the string is JSON text, shown as that JSON.
    pub json_fields: Vec<String>,
}

/// Documentation of one argument, and the refinements of the policy
/// ([`crate::component::refine`]), which replace what the doc comment says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArgDocs {
    /// The doc comment without annotation lines, or the policy's `description`.
    pub description: Option<String>,
    /// From a `@minimum N` line (an integer), or the policy's `minimum`: the least value of
    /// a number argument, inclusive.
    pub minimum: Option<Number>,
    /// From a `@maximum N` line (an integer), or the policy's `maximum`: the greatest value
    /// of a number argument, inclusive.
    pub maximum: Option<Number>,
    /// From a `@saturate` line: an integer above the maximum (the type's, or `@maximum`'s)
    /// counts as the maximum instead of being refused (docs/observations.md#arguments).
    pub saturate: bool,
    /// The policy's `enum`: the only values a string argument (or cases a WIT `enum`
    /// argument) may take.
    pub one_of: Option<Vec<String>>,
    /// The policy's `pattern`: what a string argument must match.
    pub pattern: Option<Pattern>,
}

impl ComponentDocs {
    /// Reads the documentation embedded in the component `wasm`. A component without doc
    /// comments (most toolchains strip them) gives empty docs, not an error.
    pub fn from_component(wasm: &[u8]) -> Self {
        match wit_parser::decoding::decode(wasm) {
            Ok(wit_parser::decoding::DecodedWasm::Component(resolve, world)) => {
                Self::from_world(&resolve, world)
            }
            _ => Self::default(),
        }
    }

    /// Reads the documentation of world `world` in the WIT source `wit`.
    ///
    /// # Errors
    /// [`WitError`]: the parser's message when `wit` does not parse or has no such world.
    pub fn from_wit(wit: &str, world: &str) -> Result<Self, WitError> {
        let mut resolve = Resolve::default();
        let package = resolve
            .push_str("sluice-tools.wit", wit)
            .map_err(WitError::Parse)?;
        let world = resolve
            .select_world(&[package], Some(world))
            .map_err(WitError::World)?;
        Ok(Self::from_world(&resolve, world))
    }

    /// The docs of the function at `export_path`, if any.
    pub fn func(&self, export_path: &str) -> Option<&FuncDocs> {
        self.funcs.get(export_path)
    }

    fn from_world(resolve: &Resolve, world: WorldId) -> Self {
        let mut funcs = HashMap::new();
        for (key, item) in &resolve.worlds[world].exports {
            match item {
                WorldItem::Function(f) => {
                    funcs.insert(f.name.clone(), func_docs(resolve, f));
                }
                WorldItem::Interface { id, .. } => {
                    let prefix = match key {
                        WorldKey::Name(name) => name.clone(),
                        WorldKey::Interface(id) => resolve.id_of(*id).unwrap_or_default(),
                    };
                    for (name, f) in &resolve.interfaces[*id].functions {
                        funcs.insert(format!("{prefix}/{name}"), func_docs(resolve, f));
                    }
                }
                WorldItem::Type { .. } => {}
            }
        }
        ComponentDocs { funcs }
    }
}

fn func_docs(resolve: &Resolve, f: &wit_parser::Function) -> FuncDocs {
    let mut args = HashMap::new();
    // A single record parameter: its fields are the arguments.
    if let [param] = f.params.as_slice()
        && let Some(record) = record_of(resolve, &param.ty)
    {
        for field in &record.fields {
            args.insert(field.name.clone(), arg_docs(&field.docs));
        }
    }
    for param in &f.params {
        args.entry(param.name.clone())
            .or_insert_with(ArgDocs::default);
    }
    FuncDocs {
        description: text(&f.docs),
        args,
        json_fields: json_fields(resolve, f.result.as_ref()),
    }
}

/// The fields of the result record of a function returning `result` (its `ok` type, for a
/// WIT `result`) whose doc comment has a line `@json`.
fn json_fields(resolve: &Resolve, result: Option<&Type>) -> Vec<String> {
    let Some(mut ty) = result.copied() else {
        return Vec::new();
    };
    if let Type::Id(id) = ty
        && let TypeDefKind::Result(r) = &resolve.types[id].kind
    {
        match r.ok {
            Some(ok) => ty = ok,
            None => return Vec::new(),
        }
    }
    record_of(resolve, &ty).map_or_else(Vec::new, |record| {
        record
            .fields
            .iter()
            .filter(|f| matches!(f.ty, Type::String))
            .filter(|f| {
                f.docs
                    .contents
                    .as_deref()
                    .is_some_and(|d| d.lines().any(|l| l.trim() == "@json"))
            })
            .map(|f| f.name.clone())
            .collect()
    })
}

/// The record behind `ty`, following type aliases.
fn record_of<'a>(resolve: &'a Resolve, ty: &Type) -> Option<&'a wit_parser::Record> {
    let &Type::Id(mut id) = ty else { return None };
    loop {
        match &resolve.types[id].kind {
            TypeDefKind::Record(r) => return Some(r),
            TypeDefKind::Type(Type::Id(next)) => id = *next,
            _ => return None,
        }
    }
}

fn arg_docs(docs: &Docs) -> ArgDocs {
    let mut out = ArgDocs::default();
    let mut lines = Vec::new();
    for line in docs.contents.as_deref().unwrap_or("").lines() {
        let trimmed = line.trim();
        if let Some(n) = trimmed.strip_prefix("@minimum ").and_then(integer) {
            out.minimum = Some(n);
        } else if let Some(n) = trimmed.strip_prefix("@maximum ").and_then(integer) {
            out.maximum = Some(n);
        } else if trimmed == "@saturate" {
            out.saturate = true;
        } else {
            lines.push(trimmed);
        }
    }
    let description = lines.join(" ").trim().to_string();
    out.description = (!description.is_empty()).then_some(description);
    out
}

/// The integer of an annotation (`@minimum 1`), if it is one of 64 bits.
fn integer(text: &str) -> Option<Number> {
    let text = text.trim();
    text.parse::<i64>()
        .map(Number::from)
        .or_else(|_| text.parse::<u64>().map(Number::from))
        .ok()
}

/// A doc comment as one paragraph per blank-line-separated block.
fn text(docs: &Docs) -> Option<String> {
    let contents = docs.contents.as_deref()?.trim();
    if contents.is_empty() {
        return None;
    }
    let paragraphs: Vec<String> = contents
        .split("\n\n")
        .map(|p| p.lines().map(str::trim).collect::<Vec<_>>().join(" "))
        .collect();
    Some(paragraphs.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_docs_and_bounds() {
        let docs = ComponentDocs::from_wit(TOOLS_WIT, "read-file").unwrap();
        let f = docs.func("read-file").unwrap();
        assert!(f.description.as_deref().unwrap().starts_with(
            "Read a text file (cat, view or open a source file, config or log) one page at a time."
        ));
        let start = &f.args["start-line"];
        assert_eq!(start.minimum, Some(1.into()));
        assert_eq!(
            start.description.as_deref(),
            Some(
                "First line to return (1-based). Default 1. With `offset`, the line number that `offset` starts (pass back `nextLine` and `nextOffset` together)."
            )
        );
        assert_eq!(f.args["offset"].minimum, Some(0.into()));
        assert_eq!(f.args["path"].minimum, None);
        assert!(f.json_fields.is_empty());
    }

    #[test]
    fn a_json_string_field_of_the_result_is_marked() {
        let docs = ComponentDocs::from_wit(TOOLS_WIT, "run-script").unwrap();
        let f = docs.func("run-script").unwrap();
        assert_eq!(f.json_fields, ["result"]);
    }
}
