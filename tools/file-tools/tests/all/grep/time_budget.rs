//! grep_files's cursors and time budget: an expired budget returns a cursor, following
//! cursors ends, bad cursors are refused, a glob that passes over everything stays in time.

use super::*;

#[test]
fn expired_time_budget_returns_a_cursor_not_an_empty_answer() {
    let fx = Fixture::new();
    fx.write("a.txt", "hit\nhit\nhit\n");
    fx.write("b.txt", "hit\n");
    fx.write("c.txt", "nothing\n");
    let roots = Roots::new(vec![Root::new("work", fx.root())]);
    let expired = Context::new(
        roots.clone(),
        Limits::new(CAP).with_time_budget(Duration::ZERO),
    );
    let fresh = Context::new(roots, Limits::new(CAP));

    // The first entry is always visited; then the spent budget stops the scan with a
    // cursor and says so.
    let page = grep_files(&expired, &args("hit")).unwrap();
    assert_eq!(hits(std::slice::from_ref(&page)).len(), 3);
    assert!(page.truncated);
    assert_eq!(page.stopped_by.as_deref(), Some("time"));
    let rest = follow_grep(
        &fresh,
        &GrepFilesArgs {
            cursor: page.next_cursor,
            ..args("hit")
        },
    );
    assert_eq!(hits(&rest), [("b.txt".to_string(), 1)]);

    // Resuming inside a file with the budget spent: nothing returned before comes back.
    let first = grep_files(
        &fresh,
        &GrepFilesArgs {
            max_results: Some(1),
            ..args("hit")
        },
    )
    .unwrap();
    assert_eq!(
        hits(std::slice::from_ref(&first)),
        [("a.txt".to_string(), 1)]
    );
    let stopped = grep_files(
        &expired,
        &GrepFilesArgs {
            max_results: Some(5),
            cursor: first.next_cursor,
            ..args("hit")
        },
    )
    .unwrap();
    assert_eq!(
        hits(std::slice::from_ref(&stopped)),
        [("a.txt".to_string(), 2), ("a.txt".to_string(), 3)]
    );
    assert_eq!(stopped.stopped_by.as_deref(), Some("time"));
    let rest = follow_grep(
        &fresh,
        &GrepFilesArgs {
            max_results: Some(5),
            cursor: stopped.next_cursor,
            ..args("hit")
        },
    );
    assert_eq!(hits(&rest), [("b.txt".to_string(), 1)]);
}

#[test]
fn following_cursors_ends_even_when_every_call_is_out_of_time() {
    // Each call starts with its budget already spent (as when the walk back to the cursor
    // alone outlasts it): every call still moves at least one entry on.
    let fx = Fixture::new();
    for i in 0..30 {
        fx.write(&format!("d{}/f{i:02}.txt", i % 3), "nothing\n");
    }
    fx.write("d2/z.txt", "one hit\n");
    fx.symlink("f00.txt", "d0/link");
    fx.write("d1/bin.dat", b"hit\0\n");
    let roots = Roots::new(vec![Root::new("work", fx.root())]);
    let expired = Context::new(roots, Limits::new(CAP).with_time_budget(Duration::ZERO));
    let pages = follow_grep(&expired, &args("hit"));
    assert!(pages.len() <= 34, "{} pages", pages.len());
    assert!(
        pages[..pages.len() - 1]
            .iter()
            .all(|p| p.stopped_by.as_deref() == Some("time"))
    );
    assert_eq!(hits(&pages), [("d2/z.txt".to_string(), 1)]);
    assert_eq!(pages.iter().map(|p| p.skipped_files).sum::<u64>(), 2);
}

#[test]
fn cursors_are_checked() {
    let fx = Fixture::new();
    fx.write("f.txt", "hit\n".repeat(5));
    let ctx = fx.ctx(CAP);
    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            max_results: Some(2),
            ..args("hit")
        },
    )
    .unwrap();
    let cursor = page.next_cursor.unwrap();
    for bad in ["", "garbage", "g1.0.2", "g1.x.2.0000000000000000"] {
        let err = grep_files(
            &ctx,
            &GrepFilesArgs {
                cursor: Some(bad.into()),
                ..args("hit")
            },
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument, "{bad:?}");
    }
    // A cursor of another search is refused.
    let err = grep_files(
        &ctx,
        &GrepFilesArgs {
            cursor: Some(cursor.clone()),
            ..args("other")
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    // The same search resumes after line 2.
    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            cursor: Some(cursor),
            max_results: Some(2),
            ..args("hit")
        },
    )
    .unwrap();
    let lines: Vec<u64> = page.results.iter().map(|m| m.line).collect();
    assert_eq!(lines, [3, 4]);
}

#[test]
fn time_budget_holds_while_a_glob_passes_over_everything() {
    let fx = Fixture::new();
    for i in 0..50 {
        fx.write(&format!("d/f{i:02}.txt"), "hit\n");
    }
    fx.write("d/z.rs", "hit\n");
    fx.symlink("f00.txt", "d/link.rs");
    let roots = Roots::new(vec![Root::new("work", fx.root())]);
    let expired = Context::new(
        roots.clone(),
        Limits::new(CAP).with_time_budget(Duration::ZERO),
    );
    let fresh = Context::new(roots, Limits::new(CAP));
    let glob = GrepFilesArgs {
        glob: Some("*.rs".into()),
        ..args("hit")
    };
    let page = grep_files(&expired, &glob).unwrap();
    assert_eq!(page.count, 0);
    assert!(page.truncated);
    assert_eq!(page.stopped_by.as_deref(), Some("time"));
    // Resuming (with time) finds the one match; the symlink is counted once.
    let pages = follow_grep(
        &fresh,
        &GrepFilesArgs {
            cursor: page.next_cursor,
            ..glob.clone()
        },
    );
    assert_eq!(hits(&pages), [("d/z.rs".to_string(), 1)]);
    assert_eq!(pages.iter().map(|p| p.skipped_files).sum::<u64>(), 1);
}
