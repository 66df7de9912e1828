//! Rows I7–I11 (docs/regressions.md#i7, the four after it) through the real components: key
//! material in UTF-16, behind encrypted-key headers, long labels and split headers;
//! `startLine` past the end and the look-back's first line; line terminators; trees and paths 2,000 directories deep. The
//! observation before the fix is in each test's doc comment.

use serde_json::{Value, json};
use sluice_tests::{Sandbox, fake_body_line, fake_pem};

use crate::{CASE_CAP, cache};

/// `n` lines of the fake key body, each ending with `\n`.
fn body(n: usize) -> String {
    (0..n).map(|i| fake_body_line(i) + "\n").collect()
}

/// `text` as UTF-16LE with a byte-order mark.
fn utf16le(text: &str) -> Vec<u8> {
    let mut out = vec![0xFF, 0xFE];
    out.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    out
}

#[track_caller]
fn assert_key_material(sb: &Sandbox, tool: &str, args: Value) -> String {
    let (msg, kind) = sb.err(tool, &args);
    assert_eq!(kind, "key-material", "{tool} {args}: {msg}");
    assert!(msg.starts_with("refusing to read key material: "), "{msg}");
    msg
}

/// Item 7. Before: grep_files returned the 3 body lines of a UTF-16 key (count 3,
/// skippedFiles 0); read_file served it as `M\u0000I\u0000…`. After: skipped and refused.
/// A UTF-8 BOM stays part of the first line (before: `^hello` matched it).
#[test]
fn i7_utf16_keys_and_the_utf8_bom() {
    let sb = Sandbox::new(cache(), 65_536);
    let cjk = "漢字仮名交じり文".repeat(600);
    sb.write(
        "u16/notes.txt",
        utf16le(&format!("{cjk}\n{}after\n", fake_pem("RSA ", 3))),
    );
    sb.write("bom.txt", "\u{FEFF}hello world\nhello again\n");
    let r = sb.ok(
        "grep_files",
        &json!({"pattern": "[A-Za-z0-9+/]{16,}", "path": "u16"}),
    );
    assert_eq!(
        r,
        json!({"path":"u16","count":0,"results":[],"truncated":false,"skippedFiles":1})
    );
    let begin_line_end = 2 + 2 * (cjk.chars().count() + 1) + 2 * 32;
    let msg = assert_key_material(
        &sb,
        "read_file",
        json!({"path": "u16/notes.txt", "offset": begin_line_end, "lineCount": 1}),
    );
    assert!(msg.ends_with("at that position"), "{msg}");
    assert_key_material(&sb, "read_file", json!({"path": "u16/notes.txt"}));

    let r = sb.ok(
        "grep_files",
        &json!({"pattern": "^hello", "path": "bom.txt"}),
    );
    assert_eq!(
        r["results"],
        json!([{"path":"bom.txt","line":2,"text":"hello again"}])
    );
    let r = sb.ok(
        "grep_files",
        &json!({"pattern": "world", "path": "bom.txt"}),
    );
    assert_eq!(r["results"][0]["text"], "\u{FEFF}hello world");
}

/// Item 8. Before: a traditionally encrypted key of 2,200 body lines was served at both
/// offsets whose look-back starts in its header lines. After: refused.
#[test]
fn i8_encrypted_key_headers_are_neutral() {
    let sb = Sandbox::new(cache(), CASE_CAP);
    let head = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0123456789ABCDEF0123456789ABCDEF\n\n";
    sb.write(
        "enc.txt",
        format!("{head}{}-----END RSA PRIVATE KEY-----\n", body(2200)),
    );
    // Body lines 2,015 and 2,016: the look-back starts 14 and 79 bytes into the file.
    for line in [2015, 2016] {
        let offset = head.len() + 65 * line;
        assert!((1..head.len()).contains(&(offset - 128 * 1024)));
        let msg = assert_key_material(
            &sb,
            "read_file",
            json!({"path": "enc.txt", "offset": offset, "lineCount": 1}),
        );
        // Refused by the fail-closed rule, or, since the look-back starts inside the BEGIN
        // line's block, by that cut armor line (docs/keys.md).
        assert!(
            msg == "refusing to read key material: enc.txt may hold a PEM private key at that position (the 128 KiB before it are only key-body lines)"
                || msg
                    == "refusing to read key material: enc.txt holds a PEM private key at that position",
            "{msg}"
        );
    }
}

/// Item 9. Before: a label of 1,100 characters and a header split across `\r\n` were not
/// armor: read_file served the whole key and grep_files returned its 3 body lines. After:
/// refused and skipped.
#[test]
fn i9_long_labels_and_split_headers() {
    let sb = Sandbox::new(cache(), 65_536);
    let label = "A".repeat(1100);
    sb.write(
        "long/key.txt",
        format!(
            "intro\n-----BEGIN {label} PRIVATE KEY-----\n{}-----END {label} PRIVATE KEY-----\nouter\n",
            body(3)
        ),
    );
    sb.write(
        "split/key.txt",
        format!(
            "intro\r\n-----BEGIN RSA PRIVATE\r\nKEY-----\r\n{}-----END RSA PRIVATE\r\nKEY-----\r\nouter\r\n",
            body(3).replace('\n', "\r\n")
        ),
    );
    for dir in ["long", "split"] {
        let path = format!("{dir}/key.txt");
        let msg = assert_key_material(&sb, "read_file", json!({ "path": path }));
        assert!(
            msg.ends_with("holds a PEM private key in that range"),
            "{msg}"
        );
        assert_key_material(&sb, "tail_file", json!({"path": path, "lines": 2}));
        assert_eq!(
            sb.ok("tail_file", &json!({"path": path, "lines": 1}))["lines"],
            json!(["outer"])
        );
        let r = sb.ok(
            "grep_files",
            &json!({"pattern": "[A-Za-z0-9+/]{16,}|intro", "path": dir}),
        );
        assert_eq!(
            (r["count"].as_u64(), r["skippedFiles"].as_u64()),
            (Some(0), Some(1))
        );
    }
}

/// Item 10. Before: `startLine` = last line + 1 of a file ending inside a key was refused
/// while last line + 2 was served; a look-back starting exactly on a whole ordinary line
/// refused the page; tail_file and grep_files dropped a final lone `\r`; `foo$` found
/// nothing in a CRLF file. After: the empty page twice, the page served, the `\r` kept,
/// one match.
#[test]
fn i10_paging_edges_and_line_terminators() {
    let sb = Sandbox::new(cache(), CASE_CAP);
    let inside = format!("intro\n-----BEGIN EC PRIVATE KEY-----\n{}", body(2));
    sb.write("inside.txt", &inside);
    for start_line in [5, 6] {
        assert_eq!(
            sb.ok(
                "read_file",
                &json!({"path": "inside.txt", "startLine": start_line})
            ),
            json!({"path":"inside.txt","size":inside.len(),"offset":inside.len(),"contentBytes":0,"content":"","totalLines":4})
        );
    }

    // 650 bytes of key body, a line of 31 dots at offset 650, then 2,016 body lines: the
    // look-back of `after` starts exactly on the dots.
    let edge = format!("{}{}\n{}after\n", body(10), ".".repeat(31), body(2016));
    sb.write("edge.txt", &edge);
    let r = sb.ok(
        "read_file",
        &json!({"path": "edge.txt", "offset": edge.len() - 6}),
    );
    assert_eq!(r["content"], "after\n");

    sb.write("lone.txt", "a\nb\r");
    sb.write("crlf.txt", "foo\r\nbar\r\n");
    assert_eq!(
        sb.ok("tail_file", &json!({"path": "lone.txt"})),
        json!({"path":"lone.txt","truncated":false,"count":2,"lines":["a","b\r"]})
    );
    assert_eq!(
        sb.ok("grep_files", &json!({"pattern": "b", "path": "lone.txt"}))["results"],
        json!([{"path":"lone.txt","line":2,"text":"b\r"}])
    );
    assert_eq!(
        sb.ok(
            "grep_files",
            &json!({"pattern": "foo$", "path": "crlf.txt"})
        )["results"],
        json!([{"path":"crlf.txt","line":1,"text":"foo"}])
    );
    assert_eq!(
        sb.ok("grep_files", &json!({"pattern": "\\r", "path": "crlf.txt"}))["count"],
        0
    );
}

/// Item 11. Before: grep_files over a tree 500 directories deep ended with "the tool
/// crashed: wasm trap: call stack exhausted" (kind `trap`). After: the tree of 2,000
/// directories (a path of 4,010 bytes, near the system's 4,096) is searched, and
/// read_file, tail_file and list_dir reach its bottom.
#[test]
fn i11_trees_2000_directories_deep() {
    let sb = Sandbox::new(cache(), 65_536);
    let dir = format!("deep/{}", "d/".repeat(2000));
    let file = format!("{dir}f.txt");
    sb.write(&file, "needle at the bottom\n");
    sb.write("deep/top.txt", "needle at the top\n");
    let r = sb.ok("grep_files", &json!({"pattern": "needle", "path": "deep"}));
    assert_eq!(r["count"], 2, "{r}");
    assert_eq!(r["results"][0]["path"], file.as_str());
    assert_eq!(r["results"][1]["path"], "deep/top.txt");
    assert_eq!(
        sb.ok("read_file", &json!({ "path": file }))["content"],
        "needle at the bottom\n"
    );
    assert_eq!(
        sb.ok("tail_file", &json!({ "path": file }))["lines"],
        json!(["needle at the bottom"])
    );
    let r = sb.ok("list_dir", &json!({ "path": dir }));
    assert_eq!(
        r["entries"],
        json!([{"name":"f.txt","kind":"file","size":21}])
    );
}
