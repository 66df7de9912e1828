//! Generated JSON arguments for generated types: mostly of the right shape, with junk and
//! near-misses mixed in; and the arguments as the judge sees them (`null`s that mean absent
//! removed).

use proptest::prelude::*;
use proptest::sample::subsequence;
use serde_json::{Map, Value, json};
use sluice_runtime::component::schema::json_name;

use crate::support::types::Ty;

/// Values that are rarely right for any type: wrong JSON kinds, floats with a fraction
/// (never integral, see the module docs), near-miss objects.
pub(crate) fn junk() -> BoxedStrategy<Value> {
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
pub(crate) fn integer(min: i128, max: i128) -> BoxedStrategy<Value> {
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
pub(crate) fn value(ty: &Ty) -> BoxedStrategy<Value> {
    prop_oneof![6 => shaped(ty), 1 => junk()].boxed()
}

pub(crate) fn shaped(ty: &Ty) -> BoxedStrategy<Value> {
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
        // Some strings that the generated `enum` and `pattern` refinements name or match.
        Ty::Str => prop_oneof![
            ".{0,4}".prop_map(Value::from),
            prop::sample::select(crate::support::refinements::STRINGS).prop_map(Value::from),
        ]
        .boxed(),
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
pub(crate) fn object(fields: &[(String, Ty)]) -> BoxedStrategy<Value> {
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
pub(crate) fn without_nulls(json: &Value, ty: &Ty) -> Value {
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

pub(crate) fn object_without_nulls(
    obj: &Map<String, Value>,
    fields: &[(String, Ty)],
) -> Map<String, Value> {
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
