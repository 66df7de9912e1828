//! Bad input: each is a tool error that says what was wrong; nothing panics, the tool is
//! not run for arguments that do not match its schema.

use serde_json::{Value, json};
use sluice_runtime::CallStatus;
use sluice_tests::Sandbox;

use crate::cache;

/// Asserts an `invalid-argument` error with exactly `message`.
fn assert_invalid(sb: &Sandbox, tool: &str, args: &Value, message: &str) {
    let (msg, kind) = sb.err(tool, args);
    assert_eq!(msg, message, "{tool} {args}");
    assert_eq!(kind, "invalid-argument", "{tool} {args}");
}

#[test]
fn wrong_types() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "a\nb\n");
    assert_invalid(
        &sb,
        "read_file",
        &json!({"path": 5}),
        "path must be a string; got 5",
    );
    assert_invalid(
        &sb,
        "tail_file",
        &json!({"path": ["f.txt"]}),
        r#"path must be a string; got ["f.txt"]"#,
    );
    assert_invalid(
        &sb,
        "read_file",
        &json!({"path": "f.txt", "startLine": "2.0"}),
        r#"startLine must be an integer of at least 1; got "2.0""#,
    );
    assert_invalid(
        &sb,
        "read_file",
        &json!({"path": "f.txt", "startLine": 1.5}),
        "startLine must be an integer of at least 1; got 1.5",
    );
    // `2.0` is not an integer (docs/observations.md#arguments), in JSON built by serde_json
    // and in raw text.
    assert_invalid(
        &sb,
        "read_file",
        &json!({"path": "f.txt", "startLine": 2.0}),
        "startLine must be an integer of at least 1; got 2.0",
    );
    let obs = sb.call_raw("read_file", r#"{"path":"f.txt","startLine":2.0}"#);
    assert_eq!(
        obs.text(),
        r#"{"ok":false,"error":"startLine must be an integer of at least 1; got 2.0","kind":"invalid-argument"}"#
    );
    assert_eq!(obs.status(), CallStatus::ToolError);
    assert_invalid(
        &sb,
        "grep_files",
        &json!({"pattern": "a", "caseSensitive": "yes"}),
        r#"caseSensitive must be true or false; got "yes""#,
    );
    assert_invalid(
        &sb,
        "grep_files",
        &json!({"pattern": 1}),
        "pattern must be a string; got 1",
    );
}

#[test]
fn below_minimum() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "a\nb\n");
    for (tool, args, message) in [
        (
            "read_file",
            json!({"path": "f.txt", "startLine": 0}),
            "startLine must be an integer of at least 1; got 0",
        ),
        (
            "read_file",
            json!({"path": "f.txt", "lineCount": 0}),
            "lineCount must be an integer of at least 1; got 0",
        ),
        (
            "read_file",
            json!({"path": "f.txt", "lineCount": -1}),
            "lineCount must be an integer of at least 1; got -1",
        ),
        (
            "read_file",
            json!({"path": "f.txt", "offset": -1}),
            "offset must be an integer of at least 0; got -1",
        ),
        (
            "tail_file",
            json!({"path": "f.txt", "lines": 0}),
            "lines must be an integer of at least 1; got 0",
        ),
        (
            "grep_files",
            json!({"pattern": "a", "maxResults": 0}),
            "maxResults must be an integer of at least 1; got 0",
        ),
        (
            "grep_files",
            json!({"pattern": "a", "maxResults": -5}),
            "maxResults must be an integer of at least 1; got -5",
        ),
        (
            "list_dir",
            json!({"offset": -1}),
            "offset must be an integer of at least 0; got -1",
        ),
    ] {
        assert_invalid(&sb, tool, &args, message);
    }
}

#[test]
fn unknown_and_missing_arguments() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "a\n");
    for (tool, args) in [
        ("read_file", json!({"path": "f.txt", "bogus": 1})),
        ("tail_file", json!({"path": "f.txt", "bogus": true})),
        ("grep_files", json!({"pattern": "a", "bogus": "x"})),
        ("list_dir", json!({"bogus": null})),
    ] {
        let (msg, kind) = sb.err(tool, &args);
        assert_eq!(kind, "invalid-argument", "{tool}");
        assert!(msg.starts_with("unknown argument: bogus"), "{tool}: {msg}");
    }
    let (msg, _) = sb.err("read_file", &json!({"path": "f.txt", "start_line": 2}));
    assert!(
        msg.contains("start_line") && msg.contains("startLine"),
        "{msg}"
    );
    assert_invalid(
        &sb,
        "read_file",
        &json!({}),
        "missing required argument: path",
    );
    assert_invalid(
        &sb,
        "tail_file",
        &json!({"lines": 2}),
        "missing required argument: path",
    );
    assert_invalid(
        &sb,
        "grep_files",
        &json!({"path": "f.txt"}),
        "missing required argument: pattern",
    );
    // `null` for a required argument is absent too.
    assert_invalid(
        &sb,
        "read_file",
        &json!({"path": null}),
        "missing required argument: path",
    );
}

#[test]
fn arguments_not_an_object_or_not_json() {
    let sb = Sandbox::new(cache(), 65_536);
    for (raw, start) in [
        ("[1]", "arguments must be a JSON object; got [1]"),
        (
            "\"f.txt\"",
            "arguments must be a JSON object; got \"f.txt\"",
        ),
        ("null", "arguments must be a JSON object; got null"),
        ("{\"path\":", "arguments are not valid JSON: "),
        ("{path: 'f.txt'}", "arguments are not valid JSON: "),
    ] {
        let obs = sb.call_raw("read_file", raw);
        assert!(obs.text().len() <= 65_536);
        assert_eq!(obs.status(), CallStatus::ToolError, "{raw}");
        let v: Value = serde_json::from_str(obs.text()).unwrap();
        assert_eq!(v["ok"], false);
        assert_eq!(v["kind"], "invalid-argument", "{raw}");
        assert!(
            v["error"].as_str().unwrap().starts_with(start),
            "{raw}: {v}"
        );
    }
    // Empty argument text means no arguments: list_dir needs none.
    let obs = sb.call_raw("list_dir", "");
    assert!(obs.text().len() <= 65_536 && !obs.truncated());
    assert!(
        obs.text().starts_with(r#"{"ok":true,"result":{"path":".""#),
        "{}",
        obs.text()
    );
}

#[test]
fn null_means_absent() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "a\nb\n");
    let plain = sb.ok("read_file", &json!({"path": "f.txt"}));
    let nulls = sb.ok(
        "read_file",
        &json!({"path": "f.txt", "root": null, "startLine": null, "lineCount": null, "offset": null}),
    );
    assert_eq!(plain, nulls);
    assert_eq!(
        sb.ok(
            "tail_file",
            &json!({"path": "f.txt", "lines": null, "root": null})
        ),
        json!({"path":"f.txt","truncated":false,"count":2,"lines":["a","b"]})
    );
    assert_eq!(
        sb.ok(
            "grep_files",
            &json!({"pattern": "b", "path": null, "glob": null, "caseSensitive": null, "maxResults": null, "cursor": null})
        ),
        json!({"path":".","count":1,"results":[{"path":"f.txt","line":2,"text":"b"}],"truncated":false,"skippedFiles":0})
    );
    assert_eq!(
        sb.ok("list_dir", &json!({"path": null, "offset": null})),
        json!({"path":".","total":1,"offset":0,"count":1,"entries":[{"name":"f.txt","kind":"file","size":4}]})
    );
}

#[test]
fn wrong_kinds() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("d/f.txt", "a\n");
    let (msg, kind) = sb.err("read_file", &json!({"path": "d"}));
    assert_eq!(kind, "wrong-kind");
    assert!(
        msg.contains("directory") && msg.contains("list_dir"),
        "{msg}"
    );
    let (msg, kind) = sb.err("list_dir", &json!({"path": "d/f.txt"}));
    assert_eq!(kind, "wrong-kind");
    assert!(
        msg.contains("d/f.txt") && msg.contains("not a directory"),
        "{msg}"
    );
    let (_, kind) = sb.err("read_file", &json!({"path": "d/f.txt/x"}));
    assert_eq!(kind, "wrong-kind");
}

#[test]
fn invalid_regex_quotes_the_parser() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "a\n");
    for (pattern, reason) in [
        ("(", "unclosed group"),
        ("[a", "unclosed character class"),
        ("a{2,1}", "invalid repetition count range"),
        (r"\p{Nope}", "Unicode property not found"),
    ] {
        let (msg, kind) = sb.err("grep_files", &json!({"pattern": pattern}));
        assert_eq!(kind, "invalid-argument", "{pattern}");
        assert!(msg.contains("pattern"), "{pattern}: {msg}");
        assert!(msg.contains(reason), "{pattern}: {msg}");
    }
}

#[test]
fn offset_past_the_end() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "0123456789");
    assert_invalid(
        &sb,
        "read_file",
        &json!({"path": "f.txt", "offset": 11}),
        "offset 11 is past the end of the file (10 bytes)",
    );
    assert_invalid(
        &sb,
        "read_file",
        &json!({"path": "f.txt", "offset": u64::MAX}),
        &format!("offset {} is past the end of the file (10 bytes)", u64::MAX),
    );
}

#[test]
fn unknown_tool() {
    let sb = Sandbox::new(cache(), 65_536);
    let obs = sb.checked("cat_file", &json!({"path": "x"}));
    assert_eq!(
        obs.text(),
        r#"{"ok":false,"error":"unknown_tool","name":"cat_file","didYouMean":"read_file","tools":["read_file","tail_file","grep_files","list_dir","run_script"]}"#
    );
    assert_eq!(obs.status(), CallStatus::UnknownTool);
    let obs = sb.call_raw("read_file\"}", "not even json");
    assert!(obs.text().len() <= 65_536);
    assert_eq!(
        obs.text(),
        r#"{"ok":false,"error":"unknown_tool","name":"read_file\"}","didYouMean":"read_file","tools":["read_file","grep_files","tail_file","list_dir","run_script"]}"#
    );
}

/// P3 through the toolbox: a 10,000-character tool name at cap 2048 is echoed cut to 200
/// characters, so the unknown-tool observation, with the tools it lists, fits the cap whole.
#[test]
fn very_long_unknown_tool_name_is_capped() {
    let sb = Sandbox::new(cache(), 2048);
    let name = "n".repeat(10_000);
    let obs = sb.call(&name, &json!({}));
    assert_eq!(
        obs.text(),
        format!(
            r#"{{"ok":false,"error":"unknown_tool","name":"{}…","tools":["grep_files","list_dir","read_file","run_script","tail_file"]}}"#,
            "n".repeat(200)
        )
    );
    assert!(!obs.truncated());
    assert_eq!(obs.status(), CallStatus::UnknownTool);
    assert_eq!(obs.full_bytes(), obs.text().len());
}

/// An integer beyond 64 bits is too large, not too small.
#[test]
fn integers_beyond_64_bits_are_too_large() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "a\n");
    let obs = sb.call_raw(
        "read_file",
        r#"{"path":"f.txt","offset":18446744073709551616}"#,
    );
    let v: serde_json::Value = serde_json::from_str(obs.text()).unwrap();
    assert_eq!(v["kind"], "invalid-argument");
    assert_eq!(
        v["error"],
        "offset must be an integer of at most 18446744073709551615; got 18446744073709551616"
    );
}
