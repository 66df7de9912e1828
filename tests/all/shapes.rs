//! The observations of the built-in tools as the host lifts them: cursors and counts before
//! the text (docs/paging.md#key-order); integer arguments sent as decimal strings, or beyond
//! 64 bits (docs/observations.md#arguments); the root asked for as a file; the unknown-tool
//! observation's suggestions (docs/observations.md#shapes); and the memory limit's key.

use std::path::PathBuf;

use serde_json::{Value, json};
use sluice_runtime::{CallStatus, PolicyOrigin};
use sluice_tests::{HOSTILE_WASM, Sandbox, num};

use crate::cache;

/// A result's keys, in the order the observation text has them.
fn keys(result: &Value) -> Vec<&str> {
    result
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}

#[test]
fn read_file_shows_its_cursor_and_content_bytes_before_content() {
    let sb = Sandbox::new(cache(), 2048);
    sb.write("f.txt", num(1000));
    let obs = sb.checked("read_file", &json!({"path": "f.txt"}));
    assert!(
        obs.text().starts_with(
            r#"{"ok":true,"result":{"path":"f.txt","size":20000,"offset":0,"nextOffset":960,"nextLine":49,"startLine":1,"endLine":48,"contentBytes":960,"content":"line 00000000000001\n"#
        ),
        "{}",
        obs.text()
    );
    let r = sb.ok("read_file", &json!({"path": "f.txt"}));
    assert_eq!(
        r["contentBytes"],
        r["content"].as_str().unwrap().len() as u64
    );
    // The last page, as a client that cut its middle shows it: the head still says where it
    // ends and how much text it holds.
    let r = sb.ok(
        "read_file",
        &json!({"path": "f.txt", "offset": 19_040, "startLine": 953}),
    );
    assert_eq!(
        keys(&r),
        [
            "path",
            "size",
            "offset",
            "startLine",
            "endLine",
            "totalLines",
            "contentBytes",
            "content"
        ]
    );
    assert_eq!(r["contentBytes"], 960);
    assert_eq!(r["content"].as_str().unwrap().len(), 960);
    assert_eq!(r["totalLines"], 1000);
}

#[test]
fn tail_grep_and_list_show_their_counts_before_their_text() {
    let sb = Sandbox::new(cache(), 2048);
    sb.write("f.txt", num(1000));
    let t = sb.ok("tail_file", &json!({"path": "f.txt", "lines": 5000}));
    assert_eq!(keys(&t), ["path", "truncated", "count", "lines"]);
    assert_eq!(t["count"], 46);
    assert_eq!(t["lines"].as_array().unwrap().len(), 46);

    let g = sb.ok("grep_files", &json!({"pattern": "line", "maxResults": 2}));
    assert_eq!(
        keys(&g),
        [
            "path",
            "count",
            "truncated",
            "nextCursor",
            "skippedFiles",
            "results"
        ]
    );
    assert_eq!(g["count"], 2);
    assert_eq!(g["results"].as_array().unwrap().len(), 2);

    for i in 0..100 {
        sb.write(&format!("d/f{i:05}"), "");
    }
    let l = sb.ok("list_dir", &json!({"path": "d"}));
    assert_eq!(
        keys(&l),
        ["path", "total", "offset", "nextOffset", "count", "entries"]
    );
    assert_eq!(l["count"], 24);
    assert_eq!(l["entries"].as_array().unwrap().len(), 24);
    assert_eq!(l["nextOffset"], 24);
}

/// `"offset":"12"` as Codex sends it: a decimal string is the integer, for every integer
/// argument of every tool; anything else in a string is refused as before.
#[test]
fn decimal_strings_are_integers() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "0123456789\nabc\n");
    let by_number = sb.ok("read_file", &json!({"path": "f.txt", "offset": 11}));
    let by_string = sb.ok("read_file", &json!({"path": "f.txt", "offset": "11"}));
    assert_eq!(by_string, by_number);
    assert_eq!(by_string["content"], "abc\n");
    assert_eq!(
        sb.ok(
            "read_file",
            &json!({"path": "f.txt", "startLine": "2", "lineCount": "1"})
        )["content"],
        "abc\n"
    );
    assert_eq!(
        sb.ok("tail_file", &json!({"path": "f.txt", "lines": "1"}))["lines"],
        json!(["abc"])
    );
    assert_eq!(
        sb.ok(
            "grep_files",
            &json!({"pattern": "[a-z]", "maxResults": "1"})
        )["count"],
        1
    );
    assert_eq!(sb.ok("list_dir", &json!({"offset": "1"}))["offset"], 1);
    for bad in ["1e3", " 12", "12 ", "0x10", "12.0", "+1", "012", ""] {
        let (message, kind) = sb.err("read_file", &json!({"path": "f.txt", "offset": bad}));
        assert_eq!(kind, "invalid-argument");
        assert_eq!(
            message,
            format!(
                "offset must be an integer of at least 0; got {}",
                Value::from(bad)
            )
        );
    }
    let (message, _) = sb.err("read_file", &json!({"path": "f.txt", "lineCount": "-3"}));
    assert_eq!(
        message,
        r#"lineCount must be an integer of at least 1; got "-3""#
    );
}

/// Integers beyond 64 bits are shown as written, and `lines` / `maxResults` that large
/// count as their documented maximum.
#[test]
fn integers_beyond_64_bits_are_exact_and_clamped_where_documented() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", num(3));
    let obs = sb.call_raw(
        "read_file",
        r#"{"path":"f.txt","offset":18446744073709551616}"#,
    );
    assert_eq!(
        obs.text(),
        r#"{"ok":false,"error":"offset must be an integer of at most 18446744073709551615; got 18446744073709551616","kind":"invalid-argument"}"#
    );
    let obs = sb.call_raw(
        "read_file",
        r#"{"path":"f.txt","startLine":-123456789012345678901234567890}"#,
    );
    assert_eq!(
        obs.text(),
        r#"{"ok":false,"error":"startLine must be an integer of at least 1; got -123456789012345678901234567890","kind":"invalid-argument"}"#
    );
    for lines in [
        "18446744073709551616",
        "123456789012345678901234567890123456789012345678901234567890",
        "\"18446744073709551616\"",
    ] {
        let obs = sb.call_raw(
            "tail_file",
            &format!(r#"{{"path":"f.txt","lines":{lines}}}"#),
        );
        assert_eq!(
            obs.text(),
            r#"{"ok":true,"result":{"path":"f.txt","truncated":false,"count":3,"lines":["line 00000000000001","line 00000000000002","line 00000000000003"]}}"#,
            "{lines}"
        );
    }
    let obs = sb.call_raw(
        "grep_files",
        r#"{"pattern":"line 0+2","maxResults":99999999999999999999999}"#,
    );
    assert_eq!(
        obs.text(),
        r#"{"ok":true,"result":{"path":".","count":1,"truncated":false,"skippedFiles":0,"results":[{"path":"f.txt","line":2,"text":"line 00000000000002"}]}}"#
    );
    assert_eq!(obs.status(), CallStatus::Ok);
}

/// The root asked for by any of its spellings is a directory, not a missing file.
#[test]
fn the_root_is_a_directory_to_read_file_and_tail_file() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.mkdir("sub");
    for path in [".", "", "./", "sub/..", "sub/../."] {
        for tool in ["read_file", "tail_file"] {
            let obs = sb.checked(tool, &json!({ "path": path }));
            assert_eq!(
                obs.text(),
                r#"{"ok":false,"error":". is a directory, not a file; use list_dir to see what it holds","kind":"wrong-kind"}"#,
                "{tool} {path:?}"
            );
        }
    }
}

#[test]
fn an_unknown_tool_lists_the_tools_and_suggests_the_nearest() {
    let sb = Sandbox::new(cache(), 65_536);
    let obs = sb.checked("read_fiel", &json!({"path": "x"}));
    assert_eq!(
        obs.text(),
        r#"{"ok":false,"error":"unknown_tool","name":"read_fiel","didYouMean":"read_file","tools":["read_file","grep_files","tail_file","list_dir","run_script"]}"#
    );
    assert_eq!(obs.status(), CallStatus::UnknownTool);
    let obs = sb.checked("cat", &json!({}));
    assert_eq!(
        obs.text(),
        r#"{"ok":false,"error":"unknown_tool","name":"cat","tools":["list_dir","read_file","run_script","tail_file","grep_files"]}"#
    );
    // A 10,000-character name is cut to 200 characters, so the list still fits any cap.
    let sb = Sandbox::new(cache(), 1024);
    let obs = sb.checked(&"n".repeat(10_000), &json!({}));
    assert_eq!(
        obs.text(),
        format!(
            r#"{{"ok":false,"error":"unknown_tool","name":"{}…","tools":["grep_files","list_dir","read_file","run_script","tail_file"]}}"#,
            "n".repeat(200)
        )
    );
    assert!(!obs.truncated());
}

/// The memory-limit error names the key that raises the limit, where the operator sets it.
#[test]
fn the_memory_limit_names_memory_mib() {
    let sb = Sandbox::with_component(cache(), 65_536, HOSTILE_WASM, |p| {
        p.memory_bytes = 64 << 20;
        p.origin = Some(PolicyOrigin::Sibling(PathBuf::from("tools/hostile.toml")));
    });
    let (message, kind) = sb.err("grow", &json!({}));
    assert_eq!(kind, "memory-limit");
    assert_eq!(
        message,
        "the tool hit its memory limit of 64 MiB (it asked for 65 MiB) and was stopped; raise memory_mib in tools/hostile.toml (1 to 4096 MiB) if it needs more"
    );
    let sb = Sandbox::with_component(cache(), 65_536, HOSTILE_WASM, |p| {
        p.memory_bytes = 64 << 20;
        p.origin = Some(PolicyOrigin::Table("hostile".into()));
    });
    let (message, _) = sb.err("grow", &json!({}));
    assert_eq!(
        message,
        "the tool hit its memory limit of 64 MiB (it asked for 65 MiB) and was stopped; raise tools.hostile.memory_mib in the configuration file (1 to 4096 MiB) if it needs more"
    );
}
