//! The results' key order: cursors, flags and counts before the text (`content`, `lines`,
//! `results`, `entries`), so that a client that keeps only the head of a long result, or
//! cuts its middle, still shows them; and the count each result gives of its text
//! (`contentBytes`, `count`) is the real one (docs/paging.md).

use serde::Serialize;
use serde_json::Value;
use sluice_file_tools::budget::ENVELOPE_RESERVE_BYTES;
use sluice_file_tools::{
    GrepFilesArgs, ListDirArgs, ReadFileArgs, ReadFilePage, TailFileArgs, grep_files, list_dir,
    read_file, tail_file,
};

use crate::support::{Fixture, num};

/// The result's keys in the order its JSON has them.
fn keys<T: Serialize>(page: &T) -> Vec<String> {
    let text = serde_json::to_string(page).unwrap();
    // `preserve_order` keeps the text's order.
    let v: Value = serde_json::from_str(&text).unwrap();
    v.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn read_file_cursor_and_content_bytes_come_before_content() {
    let fx = Fixture::new();
    fx.write("f.txt", num(1000));
    let ctx = fx.ctx(2048);
    let page = read_file(
        &ctx,
        &ReadFileArgs {
            path: "f.txt".into(),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        keys(&page),
        [
            "path",
            "size",
            "offset",
            "nextOffset",
            "nextLine",
            "startLine",
            "endLine",
            "contentBytes",
            "content"
        ]
    );
    // 51 lines of 20 bytes fit the 1,024-byte page (each costs 21 escaped: `\n` is 2).
    assert_eq!(page.content_bytes, 960);
    assert_eq!(page.content_bytes, page.content.len() as u64);
    assert_eq!(page.next_offset, Some(page.offset + page.content_bytes));
    let text = serde_json::to_string(&page).unwrap();
    assert!(
        text.starts_with(
            r#"{"path":"f.txt","size":20000,"offset":0,"nextOffset":960,"nextLine":49,"startLine":1,"endLine":48,"contentBytes":960,"content":"line 00000000000001\n"#
        ),
        "{text}"
    );

    // The last page, a cut line and invalid UTF-8: every flag still before `content`, and
    // `contentBytes` counts the text as shown (U+FFFD is 3 bytes for the 1 byte it stands
    // for), not the file's bytes.
    fx.write("bad.txt", b"ab\xffcd\n".repeat(100));
    let page = read_file(
        &ctx,
        &ReadFileArgs {
            path: "bad.txt".into(),
            line_count: Some(200),
            offset: Some(300),
            start_line: Some(51),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        keys(&page),
        [
            "path",
            "size",
            "offset",
            "startLine",
            "endLine",
            "totalLines",
            "invalidUtf8",
            "contentBytes",
            "content"
        ]
    );
    assert_eq!(page.content, "ab\u{fffd}cd\n".repeat(50));
    assert_eq!(page.content_bytes, 400);
    assert_eq!(page.content_bytes, page.content.len() as u64);
    assert_eq!(page.size - page.offset, 300);

    fx.write("long.txt", "x".repeat(5000));
    let page = read_file(
        &ctx,
        &ReadFileArgs {
            path: "long.txt".into(),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        keys(&page),
        [
            "path",
            "size",
            "offset",
            "nextOffset",
            "nextLine",
            "lineTruncated",
            "startLine",
            "endLine",
            "contentBytes",
            "content"
        ]
    );
    assert_eq!(page.content_bytes, 1024);
    assert_eq!(page.content_bytes, page.content.len() as u64);
}

/// The fields besides the text fit the 256 bytes the page budget keeps for them with every
/// field present and every number 13 digits long (`contentBytes` is at most half the
/// largest cap, 6 digits): 253 bytes, the most of any tool.
#[test]
fn every_read_file_field_fits_the_reserve() {
    let big = 9_999_999_999_999;
    let page = ReadFilePage {
        path: String::new(),
        size: big,
        offset: big,
        next_offset: Some(big),
        next_line: Some(big),
        line_truncated: Some(true),
        start_line: Some(big),
        end_line: Some(big),
        total_lines: None,
        invalid_utf8: Some(true),
        content_bytes: 524_288,
        content: String::new(),
    };
    let observation = format!(
        "{{\"ok\":true,\"result\":{}}}",
        serde_json::to_string(&page).unwrap()
    );
    assert_eq!(observation.len(), 253);
    assert!(observation.len() as u64 <= ENVELOPE_RESERVE_BYTES);
}

#[test]
fn tail_file_truncated_and_count_come_before_lines() {
    let fx = Fixture::new();
    fx.write("f.txt", num(1000));
    let ctx = fx.ctx(2048);
    let page = tail_file(
        &ctx,
        &TailFileArgs {
            path: "f.txt".into(),
            lines: Some(5000),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(keys(&page), ["path", "truncated", "count", "lines"]);
    assert_eq!(page.count, 46);
    assert_eq!(page.count, page.lines.len() as u64);
    let text = serde_json::to_string(&page).unwrap();
    assert!(
        text.starts_with(
            r#"{"path":"f.txt","truncated":true,"count":46,"lines":["line 00000000000955","#
        ),
        "{text}"
    );
}

#[test]
fn grep_files_cursor_and_counts_come_before_results() {
    let fx = Fixture::new();
    fx.write("f.txt", num(1000));
    fx.write("z.bin", b"line\0");
    let ctx = fx.ctx(65_536);
    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            pattern: "line".into(),
            max_results: Some(3),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        keys(&page),
        [
            "path",
            "count",
            "truncated",
            "nextCursor",
            "skippedFiles",
            "results"
        ]
    );
    assert_eq!(page.count, 3);
    assert_eq!(page.count, page.results.len() as u64);
    let text = serde_json::to_string(&page).unwrap();
    let cursor = page.next_cursor.clone().unwrap();
    assert!(
        text.starts_with(&format!(
            r#"{{"path":".","count":3,"truncated":true,"nextCursor":"{cursor}","skippedFiles":0,"results":[{{"path":"f.txt","line":1,"#
        )),
        "{text}"
    );
}

#[test]
fn list_dir_cursor_and_count_come_before_entries() {
    let fx = Fixture::new();
    for i in 0..300 {
        fx.write(&format!("f{i:05}"), "");
    }
    let ctx = fx.ctx(2048);
    let page = list_dir(&ctx, &ListDirArgs::default()).unwrap();
    assert_eq!(
        keys(&page),
        ["path", "total", "offset", "nextOffset", "count", "entries"]
    );
    // `{"name":"f00000","kind":"file","size":0}` is 40 bytes, 41 with its comma.
    assert_eq!(page.count, 24);
    assert_eq!(page.count, page.entries.len() as u64);
    assert_eq!(page.next_offset, Some(page.offset + page.count));
    let text = serde_json::to_string(&page).unwrap();
    assert!(
        text.starts_with(
            r#"{"path":".","total":300,"offset":0,"nextOffset":24,"count":24,"entries":[{"name":"f00000","#
        ),
        "{text}"
    );
}
