//! Property tests: read_file cursors tile any file (a), list_dir pages list every name once
//! (b), grep cursors return every matching line once (c).

use std::collections::BTreeMap;

use proptest::prelude::*;
use sluice_file_tools::budget::page_bytes;
use sluice_file_tools::{
    Context, EntryKind, GrepFilesArgs, Limits, ReadFileArgs, Root, Roots, TailFileArgs, read_file,
    tail_file,
};

use crate::support::{Fixture, assert_fits, escaped, follow_grep, follow_list, follow_read};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Caps in [1024, 65536], half of them below 4096 so that content spans many pages.
fn caps() -> impl Strategy<Value = u32> {
    prop_oneof![1024u32..4096, 1024u32..=65_536]
}

// ---------------------------------------------------------------------------------------
// (a) read_file

fn segment(valid_only: bool) -> BoxedStrategy<Vec<u8>> {
    let valid = prop_oneof![
        6 => "[ -~]{0,40}".prop_map(String::into_bytes),
        3 => Just(b"\n".to_vec()),
        1 => Just(b"\r\n".to_vec()),
        1 => Just(b"\r".to_vec()),
        2 => prop::sample::select(vec!["é", "漢", "😀", "ß", "\u{2028}", "\u{FFFD}"])
            .prop_map(|s| s.as_bytes().to_vec()),
        1 => prop::sample::select(vec![
            &b"\x01"[..], b"\x1f", b"\t", b"\"", b"\\", b"\x7f", b"\x0c", b"\x08"
        ])
        .prop_map(<[u8]>::to_vec),
        1 => (prop::sample::select(vec!["a", "é", "\u{1}", "漢", "\"", "😀"]), 0usize..6000)
            .prop_map(|(c, n)| c.repeat(n).into_bytes()),
    ];
    if valid_only {
        valid.boxed()
    } else {
        prop_oneof![
            8 => valid,
            1 => prop::sample::select(vec![
                &b"\x80"[..], b"\xFF", b"\xE9\x80", b"\xF0\x9F", b"\xC3", b"\xF0\x9F\x98",
                b"\xED\xA0\x80", b"\xC0\xAF", b"\xF4\x90\x80\x80"
            ])
            .prop_map(<[u8]>::to_vec),
        ]
        .boxed()
    }
}

fn file_bytes() -> impl Strategy<Value = Vec<u8>> {
    (any::<bool>(), any::<bool>())
        .prop_flat_map(|(valid_only, final_newline)| {
            prop::collection::vec(segment(valid_only), 0..120).prop_map(move |segs| {
                let mut bytes = segs.concat();
                if final_newline {
                    bytes.push(b'\n');
                } else if bytes.last() == Some(&b'\n') {
                    bytes.pop();
                }
                bytes
            })
        })
        .prop_filter("no armor text", |b| {
            !b.windows(11).any(|w| w == b"PRIVATE KEY")
        })
}

/// Byte offsets between the characters of the lossy decoding of `bytes` (0 and the end
/// included): the only places a page may start or end.
fn char_boundaries(bytes: &[u8]) -> Vec<usize> {
    let mut out = vec![0];
    let mut pos = 0;
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            pos += c.len_utf8();
            out.push(pos);
        }
        if !chunk.invalid().is_empty() {
            pos += chunk.invalid().len();
            out.push(pos);
        }
    }
    out
}

/// The escaped size of the first character (lossily decoded) of `bytes`.
fn first_char_cost(bytes: &[u8]) -> usize {
    let chunk = bytes.utf8_chunks().next().expect("not at the end");
    match chunk.valid().chars().next() {
        Some(c) => escaped(&c.to_string()),
        None => 3,
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn read_file_cursors_tile_the_file(
        file in file_bytes(),
        cap in caps(),
        line_count in prop::option::of(1u64..20),
    ) {
        let fx = Fixture::new();
        fx.write("f.txt", &file);
        let ctx = fx.ctx(cap);
        let page_budget = page_bytes(cap, "f.txt").unwrap() as usize;
        let boundaries = char_boundaries(&file);
        let total_lines = file.iter().filter(|b| **b == b'\n').count() as u64
            + u64::from(!file.is_empty() && file.last() != Some(&b'\n'));

        let pages = follow_read(&ctx, "f.txt", line_count);
        let mut expected_offset = 0u64;
        let mut expected_line = 1u64;
        let mut joined = String::new();
        for (i, p) in pages.iter().enumerate() {
            let last = i + 1 == pages.len();
            prop_assert_eq!(p.size, file.len() as u64);
            prop_assert_eq!(p.offset, expected_offset, "pages tile the file");
            let end = p.next_offset.unwrap_or(file.len() as u64);
            prop_assert_eq!(last, p.next_offset.is_none());
            prop_assert!(boundaries.binary_search(&(end as usize)).is_ok(), "page ends on a character boundary");
            let raw = &file[p.offset as usize..end as usize];
            prop_assert_eq!(&p.content, &String::from_utf8_lossy(raw));
            prop_assert_eq!(p.invalid_utf8, std::str::from_utf8(raw).is_err().then_some(true));
            prop_assert!(escaped(&p.content) <= page_budget);
            joined.push_str(&p.content);

            // Line numbers.
            if !p.content.is_empty() {
                prop_assert_eq!(p.start_line, Some(expected_line));
                let pieces = p.content.split_inclusive('\n').count() as u64;
                prop_assert_eq!(p.end_line, Some(expected_line + pieces - 1));
                if let Some(n) = line_count {
                    prop_assert!(pieces <= n, "lineCount counts source lines");
                }
            }
            if last {
                prop_assert_eq!(p.line_truncated, None);
                prop_assert_eq!(p.total_lines, Some(total_lines));
                prop_assert_eq!(p.next_line, None);
            } else {
                prop_assert!(!p.content.is_empty());
                prop_assert_eq!(p.total_lines, None);
                let cut = !p.content.ends_with('\n');
                prop_assert_eq!(p.line_truncated, cut.then_some(true));
                let end_line = p.end_line.unwrap();
                prop_assert_eq!(p.next_line, Some(if cut { end_line } else { end_line + 1 }));
                // As much as fits: the next character (inside a line) or the next whole
                // line (between lines) would not.
                let rest = &file[end as usize..];
                let lines_on_page = p.content.matches('\n').count() as u64;
                if cut {
                    prop_assert!(escaped(&p.content) + first_char_cost(rest) > page_budget);
                } else if line_count.is_none_or(|n| lines_on_page < n) {
                    let next_line_len = memchr_newline(rest).map_or(rest.len(), |i| i + 1);
                    let next = String::from_utf8_lossy(&rest[..next_line_len]);
                    prop_assert!(escaped(&p.content) + escaped(&next) > page_budget);
                }
                expected_line = p.next_line.unwrap();
            }
            // Resuming with {startLine, offset} gives the same page as a rescan.
            if i > 0 && !pages[i - 1].line_truncated.unwrap_or(false) {
                let rescan = read_file(&ctx, &ReadFileArgs {
                    path: "f.txt".into(),
                    start_line: pages[i - 1].next_line,
                    line_count,
                    ..Default::default()
                }).unwrap();
                prop_assert_eq!(&rescan, p);
            }
            expected_offset = end;
        }
        prop_assert_eq!(expected_offset, file.len() as u64, "every byte visited");
        if let Ok(text) = std::str::from_utf8(&file) {
            prop_assert_eq!(joined, text);
        }
    }

    #[test]
    fn read_file_offsets_land_on_character_boundaries(
        file in file_bytes(),
        cap in caps(),
        at in any::<prop::sample::Index>(),
    ) {
        let fx = Fixture::new();
        fx.write("f.txt", &file);
        let ctx = fx.ctx(cap);
        let asked = at.index(file.len() + 1) as u64;
        let page = read_file(&ctx, &ReadFileArgs {
            path: "f.txt".into(),
            offset: Some(asked),
            ..Default::default()
        }).unwrap();
        let boundaries = char_boundaries(&file);
        // The first boundary at or after the asked offset, unless the asked offset is
        // inside an invalid sequence (the page then starts there, still exact).
        prop_assert!(page.offset >= asked && page.offset < asked + 4);
        let valid_char_start = boundaries.binary_search(&(page.offset as usize)).is_ok();
        let inside_valid = boundaries.iter().any(|&b| (b as u64) > asked && (b as u64) < page.offset);
        prop_assert!(!inside_valid);
        prop_assert!(valid_char_start || page.offset == asked);
        prop_assert_eq!(page.start_line, None);
        let end = page.next_offset.unwrap_or(file.len() as u64);
        prop_assert_eq!(&page.content, &String::from_utf8_lossy(&file[page.offset as usize..end as usize]));
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn tail_file_returns_the_last_lines_that_fit(
        file in file_bytes(),
        cap in caps(),
        wanted in 1u64..300,
    ) {
        let fx = Fixture::new();
        fx.write("f.txt", &file);
        let ctx = fx.ctx(cap);
        let budget = page_bytes(cap, "f.txt").unwrap() as usize;
        let result = tail_file(&ctx, &TailFileArgs {
            path: "f.txt".into(),
            lines: Some(wanted),
            ..Default::default()
        });
        assert_fits(&result, cap);
        let page = result.unwrap();
        prop_assert!(serde_json::to_string(&page.lines).unwrap().len() <= budget);

        // The file's lines, lossily decoded, without `\n` or `\r\n`; a `\r` that ends the
        // file is text.
        let mut raw: Vec<&[u8]> = file.split(|b| *b == b'\n').collect();
        if raw.last().is_some_and(|l| l.is_empty()) {
            raw.pop();
        }
        let n = raw.len();
        let lines: Vec<String> = raw
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let terminated = i + 1 < n || file.ends_with(b"\n");
                let l = if terminated { l.strip_suffix(b"\r").unwrap_or(l) } else { l };
                String::from_utf8_lossy(l).into_owned()
            })
            .collect();
        let most = lines.len().min(wanted as usize);
        let k = page.lines.len();
        prop_assert!(k <= most);
        let json = |ls: &[String]| serde_json::to_string(ls).unwrap().len();
        if lines.is_empty() {
            prop_assert!(!page.truncated);
        } else if json(&lines[lines.len() - 1..]) > budget {
            // The last line alone is longer than the page: its tail that fits.
            prop_assert_eq!(k, 1);
            prop_assert!(page.truncated);
            prop_assert!(lines[lines.len() - 1].ends_with(&page.lines[0]));
            prop_assert!(!page.lines[0].is_empty());
        } else {
            prop_assert_eq!(&page.lines[..], &lines[lines.len() - k..]);
            prop_assert_eq!(page.truncated, k < most);
            if k < most {
                prop_assert!(json(&lines[lines.len() - k - 1..]) > budget, "one more line would not fit");
            }
        }
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n')
}

// ---------------------------------------------------------------------------------------
// (b) list_dir

fn dir_name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-zA-Z0-9._-]{1,20}",
        2 => "[a-zé漢😀ß]{1,30}",
        1 => "[a-z]{200,255}",
        1 => "[a-z\"\\\\\u{1}\u{1f}\u{7f} \t]{1,60}",
        1 => "漢{60,85}",
    ]
    .prop_filter("a file name", |n| n != "." && n != "..")
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn list_dir_pages_list_every_name_once(
        entries in prop::collection::btree_map(dir_name(), (any::<bool>(), 0usize..4), 0..60),
        cap in caps(),
    ) {
        let fx = Fixture::new();
        let dir = fx.mkdir("d");
        for (name, (is_dir, size)) in &entries {
            if *is_dir {
                std::fs::create_dir(dir.join(name)).unwrap();
            } else {
                std::fs::write(dir.join(name), vec![b'x'; *size]).unwrap();
            }
        }
        let mut sorted: Vec<(&String, &(bool, usize))> = entries.iter().collect();
        sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let page_budget = page_bytes(cap, "d").unwrap() as usize;
        let ctx = fx.ctx(cap);
        let pages = follow_list(&ctx, Some("d"));
        let mut i = 0;
        for (n, p) in pages.iter().enumerate() {
            prop_assert_eq!(p.total, entries.len() as u64);
            prop_assert_eq!(p.offset, i as u64);
            let json = serde_json::to_string(&p.entries).unwrap();
            prop_assert!(json.len() <= page_budget);
            if n + 1 < pages.len() || !entries.is_empty() {
                prop_assert!(!p.entries.is_empty());
            }
            for e in &p.entries {
                let (name, (is_dir, size)) = sorted[i];
                if e.name_truncated == Some(true) {
                    prop_assert_eq!(p.entries.len(), 1, "only a name alone on its page is cut");
                    prop_assert!(name.starts_with(&e.name));
                    prop_assert!(e.name.len() < name.len());
                } else {
                    prop_assert_eq!(&e.name, name);
                }
                let kind = if *is_dir { EntryKind::Directory } else { EntryKind::File };
                prop_assert_eq!(e.kind, kind);
                prop_assert_eq!(e.size, (!is_dir).then_some(*size as u64));
                i += 1;
            }
            // As many as fit: the next entry would not.
            if let Some(next) = p.next_offset {
                let (name, (is_dir, size)) = sorted[next as usize];
                let entry = sluice_file_tools::DirEntry {
                    name: name.clone(),
                    kind: if *is_dir { EntryKind::Directory } else { EntryKind::File },
                    size: (!is_dir).then_some(*size as u64),
                    name_truncated: None,
                };
                let more = serde_json::to_string(&entry).unwrap().len() + 1;
                prop_assert!(json.len() + more > page_budget);
            }
        }
        prop_assert_eq!(i, entries.len(), "every name exactly once");
    }
}

// ---------------------------------------------------------------------------------------
// (c) grep_files

fn plain_text(max: usize) -> impl Strategy<Value = String> {
    // No `h`, `i` or `t` in any case: never matches `hit`.
    prop::collection::vec(
        prop::sample::select(vec![
            'a', 'b', 'e', 'x', 'z', ' ', '0', 'é', '漢', '"', '\\', '\u{1}',
        ]),
        0..max,
    )
    .prop_map(|v| v.into_iter().collect())
}

fn grep_line() -> impl Strategy<Value = (bool, String)> {
    prop_oneof![
        3 => plain_text(40).prop_map(|t| (false, t)),
        3 => (plain_text(40), plain_text(40), prop::sample::select(vec!["hit", "HIT", "Hit"]))
            .prop_map(|(a, b, h)| (true, format!("{a}{h}{b}"))),
        1 => (plain_text(3000), plain_text(200)).prop_map(|(a, b)| (true, format!("{a}hit{b}"))),
    ]
}

fn grep_file() -> impl Strategy<Value = (Vec<(bool, String)>, bool, bool)> {
    (
        prop::collection::vec(grep_line(), 0..40),
        any::<bool>(),
        any::<bool>(),
    )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn grep_cursors_return_every_match_once(
        files in prop::collection::btree_map("[a-d]{1,3}(/[a-d]{1,2}){0,2}\\.txt", grep_file(), 1..8),
        max_results in prop::option::of(1u64..30),
        cap in caps(),
    ) {
        let fx = Fixture::new();
        // (path components, line number, text) of every matching line, in walk order.
        let mut expected: BTreeMap<Vec<String>, Vec<(u64, String)>> = BTreeMap::new();
        for (path, (lines, crlf, final_newline)) in &files {
            let mut body = String::new();
            let mut matches = Vec::new();
            for (n, (hit, text)) in lines.iter().enumerate() {
                body.push_str(text);
                if n + 1 < lines.len() || *final_newline {
                    body.push_str(if *crlf { "\r\n" } else { "\n" });
                }
                if *hit {
                    matches.push((n as u64 + 1, text.clone()));
                }
            }
            fx.write(path, body);
            expected.insert(path.split('/').map(str::to_string).collect(), matches);
        }
        let expected: Vec<(String, u64, String)> = expected
            .into_iter()
            .flat_map(|(parts, m)| {
                let path = parts.join("/");
                m.into_iter().map(move |(l, t)| (path.clone(), l, t))
            })
            .collect();

        let ctx = Context::new(Roots::new(vec![Root::new("w", fx.root())]), Limits::new(cap));
        let page_budget = page_bytes(cap, ".").unwrap() as usize;
        let pages = follow_grep(&ctx, &GrepFilesArgs {
            pattern: "hit".into(),
            max_results,
            ..Default::default()
        });
        let mut got = Vec::new();
        for p in &pages {
            prop_assert!(p.count <= max_results.unwrap_or(100));
            prop_assert!(serde_json::to_string(&p.results).unwrap().len() <= page_budget);
            prop_assert_eq!(p.skipped_files, 0);
            prop_assert_eq!(p.stopped_by.as_deref(), None);
            if p.truncated {
                prop_assert!(p.count >= 1);
            }
            for (j, m) in p.results.iter().enumerate() {
                got.push((m.path.clone(), m.line, m.text.clone(), j == 0 && p.count == 1 && p.truncated));
            }
        }
        prop_assert_eq!(got.len(), expected.len(), "{:?}", got.iter().map(|g| (&g.0, g.1)).collect::<Vec<_>>());
        for ((path, line, text, may_be_cut), (epath, eline, etext)) in got.iter().zip(&expected) {
            prop_assert_eq!((path, line), (epath, eline));
            let full: String = match etext.char_indices().nth(500) {
                Some((cut, _)) => format!("{}…", &etext[..cut]),
                None => etext.clone(),
            };
            if text != &full {
                prop_assert!(*may_be_cut, "only a first match alone on its page is cut");
                prop_assert!(full.starts_with(text.as_str()));
            }
        }
    }
}
