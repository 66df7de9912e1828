//! Property tests of the key rules and the line rules: no served page of read_file,
//! tail_file or grep_files ever holds a byte of a PEM key (but the marker and label
//! characters of an armor line too long to be recognised), whatever shape the key has
//! (lines ended by `\n`, `\r\n`, a lone `\r` or escaped `\n` on one line; indented or
//! not; trailing blanks; PGP armor headers; armor lines whole or split across two lines;
//! labels up to 200,000 characters, split lines too; bodies deeper than the look-back, read
//! at any depth) (d);
//! a `startLine` past the last line is always the empty page (e); grep matches and returns
//! each line without its terminator (f); armor on one line is found exactly when the
//! pattern of docs/keys.md#armor is there, whatever the label's length and with NULs
//! interleaved (g).

use std::ops::Range;

use proptest::prelude::*;
use sluice_file_tools::keys::has_armor;
use sluice_file_tools::{
    GrepFilesArgs, ReadFileArgs, TailFileArgs, grep_files, read_file, tail_file,
};

use crate::support::{Fixture, assert_fits, follow_grep};

/// `cases` cases, or as many as `PROPTEST_CASES` says when it is set (for a longer run).
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(cases),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A base64 line of 64 characters, different for every (key, line).
fn body_line(key: usize, line: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x = (key as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (line as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    (0..64)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ALPHABET[(x % 64) as usize] as char
        })
        .collect()
}

/// What ends the lines of a key (docs/keys.md#line-breaks).
#[derive(Clone, Copy, Debug)]
enum Ending {
    Lf,
    CrLf,
    /// A lone `\r`: the whole key is one line to paging.
    Cr,
    /// The two characters `\n`: the key is one quoted value on one line (`KEY="…"`).
    Escaped,
}

impl Ending {
    fn text(self) -> &'static str {
        match self {
            Ending::Lf => "\n",
            Ending::CrLf => "\r\n",
            Ending::Cr => "\r",
            Ending::Escaped => "\\n",
        }
    }
}

/// How one key is written.
#[derive(Clone, Debug)]
struct KeyShape {
    /// The words before `PRIVATE KEY` (`RSA `, ``, a label of 1,500 or 150,000 characters,
    /// …).
    label: String,
    /// Body lines: a few, or more than the 128 KiB look-back holds.
    lines: usize,
    /// `Proc-Type:`/`DEK-Info:` headers and an empty line after BEGIN.
    encrypted: bool,
    /// A PGP block: ` BLOCK` after `PRIVATE KEY`, and the armor headers `Version:`,
    /// `Comment:`, `Hash:` and an empty line after BEGIN.
    pgp: bool,
    /// Where the BEGIN and END lines are split across two lines, when they are.
    split: Option<Split>,
    /// What ends every line of the key.
    ending: Ending,
    /// Every line indented by this (none, two spaces, a tab).
    indent: &'static str,
    /// Every body line followed by this (none, a space, spaces and a tab).
    trailing: &'static str,
}

fn key_shape() -> impl Strategy<Value = KeyShape> {
    (
        prop_oneof![
            4 => Just(String::new()),
            4 => Just("RSA ".to_string()),
            2 => Just("OPENSSH ".to_string()),
            2 => Just("ML_KEM_768 ".to_string()),
            2 => (1000usize..1600).prop_map(|n| format!("{} ", "B".repeat(n))),
            1 => (131_000usize..200_000).prop_map(|n| format!("{} ", "C".repeat(n))),
        ],
        prop_oneof![4 => 1usize..6, 1 => 2030usize..2100],
        any::<bool>(),
        any::<bool>(),
        prop::option::of(prop_oneof![
            4 => (0usize..40).prop_map(Split::After),
            1 => Just(Split::BeforeKey),
        ]),
        prop::sample::select(vec![Ending::Lf, Ending::CrLf, Ending::Cr, Ending::Escaped]),
        prop::sample::select(vec!["", "  ", "\t"]),
        prop::sample::select(vec!["", " ", "  \t"]),
    )
        .prop_map(
            |(label, lines, encrypted, pgp, split, ending, indent, trailing)| KeyShape {
                label,
                lines,
                encrypted,
                pgp,
                split,
                ending,
                indent,
                trailing,
            },
        )
}

/// Where an armor line is split across two lines.
#[derive(Clone, Copy, Debug)]
enum Split {
    /// This many bytes after its `-----BEGIN` or `-----END` (when the line is longer): the
    /// label, however long, on the second line.
    After(usize),
    /// Just before `PRIVATE KEY`: the label, however long, on the first line.
    BeforeKey,
}

/// One block of a file: a line of text, or a key.
#[derive(Clone, Debug)]
enum Block {
    Text(String),
    Key(KeyShape),
}

fn block() -> impl Strategy<Value = Block> {
    prop_oneof![
        4 => prop_oneof![
            "[a-z]{1,8}( [a-z0-9]{1,8}){1,6}",
            Just(String::new()),
            Just("Proc-Type: 4,ENCRYPTED".to_string()),
            Just("-----BEGIN CERTIFICATE-----".to_string()),
            "[A-Za-z0-9+/]{16,80}",
        ]
        .prop_map(Block::Text),
        1 => key_shape().prop_map(Block::Key),
    ]
}

/// A file and the keys in it.
struct KeyFile {
    bytes: Vec<u8>,
    keys: Vec<Key>,
}

/// One key of a [`KeyFile`].
struct Key {
    /// Its bytes, from its BEGIN marker to the end of its END line's `-----`.
    range: Range<usize>,
    /// Its body lines.
    body: Vec<String>,
    /// For a label of 1,000 characters or more, the bytes of each armor line from its
    /// marker to its `PRIVATE KEY-----`: a page that shows only those may be served
    /// (docs/keys.md#the-look-back: read_file reads 1 KiB past a page, and an armor line
    /// that ends beyond it is not recognised by the pages that cut its label).
    labels: Vec<Range<usize>>,
}

fn build(blocks: &[Block]) -> KeyFile {
    let mut out = String::new();
    let mut keys = Vec::new();
    for (k, b) in blocks.iter().enumerate() {
        match b {
            Block::Text(t) => {
                out.push_str(t);
                out.push('\n');
            }
            Block::Key(s) => {
                let nl = s.ending.text();
                let indent = s.indent;
                let block = if s.pgp { " BLOCK" } else { "" };
                let armor = |kind: &str| {
                    let line = format!("-----{kind} {}PRIVATE KEY{block}-----", s.label);
                    let at = s.split.map(|split| match split {
                        Split::After(k) => 5 + kind.len() + k,
                        Split::BeforeKey => line.len() - "PRIVATE KEY-----".len() - block.len(),
                    });
                    match at {
                        Some(at) if at < line.len() => {
                            format!("{indent}{}{nl}{indent}{}{nl}", &line[..at], &line[at..])
                        }
                        _ => format!("{indent}{line}{nl}"),
                    }
                };
                // An escaped key is a quoted value on one line of its own.
                let quoted = matches!(s.ending, Ending::Escaped);
                if quoted {
                    out.push_str("KEY=\"");
                }
                // A split lands inside a label this long or just before `PRIVATE KEY`, so
                // `PRIVATE KEY-----` ends the line.
                let mut labels = Vec::new();
                let mut push_armor = |out: &mut String, kind: &str| {
                    let marker = out.len() + indent.len();
                    out.push_str(&armor(kind));
                    if s.label.len() >= 1000 {
                        labels.push(
                            marker..out.len() - nl.len() - "PRIVATE KEY-----".len() - block.len(),
                        );
                    }
                    marker
                };
                let start = push_armor(&mut out, "BEGIN");
                if s.encrypted {
                    out.push_str(&format!(
                        "{indent}Proc-Type: 4,ENCRYPTED{nl}{indent}DEK-Info: AES-128-CBC,00112233445566778899AABBCCDDEEFF{nl}{nl}"
                    ));
                }
                if s.pgp {
                    out.push_str(&format!(
                        "{indent}Version: GnuPG v2{nl}{indent}Comment: a key made for a test{nl}{indent}Hash: SHA256{nl}{nl}"
                    ));
                }
                let body: Vec<String> = (0..s.lines).map(|i| body_line(k, i)).collect();
                for l in &body {
                    out.push_str(indent);
                    out.push_str(l);
                    out.push_str(s.trailing);
                    out.push_str(nl);
                }
                push_armor(&mut out, "END");
                let end = out.len() - nl.len();
                if quoted {
                    out.push_str("\"\n");
                }
                keys.push(Key {
                    range: start..end,
                    body,
                    labels,
                });
            }
        }
    }
    KeyFile {
        bytes: out.into_bytes(),
        keys,
    }
}

/// True when `text` holds a body line of a key of `file` (whatever ends the lines: a line
/// of paging may hold many lines of a key written with `\r` or `\n` escapes).
fn serves_body(file: &KeyFile, text: &str) -> bool {
    file.keys
        .iter()
        .any(|key| key.body.iter().any(|b| text.contains(b.as_str())))
}

fn key_file() -> impl Strategy<Value = Vec<Block>> {
    prop::collection::vec(block(), 1..14)
}

proptest! {
    #![proptest_config(config(40))]

    /// (d) Pages at any offset or line, and tails of any length, are refused or hold no
    /// byte of a key but the marker and label characters of an armor line whose label is
    /// too long to be recognised from the page (see `Key::labels`).
    #[test]
    fn no_served_page_holds_a_key(
        blocks in key_file(),
        cap in prop_oneof![1024u32..4096, 4096u32..=65_536],
        offsets in prop::collection::vec(any::<prop::sample::Index>(), 1..8),
        line_count in prop::option::of(1u64..5),
        tails in prop::collection::vec(1u64..60, 1..4),
        depths in prop::collection::vec((any::<prop::sample::Index>(), 0u64..120), 1..4),
    ) {
        let file = build(&blocks);
        let fx = Fixture::new();
        fx.write("f.txt", &file.bytes);
        let ctx = fx.ctx(cap);
        let size = file.bytes.len();
        let total_lines = file.bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        // Byte offsets, and line numbers turned into byte offsets by the tool.
        let mut asks: Vec<ReadFileArgs> = Vec::new();
        for at in &offsets {
            asks.push(ReadFileArgs { path: "f.txt".into(), offset: Some(at.index(size + 1) as u64), line_count, ..Default::default() });
            asks.push(ReadFileArgs { path: "f.txt".into(), start_line: Some(1 + at.index(total_lines.max(1) as usize) as u64), line_count, ..Default::default() });
        }
        // Every key's first body line and the line after its END line.
        for Key { range, .. } in &file.keys {
            let line = file.bytes[..range.start].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
            for l in [line + 1, line + 2, line + 3] {
                asks.push(ReadFileArgs { path: "f.txt".into(), start_line: Some(l), line_count: Some(1), ..Default::default() });
            }
            asks.push(ReadFileArgs { path: "f.txt".into(), offset: Some(range.end as u64), ..Default::default() });
            // Inside the key at any depth, and where the look-back starts in its first lines
            // (the BEGIN line, the headers).
            for (at, near) in &depths {
                let deep = range.start + at.index(range.len());
                let look_back_in_head = range.start as u64 + sluice_file_tools::keys::LOOK_BACK_BYTES + near;
                for offset in [deep as u64, look_back_in_head] {
                    if offset <= size as u64 {
                        asks.push(ReadFileArgs { path: "f.txt".into(), offset: Some(offset), ..Default::default() });
                    }
                }
            }
        }
        for args in &asks {
            let result = read_file(&ctx, args);
            assert_fits(&result, cap);
            let Ok(page) = result else { continue };
            let end = page.next_offset.unwrap_or(size as u64) as usize;
            for Key { range, labels, .. } in &file.keys {
                let shown = (page.offset as usize).max(range.start)..end.min(range.end);
                // Nothing of the key, or only the marker and label characters of an armor
                // line too long to be recognised from the page (see `Key::labels`).
                prop_assert!(
                    shown.is_empty() || labels.iter().any(|l| l.start <= shown.start && shown.end <= l.end),
                    "{args:?} served {}..{end}, which overlaps the key at {range:?}", page.offset
                );
            }
            prop_assert!(!has_armor(page.content.as_bytes()));
        }
        for &lines in &tails {
            let result = tail_file(&ctx, &TailFileArgs { path: "f.txt".into(), lines: Some(lines), ..Default::default() });
            assert_fits(&result, cap);
            let Ok(page) = result else { continue };
            for line in &page.lines {
                prop_assert!(!serves_body(&file, line), "tail served {line:?}");
            }
            prop_assert!(!has_armor(page.lines.join("\n").as_bytes()));
        }
        let pages = follow_grep(&ctx, &GrepFilesArgs { pattern: "[A-Za-z0-9+/]{16,}".into(), max_results: Some(500), ..Default::default() });
        for m in pages.iter().flat_map(|p| &p.results) {
            prop_assert!(!serves_body(&file, &m.text), "grep served {:?}", m.text);
        }
    }

    /// (e) A `startLine` past the last line is the empty page at the end of the file,
    /// whatever the file ends with (inside a key, just after one).
    #[test]
    fn start_line_past_the_end_is_the_empty_page(
        blocks in key_file(),
        cut in any::<prop::sample::Index>(),
        past in 1u64..4,
    ) {
        let file = build(&blocks);
        let bytes = &file.bytes[..cut.index(file.bytes.len() + 1)];
        let fx = Fixture::new();
        fx.write("f.txt", bytes);
        let ctx = fx.ctx(4096);
        let total = bytes.split(|&b| b == b'\n').count() as u64 - u64::from(bytes.is_empty() || bytes.ends_with(b"\n"));
        let page = read_file(&ctx, &ReadFileArgs { path: "f.txt".into(), start_line: Some(total + past), ..Default::default() }).unwrap();
        prop_assert_eq!((page.offset, page.content.as_str(), page.total_lines), (bytes.len() as u64, "", Some(total)));
    }
}

/// A line of `a`, `b`, spaces and lone `\r`, and the terminator after it (`\n`, `\r\n`, or
/// none for a last line).
fn cr_line() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!['a', 'b', ' ', '\r', 'A']), 0..8)
        .prop_map(|v| v.into_iter().collect())
}

proptest! {
    #![proptest_config(config(128))]

    /// (f) grep matches each line without its terminator (`\n` or `\r\n`) and returns it so;
    /// a `\r` before anything else, or at the end of the file, is text.
    #[test]
    fn grep_sees_lines_without_terminators(
        lines in prop::collection::vec((cr_line(), any::<bool>()), 1..12),
        last_terminated in any::<bool>(),
        pattern in prop::sample::select(vec![
            "a$", "^b", r"\r", r"a\r?$", "^$", "b.a", r"\s$", "[^a]$", r"^\r", "a",
        ]),
    ) {
        let mut text = String::new();
        for (i, (line, crlf)) in lines.iter().enumerate() {
            text.push_str(line);
            if i + 1 < lines.len() || last_terminated {
                text.push_str(if *crlf { "\r\n" } else { "\n" });
            }
        }
        let regex = regex::RegexBuilder::new(pattern).case_insensitive(true).build().unwrap();
        // The model: a line ends at `\n`, and a `\r` just before that `\n` is part of the
        // terminator; a last line without `\n` is a line when it is not empty.
        let mut expected = Vec::new();
        let mut rest = text.as_str();
        let mut n = 0;
        while !rest.is_empty() {
            n += 1;
            let (line, after) = match rest.find('\n') {
                Some(i) => (rest[..i].strip_suffix('\r').unwrap_or(&rest[..i]), &rest[i + 1..]),
                None => (rest, ""),
            };
            if regex.is_match(line) {
                expected.push((n, line.to_string()));
            }
            rest = after;
        }
        let fx = Fixture::new();
        fx.write("f.txt", &text);
        let page = grep_files(&fx.ctx(65_536), &GrepFilesArgs { pattern: pattern.into(), max_results: Some(500), ..Default::default() }).unwrap();
        let got: Vec<(u64, String)> = page.results.into_iter().map(|m| (m.line, m.text)).collect();
        prop_assert_eq!(got, expected, "{:?}", text);
    }
}

/// Fragments that make armor, almost-armor and noise.
fn armor_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("-----BEGIN ".to_string()),
        Just("-----END ".to_string()),
        Just("PRIVATE KEY".to_string()),
        Just("-----".to_string()),
        Just(" BLOCK".to_string()),
        Just("PRIVATE".to_string()),
        Just("-----BEGIN".to_string()),
        "[A-Z ]{1,6}",
        "[a-z.,]{1,3}",
        (1usize..3000).prop_map(|n| "A".repeat(n)),
    ]
}

proptest! {
    #![proptest_config(config(256))]

    /// (g) On one line, `has_armor` is true exactly when the pattern of docs/keys.md#armor
    /// matches, NUL bytes left out: no label is too long, no place too far.
    #[test]
    fn armor_on_one_line_is_the_spec_pattern(
        pieces in prop::collection::vec(armor_piece(), 1..12),
        nul_every in prop::option::of(1usize..4),
    ) {
        let text = pieces.concat();
        let spec = regex::Regex::new(r"-----(BEGIN|END) [A-Za-z0-9 _-]*PRIVATE KEY( BLOCK)?-----").unwrap();
        let expected = spec.is_match(&text);
        let bytes: Vec<u8> = match nul_every {
            None => text.into_bytes(),
            Some(k) => text.bytes().enumerate().flat_map(|(i, b)| {
                if i % k == 0 { vec![0, b] } else { vec![b] }
            }).collect(),
        };
        prop_assert_eq!(has_armor(&bytes), expected);
    }
}
