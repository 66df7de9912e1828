//! list_dir: row L1 of `docs/regressions.md`, case C8, and its errors.

use std::collections::HashSet;

use sluice_pager::{EntryKind, ErrorKind, ListDirArgs, list_dir};

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
        r#"{"path":".","total":3,"offset":0,"entries":[{"name":"a","kind":"directory"},{"name":"b.txt","kind":"file","size":5},{"name":"c","kind":"symlink"}]}"#
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
