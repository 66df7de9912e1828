//! Generated WIT types ([`Ty`]) and the parameter types wasmtime reads back from a
//! component built from them ([`wasmtime_params`]).

use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::sample::subsequence;
use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime::component::types::{ComponentItem, Type};
use wit_component::{ComponentEncoder, StringEncoding, dummy_module, embed_component_metadata};
use wit_parser::{LiftLowerAbi, ManglingAndAbi, Resolve};

/// A WIT type, as generated.
#[derive(Clone, Debug)]
pub(crate) enum Ty {
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
pub(crate) const NAMES: &[&str] = &[
    "alpha",
    "start-line",
    "path",
    "max-results",
    "x",
    "off-by-one",
];

pub(crate) fn names() -> impl Strategy<Value = Vec<String>> {
    subsequence(NAMES, 1..=4).prop_map(|v| v.into_iter().map(String::from).collect())
}

pub(crate) fn leaf() -> impl Strategy<Value = Ty> {
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

pub(crate) fn ty() -> impl Strategy<Value = Ty> {
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

/// The function's parameters (zero to three, named like record fields): any type, or often
/// a leaf or an optional leaf, the types a policy's refinements are for.
pub(crate) fn params() -> impl Strategy<Value = Vec<(String, Ty)>> {
    let param = prop_oneof![
        2 => ty(),
        1 => leaf(),
        1 => leaf().prop_map(|t| Ty::Option(Box::new(t))),
    ];
    subsequence(NAMES, 0..=3).prop_flat_map(move |n| {
        let k = n.len();
        prop::collection::vec(param.clone(), k)
            .prop_map(move |t| n.iter().map(|s| s.to_string()).zip(t).collect())
    })
}

/// WIT text for `ty`; named types go to `defs`.
pub(crate) fn wit(ty: &Ty, defs: &mut Vec<String>) -> String {
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
pub(crate) fn named(defs: &mut Vec<String>, kind: &str, body: &str) -> String {
    let name = format!("t{}", defs.len());
    defs.push(format!("{kind} {name} {{ {body} }}"));
    name
}

pub(crate) fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(Engine::default)
}

/// The parameter types of `f: func(<params>)`, read back from a component built from WIT.
pub(crate) fn wasmtime_params(params: &[(String, Ty)]) -> Vec<(String, Type)> {
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
