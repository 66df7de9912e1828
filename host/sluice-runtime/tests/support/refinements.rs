//! Generated refinements of top-level arguments (a policy's `[functions.f.args.a]`,
//! [`ArgPolicy`]) that the arguments' types take, and argument values near what each allows:
//! its bounds and one past them, its `enum` values and one that is not, strings its
//! `pattern` matches or not.

use proptest::prelude::*;
use proptest::sample::{select, subsequence};
use serde_json::{Number, Value};
use sluice_runtime::ArgPolicy;
use sluice_runtime::component::schema::json_name;

use crate::support::types::Ty;
use crate::support::values::{object, value};

/// Strings that the generated `enum`s list and the generated patterns match or not: ASCII
/// and other digits, line terminators, an empty string.
pub(crate) const STRINGS: &[&str] = &[
    "words", "lines", "/data/a", "/etc/x", "ab", "abab", "a1", "42", "", "x\ny", "é", "٤٢", "a\r",
];

/// Patterns in JSON Schema's dialect, some whose meaning there differs from the `regex`
/// crate's own (`\d`, `\w`, `.`).
pub(crate) const PATTERNS: &[&str] = &[
    "^/data/", "^[a-z]+$", r"^\d+$", "^.{2}$", "b$", "^(ab)*$", "é|x", r"\w", "^$", "[0-9]",
    r"^\S+$",
];

/// The bounds of an integer type.
fn int_range(ty: &Ty) -> Option<(i128, i128)> {
    Some(match ty {
        Ty::U8 => (0, u8::MAX.into()),
        Ty::U16 => (0, u16::MAX.into()),
        Ty::U32 => (0, u32::MAX.into()),
        Ty::U64 => (0, u64::MAX.into()),
        Ty::S8 => (i8::MIN.into(), i8::MAX.into()),
        Ty::S16 => (i16::MIN.into(), i16::MAX.into()),
        Ty::S32 => (i32::MIN.into(), i32::MAX.into()),
        Ty::S64 => (i64::MIN.into(), i64::MAX.into()),
        _ => return None,
    })
}

/// `n` as a JSON number, when it is one of 64 bits.
fn int_number(n: i128) -> Option<Number> {
    i64::try_from(n)
        .map(Number::from)
        .or_else(|_| u64::try_from(n).map(Number::from))
        .ok()
}

/// An integer from `lo` to `hi`: the edges, small numbers, or any.
fn int_bound(lo: i128, hi: i128) -> BoxedStrategy<i128> {
    let edges: Vec<i128> = [lo, lo + 1, -1, 0, 1, 2, 10, hi - 1, hi]
        .into_iter()
        .filter(|n| (lo..=hi).contains(n))
        .collect();
    let lo64 = i64::try_from(lo).unwrap_or(i64::MIN);
    let hi64 = i64::try_from(hi).unwrap_or(i64::MAX);
    prop_oneof![select(edges), (lo64..=hi64).prop_map(i128::from)].boxed()
}

/// A minimum, a maximum or both (never the minimum above the maximum), from `bound`.
fn bounds<T: Clone + PartialOrd + std::fmt::Debug + 'static>(
    bound: BoxedStrategy<T>,
    number: fn(T) -> Option<Number>,
) -> BoxedStrategy<ArgPolicy> {
    (prop::option::of(bound.clone()), prop::option::of(bound))
        .prop_map(move |(a, b)| {
            let (min, max) = match (a, b) {
                (Some(a), Some(b)) if a > b => (Some(b), Some(a)),
                other => other,
            };
            ArgPolicy {
                minimum: min.and_then(number),
                maximum: max.and_then(number),
                ..ArgPolicy::default()
            }
        })
        .boxed()
}

/// A refinement that an argument of type `ty` takes (an `option`'s, its value's), or none.
pub(crate) fn refinement(ty: &Ty) -> BoxedStrategy<Option<ArgPolicy>> {
    let mut inner = ty;
    while let Ty::Option(t) = inner {
        inner = t;
    }
    let specific = match inner {
        Ty::F32 | Ty::F64 => bounds(
            prop_oneof![select(vec![-1.5, 0.0, 0.5, 1.0, 1000.0]), -1e6f64..1e6,].boxed(),
            Number::from_f64,
        ),
        Ty::Str => prop_oneof![
            subsequence(STRINGS, 1..=3).prop_map(|values| ArgPolicy {
                one_of: Some(values.into_iter().map(String::from).collect()),
                ..ArgPolicy::default()
            }),
            select(PATTERNS).prop_map(|p| ArgPolicy {
                pattern: Some(p.to_string()),
                ..ArgPolicy::default()
            }),
        ]
        .boxed(),
        Ty::Enum(cases) => subsequence(cases.clone(), 1..=cases.len())
            .prop_map(|values| ArgPolicy {
                one_of: Some(values),
                ..ArgPolicy::default()
            })
            .boxed(),
        int => match int_range(int) {
            Some((lo, hi)) => bounds(int_bound(lo, hi), int_number),
            None => Just(ArgPolicy::default()).boxed(),
        },
    };
    let described = (specific, any::<bool>()).prop_map(|(mut arg, described)| {
        if described {
            arg.description = Some("A refined argument.".into());
        }
        arg
    });
    prop_oneof![1 => Just(None), 2 => described.prop_map(Some)].boxed()
}

/// Values for an argument of type `ty` near what `arg` allows, or any value of its type when
/// `arg` allows all.
fn near(ty: &Ty, arg: &ArgPolicy) -> BoxedStrategy<Value> {
    let picks = near_values(ty, arg);
    if picks.is_empty() {
        value(ty)
    } else {
        select(picks).boxed()
    }
}

/// The values for an argument of type `ty` near what `arg` allows: each bound, one below and
/// one above it; the `enum` values and one that is not; strings the `pattern` matches or not.
/// Of the type's kind: an integer argument gets no float (see the module docs of the test).
pub(crate) fn near_values(ty: &Ty, arg: &ArgPolicy) -> Vec<Value> {
    let mut inner = ty;
    while let Ty::Option(t) = inner {
        inner = t;
    }
    let mut picks: Vec<Value> = Vec::new();
    for b in [&arg.minimum, &arg.maximum].into_iter().flatten() {
        match inner {
            Ty::F32 | Ty::F64 => {
                let f = b.as_f64().unwrap_or(0.0);
                picks.extend(
                    [f - 0.25, f, f + 0.25]
                        .into_iter()
                        .filter_map(Number::from_f64)
                        .map(Value::Number),
                );
            }
            _ => {
                let n = b
                    .as_i64()
                    .map(i128::from)
                    .or(b.as_u64().map(i128::from))
                    .unwrap_or(0);
                picks.extend(
                    [n - 1, n, n + 1]
                        .into_iter()
                        .filter_map(int_number)
                        .map(Value::Number),
                );
            }
        }
    }
    if let Some(values) = &arg.one_of {
        picks.extend(values.iter().map(|v| Value::from(v.as_str())));
        picks.push(Value::from(format!("{}!", values[0])));
    }
    if arg.pattern.is_some() {
        picks.extend(STRINGS.iter().map(|s| Value::from(*s)));
    }
    picks
}

/// An object for `fields` ([`object`]) whose refined arguments (`refs`, in the order of
/// `fields`) are often set to a value near what their refinement allows.
pub(crate) fn refined_object(
    fields: &[(String, Ty)],
    refs: &[Option<ArgPolicy>],
) -> BoxedStrategy<Value> {
    let nears: Vec<BoxedStrategy<Option<Value>>> = fields
        .iter()
        .zip(refs)
        .map(|((_, ty), arg)| match arg {
            Some(arg) => prop_oneof![1 => Just(None), 2 => near(ty, arg).prop_map(Some)].boxed(),
            None => Just(None).boxed(),
        })
        .collect();
    let names: Vec<String> = fields.iter().map(|(n, _)| json_name(n)).collect();
    (object(fields), nears)
        .prop_map(move |(mut obj, nears)| {
            if let Value::Object(map) = &mut obj {
                for (name, near) in names.iter().zip(nears) {
                    if let Some(v) = near {
                        map.insert(name.clone(), v);
                    }
                }
            }
            obj
        })
        .boxed()
}
