//! Hostile and unusual inputs: no panic, no hang, an error the model can read.

use sluice_pager::{
    ErrorKind, GrepFilesArgs, ListDirArgs, ReadFileArgs, TailFileArgs, grep_files, list_dir,
    read_file, tail_file,
};

use crate::support::{CAP, Fixture};

#[test]
fn huge_line_numbers_do_not_overflow() {
    let fx = Fixture::new();
    fx.write("f.txt", "a\nb\nc");
    let ctx = fx.ctx(CAP);
    for (start, offset, count) in [
        (u64::MAX, Some(0), None),
        (u64::MAX, Some(0), Some(1)),
        (u64::MAX - 1, Some(2), None),
        (u64::MAX, None, None),
        (u64::MAX, Some(5), None),
    ] {
        let page = read_file(
            &ctx,
            &ReadFileArgs {
                path: "f.txt".into(),
                start_line: Some(start),
                offset,
                line_count: count,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(page.end_line.is_none_or(|e| e >= start.min(e)));
    }
    let page = read_file(
        &ctx,
        &ReadFileArgs {
            path: "f.txt".into(),
            line_count: Some(u64::MAX),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(page.total_lines, Some(3));
    let page = tail_file(
        &ctx,
        &TailFileArgs {
            path: "f.txt".into(),
            lines: Some(u64::MAX),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(page.lines, ["a", "b", "c"]);
    let err = list_dir(
        &ctx,
        &ListDirArgs {
            offset: Some(u64::MAX),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    let err = read_file(
        &ctx,
        &ReadFileArgs {
            path: "f.txt".into(),
            offset: Some(u64::MAX),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
}

#[test]
fn odd_cursors_are_refused_not_panicked_on() {
    let fx = Fixture::new();
    fx.write("f.txt", "hit\n");
    let ctx = fx.ctx(CAP);
    for bad in [
        "g1.0.0.aaaaaaaéaaaaaaa",
        "g1.0.0.ééééééééé",
        "g1.0.0.漢漢漢漢漢a",
        "g1.99999999999999999999999.0.0000000000000000",
        "g1.0.0.0000000000000000.",
        "g1..0.0000000000000000",
        "g1.0.0.+0000000+0000000",
    ] {
        let err = grep_files(
            &ctx,
            &GrepFilesArgs {
                pattern: "hit".into(),
                cursor: Some(bad.into()),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument, "{bad}");
    }
}

#[test]
fn patterns_the_line_searcher_refuses() {
    let fx = Fixture::new();
    fx.write("f.txt", "hit\n");
    let ctx = fx.ctx(CAP);
    for bad in ["a\nb", "(?s)x\\n", "a{1000}{1000}{1000}"] {
        let err = grep_files(
            &ctx,
            &GrepFilesArgs {
                pattern: bad.into(),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument, "{bad:?}");
        assert!(
            err.message.starts_with("invalid pattern"),
            "{}",
            err.message
        );
    }
}

#[test]
fn fifos_are_not_opened() {
    let fx = Fixture::new();
    let fifo = fx.root().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        return; // no mkfifo here
    }
    fx.write("f.txt", "hit\n");
    let ctx = fx.ctx(CAP);
    // Each call would block forever on open if it tried to read the FIFO.
    let err = read_file(
        &ctx,
        &ReadFileArgs {
            path: "pipe".into(),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::WrongKind, "{}", err.message);
    let err = tail_file(
        &ctx,
        &TailFileArgs {
            path: "pipe".into(),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::WrongKind);
    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            pattern: "hit".into(),
            path: Some("pipe".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!((page.count, page.skipped_files), (0, 1));
    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            pattern: "hit".into(),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!((page.count, page.skipped_files), (1, 1));
    let page = list_dir(&ctx, &ListDirArgs::default()).unwrap();
    assert_eq!(page.entries[1].name, "pipe");
    assert_eq!(page.entries[1].kind, sluice_pager::EntryKind::Other);
}
