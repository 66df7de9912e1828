//! JSON ↔ component values: the model's arguments lowered into [`Val`]s (checked against the
//! types first, so a bad argument never reaches the guest), and results lifted back into
//! JSON (camelCase fields, absent options omitted).

use std::collections::HashMap;

use serde_json::{Map, Value};
use wasmtime::component::Val;
use wasmtime::component::types::Type;

use crate::call::integers::{Bounds, Literals, integer};
use crate::component::argument_error::{ArgumentError, short_json};
use crate::component::docs::ArgDocs;
use crate::component::refine;
use crate::component::schema::{integer_bounds, json_name};

/// Lowers `json` into a value of type `ty`. `name` is the argument's path for messages
/// (`startLine`, `items[2].name`); `docs` may narrow what the type allows: a number's bounds,
/// a string's or an enum's values, a string's pattern ([`crate::component::refine`]).
/// Integers are JSON integers or decimal strings ([`crate::call::integers`]).
///
/// # Errors
/// [`ArgumentError`]: it names the argument, what was expected and what was given.
pub fn to_val(
    ty: &Type,
    json: &Value,
    name: &str,
    docs: Option<&ArgDocs>,
) -> Result<Val, ArgumentError> {
    lower(ty, json, name, docs, &Literals::none())
}

fn lower(
    ty: &Type,
    json: &Value,
    name: &str,
    docs: Option<&ArgDocs>,
    lits: &Literals,
) -> Result<Val, ArgumentError> {
    let got = || short_json(json);
    Ok(match ty {
        Type::Bool => Val::Bool(
            json.as_bool()
                .ok_or_else(|| ArgumentError::expected(name, "true or false", got()))?,
        ),
        Type::Float32 => Val::Float32(float(json, name, docs)? as f32),
        Type::Float64 => Val::Float64(float(json, name, docs)?),
        Type::Char => {
            let s = json.as_str().unwrap_or_default();
            let mut chars = s.chars();
            match (json.is_string(), chars.next(), chars.next()) {
                (true, Some(c), None) => Val::Char(c),
                _ => return Err(ArgumentError::expected(name, "a single character", got())),
            }
        }
        Type::String => {
            let s = json
                .as_str()
                .ok_or_else(|| ArgumentError::expected(name, "a string", got()))?;
            refine::check_string(docs, name, s)?;
            Val::String(s.to_string())
        }
        Type::List(l) => {
            let items = json
                .as_array()
                .ok_or_else(|| ArgumentError::expected(name, "an array", got()))?;
            let item_ty = l.ty();
            Val::List(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| lower(&item_ty, v, &format!("{name}[{i}]"), None, lits))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Record(r) => {
            let fields: Vec<(String, Type)> =
                r.fields().map(|f| (f.name.to_string(), f.ty)).collect();
            let obj = json
                .as_object()
                .ok_or_else(|| ArgumentError::expected(name, "an object", got()))?;
            Val::Record(lower_fields(&fields, obj, &format!("{name}."), None, lits)?)
        }
        Type::Tuple(t) => {
            let types: Vec<Type> = t.types().collect();
            let items = json
                .as_array()
                .filter(|a| a.len() == types.len())
                .ok_or_else(|| {
                    ArgumentError::expected(
                        name,
                        format!("an array of {} items", types.len()),
                        got(),
                    )
                })?;
            Val::Tuple(
                types
                    .iter()
                    .zip(items)
                    .enumerate()
                    .map(|(i, (t, v))| lower(t, v, &format!("{name}[{i}]"), None, lits))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Variant(v) => {
            let cases: Vec<_> = v.cases().collect();
            let names: Vec<&str> = cases.iter().map(|c| c.name).collect();
            let expected = || {
                ArgumentError::expected(
                    name,
                    format!(
                        "an object {{\"tag\": one of {}, \"val\": …}}",
                        names.join(", ")
                    ),
                    got(),
                )
            };
            let obj = json.as_object().ok_or_else(expected)?;
            if let Some(k) = obj.keys().find(|k| *k != "tag" && *k != "val") {
                return Err(ArgumentError::VariantField {
                    name: name.to_string(),
                    field: k.clone(),
                });
            }
            let tag = obj
                .get("tag")
                .and_then(Value::as_str)
                .ok_or_else(expected)?;
            let case = cases.iter().find(|c| c.name == tag).ok_or_else(expected)?;
            let payload = match (&case.ty, obj.get("val")) {
                (Some(t), Some(v)) => {
                    Some(Box::new(lower(t, v, &format!("{name}.val"), None, lits)?))
                }
                (Some(_), None) => {
                    return Err(ArgumentError::ValRequired {
                        name: name.to_string(),
                        tag: tag.to_string(),
                    });
                }
                (None, None | Some(Value::Null)) => None,
                (None, Some(_)) => {
                    return Err(ArgumentError::ValAbsent {
                        name: name.to_string(),
                        tag: tag.to_string(),
                    });
                }
            };
            Val::Variant(tag.to_string(), payload)
        }
        Type::Enum(e) => {
            // The policy's `enum` narrows the cases.
            let names: Vec<&str> = match docs.and_then(|d| d.one_of.as_ref()) {
                Some(cases) => cases.iter().map(String::as_str).collect(),
                None => e.names().collect(),
            };
            match json.as_str() {
                Some(s) if names.contains(&s) => Val::Enum(s.to_string()),
                _ => {
                    return Err(ArgumentError::expected(
                        name,
                        format!("one of: {}", names.join(", ")),
                        got(),
                    ));
                }
            }
        }
        Type::Option(o) => match json {
            Value::Null => Val::Option(None),
            v => Val::Option(Some(Box::new(lower(&o.ty(), v, name, docs, lits)?))),
        },
        Type::Result(r) => {
            let either = r#"{"ok": …} or {"err": …}"#;
            let obj = json
                .as_object()
                .filter(|o| o.len() == 1)
                .ok_or_else(|| ArgumentError::expected(name, either, got()))?;
            let side =
                |t: Option<Type>, v: &Value, n: &str| -> Result<Option<Box<Val>>, ArgumentError> {
                    match (t, v) {
                        (Some(t), v) => Ok(Some(Box::new(lower(&t, v, n, None, lits)?))),
                        (None, Value::Null) => Ok(None),
                        (None, v) => Err(ArgumentError::expected(n, "null", short_json(v))),
                    }
                };
            match (obj.get("ok"), obj.get("err")) {
                (Some(v), None) => Val::Result(Ok(side(r.ok(), v, &format!("{name}.ok"))?)),
                (None, Some(v)) => Val::Result(Err(side(r.err(), v, &format!("{name}.err"))?)),
                _ => {
                    return Err(ArgumentError::expected(name, either, got()));
                }
            }
        }
        Type::Flags(f) => {
            let names: Vec<&str> = f.names().collect();
            let obj = json.as_object().ok_or_else(|| {
                ArgumentError::expected(
                    name,
                    format!("an object of booleans ({})", names.join(", ")),
                    got(),
                )
            })?;
            let mut set = Vec::new();
            for (k, v) in obj {
                if !names.contains(&k.as_str()) {
                    return Err(ArgumentError::NoFlag {
                        name: name.to_string(),
                        flag: k.clone(),
                        flags: names.join(", "),
                    });
                }
                match v {
                    Value::Bool(true) => set.push(k.clone()),
                    Value::Bool(false) | Value::Null => {}
                    other => {
                        return Err(ArgumentError::expected(
                            &format!("{name}.{k}"),
                            "true or false",
                            short_json(other),
                        ));
                    }
                }
            }
            Val::Flags(set)
        }
        other => {
            let Some((type_min, type_max)) = integer_bounds(other) else {
                return Err(ArgumentError::NotJson {
                    name: name.to_string(),
                });
            };
            let min = docs
                .and_then(|d| d.minimum.as_ref())
                .and_then(refine::as_i128)
                .map_or(type_min, |m| m.max(type_min));
            let max = docs
                .and_then(|d| d.maximum.as_ref())
                .and_then(refine::as_i128)
                .map_or(type_max, |m| m.min(type_max));
            let bounds = Bounds {
                min,
                max,
                saturate: docs.is_some_and(|d| d.saturate),
            };
            let n = integer(json, lits.get(name), name, bounds)?;
            integer_val(other, n)
        }
    })
}

/// Lowers the JSON object `obj` into the record fields `fields` (WIT names and types).
/// `prefix` goes before each name in messages; `docs` has the arguments' docs by WIT name.
///
/// # Errors
/// Unknown properties (named, with the allowed ones), missing required ones, bad values.
pub fn object_to_fields(
    fields: &[(String, Type)],
    obj: &Map<String, Value>,
    prefix: &str,
    docs: Option<&HashMap<String, ArgDocs>>,
) -> Result<Vec<(String, Val)>, ArgumentError> {
    lower_fields(fields, obj, prefix, docs, &Literals::none())
}

/// [`object_to_fields`] of arguments parsed from text, with the text's integer literals
/// beyond 64 bits ([`Literals::of`]), so that messages show them exactly as written.
///
/// # Errors
/// As [`object_to_fields`].
pub fn object_to_fields_with(
    fields: &[(String, Type)],
    obj: &Map<String, Value>,
    docs: Option<&HashMap<String, ArgDocs>>,
    lits: &Literals,
) -> Result<Vec<(String, Val)>, ArgumentError> {
    lower_fields(fields, obj, "", docs, lits)
}

fn lower_fields(
    fields: &[(String, Type)],
    obj: &Map<String, Value>,
    prefix: &str,
    docs: Option<&HashMap<String, ArgDocs>>,
    lits: &Literals,
) -> Result<Vec<(String, Val)>, ArgumentError> {
    let names: Vec<String> = fields.iter().map(|(n, _)| json_name(n)).collect();
    let unknown: Vec<&str> = obj
        .keys()
        .filter(|k| !names.contains(k))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        let allowed = if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        };
        return Err(ArgumentError::Unknown {
            unknown: unknown
                .iter()
                .map(|u| sluice_file_tools::error::quote(&format!("{prefix}{u}")))
                .collect(),
            allowed,
        });
    }
    let mut out = Vec::with_capacity(fields.len());
    for ((wit, ty), name) in fields.iter().zip(&names) {
        let full = format!("{prefix}{name}");
        let value = obj.get(name).unwrap_or(&Value::Null);
        let val = match (ty, value) {
            (Type::Option(_), Value::Null) => Val::Option(None),
            (_, Value::Null) => return Err(ArgumentError::Missing { name: full }),
            (ty, v) => lower(ty, v, &full, docs.and_then(|d| d.get(wit)), lits)?,
        };
        out.push((wit.clone(), val));
    }
    Ok(out)
}

/// Lifts `val` (of type `ty`) into JSON: records become objects with camelCase keys and
/// absent `option` fields omitted, variants `{tag, val}`, enums strings, flags objects of
/// booleans, results `{ok}` / `{err}`, non-finite floats `null`.
pub fn to_json(val: &Val, ty: &Type) -> Value {
    match (val, ty) {
        (Val::Record(fields), Type::Record(r)) => {
            let mut obj = Map::new();
            for ((name, v), field) in fields.iter().zip(r.fields()) {
                if matches!(v, Val::Option(None)) {
                    continue;
                }
                let inner = match (v, &field.ty) {
                    (Val::Option(Some(v)), Type::Option(o)) => to_json(v, &o.ty()),
                    (v, t) => to_json(v, t),
                };
                obj.insert(json_name(name), inner);
            }
            Value::Object(obj)
        }
        (Val::Option(None), _) => Value::Null,
        (Val::Option(Some(v)), Type::Option(o)) => to_json(v, &o.ty()),
        (Val::List(items), Type::List(l)) => {
            let t = l.ty();
            Value::Array(items.iter().map(|v| to_json(v, &t)).collect())
        }
        (Val::Tuple(items), Type::Tuple(t)) => Value::Array(
            items
                .iter()
                .zip(t.types())
                .map(|(v, t)| to_json(v, &t))
                .collect(),
        ),
        (Val::Variant(tag, payload), Type::Variant(v)) => {
            let mut obj = Map::new();
            obj.insert("tag".into(), Value::from(tag.as_str()));
            if let (Some(p), Some(t)) = (
                payload,
                v.cases().find(|c| c.name == tag).and_then(|c| c.ty),
            ) {
                obj.insert("val".into(), to_json(p, &t));
            }
            Value::Object(obj)
        }
        (Val::Result(r), Type::Result(t)) => {
            let (key, v, ty) = match r {
                Ok(v) => ("ok", v, t.ok()),
                Err(v) => ("err", v, t.err()),
            };
            let inner = match (v, ty) {
                (Some(v), Some(t)) => to_json(v, &t),
                _ => Value::Null,
            };
            Value::Object(Map::from_iter([(key.to_string(), inner)]))
        }
        (Val::Flags(set), Type::Flags(f)) => Value::Object(
            f.names()
                .map(|n| (n.to_string(), Value::Bool(set.iter().any(|s| s == n))))
                .collect(),
        ),
        (Val::Enum(s), _) => Value::from(s.as_str()),
        (Val::Bool(b), _) => Value::Bool(*b),
        (Val::S8(n), _) => Value::from(*n),
        (Val::U8(n), _) => Value::from(*n),
        (Val::S16(n), _) => Value::from(*n),
        (Val::U16(n), _) => Value::from(*n),
        (Val::S32(n), _) => Value::from(*n),
        (Val::U32(n), _) => Value::from(*n),
        (Val::S64(n), _) => Value::from(*n),
        (Val::U64(n), _) => Value::from(*n),
        (Val::Float32(f), _) => {
            serde_json::Number::from_f64(f64::from(*f)).map_or(Value::Null, Value::Number)
        }
        (Val::Float64(f), _) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        (Val::Char(c), _) => Value::from(c.to_string()),
        (Val::String(s), _) => Value::from(s.as_str()),
        // Values whose type does not match cannot come out of a type-checked call; the
        // remaining kinds (resources, streams, …) are never offered to a model.
        _ => Value::Null,
    }
}

/// [`write_json`] of a result value, except that the string fields named in `json_fields`
/// (the `@json` fields of its record, component/docs.rs) are written as the JSON text they
/// hold, when it is JSON; otherwise (or for any other value) as [`write_json`] writes them.
pub fn write_json_marking(val: &Val, ty: &Type, json_fields: &[String], out: &mut Vec<u8>) {
    let (Val::Record(fields), Type::Record(r), false) = (val, ty, json_fields.is_empty()) else {
        return write_json(val, ty, out);
    };
    out.push(b'{');
    let mut first = true;
    for ((name, v), field) in fields.iter().zip(r.fields()) {
        if matches!(v, Val::Option(None)) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        write_str(&json_name(name), out);
        out.push(b':');
        match (v, &field.ty) {
            (Val::String(text), _)
                if json_fields.iter().any(|f| f == name)
                    && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() =>
            {
                out.extend_from_slice(text.trim().as_bytes());
            }
            (Val::Option(Some(v)), Type::Option(o)) => write_json(v, &o.ty(), out),
            (v, t) => write_json(v, t, out),
        }
    }
    out.push(b'}');
}

/// Writes `val` (of type `ty`) to `out` as compact JSON text: exactly the text of
/// `to_json(val, ty).to_string()`, without building the [`Value`] first (a result's strings
/// are escaped once, straight from the lifted value, instead of copied into a `Value` and
/// then escaped).
pub fn write_json(val: &Val, ty: &Type, out: &mut Vec<u8>) {
    match (val, ty) {
        (Val::Record(fields), Type::Record(r)) => {
            out.push(b'{');
            let mut first = true;
            for ((name, v), field) in fields.iter().zip(r.fields()) {
                if matches!(v, Val::Option(None)) {
                    continue;
                }
                if !first {
                    out.push(b',');
                }
                first = false;
                write_str(&json_name(name), out);
                out.push(b':');
                match (v, &field.ty) {
                    (Val::Option(Some(v)), Type::Option(o)) => write_json(v, &o.ty(), out),
                    (v, t) => write_json(v, t, out),
                }
            }
            out.push(b'}');
        }
        (Val::Option(None), _) => out.extend_from_slice(b"null"),
        (Val::Option(Some(v)), Type::Option(o)) => write_json(v, &o.ty(), out),
        (Val::List(items), Type::List(l)) => {
            let t = l.ty();
            write_array(items.iter().map(|v| (v, &t)), out);
        }
        (Val::Tuple(items), Type::Tuple(t)) => {
            let types: Vec<Type> = t.types().collect();
            write_array(items.iter().zip(&types), out);
        }
        (Val::Variant(tag, payload), Type::Variant(v)) => {
            out.extend_from_slice(b"{\"tag\":");
            write_str(tag, out);
            if let (Some(p), Some(t)) = (
                payload,
                v.cases().find(|c| c.name == tag).and_then(|c| c.ty),
            ) {
                out.extend_from_slice(b",\"val\":");
                write_json(p, &t, out);
            }
            out.push(b'}');
        }
        (Val::Result(r), Type::Result(t)) => {
            let (key, v, ty): (&[u8], _, _) = match r {
                Ok(v) => (b"{\"ok\":", v, t.ok()),
                Err(v) => (b"{\"err\":", v, t.err()),
            };
            out.extend_from_slice(key);
            match (v, ty) {
                (Some(v), Some(t)) => write_json(v, &t, out),
                _ => out.extend_from_slice(b"null"),
            }
            out.push(b'}');
        }
        (Val::Flags(set), Type::Flags(f)) => {
            out.push(b'{');
            for (i, n) in f.names().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(n, out);
                let on: &[u8] = if set.iter().any(|s| s == n) {
                    b":true"
                } else {
                    b":false"
                };
                out.extend_from_slice(on);
            }
            out.push(b'}');
        }
        (Val::Enum(s), _) => write_str(s, out),
        (Val::Bool(b), _) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        (Val::S8(n), _) => write_int(i64::from(*n), out),
        (Val::U8(n), _) => write_int(i64::from(*n), out),
        (Val::S16(n), _) => write_int(i64::from(*n), out),
        (Val::U16(n), _) => write_int(i64::from(*n), out),
        (Val::S32(n), _) => write_int(i64::from(*n), out),
        (Val::U32(n), _) => write_int(i64::from(*n), out),
        (Val::S64(n), _) => write_int(*n, out),
        (Val::U64(n), _) => {
            use std::io::Write;
            let _ = write!(out, "{n}");
        }
        (Val::Float32(_) | Val::Float64(_) | Val::Char(_), _) => {
            // Rare in results: the `Value`'s own text, so the two stay the same.
            use std::io::Write;
            let _ = write!(out, "{}", to_json(val, ty));
        }
        (Val::String(s), _) => write_str(s, out),
        _ => out.extend_from_slice(b"null"),
    }
}

/// `s` as a JSON string, escaped as serde_json escapes it.
fn write_str(s: &str, out: &mut Vec<u8>) {
    // Writing to a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn write_int(n: i64, out: &mut Vec<u8>) {
    use std::io::Write;
    let _ = write!(out, "{n}");
}

fn write_array<'a>(items: impl Iterator<Item = (&'a Val, &'a Type)>, out: &mut Vec<u8>) {
    out.push(b'[');
    for (i, (v, t)) in items.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json(v, t, out);
    }
    out.push(b']');
}

fn integer_val(ty: &Type, n: i128) -> Val {
    // `n` is already within the type's bounds.
    match ty {
        Type::U8 => Val::U8(n as u8),
        Type::U16 => Val::U16(n as u16),
        Type::U32 => Val::U32(n as u32),
        Type::U64 => Val::U64(n as u64),
        Type::S8 => Val::S8(n as i8),
        Type::S16 => Val::S16(n as i16),
        Type::S32 => Val::S32(n as i32),
        _ => Val::S64(n as i64),
    }
}

/// The number `json` holds, within the bounds `docs` gives.
fn float(json: &Value, name: &str, docs: Option<&ArgDocs>) -> Result<f64, ArgumentError> {
    let f = json
        .as_f64()
        .ok_or_else(|| ArgumentError::expected(name, "a number", short_json(json)))?;
    refine::check_float(docs, name, f, &short_json(json))?;
    Ok(f)
}
