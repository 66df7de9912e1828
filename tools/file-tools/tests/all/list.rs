//! list_dir: row L1 of `docs/regressions.md`, case C8, and its errors.

use std::collections::HashSet;

use sluice_file_tools::{
    DirChunk, DirSource, EntryKind, ErrorKind, ListDirArgs, ListDirPage, list_dir, list_dir_from,
};

use crate::support::{CAP, Fixture, follow_list};

#[test]
fn l1_120_entries_at_cap_1024() {
    let fx = Fixture::new();
    let mut names: Vec<String> = (0..120u32)
        .map(|i| format!("n{:07}", (i * 7919) % 1_000_000))
        .collect();
    for n in &names {
        assert_eq!(n.len(), 8);
        fx.write(n, "x");
    }
    names.sort();
    let ctx = fx.ctx(1024);
    let pages = follow_list(&ctx, None);
    assert!(pages.len() > 1);
    let mut listed = Vec::new();
    for p in &pages {
        assert_eq!(p.total, 120);
        assert_eq!(p.path, ".");
        assert!(serde_json::to_string(&p.entries).unwrap().len() <= 512);
        for e in &p.entries {
            assert_eq!(e.name_truncated, None);
            assert_eq!(e.kind, EntryKind::File);
            assert_eq!(e.size, Some(1));
            listed.push(e.name.clone());
        }
    }
    assert_eq!(listed, names);
}

#[test]
fn c8_twenty_thousand_files() {
    let fx = Fixture::new();
    let many = fx.mkdir("many");
    for i in 0..20_000 {
        std::fs::write(many.join(format!("f{i:05}")), "").unwrap();
    }
    for d in ["sub_a", "sub_b", "zdir"] {
        std::fs::create_dir(many.join(d)).unwrap();
    }
    let ctx = fx.ctx(CAP);
    let pages = follow_list(&ctx, Some("many"));
    let mut seen = HashSet::new();
    let mut listed = Vec::new();
    for p in &pages {
        assert_eq!(p.total, 20_003);
        assert_eq!(p.path, "many");
        for e in &p.entries {
            assert!(seen.insert(e.name.clone()), "{} twice", e.name);
            listed.push(e.name.clone());
        }
    }
    assert_eq!(listed.len(), 20_003);
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(listed, sorted);
    assert_eq!(listed[0], "f00000");
    assert_eq!(listed[20_002], "zdir");
    let last = pages.last().unwrap();
    let zdir = last.entries.last().unwrap();
    assert_eq!((zdir.kind, zdir.size), (EntryKind::Directory, None));
}

#[test]
fn kinds_sizes_offsets_and_errors() {
    let fx = Fixture::new();
    fx.write("b.txt", "hello");
    fx.mkdir("a");
    fx.symlink("b.txt", "c");
    fx.write("a/inner.txt", "");
    let ctx = fx.ctx(CAP);
    let page = list_dir(&ctx, &ListDirArgs::default()).unwrap();
    assert_eq!(page.total, 3);
    let got: Vec<_> = page
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e.kind, e.size))
        .collect();
    assert_eq!(
        got,
        [
            ("a", EntryKind::Directory, None),
            ("b.txt", EntryKind::File, Some(5)),
            ("c", EntryKind::Symlink, None)
        ]
    );
    assert_eq!(page.next_offset, None);
    let json = serde_json::to_string(&page).unwrap();
    assert_eq!(
        json,
        r#"{"path":".","total":3,"offset":0,"count":3,"entries":[{"name":"a","kind":"directory"},{"name":"b.txt","kind":"file","size":5},{"name":"c","kind":"symlink"}]}"#
    );

    // offset == total: an empty page; past it: an error.
    let page = list_dir(
        &ctx,
        &ListDirArgs {
            offset: Some(3),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(page.entries.is_empty());
    assert_eq!(page.next_offset, None);
    let err = list_dir(
        &ctx,
        &ListDirArgs {
            offset: Some(4),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(err.message.contains("offset 4"), "{}", err.message);

    // A file is the wrong kind; a missing directory is not found.
    let err = list_dir(
        &ctx,
        &ListDirArgs {
            path: Some("b.txt".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::WrongKind);
    assert!(err.message.contains("read_file"), "{}", err.message);
    let err = list_dir(
        &ctx,
        &ListDirArgs {
            path: Some("nope".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
    // An unknown root names the roots there are.
    let err = list_dir(
        &ctx,
        &ListDirArgs {
            root: Some("other".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(err.message.contains("work"), "{}", err.message);
}

#[test]
fn a_name_too_long_for_a_page_is_cut_and_passed() {
    let fx = Fixture::new();
    // 200 control characters escape to 1,200 bytes: more than the 512-byte page.
    let long = "\u{1}".repeat(200);
    fx.write(&long, "");
    fx.write("z", "");
    let ctx = fx.ctx(1024);
    let pages = follow_list(&ctx, None);
    assert_eq!(pages.len(), 2);
    let cut = &pages[0].entries[0];
    assert_eq!(cut.name_truncated, Some(true));
    assert!(long.starts_with(&cut.name));
    assert!(!cut.name.is_empty());
    assert!(serde_json::to_string(&pages[0].entries).unwrap().len() <= 512);
    assert_eq!(pages[0].next_offset, Some(1));
    assert_eq!(pages[1].entries[0].name, "z");
    let json = serde_json::to_string(cut).unwrap();
    assert!(json.contains(r#""nameTruncated":true"#), "{json}");
}

/// A [`DirSource`] over the real directory that records the chunks asked of it, as the
/// host's `sluice:tools/listing` serves them: sorted by name in byte order, sizes for files.
/// With `change`, the directory is changed by it after the first chunk is served, as a
/// directory changed in the host's racy window is read again for every chunk.
#[derive(Default)]
struct Recording {
    asked: std::cell::RefCell<Vec<(u64, u32)>>,
    change: std::cell::RefCell<Option<Box<dyn FnOnce()>>>,
}

impl DirSource for Recording {
    fn chunk(
        &self,
        dir: &std::path::Path,
        offset: u64,
        count: u32,
    ) -> Option<std::io::Result<DirChunk>> {
        self.asked.borrow_mut().push((offset, count));
        let mut all: Vec<(String, EntryKind, Option<u64>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let t = e.file_type().unwrap();
                let (kind, size) = if t.is_dir() {
                    (EntryKind::Directory, None)
                } else {
                    (EntryKind::File, Some(e.metadata().unwrap().len()))
                };
                (e.file_name().into_string().unwrap(), kind, size)
            })
            .collect();
        all.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let total = all.len() as u64;
        let entries = all
            .into_iter()
            .skip(offset as usize)
            .take(count as usize)
            .collect();
        if let Some(change) = self.change.borrow_mut().take() {
            change();
        }
        Some(Ok(DirChunk {
            total,
            withheld: 0,
            entries,
        }))
    }
}

/// Every page of `ctx`'s root through `source`, and the chunks each page asked for.
fn follow_source(
    ctx: &sluice_file_tools::Context,
    source: &Recording,
) -> Vec<(ListDirPage, Vec<(u64, u32)>)> {
    let mut pages = Vec::new();
    let mut offset = None;
    loop {
        let args = ListDirArgs {
            offset,
            ..Default::default()
        };
        let page = list_dir_from(ctx, &args, Some(source)).unwrap();
        offset = page.next_offset;
        pages.push((page, source.asked.take()));
        if offset.is_none() {
            return pages;
        }
    }
}

/// Follows a directory of `names` (each file holding `body`) at cap 4096 through a source:
/// the chunks each page asked for, the entries each showed, and the pages equal to those of
/// the directory read by the tool itself.
fn assert_source_pages(
    names: impl IntoIterator<Item = String>,
    body: &str,
    asked: &[Vec<(u64, u32)>],
    shown: &[usize],
) {
    let fx = Fixture::new();
    for name in names {
        fx.write(&name, body);
    }
    let ctx = fx.ctx(4096);
    let pages = follow_source(&ctx, &Recording::default());
    let got: Vec<_> = pages.iter().map(|(_, a)| a.clone()).collect();
    assert_eq!(got, asked);
    let got: Vec<_> = pages.iter().map(|(p, _)| p.entries.len()).collect();
    assert_eq!(got, shown);
    let pages: Vec<_> = pages.into_iter().map(|(p, _)| p).collect();
    assert_eq!(pages, follow_list(&ctx, None));
}

/// A page from a source asks first for what fits a page of 48-byte entries (cap 4096: a
/// page of 2,048 bytes, 2,048 / 48 + 1 = 43 entries), and for more only when all of them
/// fit; the pages are those of the directory read by the tool itself.
#[test]
fn a_source_is_asked_for_about_a_page() {
    // 100 entries of 51 bytes (`{"name":"entry-0000000.txt","kind":"file","size":0}`),
    // 52 with the comma: 2 + 51 + 52 × 38 = 2,029 ≤ 2,048, so 39 fit a page.
    assert_source_pages(
        (0..100).map(|i| format!("entry-{i:07}.txt")),
        "",
        &[vec![(0, 43)], vec![(39, 43)], vec![(78, 43)]],
        &[39, 39, 22],
    );
    // Entries of 37 bytes (`{"name":"a00","kind":"file","size":1}`): the first 43 take
    // 2 + 37 + 38 × 42 = 1,635 bytes, the 413 left ask for 413 / 27 + 1 = 16 more, of which
    // 10 fit (2,015 bytes; an 11th would make 2,053). The second chunk starts one entry
    // early (42, 16 + 1), to check that it continues the first.
    assert_source_pages(
        (0..60).map(|i| format!("a{i:02}")),
        "x",
        &[vec![(0, 43), (42, 17)], vec![(53, 43)]],
        &[53, 7],
    );
}

/// Through a source or not, the pages are the same for names of every length, directories
/// (no size) and a name too long for a page (cut, and passed), at several caps.
#[test]
fn pages_from_a_source_equal_pages_read_directly() {
    let fx = Fixture::new();
    for i in 0..300u32 {
        let len = 1 + (i * 37) % 90;
        let name: String = format!("{i:03}{}", "n".repeat(len as usize));
        if i % 7 == 0 {
            fx.mkdir(&name);
        } else {
            fx.write(&name, "y".repeat((i % 13) as usize));
        }
    }
    fx.write(&format!("zz{}", "L".repeat(250)), "long");
    for cap in [1024, 2048, 4096, 65_536] {
        let ctx = fx.ctx(cap);
        let from_source: Vec<_> = follow_source(&ctx, &Recording::default())
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        let direct = follow_list(&ctx, None);
        assert_eq!(from_source, direct, "cap {cap}");
        let listed: usize = direct.iter().map(|p| p.entries.len()).sum();
        assert_eq!(listed, 301, "cap {cap}");
    }
}

/// What a case calls it, how it changes the directory, the chunks it asks for.
type Case = (&'static str, fn(&Fixture), Vec<(u64, u32)>);

/// A directory that changes between a page's two chunks never gives a page with an entry
/// twice or out of order: the second chunk starts one entry early, and when that entry or
/// the counts moved, the page starts over from one chunk of the changed directory (found
/// by a fresh-clone review: 210 of 446 pages of a churning directory came out unsorted).
#[test]
fn a_directory_changed_between_chunks_starts_the_page_over() {
    // 60 entries of 37 bytes at cap 4096: a page takes (0,43) then (42,17), as above.
    let cases: [Case; 3] = [
        // A name sorting before the first chunk's end: the entry at 42 is now a41.
        (
            "a name before the boundary",
            |fx| drop(fx.write("a005", "x")),
            vec![(0, 43), (42, 17), (0, 76)],
        ),
        // A name after it: same entry at 42, but the total moved.
        (
            "a name after the boundary",
            |fx| drop(fx.write("z", "x")),
            vec![(0, 43), (42, 17), (0, 76)],
        ),
        // One name removed and one added after it: same entry, same total; the chunks
        // agree on everything up to the boundary, so the second one continues the page.
        (
            "a swap after the boundary",
            |fx| {
                std::fs::remove_file(fx.root().join("a50")).unwrap();
                fx.write("a505", "x");
            },
            vec![(0, 43), (42, 17)],
        ),
    ];
    for (what, change, asked) in cases {
        let fx = Fixture::new();
        for i in 0..60 {
            fx.write(&format!("a{i:02}"), "x");
        }
        let ctx = fx.ctx(4096);
        let fx = std::rc::Rc::new(fx);
        let source = Recording {
            change: std::cell::RefCell::new(Some(Box::new({
                let fx = fx.clone();
                move || change(&fx)
            }))),
            ..Recording::default()
        };
        let page = list_dir_from(&ctx, &ListDirArgs::default(), Some(&source)).unwrap();
        assert_eq!(source.asked.take(), asked, "{what}");
        // The page is the changed directory's first page, read in one go.
        let direct = list_dir(&ctx, &ListDirArgs::default()).unwrap();
        assert_eq!(page, direct, "{what}");
        assert_eq!(page.entries.len(), 53, "{what}");
    }
}
