//! Rows T1–T5 of docs/regressions.md: tail_file through the component.

use serde_json::json;
use sluice_tests::{Sandbox, json_len, num};

use crate::cache;

fn num_lines(range: std::ops::RangeInclusive<usize>) -> Vec<String> {
    range.map(|i| format!("line {i:014}")).collect()
}

/// T1: 5000 lines asked at cap 2048: the 46 newest that fit, truncated.
#[test]
fn t1_many_lines_asked_small_cap() {
    let sb = Sandbox::new(cache(), 2048);
    sb.write("f.txt", num(1000));
    let r = sb.ok("tail_file", &json!({"path": "f.txt", "lines": 5000}));
    assert_eq!(
        r,
        json!({"path": "f.txt", "truncated": true, "count": 46, "lines": num_lines(955..=1000)})
    );
    assert!(json_len(&r["lines"]) <= 1024);
}

/// T2: fewer lines than the page holds: exactly those, not truncated; asking for more
/// lines than the file has is not truncation.
#[test]
fn t2_last_three_and_short_file() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", num(1000));
    sb.write("ab.txt", "a\nb\n");
    assert_eq!(
        sb.ok("tail_file", &json!({"path": "f.txt", "lines": 3})),
        json!({"path": "f.txt", "truncated": false, "count": 3, "lines": num_lines(998..=1000)})
    );
    assert_eq!(
        sb.ok("tail_file", &json!({"path": "ab.txt", "lines": 10})),
        json!({"path": "ab.txt", "truncated": false, "count": 2, "lines": ["a", "b"]})
    );
    // Default 200 lines.
    let r = sb.ok("tail_file", &json!({"path": "f.txt"}));
    assert_eq!(r["lines"], json!(num_lines(801..=1000)));
    assert_eq!(r["truncated"], false);
}

/// Terminators: `\r\n` and `\n` are dropped; a last line without `\n` is still last.
#[test]
fn tail_terminators_and_no_final_newline() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "x\r\ny\nz");
    assert_eq!(
        sb.ok("tail_file", &json!({"path": "f.txt", "lines": 5})),
        json!({"path": "f.txt", "truncated": false, "count": 3, "lines": ["x", "y", "z"]})
    );
    assert_eq!(
        sb.ok("tail_file", &json!({"path": "f.txt", "lines": 1})),
        json!({"path": "f.txt", "truncated": false, "count": 1, "lines": ["z"]})
    );
}

/// T3: one line longer than the page: its tail that fits (`["…"]` within 1024 bytes, so
/// 1019 escaped bytes: 508 `é` and `end`), truncated.
#[test]
fn t3_one_line_longer_than_the_page() {
    let sb = Sandbox::new(cache(), 2048);
    sb.write("f.txt", format!("start{}end\n", "é".repeat(5000)));
    let r = sb.ok("tail_file", &json!({"path": "f.txt", "lines": 1}));
    let lines = r["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 1);
    let line = lines[0].as_str().unwrap();
    let body = line.strip_suffix("end").expect("ends with `end`");
    assert!(!body.is_empty() && body.chars().all(|c| c == 'é'), "{line}");
    assert!(json_len(&r["lines"]) <= 1024);
    assert_eq!(line, format!("{}end", "é".repeat(508)));
    assert_eq!(r["truncated"], true);
}

/// T4: `lines` 0 is below the minimum.
#[test]
fn t4_zero_lines() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "a\n");
    let (msg, kind) = sb.err("tail_file", &json!({"path": "f.txt", "lines": 0}));
    assert_eq!(msg, "lines must be an integer of at least 1; got 0");
    assert_eq!(kind, "invalid-argument");
}

/// T5: control characters cost 6 escaped bytes each: four 40-char lines fit cap 2048.
#[test]
fn t5_control_characters_are_measured_escaped() {
    let sb = Sandbox::new(cache(), 2048);
    let line = "\u{1}".repeat(40);
    sb.write("f.txt", format!("{line}\n").repeat(200));
    let r = sb.ok("tail_file", &json!({"path": "f.txt", "lines": 5000}));
    assert_eq!(
        r,
        json!({"path": "f.txt", "truncated": true, "count": 4, "lines": vec![line.clone(); 4]})
    );
    assert!(json_len(&r["lines"]) <= 1024);
    let r = sb.ok("tail_file", &json!({"path": "f.txt", "lines": 1}));
    assert_eq!(
        r,
        json!({"path": "f.txt", "truncated": false, "count": 1, "lines": [line]})
    );
}

/// tail_file refuses directories and binary files, as read_file does.
#[test]
fn tail_wrong_kind_and_binary() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.mkdir("d");
    sb.write("b.bin", b"ab\0cd\n");
    let (_, kind) = sb.err("tail_file", &json!({"path": "d"}));
    assert_eq!(kind, "wrong-kind");
    let (msg, kind) = sb.err("tail_file", &json!({"path": "b.bin"}));
    assert_eq!(kind, "binary-file");
    assert!(msg.contains("b.bin") && msg.contains("6 bytes"), "{msg}");
}
