//! read_file: rows R1–R9 of `docs/regressions.md` here; cases C1–C4, C7, C11 and the edges of
//! a page in `cases`.

mod cases; // Cases C1–C4, C7, C11; wrong kinds, offsets inside a character, binary, a full page.

use sluice_file_tools::{
    ErrorKind, GrepFilesArgs, ListDirArgs, ReadFileArgs, TailFileArgs, grep_files, list_dir,
    read_file, tail_file,
};

use crate::support::{CAP, Fixture, assert_fits, escaped, follow_read, num, obs};

fn args(path: &str) -> ReadFileArgs {
    ReadFileArgs {
        path: path.into(),
        ..Default::default()
    }
}

#[test]
fn r1_crlf_and_final_line_without_newline() {
    let fx = Fixture::new();
    fx.write("f.txt", "one\r\ntwo\nthree");
    let ctx = fx.ctx(65_536);
    let result = read_file(&ctx, &args("f.txt"));
    assert_fits(&result, 65_536);
    let page = result.unwrap();
    assert_eq!(page.content, "one\r\ntwo\nthree");
    assert_eq!(page.path, "f.txt");
    assert_eq!(page.size, 14);
    assert_eq!(page.offset, 0);
    assert_eq!(page.start_line, Some(1));
    assert_eq!(page.end_line, Some(3));
    assert_eq!(page.total_lines, Some(3));
    assert_eq!(page.next_line, None);
    assert_eq!(page.next_offset, None);
    assert_eq!(page.line_truncated, None);
    assert_eq!(page.invalid_utf8, None);
}

#[test]
fn r2_pages_of_num_500_at_cap_2048() {
    let fx = Fixture::new();
    let file = num(500);
    fx.write("f.txt", &file);
    let ctx = fx.ctx(2048);
    let pages = follow_read(&ctx, "f.txt", None);

    let first = &pages[0];
    assert_eq!(first.start_line, Some(1));
    assert_eq!(first.end_line, Some(48));
    assert_eq!(first.content.lines().count(), 48);
    assert_eq!(first.next_offset, Some(960));
    assert_eq!(first.next_line, Some(49));
    assert_eq!(pages.len(), 11);
    for (i, p) in pages.iter().enumerate() {
        assert!(escaped(&p.content) <= 1024, "page {i}");
        assert!(p.content.ends_with('\n'), "page {i} ends with a newline");
        assert_eq!(p.line_truncated, None);
        if let Some(next) = p.next_offset {
            assert_eq!(next, p.offset + p.content.len() as u64, "page {i}");
            assert_eq!(p.next_line, Some(p.end_line.unwrap() + 1));
            assert_eq!(p.total_lines, None);
        }
        if i > 0 {
            // Resuming with {startLine, offset} equals a rescan with startLine alone.
            let rescan = read_file(
                &ctx,
                &ReadFileArgs {
                    start_line: p.start_line,
                    ..args("f.txt")
                },
            )
            .unwrap();
            assert_eq!(&rescan, p, "page {i}");
        }
    }
    let last = pages.last().unwrap();
    assert_eq!(last.total_lines, Some(500));
    assert_eq!(last.end_line, Some(500));
    assert_eq!(last.next_offset, None);
    assert_eq!(last.next_line, None);
    let joined: String = pages.iter().map(|p| p.content.as_str()).collect();
    assert_eq!(joined, file);
}

#[test]
fn r3_offset_without_line_numbers_and_past_the_end() {
    let fx = Fixture::new();
    fx.write("f.txt", "one\ntwo\nthree\n");
    let ctx = fx.ctx(65_536);
    let page = read_file(
        &ctx,
        &ReadFileArgs {
            offset: Some(4),
            ..args("f.txt")
        },
    )
    .unwrap();
    assert_eq!(page.content, "two\nthree\n");
    assert_eq!(page.offset, 4);
    assert_eq!(page.size, 14);
    assert_eq!(page.start_line, None);
    assert_eq!(page.end_line, None);
    assert_eq!(page.total_lines, None);
    assert_eq!(page.next_line, None);
    assert_eq!(page.next_offset, None);

    let err = read_file(
        &ctx,
        &ReadFileArgs {
            offset: Some(15),
            ..args("f.txt")
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert_eq!(
        err.message,
        "offset 15 is past the end of the file (14 bytes)"
    );

    // offset == size: empty content.
    let page = read_file(
        &ctx,
        &ReadFileArgs {
            offset: Some(14),
            ..args("f.txt")
        },
    )
    .unwrap();
    assert_eq!(page.content, "");
    assert_eq!(page.offset, 14);
    assert_eq!(page.next_offset, None);
}

#[test]
fn r4_start_line_deep_in_a_file_over_5_mib() {
    let fx = Fixture::new();
    let file = num(300_000);
    assert!(file.len() > 5 * 1024 * 1024);
    fx.write("f.txt", &file);
    let ctx = fx.ctx(65_536);
    let page = read_file(
        &ctx,
        &ReadFileArgs {
            start_line: Some(299_998),
            line_count: Some(2),
            ..args("f.txt")
        },
    )
    .unwrap();
    assert_eq!(page.content, "line 00000000299998\nline 00000000299999\n");
    assert_eq!(page.start_line, Some(299_998));
    assert_eq!(page.end_line, Some(299_999));
    assert_eq!(page.next_line, Some(300_000));
    assert_eq!(page.next_offset, Some(299_999 * 20));
    assert_eq!(page.offset, 299_997 * 20);
    assert_eq!(page.total_lines, None);
}

#[test]
fn r5_start_line_past_the_end_and_empty_file() {
    let fx = Fixture::new();
    fx.write("f.txt", "a\nb\n");
    fx.write("empty.txt", "");
    let ctx = fx.ctx(65_536);
    for start in [3, 50] {
        let page = read_file(
            &ctx,
            &ReadFileArgs {
                start_line: Some(start),
                ..args("f.txt")
            },
        )
        .unwrap();
        assert_eq!(page.content, "", "startLine {start}");
        assert_eq!(page.total_lines, Some(2), "startLine {start}");
        assert_eq!(page.offset, 4, "startLine {start}: offset = size");
        assert_eq!(page.next_offset, None);
        assert_eq!(page.next_line, None);
    }
    let page = read_file(&ctx, &args("empty.txt")).unwrap();
    assert_eq!(page.content, "");
    assert_eq!(page.total_lines, Some(0));
    assert_eq!(page.size, 0);
    assert_eq!(page.next_offset, None);
    // Without a final newline the last line still counts.
    fx.write("g.txt", "a\nb");
    let page = read_file(
        &ctx,
        &ReadFileArgs {
            start_line: Some(3),
            ..args("g.txt")
        },
    )
    .unwrap();
    assert_eq!((page.content.as_str(), page.total_lines), ("", Some(2)));
}

#[test]
fn r6_long_path_at_cap_1024_every_tool_fits() {
    let fx = Fixture::new();
    let dir = format!(
        "{}/{}/{}",
        "d".repeat(120),
        "e".repeat(120),
        "f".repeat(120)
    );
    let path = format!("{dir}/f.txt");
    fx.write(&path, num(200));
    let ctx = fx.ctx(1024);

    let read = read_file(&ctx, &args(&path));
    assert_fits(&read, 1024);
    let read = read.unwrap();
    assert!(read.next_line.unwrap() > 1);
    assert_eq!(read.path, path);
    // The rest of the file follows, each page within the cap.
    let pages = follow_read(&ctx, &path, None);
    let joined: String = pages.iter().map(|p| p.content.as_str()).collect();
    assert_eq!(joined, num(200));

    let tail = tail_file(
        &ctx,
        &TailFileArgs {
            path: path.clone(),
            ..Default::default()
        },
    );
    assert_fits(&tail, 1024);
    assert!(!tail.unwrap().lines.is_empty());

    for grep_path in [None, Some(dir.clone()), Some(path.clone())] {
        let grep = grep_files(
            &ctx,
            &GrepFilesArgs {
                pattern: "line".into(),
                path: grep_path.clone(),
                ..Default::default()
            },
        );
        assert_fits(&grep, 1024);
        let grep = grep.unwrap();
        assert!(grep.count >= 1, "{grep_path:?}");
        assert!(grep.truncated, "{grep_path:?}");
        assert_eq!(grep.results[0].path, path);
    }
    let list = list_dir(
        &ctx,
        &ListDirArgs {
            path: Some(dir),
            ..Default::default()
        },
    );
    assert_fits(&list, 1024);
}

#[test]
fn r7_integer_arguments_below_their_minimum() {
    let fx = Fixture::new();
    fx.write("f.txt", "a\n");
    let ctx = fx.ctx(65_536);
    let err = read_file(
        &ctx,
        &ReadFileArgs {
            start_line: Some(0),
            ..args("f.txt")
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert_eq!(
        err.message,
        "startLine must be an integer of at least 1; got 0"
    );
    let err = read_file(
        &ctx,
        &ReadFileArgs {
            line_count: Some(0),
            ..args("f.txt")
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert_eq!(
        err.message,
        "lineCount must be an integer of at least 1; got 0"
    );
    // Non-integers and negatives cannot even be represented natively: the typed arguments
    // refuse them (the host's schema check words the message for the model).
    for bad in [
        r#"{"path":"f.txt","startLine":1.5}"#,
        r#"{"path":"f.txt","startLine":"2"}"#,
        r#"{"path":"f.txt","lineCount":-1}"#,
        r#"{"path":"f.txt","offset":-1}"#,
        r#"{"path":"f.txt","bogus":1}"#,
    ] {
        assert!(serde_json::from_str::<ReadFileArgs>(bad).is_err(), "{bad}");
    }
    let ok: ReadFileArgs =
        serde_json::from_str(r#"{"path":"f.txt","startLine":null,"offset":3}"#).unwrap();
    assert_eq!(ok.start_line, None);
    assert_eq!(ok.offset, Some(3));
}

#[test]
fn r8_num_5000_at_the_default_cap() {
    let fx = Fixture::new();
    fx.write("f.txt", num(5000));
    let ctx = fx.ctx(65_536);
    let result = read_file(&ctx, &args("f.txt"));
    assert_fits(&result, 65_536);
    let page = result.unwrap();
    let e = escaped(&page.content);
    assert!(e <= 32_768 && e > 31_744, "escaped size {e}");
    assert_eq!(page.content.lines().count(), 1560);
    assert_eq!(page.end_line, Some(1560));
    assert_eq!(page.next_offset, Some(31_200));
    assert_eq!(page.next_line, Some(1561));
}

#[test]
fn r9_path_too_long_for_the_cap_names_the_setting() {
    let fx = Fixture::new();
    let dir = (0..4)
        .map(|i| format!("{i}{}", "x".repeat(194)))
        .collect::<Vec<_>>()
        .join("/");
    let path = format!("{dir}/f.txt");
    assert!((780..=820).contains(&path.len()), "{}", path.len());
    fx.write(&path, num(10));
    let ctx = fx.ctx(1024);
    let results = [
        obs(&read_file(&ctx, &args(&path))),
        obs(&tail_file(
            &ctx,
            &TailFileArgs {
                path: path.clone(),
                ..Default::default()
            },
        )),
        obs(&grep_files(
            &ctx,
            &GrepFilesArgs {
                pattern: "line".into(),
                path: Some(path.clone()),
                ..Default::default()
            },
        )),
        obs(&grep_files(
            &ctx,
            &GrepFilesArgs {
                pattern: "line".into(),
                path: Some(dir.clone()),
                ..Default::default()
            },
        )),
        obs(&list_dir(
            &ctx,
            &ListDirArgs {
                path: Some(dir.clone()),
                ..Default::default()
            },
        )),
    ];
    for o in results {
        assert!(o.len() <= 1024, "{o}");
        assert!(o.starts_with("{\"ok\":false,"), "{o}");
        assert!(o.contains("agent.max_tool_result_bytes"), "{o}");
        assert!(o.contains("\"kind\":\"page-too-small\""), "{o}");
    }
}

/// `hist.txt` of case C7: 50 lines mentioning git; line 20 holds `E9 80`, line 30 `FF`.
pub(crate) fn c7_hist() -> Vec<u8> {
    let mut file = Vec::new();
    for i in 1..=50 {
        file.extend_from_slice(format!("{i:02} git commit ").as_bytes());
        match i {
            20 => file.extend_from_slice(b"caf\xE9\x80 cut"),
            30 => file.extend_from_slice(b"lone \xFF byte"),
            _ => file.extend_from_slice(b"plain ascii"),
        }
        file.push(b'\n');
    }
    file
}
