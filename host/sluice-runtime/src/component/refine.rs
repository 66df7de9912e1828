//! A policy's refinements of a function's arguments (`[functions.<f>.args.<a>]`,
//! [`ArgPolicy`]): checked against the arguments' WIT types when the component loads
//! ([`refine`]), then merged into the function's [`FuncDocs`], so that the JSON schema the
//! model sees shows them ([`crate::component::schema`]) and the lowering of a call's
//! arguments enforces them ([`crate::call::value`]) with the checks below.
//!
//! What each refinement takes:
//!
//! | key | argument types | what it does |
//! |---|---|---|
//! | `description` | any | the argument's `description` |
//! | `minimum`, `maximum` | integers (an integer within the type's range), `f32`, `f64` (any finite number) | the least and greatest value, inclusive |
//! | `enum` | `string` (any strings), WIT `enum` (some of its cases) | the only values allowed |
//! | `pattern` | `string` | a regular expression the value must match ([`Pattern`]) |
//!
//! An `option<T>` argument takes what `T` takes. Only top-level arguments are refined: the
//! fields of a record argument, the items of a list and the cases of a variant are not.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use serde_json::Number;
use wasmtime::component::types::Type;

use crate::component::argument_error::{ArgumentError, short_json};
use crate::component::docs::{ArgDocs, FuncDocs};
use crate::component::pattern::Pattern;
use crate::component::refinement_error::RefinementError;
use crate::component::schema::{integer_bounds, json_name};
use crate::policy::{ArgPolicy, toml_key};

/// Checks the refinements `args` of the function the policy calls `function` against its
/// arguments `fields` (WIT names and types) and merges them into `docs`. `key_at` says where
/// a policy key (`functions.count.args.top.minimum`) is set, for messages
/// ([`PolicyOrigin::key_at`](crate::policy::PolicyOrigin::key_at)).
///
/// # Errors
/// [`RefinementError`], one line naming the key, its value and what is wrong: an argument
/// the function does not have (with the ones it has), two keys for one argument, `minimum`
/// or `maximum` on an argument that is not a number, outside an integer type's range, or
/// beyond the other bound (the policy's or the WIT doc comment's), `enum` on an argument
/// that is neither a string nor a WIT `enum`, empty, with a value twice or with a value that
/// is not one of the enum's cases, `pattern` on an argument that is not a string, beside
/// `enum`, or not [`PATTERN_RULE`](crate::component::pattern::PATTERN_RULE).
pub fn refine(
    fields: &[(String, Type)],
    docs: &mut FuncDocs,
    function: &str,
    args: &BTreeMap<String, ArgPolicy>,
    key_at: &dyn Fn(&str) -> String,
) -> Result<(), RefinementError> {
    let mut seen: HashMap<&str, &str> = HashMap::new();
    for (key, arg) in args {
        let path = format!("functions.{}.args.{}", toml_key(function), toml_key(key));
        let at = |k: &str| key_at(&format!("{path}.{k}"));
        let Some((wit, ty)) = fields
            .iter()
            .find(|(n, _)| n == key || json_name(n) == *key)
        else {
            return Err(RefinementError::NoArgument {
                at: key_at(&path),
                arguments: fields.iter().map(|(n, _)| n.clone()).collect(),
            });
        };
        if let Some(first) = seen.insert(wit, key) {
            let first = format!("functions.{}.args.{}", toml_key(function), toml_key(first));
            return Err(RefinementError::TwoKeys {
                first: key_at(&first),
                second: key_at(&path),
                name: wit.clone(),
            });
        }
        let mut inner = ty.clone();
        while let Type::Option(o) = inner {
            inner = o.ty();
        }
        let merged = check(wit, &inner, arg, docs.args.get(wit), &at)?;
        docs.args.insert(wit.clone(), merged);
    }
    Ok(())
}

/// `arg`, the refinements of argument `name` (whose type, options unwrapped, is `ty`),
/// merged over its docs `docs`, once checked.
fn check(
    name: &str,
    ty: &Type,
    arg: &ArgPolicy,
    docs: Option<&ArgDocs>,
    at: &dyn Fn(&str) -> String,
) -> Result<ArgDocs, RefinementError> {
    let is = type_name(ty);
    for (key, bound) in [("minimum", &arg.minimum), ("maximum", &arg.maximum)] {
        let Some(n) = bound else { continue };
        match ty {
            Type::Float32 | Type::Float64 => {}
            int => match integer_bounds(int) {
                Some((min, max)) => {
                    if !as_i128(n).is_some_and(|i| (min..=max).contains(&i)) {
                        return Err(RefinementError::OutOfRange {
                            at: at(key),
                            value: n.clone(),
                            name: name.to_string(),
                            is,
                            min,
                            max,
                        });
                    }
                }
                None => {
                    return Err(RefinementError::BoundNotNumber {
                        at: at(key),
                        value: n.clone(),
                        name: name.to_string(),
                        is,
                    });
                }
            },
        }
    }
    if let Some(values) = &arg.one_of {
        match ty {
            Type::String => {}
            Type::Enum(e) => {
                let cases: Vec<&str> = e.names().collect();
                if let Some(v) = values.iter().find(|v| !cases.contains(&v.as_str())) {
                    return Err(RefinementError::NotACase {
                        at: at("enum"),
                        value: v.clone(),
                        name: name.to_string(),
                        cases: cases.iter().map(ToString::to_string).collect(),
                    });
                }
            }
            _ => {
                return Err(RefinementError::EnumNotString {
                    at: at("enum"),
                    shown: serde_json::to_string(values).unwrap_or_default(),
                    name: name.to_string(),
                    is,
                });
            }
        }
        if values.is_empty() {
            return Err(RefinementError::EnumEmpty { at: at("enum") });
        }
        if let Some((i, v)) = values
            .iter()
            .enumerate()
            .find(|(i, v)| values[..*i].contains(v))
        {
            return Err(RefinementError::EnumTwice {
                at: at("enum"),
                value: v.clone(),
                first: values[..i].iter().position(|x| x == v).unwrap_or(0) + 1,
                second: i + 1,
            });
        }
    }
    let pattern = match &arg.pattern {
        None => None,
        Some(p) if !matches!(ty, Type::String) => {
            return Err(RefinementError::PatternNotString {
                at: at("pattern"),
                pattern: p.clone(),
                name: name.to_string(),
                is,
            });
        }
        Some(p) if arg.one_of.is_some() => {
            return Err(RefinementError::PatternBesideEnum {
                at: at("pattern"),
                pattern: p.clone(),
            });
        }
        Some(p) => Some(Pattern::new(p).map_err(|why| RefinementError::Pattern {
            at: at("pattern"),
            pattern: p.clone(),
            why,
        })?),
    };
    let mut merged = docs.cloned().unwrap_or_default();
    if let Some(d) = &arg.description {
        merged.description = Some(d.clone());
    }
    if let Some(n) = &arg.minimum {
        merged.minimum = Some(n.clone());
    }
    if let Some(n) = &arg.maximum {
        merged.maximum = Some(n.clone());
    }
    if let Some(values) = &arg.one_of {
        merged.one_of = Some(values.clone());
    }
    if pattern.is_some() {
        merged.pattern = pattern;
    }
    // A bound of the policy against the other bound, which may be the WIT doc comment's.
    if let (Some(min), Some(max)) = (&merged.minimum, &merged.maximum)
        && compare(min, max) == Ordering::Greater
    {
        return Err(if arg.minimum.is_some() {
            RefinementError::MinimumAboveMaximum {
                at: at("minimum"),
                min: min.clone(),
                name: name.to_string(),
                max: max.clone(),
            }
        } else {
            RefinementError::MaximumBelowMinimum {
                at: at("maximum"),
                max: max.clone(),
                name: name.to_string(),
                min: min.clone(),
            }
        });
    }
    Ok(merged)
}

/// `ty` in a message: `a u32`, `an enum`, `a record`.
fn type_name(ty: &Type) -> &'static str {
    match ty {
        Type::Bool => "a bool",
        Type::S8 => "an s8",
        Type::U8 => "a u8",
        Type::S16 => "an s16",
        Type::U16 => "a u16",
        Type::S32 => "an s32",
        Type::U32 => "a u32",
        Type::S64 => "an s64",
        Type::U64 => "a u64",
        Type::Float32 => "an f32",
        Type::Float64 => "an f64",
        Type::Char => "a char",
        Type::String => "a string",
        Type::List(_) => "a list",
        Type::Record(_) => "a record",
        Type::Tuple(_) => "a tuple",
        Type::Variant(_) => "a variant",
        Type::Enum(_) => "an enum",
        Type::Option(_) => "an option",
        Type::Result(_) => "a result",
        Type::Flags(_) => "flags",
        _ => "a type a model cannot give",
    }
}

/// `n` as an integer, if it is one.
pub(crate) fn as_i128(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

/// `a` against `b`: exactly for two integers, as floats otherwise (JSON numbers are finite).
fn compare(a: &Number, b: &Number) -> Ordering {
    match (as_i128(a), as_i128(b)) {
        (Some(a), Some(b)) => a.cmp(&b),
        _ => {
            let f = |n: &Number| n.as_f64().unwrap_or(0.0);
            f(a).partial_cmp(&f(b)).unwrap_or(Ordering::Equal)
        }
    }
}

/// The string `s` given for argument `name` against its refinements: one of `enum`, a match
/// of `pattern`.
///
/// # Errors
/// `<name> must be one of: "a", "b"; got "c"`, or `<name> must match the regular
/// expression <pattern>; got "c"`; the value cut to 100 bytes.
pub(crate) fn check_string(
    docs: Option<&ArgDocs>,
    name: &str,
    s: &str,
) -> Result<(), ArgumentError> {
    let Some(docs) = docs else { return Ok(()) };
    let got = || short_json(&serde_json::Value::from(s));
    if let Some(values) = &docs.one_of
        && !values.iter().any(|v| v == s)
    {
        let listed: Vec<String> = values
            .iter()
            .map(|v| serde_json::Value::from(v.as_str()).to_string())
            .collect();
        return Err(ArgumentError::expected(
            name,
            format!("one of: {}", listed.join(", ")),
            got(),
        ));
    }
    if let Some(p) = &docs.pattern
        && !p.is_match(s)
    {
        return Err(ArgumentError::NoMatch {
            name: name.to_string(),
            pattern: p.as_str().to_string(),
            got: got(),
        });
    }
    Ok(())
}

/// The float `f` given for argument `name` (shown as `shown`) against its bounds.
///
/// # Errors
/// `<name> must be a number of at least <min>; got <value>`, or `… of at most <max>; …`.
pub(crate) fn check_float(
    docs: Option<&ArgDocs>,
    name: &str,
    f: f64,
    shown: &str,
) -> Result<(), ArgumentError> {
    let Some(docs) = docs else { return Ok(()) };
    if let Some(min) = &docs.minimum
        && min.as_f64().is_some_and(|m| f < m)
    {
        return Err(ArgumentError::expected(
            name,
            format!("a number of at least {min}"),
            shown.to_string(),
        ));
    }
    if let Some(max) = &docs.maximum
        && max.as_f64().is_some_and(|m| f > m)
    {
        return Err(ArgumentError::expected(
            name,
            format!("a number of at most {max}"),
            shown.to_string(),
        ));
    }
    Ok(())
}
