//! tail_file: rows T1–T5 of `docs/regressions.md`.

use sluice_file_tools::{ErrorKind, TailFileArgs, tail_file};

use crate::support::{Fixture, assert_fits, escaped, num};

fn args(path: &str, lines: Option<u64>) -> TailFileArgs {
    TailFileArgs {
        path: path.into(),
        lines,
        ..Default::default()
    }
}

#[test]
fn t1_many_lines_asked_at_cap_2048() {
    let fx = Fixture::new();
    fx.write("f.txt", num(1000));
    let ctx = fx.ctx(2048);
    let result = tail_file(&ctx, &args("f.txt", Some(5000)));
    assert_fits(&result, 2048);
    let page = result.unwrap();
    assert!(page.truncated);
    assert_eq!(page.lines.len(), 46);
    let expected: Vec<String> = (955..=1000).map(|i| format!("line {i:014}")).collect();
    assert_eq!(page.lines, expected);
    assert!(serde_json::to_string(&page.lines).unwrap().len() <= 1024);
}

#[test]
fn t2_few_lines_and_a_short_file() {
    let fx = Fixture::new();
    fx.write("f.txt", num(1000));
    fx.write("ab.txt", "a\nb\n");
    let ctx = fx.ctx(65_536);
    let page = tail_file(&ctx, &args("f.txt", Some(3))).unwrap();
    assert_eq!(
        page.lines,
        [
            "line 00000000000998",
            "line 00000000000999",
            "line 00000000001000"
        ]
    );
    assert!(!page.truncated);
    let page = tail_file(&ctx, &args("ab.txt", Some(10))).unwrap();
    assert_eq!(page.lines, ["a", "b"]);
    assert!(!page.truncated);
    // Default 200 lines.
    let page = tail_file(&ctx, &args("f.txt", None)).unwrap();
    assert_eq!(page.lines.len(), 200);
    assert_eq!(page.lines[0], "line 00000000000801");
    assert!(!page.truncated);
}

#[test]
fn t3_one_line_longer_than_the_page() {
    let fx = Fixture::new();
    fx.write("f.txt", format!("start{}end\n", "é".repeat(5000)));
    let ctx = fx.ctx(2048);
    let result = tail_file(&ctx, &args("f.txt", Some(1)));
    assert_fits(&result, 2048);
    let page = result.unwrap();
    assert_eq!(page.lines.len(), 1);
    let line = &page.lines[0];
    let re = regex::Regex::new("^é+end$").unwrap();
    assert!(re.is_match(line), "{line}");
    assert!(escaped(line) <= 1024);
    assert!(page.truncated);
}

#[test]
fn t4_lines_zero() {
    let fx = Fixture::new();
    fx.write("f.txt", "a\n");
    let ctx = fx.ctx(65_536);
    let err = tail_file(&ctx, &args("f.txt", Some(0))).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert_eq!(err.message, "lines must be an integer of at least 1; got 0");
}

#[test]
fn t5_control_characters_cost_six_bytes() {
    let fx = Fixture::new();
    let line = "\u{1}".repeat(40);
    fx.write("f.txt", format!("{line}\n").repeat(200));
    let ctx = fx.ctx(2048);
    let result = tail_file(&ctx, &args("f.txt", Some(5000)));
    assert_fits(&result, 2048);
    let page = result.unwrap();
    assert!(page.truncated);
    assert_eq!(page.lines.len(), 4);
    assert!(page.lines.iter().all(|l| *l == line));
    let page = tail_file(&ctx, &args("f.txt", Some(1))).unwrap();
    assert_eq!(page.lines, [line]);
    assert!(!page.truncated);
}

#[test]
fn crlf_no_final_newline_and_clamping() {
    let fx = Fixture::new();
    fx.write("crlf.txt", "one\r\ntwo\r\nthree");
    fx.write("empty.txt", "");
    fx.write("f.txt", num(6000));
    let ctx = fx.ctx(1_048_576);
    let page = tail_file(&ctx, &args("crlf.txt", Some(2))).unwrap();
    assert_eq!(page.lines, ["two", "three"]);
    assert!(!page.truncated);
    let page = tail_file(&ctx, &args("empty.txt", Some(2))).unwrap();
    assert!(page.lines.is_empty());
    assert!(!page.truncated);
    // More than 5,000 counts as 5,000; all of them fit a 512 KiB page.
    let page = tail_file(&ctx, &args("f.txt", Some(10_000))).unwrap();
    assert_eq!(page.lines.len(), 5000);
    assert_eq!(page.lines[0], "line 00000000001001");
}

#[test]
fn binary_and_directory_are_refused() {
    let fx = Fixture::new();
    fx.write("b.bin", b"abc\0def\n");
    fx.mkdir("d");
    let ctx = fx.ctx(65_536);
    let err = tail_file(&ctx, &args("b.bin", None)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::BinaryFile);
    let err = tail_file(&ctx, &args("d", None)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::WrongKind);
}
