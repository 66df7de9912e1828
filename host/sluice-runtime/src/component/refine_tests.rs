//! Tests of [`crate::component::refine`]: what a policy's refinements of arguments may be,
//! the exact messages of those refused, the schema they make and the calls they refuse.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use wasmtime::component::Component;
use wasmtime::component::types::{ComponentItem, Type};
use wit_component::{ComponentEncoder, StringEncoding, dummy_module, embed_component_metadata};
use wit_parser::{LiftLowerAbi, ManglingAndAbi, Resolve};

use crate::call::value::object_to_fields;
use crate::component::docs::{ArgDocs, FuncDocs};
use crate::component::pattern::Pattern;
use crate::component::refine::refine;
use crate::component::schema::object_schema;
use crate::policy::ArgPolicy;

/// The parameters of `count` below, as wasmtime reads them from a component.
fn fields() -> Vec<(String, Type)> {
    let wit = "package t:t;\nworld w {\n  enum unit { bytes, chars, words, lines }\n  record opts { n: u32 }\n  export count: func(top: u32, mode: string, path: option<string>, unit: unit, ratio: f64, small: s8, start-line: option<option<u64>>, opts: opts, flag: bool);\n}\n";
    let mut resolve = Resolve::default();
    let pkg = resolve.push_str("t.wit", wit).unwrap();
    let world = resolve.select_world(&[pkg], Some("w")).unwrap();
    let mut module = dummy_module(&resolve, world, ManglingAndAbi::Legacy(LiftLowerAbi::Sync));
    embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8).unwrap();
    let bytes = ComponentEncoder::default()
        .module(&module)
        .unwrap()
        .validate(true)
        .encode()
        .unwrap();
    let engine = wasmtime::Engine::default();
    let component = Component::new(&engine, &bytes).unwrap();
    let ty = component.component_type();
    let (_, item) = ty.exports(&engine).next().unwrap();
    let ComponentItem::ComponentFunc(f) = item.ty else {
        panic!("count is a function")
    };
    f.params().map(|(n, t)| (n.to_string(), t)).collect()
}

fn key_at(key: &str) -> String {
    format!("{key} in /d/wc.toml")
}

/// `refine` of one argument's refinements over `docs`.
fn refined(arg: &str, policy: ArgPolicy, docs: FuncDocs) -> Result<FuncDocs, String> {
    let mut docs = docs;
    let args = BTreeMap::from([(arg.to_string(), policy)]);
    refine(&fields(), &mut docs, "count", &args, &key_at)
        .map(|()| docs)
        .map_err(|e| e.to_string())
}

fn n(v: Value) -> Option<serde_json::Number> {
    match v {
        Value::Number(n) => Some(n),
        _ => None,
    }
}

fn strings(v: &[&str]) -> Option<Vec<String>> {
    Some(v.iter().map(|s| s.to_string()).collect())
}

#[test]
fn refinements_that_contradict_the_type_are_refused_naming_the_key() {
    let min = |v| ArgPolicy {
        minimum: n(v),
        ..ArgPolicy::default()
    };
    let max = |v| ArgPolicy {
        maximum: n(v),
        ..ArgPolicy::default()
    };
    let one_of = |v: &[&str]| ArgPolicy {
        one_of: strings(v),
        ..ArgPolicy::default()
    };
    let pattern = |p: &str| ArgPolicy {
        pattern: Some(p.into()),
        ..ArgPolicy::default()
    };
    let cases = [
        (
            "tpo",
            min(json!(1)),
            "functions.count.args.tpo in /d/wc.toml names no argument of the function; its arguments are: top, mode, path, unit, ratio, small, start-line, opts, flag",
        ),
        (
            "top",
            min(json!(-1)),
            "functions.count.args.top.minimum in /d/wc.toml is -1, but top is a u32: it must be an integer from 0 to 4294967295",
        ),
        (
            "top",
            max(json!(1.5)),
            "functions.count.args.top.maximum in /d/wc.toml is 1.5, but top is a u32: it must be an integer from 0 to 4294967295",
        ),
        (
            "small",
            max(json!(128)),
            "functions.count.args.small.maximum in /d/wc.toml is 128, but small is an s8: it must be an integer from -128 to 127",
        ),
        (
            "mode",
            min(json!(1)),
            "functions.count.args.mode.minimum in /d/wc.toml is 1, but mode is a string: minimum and maximum are for integer and float arguments",
        ),
        (
            "opts",
            max(json!(3)),
            "functions.count.args.opts.maximum in /d/wc.toml is 3, but opts is a record: minimum and maximum are for integer and float arguments",
        ),
        (
            "top",
            ArgPolicy {
                minimum: n(json!(50)),
                maximum: n(json!(10)),
                ..ArgPolicy::default()
            },
            "functions.count.args.top.minimum in /d/wc.toml is 50, above the maximum of top, 10: it must be at most 10",
        ),
        (
            "top",
            one_of(&["a"]),
            "functions.count.args.top.enum in /d/wc.toml is [\"a\"], but top is a u32: enum is for string and enum arguments",
        ),
        (
            "flag",
            one_of(&["true"]),
            "functions.count.args.flag.enum in /d/wc.toml is [\"true\"], but flag is a bool: enum is for string and enum arguments",
        ),
        (
            "unit",
            one_of(&["words", "chars", "pages"]),
            "functions.count.args.unit.enum in /d/wc.toml lists \"pages\", which is not a case of unit: it must list cases of its enum (bytes, chars, words, lines)",
        ),
        (
            "mode",
            one_of(&[]),
            "functions.count.args.mode.enum in /d/wc.toml is empty: it must list at least one value",
        ),
        (
            "mode",
            one_of(&["a", "b", "a"]),
            "functions.count.args.mode.enum in /d/wc.toml lists \"a\" twice (items 1 and 3): it must list each value once",
        ),
        (
            "unit",
            pattern("^w"),
            "functions.count.args.unit.pattern in /d/wc.toml is \"^w\", but unit is an enum: pattern is for string arguments",
        ),
        (
            "path",
            pattern("("),
            "functions.count.args.path.pattern in /d/wc.toml is \"(\", which is not a regular expression as JSON Schema's pattern takes it (ECMA-262 syntax, without look-around or backreferences): unclosed group",
        ),
        (
            "path",
            pattern(r"(a)\1"),
            "functions.count.args.path.pattern in /d/wc.toml is \"(a)\\\\1\", which is not a regular expression as JSON Schema's pattern takes it (ECMA-262 syntax, without look-around or backreferences): backreferences are not supported",
        ),
        (
            "mode",
            ArgPolicy {
                one_of: strings(&["a"]),
                pattern: Some("^a".into()),
                ..ArgPolicy::default()
            },
            "functions.count.args.mode.pattern in /d/wc.toml is \"^a\" beside an enum: leave it out, the enum lists every value allowed",
        ),
    ];
    for (arg, policy, expected) in cases {
        assert_eq!(
            refined(arg, policy.clone(), FuncDocs::default()).unwrap_err(),
            expected,
            "{arg} {policy:?}"
        );
    }
}

#[test]
fn a_bound_beyond_the_wit_docs_other_bound_is_refused() {
    let mut docs = FuncDocs::default();
    docs.args.insert(
        "top".into(),
        ArgDocs {
            minimum: n(json!(1)),
            maximum: n(json!(10)),
            ..ArgDocs::default()
        },
    );
    let min = ArgPolicy {
        minimum: n(json!(20)),
        ..ArgPolicy::default()
    };
    assert_eq!(
        refined("top", min, docs.clone()).unwrap_err(),
        "functions.count.args.top.minimum in /d/wc.toml is 20, above the maximum of top, 10: it must be at most 10"
    );
    let max = ArgPolicy {
        maximum: n(json!(0)),
        ..ArgPolicy::default()
    };
    assert_eq!(
        refined("top", max, docs.clone()).unwrap_err(),
        "functions.count.args.top.maximum in /d/wc.toml is 0, below the minimum of top, 1: it must be at least 1"
    );
    // Within the other bound, the policy's replaces the doc comment's.
    let max = ArgPolicy {
        maximum: n(json!(5)),
        ..ArgPolicy::default()
    };
    let top = &refined("top", max, docs).unwrap().args["top"];
    assert_eq!(
        (top.minimum.clone(), top.maximum.clone()),
        (n(json!(1)), n(json!(5)))
    );
}

#[test]
fn two_keys_for_one_argument_are_refused() {
    let mut docs = FuncDocs::default();
    let args = BTreeMap::from([
        ("start-line".to_string(), ArgPolicy::default()),
        ("startLine".to_string(), ArgPolicy::default()),
    ]);
    assert_eq!(
        refine(&fields(), &mut docs, "count", &args, &key_at)
            .unwrap_err()
            .to_string(),
        "functions.count.args.start-line in /d/wc.toml and functions.count.args.startLine in /d/wc.toml name one argument, start-line: keep one"
    );
}

/// The refinements of `count` that every other test below uses.
fn count_docs() -> FuncDocs {
    let args = BTreeMap::from([
        (
            "top".to_string(),
            ArgPolicy {
                description: Some("How many words to list".into()),
                minimum: n(json!(1)),
                maximum: n(json!(100)),
                ..ArgPolicy::default()
            },
        ),
        (
            "mode".to_string(),
            ArgPolicy {
                one_of: strings(&["words", "lines"]),
                ..ArgPolicy::default()
            },
        ),
        (
            "path".to_string(),
            ArgPolicy {
                pattern: Some("^/data/".into()),
                ..ArgPolicy::default()
            },
        ),
        (
            "unit".to_string(),
            ArgPolicy {
                one_of: strings(&["words", "lines"]),
                ..ArgPolicy::default()
            },
        ),
        (
            "ratio".to_string(),
            ArgPolicy {
                minimum: n(json!(0)),
                maximum: n(json!(0.5)),
                ..ArgPolicy::default()
            },
        ),
        (
            // By the name the model gives it.
            "startLine".to_string(),
            ArgPolicy {
                maximum: n(json!(5)),
                ..ArgPolicy::default()
            },
        ),
    ]);
    let mut docs = FuncDocs::default();
    refine(&fields(), &mut docs, "count", &args, &key_at).unwrap();
    docs
}

#[test]
fn refinements_are_merged_into_the_schema() {
    let docs = count_docs();
    assert_eq!(
        docs.args["path"].pattern,
        Some(Pattern::new("^/data/").unwrap())
    );
    let schema = object_schema(&fields(), Some(&docs)).unwrap();
    let props = &schema["properties"];
    assert_eq!(
        props["top"],
        json!({"type": "integer", "minimum": 1, "maximum": 100, "description": "How many words to list"})
    );
    assert_eq!(
        props["mode"],
        json!({"type": "string", "enum": ["words", "lines"]})
    );
    assert_eq!(
        props["path"],
        json!({"type": "string", "pattern": "^/data/"})
    );
    assert_eq!(
        props["unit"],
        json!({"type": "string", "enum": ["words", "lines"]})
    );
    assert_eq!(
        props["ratio"],
        json!({"type": "number", "minimum": 0, "maximum": 0.5})
    );
    // An option of an option: the refinement is on the value's own form.
    assert_eq!(
        props["startLine"],
        json!({"anyOf": [{"type": "integer", "minimum": 0, "maximum": 5}, {"type": "null"}]})
    );
}

#[test]
fn a_call_that_breaks_a_refinement_is_refused_with_what_is_allowed() {
    let docs = count_docs();
    let fields = fields();
    let good = json!({"top": 1, "mode": "words", "path": "/data/a", "unit": "lines", "ratio": 0.5, "small": 0, "startLine": 5, "opts": {"n": 0}, "flag": true});
    let lower = |change: Value| {
        let mut args = good.clone();
        for (k, v) in change.as_object().unwrap() {
            args[k] = v.clone();
        }
        object_to_fields(&fields, args.as_object().unwrap(), "", Some(&docs.args))
            .map(drop)
            .map_err(|e| e.to_string())
    };
    assert_eq!(lower(json!({})), Ok(()));
    assert_eq!(lower(json!({"top": 100, "ratio": 0, "path": null})), Ok(()));
    let cases = [
        (
            json!({"top": 0}),
            "top must be an integer of at least 1; got 0",
        ),
        (
            json!({"top": 101}),
            "top must be an integer of at most 100; got 101",
        ),
        (
            json!({"mode": "chars"}),
            r#"mode must be one of: "words", "lines"; got "chars""#,
        ),
        (
            json!({"path": "/etc/passwd"}),
            r#"path must match the regular expression ^/data/; got "/etc/passwd""#,
        ),
        (
            json!({"unit": "bytes"}),
            r#"unit must be one of: words, lines; got "bytes""#,
        ),
        (
            json!({"ratio": 0.75}),
            "ratio must be a number of at most 0.5; got 0.75",
        ),
        (
            json!({"ratio": -1}),
            "ratio must be a number of at least 0; got -1",
        ),
        (
            json!({"startLine": 6}),
            "startLine must be an integer of at most 5; got 6",
        ),
    ];
    for (change, expected) in cases {
        assert_eq!(lower(change.clone()), Err(expected.to_string()), "{change}");
    }
}

#[test]
fn patterns_are_json_schemas_dialect() {
    // `\d` is an ASCII digit and `.` stops at line terminators, as in ECMA-262.
    let digits = Pattern::new(r"^\d+$").unwrap();
    assert!(digits.is_match("042"));
    assert!(!digits.is_match("٤٢"));
    let two = Pattern::new("^.{2}$").unwrap();
    assert!(two.is_match("ab"));
    assert!(!two.is_match("a\r"));
    // Not anchored unless asked.
    assert!(Pattern::new("b").unwrap().is_match("abc"));
    assert_eq!(
        Pattern::new("a(?<=b)").unwrap_err().to_string(),
        "look-around, including look-ahead and look-behind, is not supported"
    );
}
