//! Rows R1–R9 of docs/regressions.md: read_file through the component.

use serde_json::{Value, json};
use sluice_runtime::CallStatus;
use sluice_tests::{Sandbox, escaped_len, num};

use crate::cache;

/// R1: CRLF kept, a final line without `\n` counts; the observation is byte-exact.
#[test]
fn r1_crlf_and_last_line_without_newline() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "one\r\ntwo\nthree");
    let obs = sb.checked("read_file", &json!({"path": "f.txt"}));
    assert_eq!(
        obs.text(),
        r#"{"ok":true,"result":{"path":"f.txt","size":14,"offset":0,"startLine":1,"endLine":3,"totalLines":3,"contentBytes":14,"content":"one\r\ntwo\nthree"}}"#
    );
    assert_eq!(obs.status(), CallStatus::Ok);
    assert!(!obs.truncated());
    assert!(!obs.paged());
    assert_eq!(obs.full_bytes(), obs.text().len());
}

/// R2: num(500) at cap 2048 pages 48 lines at a time; resuming with {startLine, offset}
/// equals a rescan with startLine alone; 11 pages rebuild the file.
#[test]
fn r2_pages_of_num_500_at_cap_2048() {
    let sb = Sandbox::new(cache(), 2048);
    let file = num(500);
    sb.write("f.txt", &file);
    let pages = sb.read_pages(&json!({"path": "f.txt"}), 20);
    assert_eq!(pages.len(), 11);
    assert_eq!(pages[0]["nextOffset"], 960);
    assert_eq!(pages[0]["nextLine"], 49);
    assert_eq!(pages[0]["content"].as_str().unwrap().lines().count(), 48);
    let mut joined = String::new();
    for (i, p) in pages.iter().enumerate() {
        let content = p["content"].as_str().unwrap();
        assert!(
            escaped_len(content) <= 1024,
            "page {i}: {} escaped bytes",
            escaped_len(content)
        );
        assert!(content.ends_with('\n'), "page {i} ends inside a line");
        assert_eq!(p["size"], 10_000);
        assert_eq!(p["startLine"], 48 * i as u64 + 1);
        assert_eq!(p["offset"], 960 * i as u64);
        if i < 10 {
            assert_eq!(p["endLine"], 48 * (i as u64 + 1));
            assert_eq!(
                p["nextOffset"],
                p["offset"].as_u64().unwrap() + content.len() as u64
            );
            assert_eq!(p["nextLine"], p["endLine"].as_u64().unwrap() + 1);
            assert!(p.get("totalLines").is_none());
        }
        assert!(
            p.get("lineTruncated")
                .is_none_or(|t| t == &Value::Bool(false))
        );
        joined.push_str(content);
        if i > 0 {
            // The page fetched with {startLine, offset} equals a rescan with startLine alone.
            let rescan = sb.ok(
                "read_file",
                &json!({"path": "f.txt", "startLine": p["startLine"]}),
            );
            assert_eq!(&rescan, p, "page {i}");
        }
    }
    let last = &pages[10];
    assert_eq!(last["totalLines"], 500);
    assert_eq!(last["endLine"], 500);
    assert!(last.get("nextOffset").is_none() && last.get("nextLine").is_none());
    assert_eq!(joined, file);
}

/// R3: `offset` alone gives no line fields; `offset == size` is an empty page; past the end
/// is an error with the exact message.
#[test]
fn r3_offset_without_line_numbers_and_past_the_end() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "one\ntwo\nthree\n");
    let obs = sb.checked("read_file", &json!({"path": "f.txt", "offset": 4}));
    assert_eq!(
        obs.text(),
        r#"{"ok":true,"result":{"path":"f.txt","size":14,"offset":4,"contentBytes":10,"content":"two\nthree\n"}}"#
    );
    assert_eq!(
        sb.ok("read_file", &json!({"path": "f.txt", "offset": 14})),
        json!({"path":"f.txt","size":14,"offset":14,"contentBytes":0,"content":""})
    );
    let (msg, kind) = sb.err("read_file", &json!({"path": "f.txt", "offset": 15}));
    assert_eq!(msg, "offset 15 is past the end of the file (14 bytes)");
    assert_eq!(kind, "invalid-argument");
}

/// docs/paging.md#read_file-arguments: an offset inside a multi-byte character moves forward
/// to its end.
#[test]
fn offset_inside_a_character_moves_forward() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "aé漢\nz\n"); // a(0) é(1..3) 漢(3..6) \n(6)
    let r = sb.ok("read_file", &json!({"path": "f.txt", "offset": 2}));
    assert_eq!(
        r,
        json!({"path":"f.txt","size":9,"offset":3,"contentBytes":6,"content":"漢\nz\n"})
    );
    let r = sb.ok(
        "read_file",
        &json!({"path": "f.txt", "offset": 4, "startLine": 1}),
    );
    assert_eq!(
        r,
        json!({"path":"f.txt","size":9,"offset":6,"contentBytes":3,"content":"\nz\n","startLine":1,"endLine":2,"totalLines":2})
    );
}

/// R4: a line range near the end of a 6 MB file (over 5 MiB), with and without `offset`.
#[test]
fn r4_lines_near_the_end_of_a_large_file() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", num(300_000));
    let expected = json!({
        "path": "f.txt", "size": 6_000_000, "offset": 5_999_940,
        "contentBytes":40,"content":"line 00000000299998\nline 00000000299999\n",
        "startLine": 299_998, "endLine": 299_999, "nextOffset": 5_999_980, "nextLine": 300_000
    });
    let r = sb.ok(
        "read_file",
        &json!({"path": "f.txt", "startLine": 299_998, "lineCount": 2}),
    );
    assert_eq!(r, expected);
    assert!(r.get("totalLines").is_none());
    let r = sb.ok(
        "read_file",
        &json!({"path": "f.txt", "startLine": 299_998, "lineCount": 2, "offset": 5_999_940}),
    );
    assert_eq!(r, expected);
    let r = sb.ok(
        "read_file",
        &json!({"path": "f.txt", "startLine": 300_000, "offset": 5_999_980}),
    );
    assert_eq!(
        r,
        json!({"path":"f.txt","size":6_000_000,"offset":5_999_980,"contentBytes":20,"content":"line 00000000300000\n","startLine":300_000,"endLine":300_000,"totalLines":300_000})
    );
}

/// R5: `startLine` past the last line, and an empty file.
#[test]
fn r5_start_line_past_the_end_and_empty_file() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "a\nb\n");
    sb.write("empty.txt", "");
    for start in [3, 50] {
        assert_eq!(
            sb.ok("read_file", &json!({"path": "f.txt", "startLine": start})),
            json!({"path":"f.txt","size":4,"offset":4,"contentBytes":0,"content":"","totalLines":2}),
            "startLine {start}"
        );
    }
    assert_eq!(
        sb.ok("read_file", &json!({"path": "empty.txt"})),
        json!({"path":"empty.txt","size":0,"offset":0,"contentBytes":0,"content":"","totalLines":0})
    );
}

/// R6: a 368-byte path at cap 1024: the page shrinks to 400 bytes (read, tail) or 406
/// (grep of the 362-byte directory) and every observation stays within the cap.
#[test]
fn r6_long_path_shrinks_the_page() {
    let sb = Sandbox::new(cache(), 1024);
    let dir = format!(
        "{}/{}/{}",
        "d".repeat(120),
        "e".repeat(120),
        "f".repeat(120)
    );
    let path = format!("{dir}/n.txt");
    sb.write(&path, num(200));

    // page = min(512, 1024 - 368 - 256) = 400: 19 lines of 21 escaped bytes.
    let r = sb.ok("read_file", &json!({"path": path}));
    assert_eq!(r["path"], path.as_str());
    assert_eq!(r["endLine"], 19);
    assert_eq!(r["nextLine"], 20);
    assert_eq!(r["nextOffset"], 380);

    // `["…",…]`: 1 + 22 n <= 400, so 18 lines.
    let t = sb.ok("tail_file", &json!({"path": path}));
    let want: Vec<String> = (183..=200).map(|i| format!("line {i:014}")).collect();
    assert_eq!(t["lines"], json!(want));
    assert_eq!(t["truncated"], true);

    // grep of the directory: page = min(512, 1024 - 362 - 256) = 406; the one match alone
    // costs 400 bytes (brackets included) with empty text, so its text is cut to 6 bytes.
    let g = sb.ok("grep_files", &json!({"pattern": "line", "path": dir}));
    assert_eq!(g["path"], dir.as_str());
    assert_eq!(g["count"], 1);
    assert_eq!(
        g["results"],
        json!([{"path": path, "line": 1, "text": "line 0"}])
    );
    assert_eq!(g["truncated"], true);
    assert!(g["nextCursor"].is_string());

    // grep of the file itself: whatever it answers, it is within the cap and not cut.
    let obs = sb.checked("grep_files", &json!({"pattern": "line", "path": path}));
    assert!(!obs.truncated(), "{}", obs.text());

    let l = sb.ok("list_dir", &json!({"path": dir}));
    assert_eq!(
        l["entries"],
        json!([{"name": "n.txt", "kind": "file", "size": 4000}])
    );
}

/// R7: integer arguments that are not integers or are below their minimum.
#[test]
fn r7_integer_arguments_below_minimum_or_not_integers() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "a\n");
    for (args, message) in [
        (
            json!({"path": "f.txt", "startLine": 0}),
            "startLine must be an integer of at least 1; got 0",
        ),
        (
            json!({"path": "f.txt", "startLine": 1.5}),
            "startLine must be an integer of at least 1; got 1.5",
        ),
        (
            json!({"path": "f.txt", "startLine": "2.0"}),
            r#"startLine must be an integer of at least 1; got "2.0""#,
        ),
        (
            json!({"path": "f.txt", "lineCount": -1}),
            "lineCount must be an integer of at least 1; got -1",
        ),
        (
            json!({"path": "f.txt", "offset": -1}),
            "offset must be an integer of at least 0; got -1",
        ),
    ] {
        let (msg, kind) = sb.err("read_file", &args);
        assert_eq!(msg, message, "{args}");
        assert_eq!(kind, "invalid-argument", "{args}");
    }
}

/// R8: num(5000) at the default cap: a 32,760-byte page of 1560 lines.
#[test]
fn r8_default_cap_page() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", num(5000));
    let r = sb.ok("read_file", &json!({"path": "f.txt"}));
    let content = r["content"].as_str().unwrap();
    let escaped = escaped_len(content);
    assert!(escaped <= 32_768 && escaped > 31_744, "{escaped}");
    assert_eq!(escaped, 32_760);
    assert_eq!(content.lines().count(), 1560);
    assert_eq!(r["endLine"], 1560);
    assert_eq!(r["nextLine"], 1561);
    assert_eq!(r["nextOffset"], 31_200);
}

/// R9: a path of 805 bytes at cap 1024 leaves no page: every tool names the setting.
#[test]
fn r9_path_too_long_for_the_cap() {
    let sb = Sandbox::new(cache(), 1024);
    let dir: Vec<String> = (b'a'..=b'h')
        .map(|c| (c as char).to_string().repeat(99))
        .collect();
    let dir = dir.join("/");
    let path = format!("{dir}/f.txt");
    assert_eq!(path.len(), 805);
    sb.write(&path, "hello\n");
    for (tool, args) in [
        ("read_file", json!({"path": path})),
        ("tail_file", json!({"path": path})),
        ("grep_files", json!({"pattern": "hello", "path": path})),
        ("grep_files", json!({"pattern": "hello", "path": dir})),
        ("list_dir", json!({"path": dir})),
    ] {
        let (msg, kind) = sb.err(tool, &args);
        assert_eq!(kind, "page-too-small", "{tool}: {msg}");
        assert!(msg.contains("agent.max_tool_result_bytes"), "{tool}: {msg}");
        assert!(msg.contains("raise"), "{tool}: {msg}");
    }
}

/// A directory is not a file; a missing file is not found.
#[test]
fn read_file_wrong_kind_and_not_found() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.mkdir("d");
    let (msg, kind) = sb.err("read_file", &json!({"path": "d"}));
    assert_eq!(kind, "wrong-kind");
    assert!(msg.contains("d is a directory"), "{msg}");
    let (msg, kind) = sb.err("read_file", &json!({"path": "nope.txt"}));
    assert_eq!(kind, "not-found");
    assert!(msg.contains("nope.txt"), "{msg}");
}

/// `lineCount` bounds a page by lines; a long line comes back in parts flagged
/// `lineTruncated`, continued with {startLine, offset}.
#[test]
fn line_count_and_long_line_parts() {
    let sb = Sandbox::new(cache(), 1024);
    let long = "x".repeat(1200);
    let file = format!("a\nb\n{long}\nc\n");
    sb.write("f.txt", &file);
    let r = sb.ok("read_file", &json!({"path": "f.txt", "lineCount": 1}));
    assert_eq!(
        r,
        json!({"path":"f.txt","size":1207,"offset":0,"contentBytes":2,"content":"a\n","startLine":1,"endLine":1,"nextOffset":2,"nextLine":2})
    );
    // From line 3: the 1200-byte line is longer than the 512-byte page.
    let r = sb.ok("read_file", &json!({"path": "f.txt", "startLine": 3}));
    assert_eq!(r["content"], "x".repeat(512));
    assert_eq!(r["lineTruncated"], true);
    assert_eq!(r["startLine"], 3);
    assert_eq!(r["endLine"], 3);
    assert_eq!(r["nextLine"], 3);
    assert_eq!(r["nextOffset"], 4 + 512);
    let pages = sb.read_pages(&json!({"path": "f.txt", "startLine": 3}), 10);
    let joined: String = pages
        .iter()
        .map(|p| p["content"].as_str().unwrap())
        .collect();
    assert_eq!(joined, format!("{long}\nc\n"));
    assert_eq!(pages.last().unwrap()["totalLines"], 4);
    assert_eq!(pages.len(), 3);
    assert_eq!(pages[2]["content"], format!("{}\nc\n", "x".repeat(176)));
    assert_eq!(pages[2]["startLine"], 3);
    assert_eq!(pages[2]["endLine"], 4);
}

/// Binary files are refused with their size; no bytes come back.
#[test]
fn binary_file_is_refused_with_its_size() {
    let sb = Sandbox::new(cache(), 65_536);
    let mut bytes = b"text before".to_vec();
    bytes.push(0);
    bytes.extend_from_slice(b"SECRETBYTES");
    sb.write("b.dat", &bytes);
    let obs = sb.checked("read_file", &json!({"path": "b.dat"}));
    assert!(!obs.text().contains("SECRETBYTES") && !obs.text().contains("text before"));
    let v: Value = serde_json::from_str(obs.text()).unwrap();
    assert_eq!(v["kind"], "binary-file");
    let msg = v["error"].as_str().unwrap();
    assert!(
        msg.contains("b.dat") && msg.contains("binary") && msg.contains("23 bytes"),
        "{msg}"
    );
}
