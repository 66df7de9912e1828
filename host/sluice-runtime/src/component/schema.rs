//! Component types as JSON schemas: what a model is told a tool accepts.
//!
//! The mapping (records → objects with camelCase properties, `option` → optional field or
//! `anyOf` with `null`, `list` → array, `tuple` → fixed array, `variant` → `oneOf` of
//! `{tag, val}`, `enum` → string enum, `flags` → object of booleans, `result` → `oneOf` of
//! `{ok}` / `{err}`, integers with their bounds, `char` → one-character string). Resources,
//! futures, streams, maps and fixed-length lists cannot be written as JSON by a model, so a
//! function that takes one is not offered as a tool.

use serde_json::{Map, Value, json};
use wasmtime::component::types::Type;

use crate::component::docs::{ArgDocs, FuncDocs};

/// The JSON name of a WIT name: kebab-case becomes camelCase (`start-line` → `startLine`).
pub fn json_name(wit: &str) -> String {
    let mut out = String::with_capacity(wit.len());
    let mut upper = false;
    for c in wit.chars() {
        if c == '-' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The inclusive bounds of an integer type, or `None` for other types.
pub fn integer_bounds(ty: &Type) -> Option<(i128, i128)> {
    Some(match ty {
        Type::U8 => (0, u8::MAX.into()),
        Type::U16 => (0, u16::MAX.into()),
        Type::U32 => (0, u32::MAX.into()),
        Type::U64 => (0, u64::MAX.into()),
        Type::S8 => (i8::MIN.into(), i8::MAX.into()),
        Type::S16 => (i16::MIN.into(), i16::MAX.into()),
        Type::S32 => (i32::MIN.into(), i32::MAX.into()),
        Type::S64 => (i64::MIN.into(), i64::MAX.into()),
        _ => return None,
    })
}

/// Why a type cannot be offered to a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported(pub &'static str);

/// The JSON schema of `ty`.
///
/// # Errors
/// [`Unsupported`] naming the first type a model cannot write as JSON.
pub fn schema_of(ty: &Type) -> Result<Value, Unsupported> {
    Ok(match ty {
        Type::Bool => json!({"type": "boolean"}),
        Type::Float32 | Type::Float64 => json!({"type": "number"}),
        Type::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
        Type::String => json!({"type": "string"}),
        Type::List(l) => json!({"type": "array", "items": schema_of(&l.ty())?}),
        Type::Record(r) => {
            let fields: Vec<(String, Type)> =
                r.fields().map(|f| (f.name.to_string(), f.ty)).collect();
            object_schema(&fields, None)?
        }
        Type::Tuple(t) => {
            let items = t
                .types()
                .map(|t| schema_of(&t))
                .collect::<Result<Vec<_>, _>>()?;
            let n = items.len();
            json!({"type": "array", "prefixItems": items, "minItems": n, "maxItems": n})
        }
        Type::Variant(v) => {
            let mut cases = Vec::new();
            for case in v.cases() {
                let mut props = Map::new();
                props.insert("tag".into(), json!({"const": case.name}));
                let mut required = vec!["tag"];
                if let Some(t) = case.ty {
                    props.insert("val".into(), schema_of(&t)?);
                    required.push("val");
                }
                cases.push(json!({"type": "object", "properties": props, "required": required, "additionalProperties": false}));
            }
            json!({"oneOf": cases})
        }
        Type::Enum(e) => json!({"type": "string", "enum": e.names().collect::<Vec<_>>()}),
        Type::Option(o) => json!({"anyOf": [schema_of(&o.ty())?, {"type": "null"}]}),
        Type::Result(r) => {
            let side = |name: &str, t: Option<Type>| -> Result<Value, Unsupported> {
                let val = match t {
                    Some(t) => schema_of(&t)?,
                    None => json!({"type": "null"}),
                };
                Ok(
                    json!({"type": "object", "properties": {name: val}, "required": [name], "additionalProperties": false}),
                )
            };
            json!({"oneOf": [side("ok", r.ok())?, side("err", r.err())?]})
        }
        Type::Flags(f) => {
            let props: Map<String, Value> = f
                .names()
                .map(|n| (n.to_string(), json!({"type": "boolean"})))
                .collect();
            json!({"type": "object", "properties": props, "additionalProperties": false})
        }
        Type::Own(_) | Type::Borrow(_) => return Err(Unsupported("a resource handle")),
        Type::Future(_) => return Err(Unsupported("a future")),
        Type::Stream(_) => return Err(Unsupported("a stream")),
        Type::ErrorContext => return Err(Unsupported("an error-context")),
        Type::Map(_) => return Err(Unsupported("a map")),
        Type::FixedLengthList(_) => return Err(Unsupported("a fixed-length list")),
        // A u64's maximum is left out: it says nothing a model needs, and no JSON integer a
        // model can send is larger (serde_json reads a larger one as a float, which is not an
        // integer argument). An s64 keeps both bounds: 2^63 and above are JSON integers the
        // lowering refuses, so the schema must refuse them too.
        Type::U64 => json!({"type": "integer", "minimum": 0}),
        int => {
            let (min, max) = integer_bounds(int).ok_or(Unsupported("an unknown type"))?;
            json!({"type": "integer", "minimum": min, "maximum": max})
        }
    })
}

/// The schema of an object with `fields` (WIT names and types): camelCase properties,
/// `option` fields optional, no other properties. `docs` adds descriptions, bounds and the
/// policy's refinements ([`crate::component::refine`]).
pub fn object_schema(
    fields: &[(String, Type)],
    docs: Option<&FuncDocs>,
) -> Result<Value, Unsupported> {
    let mut props = Map::new();
    let mut required = Vec::new();
    for (name, ty) in fields {
        let arg_docs = docs.and_then(|d| d.args.get(name));
        let (mut schema, mut inner) = match ty {
            Type::Option(o) => (schema_of(&o.ty())?, Some(o.ty())),
            other => {
                required.push(json_name(name));
                (schema_of(other)?, None)
            }
        };
        // The docs describe the value: inside an `option` of an `option`, its first form.
        let mut target = Some(&mut schema);
        while let Some(Type::Option(o)) = &inner {
            inner = Some(o.ty());
            target = target
                .and_then(|t| t.get_mut("anyOf"))
                .and_then(|a| a.get_mut(0));
        }
        if let (Some(d), Some(Value::Object(map))) = (arg_docs, target) {
            apply_docs(map, d);
        }
        props.insert(json_name(name), schema);
    }
    let mut out = json!({"type": "object", "properties": props, "additionalProperties": false});
    if !required.is_empty() {
        out["required"] = json!(required);
    }
    Ok(out)
}

/// The docs and refinements of an argument in its schema: `description`, `minimum`,
/// `maximum` (replacing the integer type's own), `enum` (added to a string's, replacing a
/// WIT enum's cases) and `pattern`.
fn apply_docs(schema: &mut Map<String, Value>, docs: &ArgDocs) {
    if let Some(d) = &docs.description {
        schema.insert("description".into(), json!(d));
    }
    if let Some(min) = &docs.minimum {
        schema.insert("minimum".into(), Value::Number(min.clone()));
    }
    if let Some(max) = &docs.maximum {
        schema.insert("maximum".into(), Value::Number(max.clone()));
    }
    if let Some(values) = &docs.one_of {
        schema.insert("enum".into(), json!(values));
    }
    if let Some(p) = &docs.pattern {
        schema.insert("pattern".into(), json!(p.as_str()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case() {
        assert_eq!(json_name("start-line"), "startLine");
        assert_eq!(json_name("path"), "path");
        assert_eq!(json_name("a-b-c"), "aBC");
    }
}
