//! The JSON schema a model is shown (`schema::object_schema`) and the argument lowering
//! (`value::object_to_fields`) agree: for generated WIT types and generated JSON arguments,
//! every value the schema accepts lowers and every value it rejects is refused. The
//! `jsonschema` crate is the judge.
//!
//! Each case writes a WIT interface with one function over generated types (records,
//! options, lists, tuples, enums, variants, flags, results, every integer width, floats,
//! `char`, strings, bools), builds a component from it (`wit-component`'s dummy module), reads
//! the parameter types back through wasmtime (as `component.rs` does for a real tool), and
//! checks a batch of generated arguments, most of them near-misses of a valid value; and that
//! every value lowered lifts back to the same JSON text by `value::write_json` as through
//! `value::to_json`.
//!
//! Two documented rules ([docs/observations.md](../../../docs/observations.md#arguments))
//! sit between the two sides:
//! - `null` means absent where a thing may be absent (an optional field or argument, a flag,
//!   the `val` of a variant case that carries none), while the schema shows only the form
//!   without it: the judge sees the arguments with those `null`s removed ([`without_nulls`]);
//! - JSON Schema's `integer` is any number with no fraction, while Sluice refuses `2.0` for an
//!   integer: the generator never puts an integral float where an integer goes, and
//!   [`integral_float_is_the_documented_difference`] pins the difference down.

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::Cell;
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::sample::subsequence;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Map, Value, json};
use sluice_runtime::call::value::{object_to_fields, to_json, write_json};
use sluice_runtime::component::schema::{json_name, object_schema};
use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime::component::types::{ComponentItem, Type};
use wit_component::{ComponentEncoder, StringEncoding, dummy_module, embed_component_metadata};
use wit_parser::{LiftLowerAbi, ManglingAndAbi, Resolve};

/// Generated functions (one component each).
const CASES: u32 = 256;
/// Generated arguments per function.
const VALUES_PER_CASE: usize = 24;

/// A WIT type, as generated.
#[derive(Clone, Debug)]
enum Ty {
    Bool,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F32,
    F64,
    Char,
    Str,
    List(Box<Ty>),
    Option(Box<Ty>),
    Tuple(Vec<Ty>),
    Record(Vec<(String, Ty)>),
    Enum(Vec<String>),
    Variant(Vec<(String, Option<Ty>)>),
    Flags(Vec<String>),
    Result(Option<Box<Ty>>, Option<Box<Ty>>),
}

/// WIT names for fields, cases and flags (kebab-case, some with a camelCase JSON name).
const NAMES: &[&str] = &[
    "alpha",
    "start-line",
    "path",
    "max-results",
    "x",
    "off-by-one",
];

fn names() -> impl Strategy<Value = Vec<String>> {
    subsequence(NAMES, 1..=4).prop_map(|v| v.into_iter().map(String::from).collect())
}

fn leaf() -> impl Strategy<Value = Ty> {
    prop_oneof![
        Just(Ty::Bool),
        Just(Ty::U8),
        Just(Ty::U16),
        Just(Ty::U32),
        Just(Ty::U64),
        Just(Ty::S8),
        Just(Ty::S16),
        Just(Ty::S32),
        Just(Ty::S64),
        Just(Ty::F32),
        Just(Ty::F64),
        Just(Ty::Char),
        Just(Ty::Str),
        names().prop_map(Ty::Enum),
        names().prop_map(Ty::Flags),
    ]
}

fn ty() -> impl Strategy<Value = Ty> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| Ty::List(Box::new(t))),
            inner.clone().prop_map(|t| Ty::Option(Box::new(t))),
            prop::collection::vec(inner.clone(), 1..=3).prop_map(Ty::Tuple),
            names()
                .prop_flat_map({
                    let inner = inner.clone();
                    move |n| {
                        let k = n.len();
                        (Just(n), prop::collection::vec(inner.clone(), k))
                    }
                })
                .prop_map(|(n, t)| Ty::Record(n.into_iter().zip(t).collect())),
            names()
                .prop_flat_map({
                    let inner = inner.clone();
                    move |n| {
                        let k = n.len();
                        (
                            Just(n),
                            prop::collection::vec(prop::option::of(inner.clone()), k),
                        )
                    }
                })
                .prop_map(|(n, t)| Ty::Variant(n.into_iter().zip(t).collect())),
            (
                prop::option::of(inner.clone()),
                prop::option::of(inner.clone())
            )
                .prop_map(|(ok, err)| Ty::Result(ok.map(Box::new), err.map(Box::new))),
        ]
    })
}

/// The function's parameters (zero to three, named like record fields).
fn params() -> impl Strategy<Value = Vec<(String, Ty)>> {
    subsequence(NAMES, 0..=3).prop_flat_map(|n| {
        let k = n.len();
        prop::collection::vec(ty(), k)
            .prop_map(move |t| n.iter().map(|s| s.to_string()).zip(t).collect())
    })
}

/// WIT text for `ty`; named types go to `defs`.
fn wit(ty: &Ty, defs: &mut Vec<String>) -> String {
    match ty {
        Ty::Bool => "bool".into(),
        Ty::U8 => "u8".into(),
        Ty::U16 => "u16".into(),
        Ty::U32 => "u32".into(),
        Ty::U64 => "u64".into(),
        Ty::S8 => "s8".into(),
        Ty::S16 => "s16".into(),
        Ty::S32 => "s32".into(),
        Ty::S64 => "s64".into(),
        Ty::F32 => "f32".into(),
        Ty::F64 => "f64".into(),
        Ty::Char => "char".into(),
        Ty::Str => "string".into(),
        Ty::List(t) => format!("list<{}>", wit(t, defs)),
        Ty::Option(t) => format!("option<{}>", wit(t, defs)),
        Ty::Tuple(ts) => {
            let items: Vec<String> = ts.iter().map(|t| wit(t, defs)).collect();
            format!("tuple<{}>", items.join(", "))
        }
        Ty::Result(ok, err) => {
            let ok = ok.as_ref().map(|t| wit(t, defs));
            let err = err.as_ref().map(|t| wit(t, defs));
            match (ok, err) {
                (None, None) => "result".into(),
                (Some(o), None) => format!("result<{o}>"),
                (None, Some(e)) => format!("result<_, {e}>"),
                (Some(o), Some(e)) => format!("result<{o}, {e}>"),
            }
        }
        Ty::Record(fields) => {
            let body: Vec<String> = fields
                .iter()
                .map(|(n, t)| format!("{n}: {}", wit(t, defs)))
                .collect();
            named(defs, "record", &body.join(", "))
        }
        Ty::Variant(cases) => {
            let body: Vec<String> = cases
                .iter()
                .map(|(n, t)| match t {
                    Some(t) => format!("{n}({})", wit(t, defs)),
                    None => n.clone(),
                })
                .collect();
            named(defs, "variant", &body.join(", "))
        }
        Ty::Enum(cases) => named(defs, "enum", &cases.join(", ")),
        Ty::Flags(flags) => named(defs, "flags", &flags.join(", ")),
    }
}

/// Defines `kind tN { body }` and returns its name `tN`.
fn named(defs: &mut Vec<String>, kind: &str, body: &str) -> String {
    let name = format!("t{}", defs.len());
    defs.push(format!("{kind} {name} {{ {body} }}"));
    name
}

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(Engine::default)
}

/// The parameter types of `f: func(<params>)`, read back from a component built from WIT.
fn wasmtime_params(params: &[(String, Ty)]) -> Vec<(String, Type)> {
    let mut defs = Vec::new();
    let list: Vec<String> = params
        .iter()
        .map(|(n, t)| format!("{n}: {}", wit(t, &mut defs)))
        .collect();
    let text = format!(
        "package t:t;\ninterface i {{\n{}\nf: func({});\n}}\nworld w {{ export i; }}\n",
        defs.join("\n"),
        list.join(", ")
    );
    let mut resolve = Resolve::default();
    let pkg = resolve.push_str("t.wit", &text).expect(&text);
    let world = resolve.select_world(&[pkg], Some("w")).expect("world w");
    let mut module = dummy_module(&resolve, world, ManglingAndAbi::Legacy(LiftLowerAbi::Sync));
    embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8).expect("metadata");
    let bytes = ComponentEncoder::default()
        .module(&module)
        .expect("module")
        .validate(true)
        .encode()
        .expect(&text);
    let component = Component::new(engine(), &bytes).expect("compile");
    let ty = component.component_type();
    let (_, export) = ty.exports(engine()).next().expect("export i");
    let ComponentItem::ComponentInstance(instance) = export.ty else {
        panic!("export i is not an instance");
    };
    let Some(export) = instance.get_export(engine(), "f") else {
        panic!("i has no export f");
    };
    let ComponentItem::ComponentFunc(func) = export.ty else {
        panic!("i's export f is not a function");
    };
    func.params().map(|(n, t)| (n.to_string(), t)).collect()
}

/// Values that are rarely right for any type: wrong JSON kinds, floats with a fraction
/// (never integral, see the module docs), near-miss objects.
fn junk() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-300i64..300).prop_map(Value::from),
        (-1000i32..1000).prop_map(|n| json!(f64::from(n) + 0.5)),
        "[a-z]{0,3}".prop_map(Value::from),
        Just(json!([])),
        Just(json!({})),
        Just(json!({"tag": "alpha"})),
        Just(json!({"ok": null})),
    ]
    .boxed()
}

/// Integers around a type's bounds, as JSON (values outside 64 bits cannot be a JSON
/// integer and are left out, see the module docs).
fn integer(min: i128, max: i128) -> BoxedStrategy<Value> {
    let to_json = |n: i128| {
        i64::try_from(n)
            .map(Value::from)
            .or_else(|_| u64::try_from(n).map(Value::from))
            .ok()
    };
    let edges: Vec<Value> = [min - 1, min, 0, 1, max, max + 1]
        .into_iter()
        .filter_map(to_json)
        .collect();
    let lo = i64::try_from(min).unwrap_or(i64::MIN);
    let hi = i64::try_from(max).unwrap_or(i64::MAX);
    prop_oneof![
        prop::sample::select(edges),
        (lo..=hi).prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
    ]
    .boxed()
}

/// A JSON value for `ty`: mostly the right shape (so nested parts get checked), sometimes
/// junk, with near-misses (extra or missing keys, wrong tags, bad items) mixed in.
fn value(ty: &Ty) -> BoxedStrategy<Value> {
    prop_oneof![6 => shaped(ty), 1 => junk()].boxed()
}

fn shaped(ty: &Ty) -> BoxedStrategy<Value> {
    match ty {
        Ty::Bool => any::<bool>().prop_map(Value::from).boxed(),
        Ty::U8 => integer(0, u8::MAX.into()),
        Ty::U16 => integer(0, u16::MAX.into()),
        Ty::U32 => integer(0, u32::MAX.into()),
        Ty::U64 => integer(0, u64::MAX.into()),
        Ty::S8 => integer(i8::MIN.into(), i8::MAX.into()),
        Ty::S16 => integer(i16::MIN.into(), i16::MAX.into()),
        Ty::S32 => integer(i32::MIN.into(), i32::MAX.into()),
        Ty::S64 => integer(i64::MIN.into(), i64::MAX.into()),
        Ty::F32 | Ty::F64 => prop_oneof![
            (-1e6f64..1e6).prop_map(|f| json!(f)),
            any::<i64>().prop_map(Value::from),
            Just(json!(1e300)),
        ]
        .boxed(),
        Ty::Char => prop_oneof![
            any::<char>().prop_map(|c| Value::from(c.to_string())),
            Just(json!("")),
            Just(json!("ab")),
            Just(json!("é")),
            Just(json!("e\u{301}")),
        ]
        .boxed(),
        Ty::Str => ".{0,4}".prop_map(Value::from).boxed(),
        Ty::List(t) => prop::collection::vec(value(t), 0..3)
            .prop_map(Value::Array)
            .boxed(),
        Ty::Option(t) => prop_oneof![Just(Value::Null), value(t)].boxed(),
        Ty::Tuple(ts) => {
            let items: Vec<BoxedStrategy<Value>> = ts.iter().map(value).collect();
            (items, 0..4u8)
                .prop_map(|(mut items, change)| {
                    match change {
                        0 => items.push(Value::Null),
                        1 => {
                            items.pop();
                        }
                        _ => {}
                    }
                    Value::Array(items)
                })
                .boxed()
        }
        Ty::Record(fields) => object(fields),
        Ty::Enum(cases) => prop_oneof![
            prop::sample::select(cases.clone()).prop_map(Value::from),
            Just(json!("nope")),
            Just(json!("startLine")),
        ]
        .boxed(),
        Ty::Flags(flags) => {
            let one = prop_oneof![
                3 => any::<bool>().prop_map(Value::from),
                1 => Just(Value::Null),
                1 => Just(json!(1)),
            ];
            let mut keys: Vec<String> = flags.clone();
            keys.push("nope".into());
            (
                subsequence(keys.clone(), 0..=keys.len()),
                prop::collection::vec(one, keys.len()),
                0..6u8,
            )
                .prop_map(|(chosen, vals, nope)| {
                    let obj: Map<String, Value> = chosen
                        .into_iter()
                        .filter(|k| k != "nope" || nope == 0)
                        .zip(vals)
                        .collect();
                    Value::Object(obj)
                })
                .boxed()
        }
        Ty::Variant(cases) => {
            let arms: Vec<BoxedStrategy<Value>> = cases
                .iter()
                .map(|(name, t)| {
                    let val = match t {
                        Some(t) => {
                            prop_oneof![4 => value(t).prop_map(Some), 1 => Just(None)].boxed()
                        }
                        None => prop_oneof![
                            4 => Just(None),
                            1 => Just(Some(Value::Null)),
                            1 => junk().prop_map(Some),
                        ]
                        .boxed(),
                    };
                    let name = name.clone();
                    (val, 0..8u8)
                        .prop_map(move |(val, change)| {
                            let mut obj = Map::new();
                            let tag = if change == 0 { "nope" } else { name.as_str() };
                            obj.insert("tag".into(), Value::from(tag));
                            if let Some(v) = val {
                                obj.insert("val".into(), v);
                            }
                            if change == 1 {
                                obj.insert("extra".into(), json!(1));
                            }
                            Value::Object(obj)
                        })
                        .boxed()
                })
                .collect();
            prop::strategy::Union::new(arms).boxed()
        }
        Ty::Result(ok, err) => {
            let side = |t: &Option<Box<Ty>>| match t {
                Some(t) => value(t),
                None => prop_oneof![4 => Just(Value::Null), 1 => junk()].boxed(),
            };
            (side(ok), side(err), 0..6u8)
                .prop_map(|(ok, err, shape)| match shape {
                    0 => json!({"ok": ok, "err": err}),
                    1 => json!({}),
                    2 | 3 => json!({"ok": ok}),
                    _ => json!({"err": err}),
                })
                .boxed()
        }
    }
}

/// An object for record `fields`: optional fields present, `null` or absent; sometimes an
/// unknown key or a field under its WIT (kebab-case) name.
fn object(fields: &[(String, Ty)]) -> BoxedStrategy<Value> {
    let parts: Vec<BoxedStrategy<Option<Value>>> = fields
        .iter()
        .map(|(_, t)| match t {
            Ty::Option(_) => prop_oneof![
                2 => value(t).prop_map(Some),
                1 => Just(None),
                1 => Just(Some(Value::Null)),
            ]
            .boxed(),
            _ => prop_oneof![8 => value(t).prop_map(Some), 1 => Just(None)].boxed(),
        })
        .collect();
    let names: Vec<String> = fields.iter().map(|(n, _)| n.clone()).collect();
    (parts, 0..10u8)
        .prop_map(move |(parts, change)| {
            let mut obj = Map::new();
            for (name, part) in names.iter().zip(parts) {
                if let Some(v) = part {
                    let key = if change == 0 {
                        name.clone()
                    } else {
                        json_name(name)
                    };
                    obj.insert(key, v);
                }
            }
            if change == 1 {
                obj.insert("extra".into(), json!(true));
            }
            Value::Object(obj)
        })
        .boxed()
}

/// `json` (a value for `ty`) with the `null`s that mean "absent" removed: optional record
/// fields, flags, and the `val` of a case that carries none. Anything not of `ty`'s shape is
/// left as it is.
fn without_nulls(json: &Value, ty: &Ty) -> Value {
    match (ty, json) {
        (Ty::Record(fields), Value::Object(obj)) => {
            Value::Object(object_without_nulls(obj, fields))
        }
        (Ty::List(t), Value::Array(items)) => {
            Value::Array(items.iter().map(|v| without_nulls(v, t)).collect())
        }
        (Ty::Tuple(ts), Value::Array(items)) if ts.len() == items.len() => Value::Array(
            items
                .iter()
                .zip(ts)
                .map(|(v, t)| without_nulls(v, t))
                .collect(),
        ),
        (Ty::Option(t), v) if !v.is_null() => without_nulls(v, t),
        (Ty::Flags(flags), Value::Object(obj)) => Value::Object(
            obj.iter()
                .filter(|(k, v)| !(v.is_null() && flags.contains(k)))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        (Ty::Variant(cases), Value::Object(obj)) => {
            let case = obj
                .get("tag")
                .and_then(Value::as_str)
                .and_then(|tag| cases.iter().find(|(n, _)| n == tag));
            let mut out = obj.clone();
            match case {
                Some((_, None)) if obj.get("val") == Some(&Value::Null) => {
                    out.remove("val");
                }
                Some((_, Some(t))) => {
                    if let Some(v) = obj.get("val") {
                        out.insert("val".into(), without_nulls(v, t));
                    }
                }
                _ => {}
            }
            Value::Object(out)
        }
        (Ty::Result(ok, err), Value::Object(obj)) => Value::Object(
            obj.iter()
                .map(|(k, v)| {
                    let side = match k.as_str() {
                        "ok" => ok.as_deref(),
                        "err" => err.as_deref(),
                        _ => None,
                    };
                    (
                        k.clone(),
                        side.map_or_else(|| v.clone(), |t| without_nulls(v, t)),
                    )
                })
                .collect(),
        ),
        _ => json.clone(),
    }
}

fn object_without_nulls(obj: &Map<String, Value>, fields: &[(String, Ty)]) -> Map<String, Value> {
    obj.iter()
        .filter_map(
            |(k, v)| match fields.iter().find(|(n, _)| json_name(n) == *k) {
                Some((_, Ty::Option(_))) if v.is_null() => None,
                Some((_, t)) => Some((k.clone(), without_nulls(v, t))),
                None => Some((k.clone(), v.clone())),
            },
        )
        .collect()
}

fn case() -> impl Strategy<Value = (Vec<(String, Ty)>, Vec<Value>)> {
    params().prop_flat_map(|params| {
        let values = prop::collection::vec(object(&params), VALUES_PER_CASE);
        (Just(params), values)
    })
}

#[test]
fn schema_and_lowering_agree() {
    let accepted = Cell::new(0u32);
    let refused = Cell::new(0u32);
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&case(), |(params, values)| {
        let fields = wasmtime_params(&params);
        let schema = object_schema(&fields, None).expect("every generated type is offered");
        let judge = jsonschema::validator_for(&schema)
            .map_err(|e| TestCaseError::fail(format!("invalid schema {schema}: {e}")))?;
        for v in &values {
            let obj = v.as_object().expect("arguments are objects");
            let lowered = object_to_fields(&fields, obj, "", None);
            let judged = Value::Object(object_without_nulls(obj, &params));
            let valid = judge.is_valid(&judged);
            prop_assert_eq!(
                valid,
                lowered.is_ok(),
                "schema {} says {} for {} (judged as {}) but lowering says {:?}",
                schema,
                valid,
                v,
                judged,
                lowered.as_ref().map(|_| "ok")
            );
            // Lifting: the JSON text written straight from each value is the text of its
            // `Value` (the observation of a result is written so).
            if let Ok(vals) = &lowered {
                for ((_, val), (_, ty)) in vals.iter().zip(&fields) {
                    let mut written = Vec::new();
                    write_json(val, ty, &mut written);
                    prop_assert_eq!(
                        String::from_utf8(written).unwrap(),
                        to_json(val, ty).to_string()
                    );
                }
            }
            if valid {
                accepted.set(accepted.get() + 1);
            } else {
                refused.set(refused.get() + 1);
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // The generator must exercise both sides, or the property says nothing.
    let total = CASES * VALUES_PER_CASE as u32;
    assert!(
        accepted.get() >= total / 10,
        "only {} of {total} accepted",
        accepted.get()
    );
    assert!(
        refused.get() >= total / 10,
        "only {} of {total} refused",
        refused.get()
    );
}

/// JSON Schema calls `2.0` an integer; Sluice's lowering refuses it (integers must be JSON
/// integers). The generator never puts an integral float where an integer goes, so this test
/// pins the difference down instead.
#[test]
fn integral_float_is_the_documented_difference() {
    let fields = wasmtime_params(&[("start-line".into(), Ty::U32)]);
    let schema = object_schema(&fields, None).expect("u32 is offered");
    let judge = jsonschema::validator_for(&schema).expect("valid schema");
    let two = json!({"startLine": 2.0});
    assert!(judge.is_valid(&two));
    assert_eq!(
        object_to_fields(&fields, two.as_object().expect("object"), "", None),
        Err("startLine must be an integer of at least 0; got 2.0".to_string())
    );
    let int = json!({"startLine": 2});
    assert!(judge.is_valid(&int));
    assert!(object_to_fields(&fields, int.as_object().expect("object"), "", None).is_ok());
}

/// The two refusals the property found missing, with their messages: a variant with a field
/// besides `tag` and `val`, and a value on a `result` side that carries nothing.
#[test]
fn variant_fields_and_empty_result_sides_are_refused() {
    let by = Ty::Variant(vec![
        ("whitespace".into(), None),
        ("every".into(), Some(Ty::U32)),
    ]);
    let fields = wasmtime_params(&[("by".into(), by), ("done".into(), Ty::Result(None, None))]);
    let lower =
        |v: Value| object_to_fields(&fields, v.as_object().expect("object"), "", None).map(|_| ());
    assert_eq!(
        lower(json!({"by": {"tag": "every", "val": 3, "count": 1}, "done": {"ok": null}})),
        Err(r#"by has an unknown field "count"; a variant has only "tag" and "val""#.into())
    );
    assert_eq!(
        lower(json!({"by": {"tag": "whitespace"}, "done": {"err": "no"}})),
        Err(r#"done.err must be null; got "no""#.into())
    );
    assert_eq!(
        lower(json!({"by": {"tag": "whitespace", "val": null}, "done": {"ok": null}})),
        Ok(())
    );
}
