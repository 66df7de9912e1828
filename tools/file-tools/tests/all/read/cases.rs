//! read_file in cases C1–C4, C7 and C11 of `docs/regressions.md`, and the edges of a page:
//! wrong kinds, offsets inside a character, binary detection, a line that fills the page.

use super::*;

#[test]
fn c1_one_line_minified_json() {
    let fx = Fixture::new();
    let items: Vec<String> = (0..5000)
        .map(|i| format!("{{\"i\":{i:04},\"v\":\"abcdefghij\"}}"))
        .collect();
    let file = format!("[{}]", items.join(","));
    assert!(file.len() > 140_000);
    fx.write("min.json", &file);
    let ctx = fx.ctx(CAP);
    let first = read_file(&ctx, &args("min.json"));
    assert_fits(&first, CAP);
    let first = first.unwrap();
    assert_eq!(first.line_truncated, Some(true));
    assert_eq!(first.next_line, Some(1));
    assert!(first.next_offset.unwrap() > 0);
    assert_eq!((first.start_line, first.end_line), (Some(1), Some(1)));

    let pages = follow_read(&ctx, "min.json", None);
    assert!(pages.len() > 10);
    for p in &pages[..pages.len() - 1] {
        assert_eq!(p.line_truncated, Some(true));
        assert_eq!(p.next_line, Some(1));
        assert!(escaped(&p.content) <= 4096);
    }
    let last = pages.last().unwrap();
    assert_eq!(last.total_lines, Some(1));
    assert_eq!(last.line_truncated, None);
    let joined: String = pages.iter().map(|p| p.content.as_str()).collect();
    assert_eq!(joined.as_bytes(), file.as_bytes());
}

#[test]
fn c2_line_count_honoured_but_long_lines_still_fit() {
    let fx = Fixture::new();
    let mut file = String::new();
    for i in 0..2000 {
        let head = format!("{{\"n\":{i:05},\"pad\":\"");
        let tail = "\"}\n";
        file.push_str(&head);
        file.push_str(&"x".repeat(1000 - head.len() - tail.len()));
        file.push_str(tail);
    }
    assert_eq!(file.len(), 2_000_000);
    fx.write("data.json", &file);
    let ctx = fx.ctx(CAP);
    let result = read_file(
        &ctx,
        &ReadFileArgs {
            line_count: Some(50),
            ..args("data.json")
        },
    );
    assert_fits(&result, CAP);
    let page = result.unwrap();
    let lines = page.content.lines().count() as u64;
    assert!((1..50).contains(&lines), "{lines} lines");
    assert!(page.content.ends_with('\n'));
    assert_eq!(page.end_line, Some(lines));
    assert_eq!(page.next_line, Some(page.end_line.unwrap() + 1));
    assert_eq!(page.next_offset, Some(lines * 1000));
}

#[test]
fn c3_twenty_thousand_tiny_lines() {
    let fx = Fixture::new();
    let file: String = (1..=20_010).map(|i| format!("{i}\n")).collect();
    fx.write("lines.txt", &file);
    let ctx = fx.ctx(CAP);
    let result = read_file(&ctx, &args("lines.txt"));
    assert_fits(&result, CAP);
    let page = result.unwrap();
    assert_eq!(page.start_line, Some(1));
    assert_eq!(page.next_line, Some(page.end_line.unwrap() + 1));
    assert!(page.content.starts_with("1\n2\n3\n"));
    let pages = follow_read(&ctx, "lines.txt", None);
    let joined: String = pages.iter().map(|p| p.content.as_str()).collect();
    assert_eq!(joined, file);
    assert_eq!(pages.last().unwrap().total_lines, Some(20_010));
}

#[test]
fn c4_explicit_range_over_the_cap_pages_instead_of_failing() {
    let fx = Fixture::new();
    let file: String = (1..=5000)
        .map(|i| format!("{i:05} {}\n", "l".repeat(53)))
        .collect();
    assert_eq!(file.len(), 5000 * 60);
    fx.write("big.log", &file);
    let ctx = fx.ctx(CAP);
    let result = read_file(
        &ctx,
        &ReadFileArgs {
            start_line: Some(1),
            line_count: Some(5000),
            ..args("big.log")
        },
    );
    assert_fits(&result, CAP);
    let page = result.unwrap();
    assert!(page.next_offset.is_some() && page.next_line.is_some());
    let pages = follow_read(&ctx, "big.log", Some(5000));
    let joined: String = pages.iter().map(|p| p.content.as_str()).collect();
    assert_eq!(joined, file);
    assert_eq!(pages.last().unwrap().total_lines, Some(5000));
}

#[test]
fn c7_invalid_utf8_and_a_binary_file() {
    let fx = Fixture::new();
    let file = c7_hist();
    fx.write("hist.txt", &file);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut noise = crate::support::pseudo_random_bytes(7, 4096);
    noise[100] = 0;
    png.append(&mut noise);
    fx.write("img.png", &png);
    let ctx = fx.ctx(CAP);

    let page = read_file(&ctx, &args("hist.txt")).unwrap();
    assert_eq!(page.content, String::from_utf8_lossy(&file));
    assert_eq!(page.content.lines().count(), 50);
    assert_eq!(page.content.matches('\u{FFFD}').count(), 2);
    assert_eq!(page.invalid_utf8, Some(true));
    assert_eq!(page.total_lines, Some(50));
    assert_eq!(page.size, file.len() as u64);
    assert_eq!(page.next_offset, None);

    // Exact byte cursors: page by page, each nextOffset is the raw offset of a line start.
    let line_starts: Vec<u64> = std::iter::once(0)
        .chain(
            file.iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i as u64 + 1),
        )
        .collect();
    let pages = follow_read(&ctx, "hist.txt", Some(7));
    for p in &pages {
        assert!(line_starts.contains(&p.offset));
        let end = p.next_offset.unwrap_or(file.len() as u64);
        let raw = &file[p.offset as usize..end as usize];
        assert_eq!(p.content, String::from_utf8_lossy(raw));
        assert_eq!(
            p.invalid_utf8,
            std::str::from_utf8(raw).is_err().then_some(true)
        );
    }
    assert_eq!(pages.len(), 8);

    let err = read_file(&ctx, &args("img.png")).unwrap_err();
    assert_eq!(err.kind, ErrorKind::BinaryFile);
    assert!(err.message.contains("img.png"), "{}", err.message);
    assert!(err.message.contains("binary"), "{}", err.message);
    assert!(
        err.message.contains(&format!("{} bytes", png.len())),
        "{}",
        err.message
    );
}

#[test]
fn c11_wrapped_long_line_is_not_skipped() {
    let fx = Fixture::new();
    let lines: Vec<String> = (1..=6)
        .map(|i| {
            if i == 2 {
                let mut l: String = (0..19_999)
                    .map(|j| (b'a' + (j % 26) as u8) as char)
                    .collect();
                l.push('\n');
                l
            } else {
                format!("line{i:05}\n")
            }
        })
        .collect();
    assert_eq!(lines[0].len(), 10);
    assert_eq!(lines[1].len(), 20_000);
    let file: String = lines.concat();
    fx.write("wrap.txt", &file);
    let ctx = fx.ctx(CAP);
    let pages = follow_read(&ctx, "wrap.txt", Some(3));

    // Attribute each page's text to its source lines and rebuild them.
    let mut rebuilt = vec![String::new(); 6];
    let mut expected_next = 1;
    for p in &pages {
        let start = p.start_line.unwrap();
        let end = p.end_line.unwrap();
        assert_eq!(start, expected_next, "pages continue where they left off");
        assert!(end - start < 3, "lineCount counts source lines");
        let mut line = start;
        for piece in p.content.split_inclusive('\n') {
            rebuilt[line as usize - 1].push_str(piece);
            if piece.ends_with('\n') {
                line += 1;
            }
        }
        assert_eq!(
            line - u64::from(p.line_truncated.is_none()),
            end,
            "endLine is the last line the page touches"
        );
        expected_next = p.next_line.unwrap_or(end + 1);
    }
    assert_eq!(
        rebuilt, lines,
        "each line exactly once, line 2 over several parts"
    );
    assert!(
        pages
            .iter()
            .filter(|p| p.line_truncated == Some(true))
            .count()
            >= 4
    );
    assert_eq!(pages.last().unwrap().total_lines, Some(6));
}

#[test]
fn directory_is_wrong_kind_and_missing_file_not_found() {
    let fx = Fixture::new();
    fx.mkdir("sub");
    let ctx = fx.ctx(CAP);
    let err = read_file(&ctx, &args("sub")).unwrap_err();
    assert_eq!(err.kind, ErrorKind::WrongKind);
    assert!(err.message.contains("list_dir"), "{}", err.message);
    let err = read_file(&ctx, &args("nope.txt")).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
    assert!(err.message.contains("nope.txt"));
    let err = read_file(&ctx, &args("sub/nope.txt")).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
}

#[test]
fn offset_inside_a_character_moves_forward() {
    let fx = Fixture::new();
    fx.write("u.txt", "aé漢😀\n");
    let ctx = fx.ctx(CAP);
    for (asked, real, content) in [
        (0, 0, "aé漢😀\n"),
        (2, 3, "漢😀\n"),
        (4, 6, "😀\n"),
        (5, 6, "😀\n"),
        (7, 10, "\n"),
        (9, 10, "\n"),
        (10, 10, "\n"),
        (11, 11, ""),
    ] {
        let page = read_file(
            &ctx,
            &ReadFileArgs {
                offset: Some(asked),
                ..args("u.txt")
            },
        )
        .unwrap();
        assert_eq!(
            (page.offset, page.content.as_str()),
            (real, content),
            "offset {asked}"
        );
        assert_eq!(page.invalid_utf8, None, "offset {asked}");
    }
}

#[test]
fn binary_only_when_nul_in_the_first_8_kib() {
    let fx = Fixture::new();
    let mut late = "x".repeat(8 * 1024);
    late.push('\0');
    fx.write("late.txt", &late);
    let mut early = "x".repeat(8 * 1024 - 1);
    early.push('\0');
    fx.write("early.bin", &early);
    let ctx = fx.ctx(65_536);
    assert!(read_file(&ctx, &args("late.txt")).is_ok());
    let err = read_file(&ctx, &args("early.bin")).unwrap_err();
    assert_eq!(err.kind, ErrorKind::BinaryFile);
    assert!(err.message.contains("8192 bytes"), "{}", err.message);
}

#[test]
fn a_line_that_exactly_fills_the_page_then_its_newline() {
    // The content fits the page exactly; the `\n` (2 escaped bytes) does not.
    let fx = Fixture::new();
    let file = format!("{}\nnext\n", "a".repeat(1023));
    fx.write("f.txt", &file);
    let ctx = fx.ctx(2048);
    let pages = follow_read(&ctx, "f.txt", None);
    let joined: String = pages.iter().map(|p| p.content.as_str()).collect();
    assert_eq!(joined, file);
    assert_eq!(pages[0].line_truncated, Some(true));
    assert_eq!(pages.last().unwrap().total_lines, Some(2));
}

#[test]
fn a_page_deep_in_a_large_file_by_offset() {
    // A page at a large offset costs about the same as one at 0: it reads the page plus
    // the key look-back, and the byte cursor is exact.
    let fx = Fixture::new();
    let file = num(400_000);
    fx.write("f.txt", &file);
    let ctx = fx.ctx(4096);
    let offset = 7_000_000;
    let page = read_file(
        &ctx,
        &ReadFileArgs {
            offset: Some(offset),
            ..args("f.txt")
        },
    )
    .unwrap();
    assert_eq!(page.offset, offset);
    assert_eq!(page.start_line, None);
    let end = page.next_offset.unwrap() as usize;
    assert_eq!(page.content, &file[offset as usize..end]);
}
