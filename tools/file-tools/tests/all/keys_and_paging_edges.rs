//! Rows I7–I11 (docs/regressions.md#i7, the four after it): key material in other encodings
//! and shapes, the edges of the key look-back and of paging, line terminators, and deep
//! trees. Each test is the row's repro; the figure before the fix is in its doc comment.

use sluice_file_tools::keys::{LOOK_BACK_BYTES, has_armor};
use sluice_file_tools::{
    Context, ErrorKind, GrepFilesArgs, GrepFilesPage, ListDirArgs, ReadFileArgs, ReadFilePage,
    TailFileArgs, TailFilePage, ToolError, grep_files, list_dir, read_file, tail_file,
};

use crate::support::{CAP, Fixture, fake_key_body, fake_pem};

fn read_at(
    ctx: &Context,
    path: &str,
    offset: Option<u64>,
    line_count: Option<u64>,
) -> Result<ReadFilePage, ToolError> {
    read_file(
        ctx,
        &ReadFileArgs {
            path: path.into(),
            offset,
            line_count,
            ..Default::default()
        },
    )
}

fn read_line(ctx: &Context, path: &str, start_line: u64) -> Result<ReadFilePage, ToolError> {
    read_file(
        ctx,
        &ReadFileArgs {
            path: path.into(),
            start_line: Some(start_line),
            ..Default::default()
        },
    )
}

fn tail(ctx: &Context, path: &str, lines: u64) -> Result<TailFilePage, ToolError> {
    tail_file(
        ctx,
        &TailFileArgs {
            path: path.into(),
            lines: Some(lines),
            ..Default::default()
        },
    )
}

fn grep(ctx: &Context, pattern: &str, path: &str) -> GrepFilesPage {
    grep_files(
        ctx,
        &GrepFilesArgs {
            pattern: pattern.into(),
            path: Some(path.into()),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("grep {pattern:?} in {path}: {e}"))
}

#[track_caller]
fn assert_refused<T: std::fmt::Debug>(result: Result<T, ToolError>, why: &str) {
    let err = result.expect_err("refused as key material");
    assert_eq!(err.kind, ErrorKind::KeyMaterial, "{}", err.message);
    assert!(err.message.contains(why), "{:?} lacks {why:?}", err.message);
}

/// `text` as UTF-16 with a byte-order mark, little- or big-endian.
fn utf16(text: &str, little: bool) -> Vec<u8> {
    let mut out = if little {
        vec![0xFF, 0xFE]
    } else {
        vec![0xFE, 0xFF]
    };
    for unit in text.encode_utf16() {
        out.extend(if little {
            unit.to_le_bytes()
        } else {
            unit.to_be_bytes()
        });
    }
    out
}

/// CJK text (no NUL byte in UTF-16 for its first 9,600 bytes), then a PEM key.
fn cjk_then_key() -> String {
    format!(
        "{}\n{}after\n",
        "漢字仮名交じり文".repeat(600),
        fake_pem("RSA ", 3)
    )
}

/// Item 7. Before: grep_files transcoded the UTF-16 file and returned the key's 3 body
/// lines (count 3, skippedFiles 0); read_file served the key as `M\u0000I\u0000…`.
#[test]
fn i7_utf16_key_is_key_material_to_every_tool() {
    let fx = Fixture::new();
    let text = cjk_then_key();
    fx.write("le/notes.txt", utf16(&text, true));
    fx.write("be/notes.txt", utf16(&text, false));
    let ctx = fx.ctx(65_536);
    for dir in ["le", "be"] {
        let path = format!("{dir}/notes.txt");
        for pattern in ["[A-Za-z0-9+/]{16,}", "A", "."] {
            let page = grep(&ctx, pattern, dir);
            assert_eq!((page.count, page.skipped_files), (0, 1), "{dir} {pattern}");
        }
        assert_refused(read_at(&ctx, &path, None, None), "holds a PEM private key");
        // The last line (`after`, or the NUL after the last `\n` of little-endian text)
        // is after the END line; three lines hold it.
        assert!(tail(&ctx, &path, 1).is_ok());
        assert_refused(tail(&ctx, &path, 3), "holds a PEM private key");
        // A page starting inside the key, after its BEGIN line.
        let begin = 2 + 2 * (600 * 8 + 1) + 2 * 32;
        assert_refused(
            read_at(&ctx, &path, Some(begin as u64), Some(1)),
            "at that position",
        );
        // The line before the key is served as its bytes are, not transcoded.
        let bytes = std::fs::read(fx.root().join(&path)).unwrap();
        let newline = bytes.iter().position(|&b| b == b'\n').unwrap() as u64;
        let first = read_at(&ctx, &path, None, Some(1)).unwrap();
        assert!(
            first.content.starts_with("\u{FFFD}\u{FFFD}"),
            "{:?}",
            &first.content[..8]
        );
        assert_eq!(first.invalid_utf8, Some(true));
        assert_eq!(first.next_offset, Some(newline + 1));
    }
    // A UTF-16 file is searched as its bytes: the UTF-8 pattern `needle` is not in them.
    let words = utf16(&format!("{}\nneedle\n", "漢字".repeat(2500)), true);
    fx.write("plain/words.txt", words);
    let page = grep(&ctx, "needle", "plain");
    assert_eq!((page.count, page.skipped_files), (0, 0));
}

/// Item 7. Before: `^hello` matched the first line of a file starting with a UTF-8 BOM, and
/// the text came back without it.
#[test]
fn i7_a_utf8_bom_is_part_of_the_first_line() {
    let fx = Fixture::new();
    fx.write("bom.txt", "\u{FEFF}hello world\nhello again\n");
    let ctx = fx.ctx(CAP);
    let page = grep(&ctx, "^hello", "bom.txt");
    assert_eq!(page.results.len(), 1);
    assert_eq!(
        (page.results[0].line, page.results[0].text.as_str()),
        (2, "hello again")
    );
    let page = grep(&ctx, "^\u{FEFF}hello", "bom.txt");
    assert_eq!(page.results[0].text, "\u{FEFF}hello world");
    assert_eq!(
        read_at(&ctx, "bom.txt", None, Some(1)).unwrap().content,
        "\u{FEFF}hello world\n"
    );
}

/// A traditionally encrypted RSA key with `body` body lines, and where its body starts.
fn encrypted_key(body: usize) -> (String, u64) {
    let head = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0123456789ABCDEF0123456789ABCDEF\n\n";
    let key = format!(
        "{head}{}-----END RSA PRIVATE KEY-----\n",
        fake_key_body(body)
    );
    (key, head.len() as u64)
}

/// Item 8. Before: both pages whose look-back started in the header lines were served
/// (2 of 2); after: refused.
#[test]
fn i8_encrypted_key_longer_than_the_look_back() {
    let fx = Fixture::new();
    let (key, body_at) = encrypted_key(2200);
    fx.write("enc.txt", &key);
    let ctx = fx.ctx(CAP);
    // Every body line start whose look-back starts after the BEGIN line's first byte and
    // at or before the body: in the BEGIN line, a header, or the empty line.
    let starts: Vec<u64> = (0..2200)
        .map(|i| body_at + 65 * i)
        .filter(|s| (1..=body_at).contains(&s.saturating_sub(LOOK_BACK_BYTES)))
        .collect();
    assert_eq!(starts.len(), 2);
    // The first look-back starts 14 bytes into the BEGIN line, which it cuts
    // (docs/keys.md#cut-armor); the second in the DEK-Info line, a neutral one.
    for (s, why) in starts
        .into_iter()
        .zip(["at that position", "only key-body lines"])
    {
        assert_refused(read_at(&ctx, "enc.txt", Some(s), Some(1)), why);
    }

    // tail_file: a key with no END (2,079 body lines) whose window starts inside the
    // DEK-Info line: at CAP 8192 the window starts a page (4,096 bytes) + 8 + 128 KiB
    // before the end.
    let open = &key[..body_at as usize + 65 * 2079];
    let window_start = open.len() as u64 - (4096 + 8) - LOOK_BACK_BYTES;
    assert_eq!(window_start, 70);
    fx.write("open.txt", open);
    assert_refused(
        tail(&ctx, "open.txt", 1),
        "may end inside a PEM private key",
    );
}

/// Item 9. Before: a 1,100-character label and a header split across `\r\n` were not armor;
/// read_file served both keys, grep returned 3 body lines of each.
#[test]
fn i9_long_labels_and_split_headers() {
    let fx = Fixture::new();
    let body = fake_key_body(3).replace('\n', "\r\n");
    for n in [1100, 5000] {
        let label = "A".repeat(n);
        fx.write(
            &format!("long{n}/key.txt"),
            format!(
                "intro\n-----BEGIN {label} PRIVATE KEY-----\n{}-----END {label} PRIVATE KEY-----\nouter\n",
                fake_key_body(3)
            ),
        );
    }
    fx.write(
        "split/key.txt",
        format!("intro\r\n-----BEGIN RSA PRIVATE\r\nKEY-----\r\n{body}-----END RSA PRIVATE\r\nKEY-----\r\nouter\r\n"),
    );
    fx.write(
        "wrapped/key.txt",
        format!("intro\n-----BEGIN OPENSSH\n  PRIVATE KEY-----\n{body}-----END OPENSSH\n  PRIVATE KEY-----\nouter\n"),
    );
    let ctx = fx.ctx(65_536);
    for dir in ["long1100", "long5000", "split", "wrapped"] {
        let path = format!("{dir}/key.txt");
        assert_refused(read_at(&ctx, &path, None, None), "holds a PEM private key");
        // A page from the first body line (line 3, or 4 when the header is split).
        let first_body = if dir.starts_with("long") { 3 } else { 4 };
        let page = read_file(
            &ctx,
            &ReadFileArgs {
                path: path.clone(),
                start_line: Some(first_body),
                line_count: Some(1),
                ..Default::default()
            },
        );
        assert_refused(page, "at that position");
        assert_refused(tail(&ctx, &path, 2), "holds a PEM private key");
        // The END line is recognised too: the line after it is served.
        assert_eq!(tail(&ctx, &path, 1).unwrap().lines, ["outer"]);
        let page = grep(&ctx, "[A-Za-z0-9+/]{16,}|intro|outer", dir);
        assert_eq!((page.count, page.skipped_files), (0, 1), "{dir}");
    }
    // What the host's last scan sees (a backstop, not a defence against a tool that
    // hides armor on purpose; see docs/observations.md#key-scan).
    assert!(has_armor(b"-----BEGIN RSA PRIVATE\r\nKEY-----"));
    assert!(!has_armor(b"-----begin rsa private key-----"));
    assert!(!has_armor(b"-----BEGIN RSA\nPRIVATE\nKEY-----"));
}

/// Item 9, at the look-back's edge: a long key whose BEGIN line is split, read where the
/// 128 KiB window starts exactly on the header's second part (`KEY-----`), which alone is
/// no armor. That part counts as an armor line the window cuts (docs/keys.md#cut-armor),
/// so the page starts inside a key; five dashes alone are only a neutral line, and the page
/// fails closed like any page deep in a key.
#[test]
fn i9_split_header_at_the_window_edge() {
    let fx = Fixture::new();
    for (second, why) in [
        ("KEY-----", "at that position"),
        ("  RSA PRIVATE KEY-----", "at that position"),
        ("-----", "only key-body lines"),
    ] {
        let first = match second {
            "KEY-----" => "-----BEGIN RSA PRIVATE",
            "-----" => "-----BEGIN RSA PRIVATE KEY",
            _ => "-----BEGIN",
        };
        let key = format!(
            "{first}\n{second}\n{}-----END RSA PRIVATE KEY-----\n",
            fake_key_body(2100)
        );
        fx.write("k.txt", &key);
        let ctx = fx.ctx(CAP);
        // Mid-way through a body line, so the page's own line is partial too.
        let start = (first.len() + 1) as u64 + LOOK_BACK_BYTES;
        assert_refused(read_at(&ctx, "k.txt", Some(start), Some(1)), why);
    }
}

/// Item 10. Before: `startLine` = last line + 1 was refused ("holds a PEM private key at
/// that position") for a file ending inside a key or right after its BEGIN line, while
/// last line + 2 was served.
#[test]
fn i10_start_line_past_the_end_is_the_empty_page() {
    let fx = Fixture::new();
    let body = fake_key_body(2);
    let files = [
        (
            "inside.txt",
            format!("intro\n-----BEGIN EC PRIVATE KEY-----\n{body}"),
        ),
        (
            "begin.txt",
            "intro\n-----BEGIN EC PRIVATE KEY-----\n".to_string(),
        ),
        (
            "begin_no_nl.txt",
            "intro\n-----BEGIN EC PRIVATE KEY-----".to_string(),
        ),
        ("after.txt", format!("intro\n{}", fake_pem("EC ", 2))),
        (
            "after_no_nl.txt",
            format!("intro\n{}", fake_pem("EC ", 2).trim_end()),
        ),
    ];
    let ctx = fx.ctx(CAP);
    for (name, text) in &files {
        fx.write(name, text);
        let size = text.len() as u64;
        let lines = text.lines().count() as u64;
        let empty = ReadFilePage {
            path: name.to_string(),
            size,
            offset: size,
            total_lines: Some(lines),
            ..Default::default()
        };
        for past in [lines + 1, lines + 2, lines + 100] {
            assert_eq!(
                read_line(&ctx, name, past).unwrap(),
                empty,
                "{name} startLine {past}"
            );
        }
        // `offset` at the end: the empty page too, without line numbers.
        let page = read_at(&ctx, name, Some(size), None).unwrap();
        assert_eq!(
            (page.offset, page.content.as_str(), page.next_offset),
            (size, "", None)
        );
    }
}

/// Item 10. Before: a look-back window starting exactly on a whole ordinary line ignored
/// it and refused the page; after: served. One byte later the line is partial and the
/// page is refused, as before.
#[test]
fn i10_window_starting_on_a_whole_ordinary_line() {
    let fx = Fixture::new();
    let before = fake_key_body(10);
    // 31 + 1 + 2016 × 65 = 131,072 bytes from the ordinary line (not base64) to `after`.
    let at_line = format!("{before}{}\n{}after\n", ".".repeat(31), fake_key_body(2016));
    let mid_line = format!("{before}{}\n{}after\n", ".".repeat(32), fake_key_body(2016));
    fx.write("at_line.txt", &at_line);
    fx.write("mid_line.txt", &mid_line);
    let ctx = fx.ctx(CAP);
    let start = at_line.len() as u64 - 6;
    assert_eq!(start - LOOK_BACK_BYTES, before.len() as u64);
    let page = read_at(&ctx, "at_line.txt", Some(start), None).unwrap();
    assert_eq!(page.content, "after\n");
    assert_refused(
        read_at(&ctx, "mid_line.txt", Some(start + 1), None),
        "only key-body lines",
    );

    // tail_file: its window starts `page + 8` bytes plus the look-back before the end.
    // 34 + 1 + 2079 × 65 + 6 = 4104 + 131,072 bytes from the ordinary line to the end.
    let at_line = format!("{before}{}\n{}after\n", ".".repeat(34), fake_key_body(2079));
    let mid_line = format!("{before}{}\n{}after\n", ".".repeat(35), fake_key_body(2079));
    fx.write("tail_at.txt", &at_line);
    fx.write("tail_mid.txt", &mid_line);
    assert_eq!(tail(&ctx, "tail_at.txt", 1).unwrap().lines, ["after"]);
    assert_refused(
        tail(&ctx, "tail_mid.txt", 1),
        "may end inside a PEM private key",
    );
}

/// Item 10. Before: tail_file and grep_files dropped a `\r` that ends the file (`["a",
/// "b"]`), and `foo$` found nothing in a CRLF file (count 0) while `\r` matched every line.
#[test]
fn i10_line_terminators() {
    let fx = Fixture::new();
    fx.write("lone.txt", "a\nb\r");
    fx.write("crlf.txt", "foo\r\nbar\r\n");
    fx.write("mixed.txt", "a\rb\r\nc\r\r\nd\n\r\n");
    let ctx = fx.ctx(CAP);
    assert_eq!(tail(&ctx, "lone.txt", 5).unwrap().lines, ["a", "b\r"]);
    assert_eq!(tail(&ctx, "crlf.txt", 5).unwrap().lines, ["foo", "bar"]);
    assert_eq!(
        tail(&ctx, "mixed.txt", 5).unwrap().lines,
        ["a\rb", "c\r", "d", ""]
    );

    let found = |pattern: &str, path: &str| -> Vec<(u64, String)> {
        grep(&ctx, pattern, path)
            .results
            .into_iter()
            .map(|m| (m.line, m.text))
            .collect()
    };
    assert_eq!(found("b", "lone.txt"), [(2, "b\r".to_string())]);
    assert_eq!(found(r"b\r$", "lone.txt"), [(2, "b\r".to_string())]);
    assert_eq!(found("foo$", "crlf.txt"), [(1, "foo".to_string())]);
    assert_eq!(found(r"\r", "crlf.txt"), []);
    assert_eq!(found(r"o\s", "crlf.txt"), []);
    assert_eq!(found("^a.b$", "mixed.txt"), [(1, "a\rb".to_string())]);
    assert_eq!(found(r"\r$", "mixed.txt"), [(2, "c\r".to_string())]);
    assert_eq!(found("^$", "mixed.txt"), [(4, String::new())]);
}

/// `depth` nested directories `d` under `base`, the deepest holding `f.txt`; returns the
/// path of `f.txt` relative to the root.
fn deep_tree(fx: &Fixture, base: &str, depth: usize) -> String {
    let rel = format!("{base}/{}f.txt", "d/".repeat(depth));
    fx.write(&rel, "needle at the bottom\n");
    rel
}

/// Item 11. Before (through the component): "the tool crashed: wasm trap: call stack
/// exhausted" for a tree 500 directories deep. Natively the stack is larger, so the walk
/// runs here on a thread with a 256 KiB stack, about what 500 levels of the old recursion
/// needed: the walk's stack use no longer grows with the depth.
#[test]
fn i11_deep_trees_on_a_small_stack() {
    let fx = Fixture::new();
    let rel = deep_tree(&fx, "deep", 1500);
    let ctx = fx.ctx(65_536);
    let found = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let page = grep(&ctx, "needle", "deep");
            let results: Vec<(String, u64)> =
                page.results.into_iter().map(|m| (m.path, m.line)).collect();
            let read = read_at(&ctx, &rel, None, None).map(|p| p.content);
            let dir = rel.trim_end_matches("f.txt").to_string();
            let listed = list_dir(
                &ctx,
                &ListDirArgs {
                    path: Some(dir),
                    ..Default::default()
                },
            )
            .map(|p| p.entries.into_iter().map(|e| e.name).collect::<Vec<_>>());
            (results, read, listed, rel)
        })
        .unwrap()
        .join()
        .expect("no stack overflow");
    let (results, read, listed, rel) = found;
    assert_eq!(results, [(rel, 1)]);
    assert_eq!(read.unwrap(), "needle at the bottom\n");
    assert_eq!(listed.unwrap(), ["f.txt"]);
}
