//! A policy's refinements of a tool's arguments
//! (`[tools.NAME.functions.FUNC.args.ARG]`), from `sluice.toml` through the wiring to the
//! tools of the third-party component `acme:textstats` (tests/components/outsider), whose
//! WIT has no doc comments: the schema the model sees has them, a call that breaks one is an
//! `invalid-argument` error before the component runs, and one its types contradict leaves
//! the component unavailable, naming the key.

use std::path::Path;

use serde_json::{Value, json};
use sluice_config::{Config, Overrides};
use sluice_registry::Fetcher;
use sluice_runtime::{CallStatus, Toolbox};
use sluice_tests::OUTSIDER_WASM;
use sluice_wiring::ToolLoader;

use crate::cache;

/// The policy of the tests: a description and the refinements of the issue's example.
const REFINED: &str = r#"
[tools.wc.functions.stats_count]
description = "Count the words or the lines of a text."
[tools.wc.functions.stats_count.args.unit]
description = "What to count"
enum = ["words", "lines"]
[tools.wc.functions.stats_count.args.text]
pattern = '^[^<]*$'
[tools.wc.functions.stats_top_words.args.limit]
description = "How many words to list"
minimum = 1
maximum = 10
"#;

/// A `sluice.toml` with the outsider component as `[tools.wc]` (and `more` keys after it),
/// and the built-in `read_file`; resolved.
fn configured(dir: &Path, more: &str) -> Config {
    let file = dir.join("sluice.toml");
    let text = format!(
        "builtins = [\"read_file\"]\n[roots]\nhere = \".\"\n[tools.wc]\ncomponent = {:?}\n{more}",
        Path::new(OUTSIDER_WASM)
            .canonicalize()
            .expect("the outsider component")
    );
    std::fs::write(&file, text).expect("sluice.toml");
    Config::resolve(Some(&file), &|_| None, &Overrides::default()).expect("the configuration")
}

/// The tools `config` loads (the components that do not load are unavailable).
fn load(config: &Config, dir: &Path) -> Toolbox {
    let loader = ToolLoader::with(sluice_tests::engine(cache()), Fetcher::new(dir.join("oci")));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime
        .block_on(loader.load(config, None))
        .expect("the tools load")
}

fn call(toolbox: &Toolbox, tool: &str, args: &Value) -> (CallStatus, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let obs = runtime.block_on(toolbox.call(tool, &args.to_string(), 65_536));
    (obs.status(), obs.text().to_string())
}

#[test]
fn the_schema_shows_the_refinements() {
    let dir = tempfile::tempdir().unwrap();
    let config = configured(dir.path(), REFINED);
    let toolbox = load(&config, dir.path());
    let tool = |name: &str| toolbox.tools().find(|t| t.name == name).unwrap().clone();
    let count = tool("stats_count");
    assert_eq!(count.description, "Count the words or the lines of a text.");
    assert_eq!(
        count.input_schema,
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "pattern": "^[^<]*$"},
                "unit": {"type": "string", "enum": ["words", "lines"], "description": "What to count"},
            },
            "additionalProperties": false,
            "required": ["text", "unit"],
        })
    );
    assert_eq!(
        count.input_schema.to_string(),
        r#"{"type":"object","properties":{"text":{"type":"string","pattern":"^[^<]*$"},"unit":{"type":"string","enum":["words","lines"],"description":"What to count"}},"additionalProperties":false,"required":["text","unit"]}"#
    );
    assert_eq!(
        tool("stats_top_words").input_schema["properties"]["limit"],
        json!({"type": "integer", "minimum": 1, "maximum": 10, "description": "How many words to list"})
    );
    // Without the refinements, the WIT types alone.
    let plain = configured(dir.path(), "");
    let plain = load(&plain, dir.path());
    let plain_count = plain.tools().find(|t| t.name == "stats_count").unwrap();
    assert_eq!(
        plain_count.input_schema["properties"]["unit"],
        json!({"type": "string", "enum": ["bytes", "chars", "words", "lines"]})
    );
    assert_eq!(
        plain
            .tools()
            .find(|t| t.name == "stats_top_words")
            .unwrap()
            .input_schema["properties"]["limit"],
        json!({"type": "integer", "minimum": 0, "maximum": 4294967295u32})
    );
}

#[test]
fn a_call_that_breaks_a_refinement_is_refused_before_the_component_runs() {
    let dir = tempfile::tempdir().unwrap();
    let config = configured(dir.path(), REFINED);
    let toolbox = load(&config, dir.path());
    let refused = [
        (
            "stats_count",
            json!({"text": "a b", "unit": "bytes"}),
            r#"unit must be one of: words, lines; got "bytes""#,
        ),
        (
            "stats_count",
            json!({"text": "<b>bold</b>", "unit": "words"}),
            r#"text must match the regular expression ^[^<]*$; got "<b>bold</b>""#,
        ),
        (
            "stats_top_words",
            json!({"text": "a a b", "limit": 11}),
            "limit must be an integer of at most 10; got 11",
        ),
        (
            "stats_top_words",
            json!({"text": "a a b", "limit": 0}),
            "limit must be an integer of at least 1; got 0",
        ),
    ];
    for (tool, args, message) in &refused {
        assert_eq!(
            call(&toolbox, tool, args),
            (
                CallStatus::ToolError,
                json!({"ok": false, "error": message, "kind": "invalid-argument"}).to_string()
            ),
            "{tool} {args}"
        );
    }
    // Within the refinements, the component answers.
    assert_eq!(
        call(
            &toolbox,
            "stats_count",
            &json!({"text": "one two\nthree", "unit": "lines"})
        ),
        (CallStatus::Ok, r#"{"ok":true,"result":2}"#.to_string())
    );
    assert_eq!(
        call(
            &toolbox,
            "stats_top_words",
            &json!({"text": "a a b", "limit": 1})
        ),
        (
            CallStatus::Ok,
            r#"{"ok":true,"result":[{"word":"a","count":2}]}"#.to_string()
        )
    );
    // Under a memory limit the component cannot start in (1 MiB), a call within the
    // refinements fails in the component, and every call that breaks one is still refused
    // with its own message: the host refused it before it instantiated anything.
    let small = configured(dir.path(), &format!("memory_mib = 1\n{REFINED}"));
    let small = load(&small, dir.path());
    let (status, text) = call(
        &small,
        "stats_count",
        &json!({"text": "one", "unit": "words"}),
    );
    assert_eq!(status, CallStatus::ToolError);
    assert!(text.contains(r#""kind":"memory-limit""#), "{text}");
    for (tool, args, message) in &refused {
        assert_eq!(
            call(&small, tool, args).1,
            json!({"ok": false, "error": message, "kind": "invalid-argument"}).to_string(),
            "{tool} {args}"
        );
    }
}

#[test]
fn a_refinement_the_types_contradict_leaves_the_component_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "[tools.wc.functions.stats_count.args.unit]\nenum = [\"words\", \"pages\"]\n",
            "count",
            "tools.wc.functions.stats_count.args.unit.enum in the configuration file lists \"pages\", which is not a case of unit: it must list cases of its enum (bytes, chars, words, lines)",
        ),
        (
            "[tools.wc.functions.stats_split.args.max-parts]\nminimum = -1\n",
            "split",
            "tools.wc.functions.stats_split.args.max-parts.minimum in the configuration file is -1, but max-parts is a u32: it must be an integer from 0 to 4294967295",
        ),
        (
            "[tools.wc.functions.stats_count.args.text]\nmaximum = 10\n",
            "count",
            "tools.wc.functions.stats_count.args.text.maximum in the configuration file is 10, but text is a string: minimum and maximum are for integer and float arguments",
        ),
        (
            "[tools.wc.functions.stats_count.args.words]\ndescription = \"x\"\n",
            "count",
            "tools.wc.functions.stats_count.args.words in the configuration file names no argument of the function; its arguments are: text, unit",
        ),
    ];
    for (more, export, reason) in cases {
        let config = configured(dir.path(), more);
        let toolbox = load(&config, dir.path());
        let names: Vec<&str> = toolbox.tools().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["read_file"], "{more}");
        let unavailable = toolbox.unavailable();
        assert_eq!(unavailable.len(), 1, "{more}");
        let component = Path::new(OUTSIDER_WASM).canonicalize().unwrap();
        assert_eq!(
            unavailable[0].reason,
            format!(
                "{}: export acme:textstats/stats@1.0.0/{export}: {reason}",
                component.display()
            ),
            "{more}"
        );
    }
}
