//! `[functions.<f>]` of a policy (`[tools.NAME.functions.<f>]` in `sluice.toml`): one
//! function's tool name and description, and the refinements of its arguments,
//! `[functions.<f>.args.<a>]` (docs/configuration.md#argument-refinements): what the model is
//! told of an argument (`description`) and what a call may give, within the argument's WIT
//! type (`minimum`, `maximum`, `enum`, `pattern`).
//!
//! What needs only the policy is checked here: the types of the values, `minimum` not above
//! `maximum`, a non-empty `enum` of distinct strings, a `pattern` that compiles, not both
//! `enum` and `pattern`. What needs the component's types (that the argument exists, that a
//! bound fits its integer type, that `enum` lists cases of a WIT `enum`) is checked when the
//! component loads, by the runtime.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Number;

use crate::ConfigError;
use crate::file::Raw;
use sluice_grants::{ArgPolicy, FunctionPolicy};
use sluice_protocol::{TOOL_NAME_RULE, valid_tool_name};

/// What `minimum` and `maximum` take.
pub const BOUND_RULE: &str = "a number (an integer; a float only for an f32 or f64 argument)";

/// What `enum` takes.
pub const ENUM_RULE: &str = "a non-empty array of distinct strings, like [\"words\", \"lines\"]";

/// What `pattern` takes.
pub const PATTERN_RULE: &str = "a regular expression as JSON Schema's pattern takes it (ECMA-262 syntax, without look-around or backreferences)";

/// `[functions.FUNC]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FunctionFile {
    name: Option<String>,
    description: Option<String>,
    #[serde(default)]
    args: BTreeMap<String, ArgFile>,
}

/// `[functions.FUNC.args.ARG]` as written; the bounds and `enum` take any value, so that
/// their checks say what is allowed.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ArgFile {
    description: Option<String>,
    minimum: Option<Raw>,
    maximum: Option<Raw>,
    #[serde(rename = "enum")]
    one_of: Option<Vec<Raw>>,
    pattern: Option<String>,
}

/// Checks the `functions` table of a policy. `value_error` makes the error of a key below
/// the policy (`functions.count.args.top.minimum`), its value as written and what is
/// allowed.
///
/// # Errors
/// The first key whose value is not allowed: a tool name outside [`TOOL_NAME_RULE`], a bound
/// that is not a finite number ([`BOUND_RULE`]), a `maximum` below the `minimum`, an `enum`
/// that is not [`ENUM_RULE`], a `pattern` that does not compile ([`PATTERN_RULE`]), or a
/// `pattern` beside an `enum`.
pub(crate) fn functions(
    files: &BTreeMap<String, FunctionFile>,
    value_error: &dyn Fn(&str, String, &str) -> ConfigError,
) -> Result<BTreeMap<String, FunctionPolicy>, ConfigError> {
    let mut out = BTreeMap::new();
    for (function, f) in files {
        if let Some(new) = &f.name
            && !(new.len() <= 64 && valid_tool_name(new))
        {
            return Err(value_error(
                &format!("functions.{function}.name"),
                format!("{new:?}"),
                &format!("a tool name: {TOOL_NAME_RULE}"),
            ));
        }
        let mut args = BTreeMap::new();
        for (arg, a) in &f.args {
            let at = |key: &str| format!("functions.{function}.args.{arg}.{key}");
            args.insert(
                arg.clone(),
                arg_policy(a, &|key, value, allowed| {
                    value_error(&at(key), value, allowed)
                })?,
            );
        }
        out.insert(
            function.clone(),
            FunctionPolicy {
                name: f.name.clone(),
                description: f.description.clone(),
                args,
            },
        );
    }
    Ok(out)
}

/// Checks one `[functions.FUNC.args.ARG]`; `value_error` takes the key within it.
fn arg_policy(
    a: &ArgFile,
    value_error: &dyn Fn(&str, String, &str) -> ConfigError,
) -> Result<ArgPolicy, ConfigError> {
    let bound = |key: &str, raw: Option<&Raw>| -> Result<Option<Number>, ConfigError> {
        raw.map(|raw| number(raw).ok_or_else(|| value_error(key, raw.shown(), BOUND_RULE)))
            .transpose()
    };
    let minimum = bound("minimum", a.minimum.as_ref())?;
    let maximum = bound("maximum", a.maximum.as_ref())?;
    if let (Some(min), Some(max)) = (&minimum, &maximum)
        && compare(min, max) == Ordering::Greater
    {
        return Err(value_error(
            "maximum",
            max.to_string(),
            &format!("a number of at least its minimum, {min}"),
        ));
    }
    let one_of = match &a.one_of {
        None => None,
        Some(items) => {
            let strings: Option<Vec<String>> = items
                .iter()
                .map(|i| match i {
                    Raw::String(s) => Some(s.clone()),
                    _ => None,
                })
                .collect();
            let distinct = |s: &[String]| s.iter().enumerate().all(|(i, v)| !s[..i].contains(v));
            match strings {
                Some(s) if !s.is_empty() && distinct(&s) => Some(s),
                _ => {
                    let shown: Vec<String> = items.iter().map(Raw::shown).collect();
                    return Err(value_error(
                        "enum",
                        format!("[{}]", shown.join(", ")),
                        ENUM_RULE,
                    ));
                }
            }
        }
    };
    if let Some(p) = &a.pattern {
        if one_of.is_some() {
            return Err(value_error(
                "pattern",
                format!("{p:?}"),
                "left out when enum is set: enum already lists every value allowed",
            ));
        }
        if let Err(why) = check_pattern(p) {
            return Err(value_error(
                "pattern",
                format!("{p:?}"),
                &format!("{PATTERN_RULE}; {why}"),
            ));
        }
    }
    Ok(ArgPolicy {
        description: a.description.clone(),
        minimum,
        maximum,
        one_of,
        pattern: a.pattern.clone(),
    })
}

/// A TOML integer or finite float as a JSON number; `None` for anything else (a string, a
/// boolean, an infinity, an integer beyond 64 bits).
fn number(raw: &Raw) -> Option<Number> {
    match raw {
        Raw::Integer(digits) => digits
            .parse::<i64>()
            .map(Number::from)
            .or_else(|_| digits.parse::<u64>().map(Number::from))
            .ok(),
        Raw::Float(f) => Number::from_f64(*f),
        _ => None,
    }
}

/// `a` against `b`: exactly for two integers, as floats otherwise (both are finite).
fn compare(a: &Number, b: &Number) -> Ordering {
    let int = |n: &Number| n.as_i64().map(i128::from).or(n.as_u64().map(i128::from));
    match (int(a), int(b)) {
        (Some(a), Some(b)) => a.cmp(&b),
        _ => {
            let f = |n: &Number| n.as_f64().unwrap_or(0.0);
            f(a).partial_cmp(&f(b)).unwrap_or(Ordering::Equal)
        }
    }
}

/// Why a `pattern` is not a regular expression Sluice can check (the text after
/// [`PATTERN_RULE`] in the message).
#[derive(Debug, thiserror::Error)]
enum PatternSyntaxError {
    /// It translates, but the `regex` crate's parser refuses it: the last line of its
    /// message (which points into the pattern).
    #[error("{}", last_line(.0))]
    Regex(#[source] Box<regex_syntax::Error>),
    /// The `regex` crate's syntax, which JSON Schema's dialect does not have.
    #[error("it is not ECMA-262 syntax")]
    NotEcma262,
}

/// The last line of `e`'s message without its `error: ` (the parser's message first prints
/// the pattern and a caret line).
fn last_line(e: &regex_syntax::Error) -> String {
    let s = e.to_string();
    s.lines()
        .last()
        .map(|l| l.trim_start_matches("error: ").to_string())
        .unwrap_or(s)
}

/// Checks that `pattern` is a regular expression Sluice can check: JSON Schema's dialect
/// (ECMA-262), translated as the `jsonschema` crate does, parsed as the `regex` crate parses
/// it (the same messages). Only the compiled size is not checked here: the runtime checks it
/// when it compiles the pattern, as it loads the tool.
fn check_pattern(pattern: &str) -> Result<(), PatternSyntaxError> {
    match jsonschema_regex::to_rust_regex(pattern) {
        Ok(rust) => regex_syntax::parse(&rust)
            .map(drop)
            .map_err(|e| PatternSyntaxError::Regex(Box::new(e))),
        Err(()) => Err(match regex_syntax::parse(pattern) {
            Err(e) => PatternSyntaxError::Regex(Box::new(e)),
            Ok(_) => PatternSyntaxError::NotEcma262,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(toml_text: &str) -> Result<BTreeMap<String, FunctionPolicy>, String> {
        let files: BTreeMap<String, FunctionFile> = toml::from_str(toml_text).unwrap();
        let error = |key: &str, value: String, allowed: &str| ConfigError::Value {
            key: format!("tools.wc.{key}"),
            value,
            allowed: allowed.to_string(),
            origin: "sluice.toml".into(),
        };
        functions(&files, &error).map_err(|e| e.to_string())
    }

    #[test]
    fn refinements_are_read() {
        let f = check(
            "[count]\ndescription = \"Count\"\n[count.args.top]\ndescription = \"How many\"\nminimum = 1\nmaximum = 100\n[count.args.mode]\nenum = [\"words\", \"lines\"]\n[count.args.path]\npattern = '^/data/'\n[count.args.ratio]\nminimum = -0.5\nmaximum = 2\n",
        )
        .unwrap();
        let count = &f["count"];
        assert_eq!(count.description.as_deref(), Some("Count"));
        assert_eq!(
            count.args["top"],
            ArgPolicy {
                description: Some("How many".into()),
                minimum: Some(1.into()),
                maximum: Some(100.into()),
                one_of: None,
                pattern: None,
            }
        );
        assert_eq!(
            count.args["mode"].one_of,
            Some(vec!["words".to_string(), "lines".to_string()])
        );
        assert_eq!(count.args["path"].pattern.as_deref(), Some("^/data/"));
        assert_eq!(count.args["ratio"].minimum, Number::from_f64(-0.5));
        assert_eq!(count.args["ratio"].maximum, Some(2.into()));
    }

    #[test]
    fn refinements_that_cannot_hold_are_refused_naming_the_key() {
        let cases = [
            (
                "[count.args.top]\nminimum = \"1\"\n",
                "tools.wc.functions.count.args.top.minimum must be a number (an integer; a float only for an f32 or f64 argument); got \"1\" (from sluice.toml)",
            ),
            (
                "[count.args.top]\nmaximum = true\n",
                "tools.wc.functions.count.args.top.maximum must be a number (an integer; a float only for an f32 or f64 argument); got true (from sluice.toml)",
            ),
            (
                "[count.args.top]\nmaximum = inf\n",
                "tools.wc.functions.count.args.top.maximum must be a number (an integer; a float only for an f32 or f64 argument); got inf (from sluice.toml)",
            ),
            (
                "[count.args.top]\nminimum = 50\nmaximum = 10\n",
                "tools.wc.functions.count.args.top.maximum must be a number of at least its minimum, 50; got 10 (from sluice.toml)",
            ),
            (
                "[count.args.top]\nminimum = 0.5\nmaximum = 0\n",
                "tools.wc.functions.count.args.top.maximum must be a number of at least its minimum, 0.5; got 0 (from sluice.toml)",
            ),
            (
                "[count.args.mode]\nenum = []\n",
                "tools.wc.functions.count.args.mode.enum must be a non-empty array of distinct strings, like [\"words\", \"lines\"]; got [] (from sluice.toml)",
            ),
            (
                "[count.args.mode]\nenum = [\"words\", 2]\n",
                "tools.wc.functions.count.args.mode.enum must be a non-empty array of distinct strings, like [\"words\", \"lines\"]; got [\"words\", 2] (from sluice.toml)",
            ),
            (
                "[count.args.mode]\nenum = [\"words\", \"words\"]\n",
                "tools.wc.functions.count.args.mode.enum must be a non-empty array of distinct strings, like [\"words\", \"lines\"]; got [\"words\", \"words\"] (from sluice.toml)",
            ),
            (
                "[count.args.path]\npattern = \"(\"\n",
                "tools.wc.functions.count.args.path.pattern must be a regular expression as JSON Schema's pattern takes it (ECMA-262 syntax, without look-around or backreferences); unclosed group; got \"(\" (from sluice.toml)",
            ),
            (
                "[count.args.path]\npattern = \"a(?=b)\"\n",
                "tools.wc.functions.count.args.path.pattern must be a regular expression as JSON Schema's pattern takes it (ECMA-262 syntax, without look-around or backreferences); look-around, including look-ahead and look-behind, is not supported; got \"a(?=b)\" (from sluice.toml)",
            ),
            (
                "[count.args.mode]\nenum = [\"a\"]\npattern = \"^a\"\n",
                "tools.wc.functions.count.args.mode.pattern must be left out when enum is set: enum already lists every value allowed; got \"^a\" (from sluice.toml)",
            ),
            (
                "[count]\nname = \"a b\"\n",
                "tools.wc.functions.count.name must be a tool name: 1 to 64 characters of A-Z, a-z, 0-9, `_` and `-`; got \"a b\" (from sluice.toml)",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(check(text).unwrap_err(), expected, "{text}");
        }
    }

    #[test]
    fn an_unknown_key_of_an_argument_is_a_parse_error() {
        let e = toml::from_str::<BTreeMap<String, FunctionFile>>("[count.args.top]\nmin = 1\n")
            .unwrap_err();
        assert_eq!(
            e.message(),
            "unknown field `min`, expected one of `description`, `minimum`, `maximum`, `enum`, `pattern`"
        );
    }
}
