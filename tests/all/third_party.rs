//! A third-party component is a tool without Sluice-specific code: `acme:textstats`
//! (tests/components/outsider) has its own WIT package and no Sluice import. Its exports
//! become `stats_*` tools whose schemas come from the WIT types and doc comments; calls
//! return its results as JSON; arguments that do not match the types are refused by the
//! host before the guest runs.

use serde_json::{Value, json};
use sluice_runtime::{CallStatus, ToolPolicy};
use sluice_tests::{OUTSIDER_WASM, Sandbox, load_component};

use crate::cache;

/// The cap of these tests.
const CAP: u32 = 65_536;

fn outsider() -> Sandbox {
    Sandbox::with_component(cache(), CAP, OUTSIDER_WASM, |_| {})
}

#[test]
fn schema_snapshot() {
    let toolbox = load_component(cache(), OUTSIDER_WASM, ToolPolicy::default())
        .expect("acme:textstats loads");
    let tools: Vec<Value> = toolbox
        .tools()
        .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema}))
        .collect();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "stats_count",
            "stats_summarize",
            "stats_top_words",
            "stats_split",
            "stats_tokenize",
            "stats_most_common_char",
            "stats_add_counts",
        ]
    );
    assert!(
        toolbox
            .tools()
            .all(|t| t.source == "outsider_textstats.wasm")
    );
    // The descriptions are the host's fallback (`The <export> function of <file>.`): the
    // component carries no WIT doc comments (see `valid_calls_return_exact_results`).
    insta::assert_json_snapshot!("outsider_tools", tools);
}

/// Asserts that `tool` with `args` succeeds with exactly `result`.
fn assert_result(sb: &Sandbox, tool: &str, args: Value, result: Value) {
    let obs = sb.checked(tool, &args);
    assert_eq!(
        obs.status(),
        CallStatus::Ok,
        "{tool} {args}: {}",
        obs.text()
    );
    assert_eq!(
        obs.text(),
        json!({"ok": true, "result": result}).to_string(),
        "{tool} {args}"
    );
}

#[test]
fn valid_calls_return_exact_results() {
    let sb = outsider();
    // An enum argument, all four cases; multi-byte characters count once as chars.
    let text = "one two\nthree ünï\n";
    for (unit, n) in [("bytes", 20), ("chars", 18), ("words", 4), ("lines", 2)] {
        assert_result(
            &sb,
            "stats_count",
            json!({"text": text, "unit": unit}),
            json!(n),
        );
    }
    // A record result with option fields: present, and omitted when absent.
    assert_result(
        &sb,
        "stats_summarize",
        json!({"text": "The quick brown fox\njumps"}),
        json!({"bytes":25,"chars":25,"words":5,"lines":2,"longestWord":"quick","meanWordLength":4.2}),
    );
    assert_result(
        &sb,
        "stats_summarize",
        json!({"text": ""}),
        json!({"bytes":0,"chars":0,"words":0,"lines":0}),
    );
    // A single record parameter: its fields are the arguments, options optional, a list of
    // records back.
    assert_result(
        &sb,
        "stats_top_words",
        json!({"text": "The cat and the hat. The end!", "ignoreCase": true, "stopWords": ["AND"], "limit": 2}),
        json!([{"word":"the","count":3},{"word":"cat","count":1}]),
    );
    assert_result(
        &sb,
        "stats_top_words",
        json!({"text": "b a b", "limit": null}),
        json!([{"word":"b","count":2},{"word":"a","count":1}]),
    );
    // A component built by rustc carries no WIT doc comments (wit-component drops them on
    // the way from the core module's embedded WIT to the component; see
    // bytecodealliance/wasm-tools#2532), so the host does not know `limit`'s `@minimum 1`
    // and `@maximum 50`: only the u32 bounds are checked, and the guest gets 0 as it is.
    assert_result(
        &sb,
        "stats_top_words",
        json!({"text": "b a b", "limit": 0}),
        json!([]),
    );
    // A variant argument (with and without payload) and `result<list<string>, string>`.
    for (args, parts) in [
        (
            json!({"text": "a,b,,c", "by": {"tag": "on-char", "val": ","}}),
            json!(["a", "b", "", "c"]),
        ),
        (
            json!({"text": "a,b,,c", "by": {"tag": "on-char", "val": ","}, "maxParts": 2}),
            json!(["a", "b,,c"]),
        ),
        (
            json!({"text": "  one  two three ", "by": {"tag": "whitespace"}, "maxParts": 2}),
            json!(["one", "two three"]),
        ),
        (
            json!({"text": "x::y", "by": {"tag": "on-text", "val": "::"}}),
            json!(["x", "y"]),
        ),
        (
            json!({"text": "abcdefg", "by": {"tag": "every", "val": 3}}),
            json!(["abc", "def", "g"]),
        ),
    ] {
        assert_result(&sb, "stats_split", args, parts);
    }
    // The guest's own `err` string is the error; it has no kind.
    for (args, message) in [
        (
            json!({"text": "abc", "by": {"tag": "on-text", "val": ""}}),
            "on-text must not be empty",
        ),
        (
            json!({"text": "abc", "by": {"tag": "every", "val": 0}}),
            "every must be at least 1",
        ),
        (
            json!({"text": "abc", "by": {"tag": "whitespace"}, "maxParts": 0}),
            "max-parts must be at least 1",
        ),
    ] {
        let obs = sb.checked("stats_split", &args);
        assert_eq!(obs.status(), CallStatus::ToolError, "{args}");
        assert_eq!(
            obs.text(),
            json!({"ok": false, "error": message}).to_string(),
            "{args}"
        );
    }
    // A list of variants with payloads back.
    assert_result(
        &sb,
        "stats_tokenize",
        json!({"text": "Don't panic: 42 -7 times!"}),
        json!([
            {"tag":"word","val":"Don't"},
            {"tag":"word","val":"panic"},
            {"tag":"punct","val":":"},
            {"tag":"number","val":42},
            {"tag":"number","val":-7},
            {"tag":"word","val":"times"},
            {"tag":"punct","val":"!"},
        ]),
    );
    // `option<char>`: a one-character string, or null.
    assert_result(
        &sb,
        "stats_most_common_char",
        json!({"text": "hello world"}),
        json!("l"),
    );
    assert_result(
        &sb,
        "stats_most_common_char",
        json!({"text": " \n\t"}),
        Value::Null,
    );
    // Several scalar parameters.
    assert_result(
        &sb,
        "stats_add_counts",
        json!({"a": 200, "b": 100, "saturate": true}),
        json!(255),
    );
    assert_result(
        &sb,
        "stats_add_counts",
        json!({"a": 200, "b": 100, "saturate": false}),
        json!(44),
    );
    assert_result(
        &sb,
        "stats_add_counts",
        json!({"a": 0, "b": 255, "saturate": false}),
        json!(255),
    );
}

/// (tool, arguments, exact message) of arguments that do not match the tool's types.
fn invalid_cases() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        // Wrong types.
        (
            "stats_count",
            json!({"text": 5, "unit": "words"}),
            "text must be a string; got 5",
        ),
        (
            "stats_add_counts",
            json!({"a": 1, "b": 2, "saturate": "yes"}),
            r#"saturate must be true or false; got "yes""#,
        ),
        (
            "stats_add_counts",
            json!({"a": 1.5, "b": 2, "saturate": true}),
            "a must be an integer of at least 0; got 1.5",
        ),
        (
            "stats_top_words",
            json!({"text": "a", "stopWords": ["a", 1]}),
            "stopWords[1] must be a string; got 1",
        ),
        (
            "stats_top_words",
            json!({"text": "a", "stopWords": "a"}),
            r#"stopWords must be an array; got "a""#,
        ),
        // Missing required arguments (`null` is absent).
        (
            "stats_count",
            json!({"text": "a"}),
            "missing required argument: unit",
        ),
        (
            "stats_top_words",
            json!({"text": null}),
            "missing required argument: text",
        ),
        (
            "stats_split",
            json!({"text": "a"}),
            "missing required argument: by",
        ),
        // Unknown arguments, listed against the allowed ones.
        (
            "stats_top_words",
            json!({"text": "a", "bogus": 1}),
            "unknown argument: bogus; allowed: text, limit, ignoreCase, stopWords",
        ),
        (
            "stats_top_words",
            json!({"text": "a", "ignore_case": true}),
            "unknown argument: ignore_case; allowed: text, limit, ignoreCase, stopWords",
        ),
        // Out of range: the type's bounds, and the WIT doc's `@minimum` / `@maximum`.
        (
            "stats_add_counts",
            json!({"a": 300, "b": 1, "saturate": true}),
            "a must be an integer of at most 255; got 300",
        ),
        (
            "stats_add_counts",
            json!({"a": 1, "b": -1, "saturate": true}),
            "b must be an integer of at least 0; got -1",
        ),
        (
            "stats_top_words",
            json!({"text": "a", "limit": -1}),
            "limit must be an integer of at least 0; got -1",
        ),
        (
            "stats_split",
            json!({"text": "a", "by": {"tag": "every", "val": 4_294_967_296_u64}}),
            "by.val must be an integer of at most 4294967295; got 4294967296",
        ),
        // Bad enum value.
        (
            "stats_count",
            json!({"text": "a", "unit": "paragraphs"}),
            r#"unit must be one of: bytes, chars, words, lines; got "paragraphs""#,
        ),
        (
            "stats_count",
            json!({"text": "a", "unit": "Words"}),
            r#"unit must be one of: bytes, chars, words, lines; got "Words""#,
        ),
        // Bad variant tag, payloads missing, extra or of the wrong type.
        (
            "stats_split",
            json!({"text": "a", "by": {"tag": "regex", "val": "x"}}),
            r#"by must be an object {"tag": one of whitespace, on-char, on-text, every, "val": …}; got {"tag":"regex","val":"x"}"#,
        ),
        (
            "stats_split",
            json!({"text": "a", "by": "whitespace"}),
            r#"by must be an object {"tag": one of whitespace, on-char, on-text, every, "val": …}; got "whitespace""#,
        ),
        (
            "stats_split",
            json!({"text": "a", "by": {"tag": "every"}}),
            r#"by.val is required for tag "every""#,
        ),
        (
            "stats_split",
            json!({"text": "a", "by": {"tag": "whitespace", "val": 1}}),
            r#"by.val must be absent for tag "whitespace""#,
        ),
        // `char`: exactly one character.
        (
            "stats_split",
            json!({"text": "a", "by": {"tag": "on-char", "val": "ab"}}),
            r#"by.val must be a single character; got "ab""#,
        ),
        (
            "stats_split",
            json!({"text": "a", "by": {"tag": "on-char", "val": ""}}),
            r#"by.val must be a single character; got """#,
        ),
        (
            "stats_split",
            json!({"text": "a", "by": {"tag": "on-char", "val": 44}}),
            "by.val must be a single character; got 44",
        ),
    ]
}

/// Every mismatched argument is an `invalid-argument` tool error with an exact message.
#[test]
fn invalid_arguments_are_refused_with_exact_errors() {
    let sb = outsider();
    for (tool, args, message) in invalid_cases() {
        let obs = sb.checked(tool, &args);
        assert_eq!(obs.status(), CallStatus::ToolError, "{tool} {args}");
        assert_eq!(
            obs.text(),
            json!({"ok": false, "error": message, "kind": "invalid-argument"}).to_string(),
            "{tool} {args}"
        );
    }
}

/// The guest never runs for mismatched arguments: under a memory limit (1 MiB) smaller than
/// the component's initial memory (1 MiB of stack and its data), every valid call fails with `memory-limit`, yet
/// every invalid one still gets its exact `invalid-argument` error: the host refused the
/// arguments before it instantiated anything.
#[test]
fn invalid_arguments_never_reach_the_guest() {
    let sb = Sandbox::with_component(cache(), CAP, OUTSIDER_WASM, |p| {
        p.memory_bytes = 1 << 20;
    });
    for (tool, args) in [
        ("stats_count", json!({"text": "a", "unit": "words"})),
        (
            "stats_add_counts",
            json!({"a": 1, "b": 2, "saturate": true}),
        ),
        ("stats_most_common_char", json!({"text": "aa"})),
    ] {
        let (message, kind) = sb.err(tool, &args);
        assert_eq!(kind, "memory-limit", "{tool} {args}: {message}");
        assert!(
            message.starts_with("the tool hit its memory limit of 1 MiB"),
            "{tool} {args}: {message}"
        );
    }
    for (tool, args, message) in invalid_cases() {
        let obs = sb.checked(tool, &args);
        assert_eq!(
            obs.text(),
            json!({"ok": false, "error": message, "kind": "invalid-argument"}).to_string(),
            "{tool} {args}"
        );
    }
}
