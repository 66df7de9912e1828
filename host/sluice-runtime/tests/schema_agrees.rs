//! The JSON schema a model is shown (`schema::object_schema`) and the argument lowering
//! (`value::object_to_fields`) agree: for generated WIT types, generated refinements of the
//! arguments (a policy's `[functions.f.args.a]`: `minimum`, `maximum`, `enum`, `pattern`,
//! merged by `refine::refine`) and generated JSON arguments, every value the schema accepts
//! lowers and every value it rejects is refused. The `jsonschema` crate is the judge.
//!
//! Each case writes a WIT interface with one function over generated types (records,
//! options, lists, tuples, enums, variants, flags, results, every integer width, floats,
//! `char`, strings, bools), builds a component from it (`wit-component`'s dummy module), reads
//! the parameter types back through wasmtime (as `component.rs` does for a real tool),
//! refines some of its arguments as their types allow, and checks a batch of generated
//! arguments, most of them near-misses of a valid value (one past a bound, a value not in an
//! `enum`, a string a `pattern` does not match); and that every value lowered lifts back to
//! the same JSON text by `value::write_json` as through `value::to_json`. The generators are
//! in `support/`.
//!
//! Two documented rules ([docs/observations.md](../../../docs/observations.md#arguments))
//! sit between the two sides:
//! - `null` means absent where a thing may be absent (an optional field or argument, a flag,
//!   the `val` of a variant case that carries none), while the schema shows only the form
//!   without it: the judge sees the arguments with those `null`s removed
//!   (`support::values::without_nulls`);
//! - JSON Schema's `integer` is any number with no fraction, while Sluice refuses `2.0` for an
//!   integer: the generator never puts an integral float where an integer goes, and
//!   [`integral_float_is_the_documented_difference`] pins the difference down.

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::cell::Cell;
use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};
use sluice_runtime::ArgPolicy;
use sluice_runtime::call::value::{object_to_fields, to_json, to_val, write_json};
use sluice_runtime::component::docs::FuncDocs;
use sluice_runtime::component::refine::refine;
use sluice_runtime::component::schema::{json_name, object_schema};

use support::refinements::{near_values, refined_object, refinement};
use support::types::{Ty, params, wasmtime_params};
use support::values::object_without_nulls;

/// Generated functions (one component each).
const CASES: u32 = 256;
/// Generated arguments per function.
const VALUES_PER_CASE: usize = 24;

/// A function's parameters, a refinement (or none) of each, and arguments for it.
type Case = (Vec<(String, Ty)>, Vec<Option<ArgPolicy>>, Vec<Value>);

fn case() -> impl Strategy<Value = Case> {
    params()
        .prop_flat_map(|params| {
            let refs: Vec<_> = params.iter().map(|(_, t)| refinement(t)).collect();
            (Just(params), refs)
        })
        .prop_flat_map(|(params, refs)| {
            let values = prop::collection::vec(refined_object(&params, &refs), VALUES_PER_CASE);
            (Just(params), Just(refs), values)
        })
}

#[test]
fn schema_and_lowering_agree() {
    let accepted = Cell::new(0u32);
    let refused = Cell::new(0u32);
    // A refined argument alone, at a value near what its refinement allows: accepted, or
    // refused for the refinement alone (its type takes the value).
    let near_accepted = Cell::new(0u32);
    let refused_by_refinement = Cell::new(0u32);
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&case(), |(params, refs, values)| {
        let fields = wasmtime_params(&params);
        let args: BTreeMap<String, ArgPolicy> = params
            .iter()
            .zip(&refs)
            .filter_map(|((name, _), arg)| Some((name.clone(), arg.clone()?)))
            .collect();
        let mut docs = FuncDocs::default();
        refine(&fields, &mut docs, "f", &args, &|key| key.to_string()).map_err(|e| {
            TestCaseError::fail(format!("a refinement its type takes was refused: {e}"))
        })?;
        let schema = object_schema(&fields, Some(&docs)).expect("every generated type is offered");
        let judge = jsonschema::validator_for(&schema)
            .map_err(|e| TestCaseError::fail(format!("invalid schema {schema}: {e}")))?;
        let lower = |v: &Value| {
            let obj = v.as_object().expect("arguments are objects");
            object_to_fields(&fields, obj, "", Some(&docs.args))
        };
        let agree = |v: &Value| -> Result<(), TestCaseError> {
            let obj = v.as_object().expect("arguments are objects");
            let lowered = lower(v);
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
            Ok(())
        };
        for v in &values {
            agree(v)?;
            // Arguments that the types alone accept, with each refined argument set to each
            // value near what its refinement allows.
            let obj = v.as_object().expect("arguments are objects");
            if object_to_fields(&fields, obj, "", None).is_err() {
                continue;
            }
            for ((name, ty), arg) in params.iter().zip(&refs) {
                for near in arg.iter().flat_map(|arg| near_values(ty, arg)) {
                    let mut changed = obj.clone();
                    changed.insert(json_name(name), near);
                    agree(&Value::Object(changed))?;
                }
            }
        }
        // Each refined argument alone, at every value near what its refinement allows:
        // its property's schema and its lowering.
        for (((name, ty), (_, wit_ty)), arg) in params.iter().zip(&fields).zip(&refs) {
            let Some(arg) = arg else { continue };
            let property = &schema["properties"][json_name(name)];
            let judge = jsonschema::validator_for(property)
                .map_err(|e| TestCaseError::fail(format!("invalid schema {property}: {e}")))?;
            for near in near_values(ty, arg) {
                let lowered = to_val(wit_ty, &near, name, docs.args.get(name));
                let valid = judge.is_valid(&near);
                prop_assert_eq!(
                    valid,
                    lowered.is_ok(),
                    "schema {} of {:?} says {} for {} but lowering says {:?}",
                    property,
                    arg,
                    valid,
                    near,
                    lowered.as_ref().map(|_| "ok")
                );
                match lowered {
                    Ok(_) => near_accepted.set(near_accepted.get() + 1),
                    Err(_) if to_val(wit_ty, &near, name, None).is_ok() => {
                        refused_by_refinement.set(refused_by_refinement.get() + 1);
                    }
                    Err(_) => {}
                }
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // The generator must exercise both sides, and the refinements, or the property says
    // nothing.
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
    assert!(
        refused_by_refinement.get() >= total / 100,
        "only {} of {total} refused for a refinement alone",
        refused_by_refinement.get()
    );
    assert!(
        near_accepted.get() >= total / 100,
        "only {} of {total} accepted near a refinement's edge",
        near_accepted.get()
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
        object_to_fields(&fields, two.as_object().expect("object"), "", None)
            .map_err(|e| e.to_string()),
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
    let lower = |v: Value| {
        object_to_fields(&fields, v.as_object().expect("object"), "", None)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
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
