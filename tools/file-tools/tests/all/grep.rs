//! grep_files: rows G1–G4 of `docs/regressions.md`, cases C7 (grep part), C9 and C10, and
//! the walk's rules (order, skips, ignores, globs, cursors, time budget).

use std::collections::HashSet;
use std::time::Duration;

use sluice_file_tools::{
    Context, ErrorKind, GrepFilesArgs, GrepFilesPage, Limits, Root, Roots, grep_files,
};

use crate::support::{CAP, Fixture, assert_fits, follow_grep};

fn args(pattern: &str) -> GrepFilesArgs {
    GrepFilesArgs {
        pattern: pattern.into(),
        ..Default::default()
    }
}

fn hits(pages: &[GrepFilesPage]) -> Vec<(String, u64)> {
    pages
        .iter()
        .flat_map(|p| p.results.iter().map(|m| (m.path.clone(), m.line)))
        .collect()
}

#[test]
fn g1_long_first_line_then_many_matches_at_cap_4096() {
    let fx = Fixture::new();
    let first = "error ".repeat(200);
    fx.write("f.txt", format!("{first}\n{}", "error here\n".repeat(500)));
    let ctx = fx.ctx(4096);
    let result = grep_files(&ctx, &args("error"));
    assert_fits(&result, 4096);
    let page = result.unwrap();
    assert!(page.truncated);
    assert!(page.count < 500);
    assert!(page.next_cursor.is_some());
    let text = &page.results[0].text;
    assert_eq!(text.chars().count(), 501);
    assert!(text.ends_with('…'));
    assert_eq!(text.trim_end_matches('…'), &first[..500]);
    assert_eq!(page.results[0].line, 1);
    assert_eq!(page.results[1].text, "error here");
    assert!(serde_json::to_string(&page.results).unwrap().len() <= 2048);

    // Following the cursor returns every match exactly once.
    let pages = follow_grep(&ctx, &args("error"));
    let lines: Vec<u64> = hits(&pages).into_iter().map(|(_, l)| l).collect();
    assert_eq!(lines, (1..=501).collect::<Vec<_>>());
}

#[test]
fn g2_max_results() {
    let fx = Fixture::new();
    fx.write("f.txt", "hit\n".repeat(3));
    let ctx = fx.ctx(65_536);
    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            max_results: Some(2),
            ..args("hit")
        },
    )
    .unwrap();
    assert_eq!(page.count, 2);
    assert!(page.truncated);
    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            max_results: Some(3),
            ..args("hit")
        },
    )
    .unwrap();
    assert_eq!(page.count, 3);
    assert!(!page.truncated);
    assert_eq!(page.next_cursor, None);
}

#[test]
fn g3_first_match_alone_too_large_is_cut_to_fit() {
    let fx = Fixture::new();
    fx.write("f.txt", "漢".repeat(600));
    let ctx = fx.ctx(1024);
    let result = grep_files(&ctx, &args("漢"));
    assert_fits(&result, 1024);
    let page = result.unwrap();
    assert_eq!(page.count, 1);
    assert!(page.truncated);
    let text = &page.results[0].text;
    assert!(!text.is_empty());
    assert!(text.chars().all(|c| c == '漢'), "{text}");
    assert!(serde_json::to_string(&page.results).unwrap().len() <= 512);
    // The cursor moves past the cut match: nothing is left.
    let pages = follow_grep(&ctx, &args("漢"));
    assert_eq!(hits(&pages), [("f.txt".to_string(), 1)]);
}

#[test]
fn g4_file_over_5_mib_is_skipped() {
    let fx = Fixture::new();
    let big = "error\n".repeat(1_000_000);
    assert!(big.len() as u64 > sluice_file_tools::MAX_FILE_BYTES);
    fx.write("big.log", big);
    fx.write("small.txt", "nothing to see\n");
    let ctx = fx.ctx(65_536);
    let page = grep_files(&ctx, &args("error")).unwrap();
    assert_eq!(page.count, 0);
    assert!(!page.truncated);
    assert_eq!(page.skipped_files, 1);
    assert_eq!(page.path, ".");
}

#[test]
fn c7_grep_finds_lines_with_invalid_utf8() {
    let fx = Fixture::new();
    fx.write("hist.txt", crate::read::c7_hist());
    let ctx = fx.ctx(CAP);
    let pages = follow_grep(
        &ctx,
        &GrepFilesArgs {
            path: Some("hist.txt".into()),
            ..args("git")
        },
    );
    let found: Vec<_> = pages.iter().flat_map(|p| p.results.clone()).collect();
    assert_eq!(found.len(), 50);
    assert_eq!(pages[0].path, "hist.txt");
    let l20 = found.iter().find(|m| m.line == 20).unwrap();
    assert_eq!(l20.text, "20 git commit caf\u{FFFD} cut");
    let l30 = found.iter().find(|m| m.line == 30).unwrap();
    assert_eq!(l30.text, "30 git commit lone \u{FFFD} byte");
    assert_eq!(l30.path, "hist.txt");
}

#[test]
fn c9_broad_grep_pages_within_the_cap() {
    let fx = Fixture::new();
    for f in 0..300 {
        let body: String = (0..200)
            .map(|l| format!("// TODO item {:05}\n", f * 200 + l))
            .collect();
        fx.write(&format!("src/f{f:03}.js"), body);
    }
    let mut min = String::new();
    for i in 0..5000 {
        min.push_str(&format!(
            "var e{i:04} = function () {{ /* TODO */ return {i:04} + 1; }};     "
        ));
    }
    assert!(min.len() >= 300_000, "{}", min.len());
    fx.write("min.js", &min);
    let ctx = fx.ctx(CAP);
    for pattern in ["TODO", "e"] {
        let first = grep_files(&ctx, &args(pattern));
        assert_fits(&first, CAP);
        let first = first.unwrap();
        assert!(first.truncated, "{pattern}");
        assert!(first.next_cursor.is_some(), "{pattern}");
        let m = &first.results[0];
        assert_eq!((m.path.as_str(), m.line), ("min.js", 1));
        assert_eq!(m.text.chars().count(), 501);
        assert!(m.text.ends_with('…'));
        assert_eq!(m.text.trim_end_matches('…'), &min[..500]);

        // Follow a good number of pages: every observation fits, no match repeats, and
        // the order is the walk order; min.js appears once.
        let mut args = args(pattern);
        let mut seen = HashSet::new();
        let mut order = Vec::new();
        for _ in 0..40 {
            let result = grep_files(&ctx, &args);
            assert_fits(&result, CAP);
            let page = result.unwrap();
            for m in &page.results {
                assert!(seen.insert((m.path.clone(), m.line)), "{m:?} repeated");
                order.push((m.path.clone(), m.line));
            }
            match page.next_cursor {
                Some(c) => args.cursor = Some(c),
                None => break,
            }
        }
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(order, sorted, "walk order");
        assert_eq!(order.iter().filter(|(p, _)| p == "min.js").count(), 1);
        // No line is lost between pages: after min.js the lines run on without gaps.
        for w in order[1..].windows(2) {
            let (a, b) = (&w[0], &w[1]);
            assert!(
                (a.0 == b.0 && b.1 == a.1 + 1) || (a.0 < b.0 && a.1 == 200 && b.1 == 1),
                "{a:?} then {b:?}"
            );
        }
    }
}

#[test]
fn c10_large_tree_with_a_time_budget() {
    let fx = Fixture::new();
    for d in 0..10 {
        let dir = fx.mkdir(&format!("tree/d{d}"));
        for f in 0..3000 {
            std::fs::write(dir.join(format!("f{f:04}.txt")), "nothing here\n").unwrap();
        }
    }
    fx.write("tree/d9/f2999.txt", "nothing here\nthe NEEDLE-42 is here\n");
    // 20 MB with NULs, holding the needle: skipped without being read whole.
    let mut blob = vec![0u8; 20 * 1024 * 1024];
    blob[1000..1009].copy_from_slice(b"NEEDLE-42");
    fx.write("tree/blob.bin", blob);
    let roots = Roots::new(vec![Root::new("work", fx.root())]);

    // The case's budget: 80% of a 2 s tool timeout.
    let budget = 1600;
    let mut args = GrepFilesArgs {
        path: Some("tree".into()),
        ..args("NEEDLE-42")
    };
    let mut found = Vec::new();
    let mut skipped = 0;
    let mut pages = 0;
    loop {
        let ctx = Context::new(
            roots.clone(),
            Limits::new(CAP).with_time_budget(Duration::from_millis(budget)),
        );
        let result = grep_files(&ctx, &args);
        assert_fits(&result, CAP);
        let page = result.unwrap();
        pages += 1;
        if pages == 1 {
            assert_eq!(
                page.skipped_files, 1,
                "blob.bin is walked first and skipped"
            );
        }
        skipped += page.skipped_files;
        found.extend(
            page.results
                .iter()
                .map(|m| (m.path.clone(), m.line, m.text.clone())),
        );
        if page.count == 0 {
            // Never an empty result that reads as "no matches".
            assert!(page.truncated, "budget {budget}");
            assert!(page.next_cursor.is_some());
            assert_eq!(page.stopped_by.as_deref(), Some("time"));
        }
        if page.stopped_by.is_some() {
            assert!(page.truncated && page.next_cursor.is_some());
        }
        match page.next_cursor {
            Some(c) => args.cursor = Some(c),
            None => break,
        }
        assert!(pages < 2000, "the scan makes progress");
    }
    assert_eq!(
        found,
        [(
            "tree/d9/f2999.txt".to_string(),
            2,
            "the NEEDLE-42 is here".to_string()
        )],
        "budget {budget}"
    );
    assert_eq!(skipped, 1, "budget {budget}");
}

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
fn invalid_pattern_quotes_the_parser() {
    let fx = Fixture::new();
    fx.write("f.txt", "x\n");
    let ctx = fx.ctx(CAP);
    let err = grep_files(&ctx, &args("(unclosed")).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(err.message.contains("unclosed group"), "{}", err.message);
    let err = grep_files(&ctx, &args("a{2,1}")).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(
        err.message.contains("invalid repetition"),
        "{}",
        err.message
    );

    let err = grep_files(&ctx, &args(&"a".repeat(1001))).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(err.message.contains("1000"), "{}", err.message);
    assert!(grep_files(&ctx, &args(&"é".repeat(1000))).is_ok());
}

#[test]
fn max_results_bounds_and_missing_path() {
    let fx = Fixture::new();
    fx.write("f.txt", "hit\n".repeat(600));
    let ctx = fx.ctx(1_048_576);
    let err = grep_files(
        &ctx,
        &GrepFilesArgs {
            max_results: Some(0),
            ..args("hit")
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert_eq!(
        err.message,
        "maxResults must be an integer of at least 1; got 0"
    );
    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            max_results: Some(10_000),
            ..args("hit")
        },
    )
    .unwrap();
    assert_eq!(page.count, 500);
    assert!(page.truncated);
    let page = grep_files(&ctx, &args("hit")).unwrap();
    assert_eq!(page.count, 100);

    let err = grep_files(
        &ctx,
        &GrepFilesArgs {
            path: Some("missing".into()),
            ..args("hit")
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
}

#[test]
fn walk_order_skips_and_ignores() {
    let fx = Fixture::new();
    fx.write("b.txt", "hit b\n");
    fx.write("a/z.txt", "hit a/z\n");
    fx.write("a/b/c.txt", "hit a/b/c\r\n");
    fx.write(".hidden", "hit hidden\n");
    fx.write(".git/config", "hit git\n");
    fx.write("node_modules/x.js", "hit nm\n");
    fx.write("sub/node_modules/y.js", "hit nm\n");
    fx.write(".gitignore", "*.log\nbuild/\n");
    fx.write("app.log", "hit log\n");
    fx.write("build/out.txt", "hit build\n");
    fx.write("sub/.gitignore", "local.txt\n");
    fx.write("sub/local.txt", "hit local\n");
    fx.write("sub/kept.txt", "hit kept\n");
    fx.write("bin.dat", b"hit\0binary\n");
    fx.write("server.PEM", "hit pem\n");
    fx.symlink("b.txt", "link.txt");
    let ctx = fx.ctx(CAP);
    let page = grep_files(&ctx, &args("hit")).unwrap();
    let paths: Vec<&str> = page.results.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(
        paths,
        [".hidden", "a/b/c.txt", "a/z.txt", "b.txt", "sub/kept.txt"]
    );
    assert_eq!(page.results[1].text, "hit a/b/c");
    // bin.dat, server.PEM and link.txt; ignored files and pruned directories are not
    // counted.
    assert_eq!(page.skipped_files, 3);
    assert!(!page.truncated);

    // A path inside the tree: results are still relative to the root.
    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            path: Some("a/".into()),
            ..args("hit")
        },
    )
    .unwrap();
    assert_eq!(page.path, "a");
    let paths: Vec<&str> = page.results.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(paths, ["a/b/c.txt", "a/z.txt"]);

    // Globs: on the file name, or on the path when they hold a `/`.
    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            glob: Some("c.*".into()),
            ..args("hit")
        },
    )
    .unwrap();
    assert_eq!(page.results.len(), 1);
    assert_eq!(page.results[0].path, "a/b/c.txt");
    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            glob: Some("a/*.txt".into()),
            ..args("hit")
        },
    )
    .unwrap();
    let paths: Vec<&str> = page.results.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(paths, ["a/z.txt"]);
    let err = grep_files(
        &ctx,
        &GrepFilesArgs {
            glob: Some("a[".into()),
            ..args("hit")
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
}

#[test]
fn case_sensitivity_and_long_text() {
    let fx = Fixture::new();
    fx.write(
        "f.txt",
        format!("Hit one\nhit two\n{}HIT\n", "a".repeat(600)),
    );
    let ctx = fx.ctx(CAP);
    let page = grep_files(&ctx, &args("hit")).unwrap();
    assert_eq!(page.count, 3);
    assert_eq!(page.results[2].text, format!("{}…", "a".repeat(500)));
    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            case_sensitive: Some(true),
            ..args("hit")
        },
    )
    .unwrap();
    assert_eq!(page.count, 1);
    assert_eq!(page.results[0].line, 2);
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

#[test]
fn gitignore_rules_from_the_root_apply_to_a_searched_subdirectory() {
    let fx = Fixture::new();
    fx.write(".gitignore", "*.log\nbuild/\n");
    fx.write("sub/app.log", "hit log\n");
    fx.write("sub/app.txt", "hit txt\n");
    fx.write("build/out.txt", "hit build\n");
    let ctx = fx.ctx(CAP);
    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            path: Some("sub".into()),
            ..args("hit")
        },
    )
    .unwrap();
    assert_eq!(
        hits(std::slice::from_ref(&page)),
        [("sub/app.txt".to_string(), 1)]
    );
    // An ignored directory asked for by name is not answered with a silent "no matches".
    let result = grep_files(
        &ctx,
        &GrepFilesArgs {
            path: Some("build".into()),
            ..args("hit")
        },
    );
    let err = result.unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(err.message.contains(".gitignore"), "{}", err.message);
}

/// Review finding: a *file* given as `path` was searched without the walk's checks, so a file
/// inside `.git`, `node_modules` or an ignored directory was searched although a directory
/// there is refused (docs/paging.md, "grep_files: errors").
#[test]
fn a_file_path_gets_the_checks_of_the_way_a_directory_gets() {
    let fx = Fixture::new();
    fx.write(".gitignore", "*.log\nbuild/\n!keep.log\n");
    fx.write("sub/.gitignore", "local.txt\n");
    for file in [
        ".git/config",
        "sub/.git/HEAD",
        "node_modules/x/index.js",
        "app.log",
        "build/out.txt",
        "sub/local.txt",
        "keep.log",
        "sub/ok.txt",
        "wt/.git",
    ] {
        fx.write(file, "hit\n");
    }
    let ctx = fx.ctx(CAP);
    let search = |path: &str| {
        grep_files(
            &ctx,
            &GrepFilesArgs {
                path: Some(path.into()),
                ..args("hit")
            },
        )
    };
    for (path, why) in [
        (
            ".git/config",
            "is inside .git, which grep_files does not search; read it with read_file",
        ),
        (
            "sub/.git/HEAD",
            "is inside .git, which grep_files does not search; read it with read_file",
        ),
        (
            "node_modules/x/index.js",
            "is inside node_modules, which grep_files does not search; read it with read_file",
        ),
        (
            "app.log",
            "is excluded by a .gitignore, and grep_files does not search ignored files; read it with read_file",
        ),
        (
            "build/out.txt",
            "is excluded by a .gitignore, and grep_files does not search ignored files; read it with read_file",
        ),
        (
            "sub/local.txt",
            "is excluded by a .gitignore, and grep_files does not search ignored files; read it with read_file",
        ),
    ] {
        let err = search(path).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument, "{path}");
        assert_eq!(err.message, format!("{path} {why}"));
    }
    // What no rule excludes is searched: a whitelisted file, a plain one, and a file named
    // `.git` (a worktree's), which is not the directory the walk prunes.
    for path in ["keep.log", "sub/ok.txt", "wt/.git"] {
        let page = search(path).unwrap();
        assert_eq!(
            hits(std::slice::from_ref(&page)),
            [(path.to_string(), 1)],
            "{path}"
        );
    }
}

/// Review finding: `glob` was ignored when `path` named a file, so a search of `d/b.txt` with
/// `glob: "*.rs"` found what the search of `d` with the same glob does not.
#[test]
fn a_file_path_is_judged_as_the_walk_judges_an_entry() {
    let fx = Fixture::new();
    fx.write("d/a.rs", "TOKEN\n");
    fx.write("d/b.txt", "TOKEN\n");
    fx.write("d/-----BEGIN RSA PRIVATE KEY-----", "TOKEN\n");
    let ctx = fx.ctx(CAP);
    let search = |path: &str, glob: Option<&str>| {
        let page = grep_files(
            &ctx,
            &GrepFilesArgs {
                path: Some(path.into()),
                glob: glob.map(str::to_string),
                ..args("TOKEN")
            },
        )
        .unwrap();
        (hits(std::slice::from_ref(&page)), page.skipped_files)
    };
    let found = |path: &str| (vec![(path.to_string(), 1)], 0);
    assert_eq!(search("d", Some("*.rs")), found("d/a.rs"));
    assert_eq!(search("d/a.rs", Some("*.rs")), found("d/a.rs"));
    assert_eq!(search("d/b.txt", Some("*.rs")), (vec![], 0));
    assert_eq!(search("d/b.txt", Some("d/*.txt")), found("d/b.txt"));
    assert_eq!(search("d/b.txt", None), found("d/b.txt"));
    // A path that spells an armor line is skipped and counted, as in the walk of `d`.
    assert_eq!(
        search("d/-----BEGIN RSA PRIVATE KEY-----", None),
        (vec![], 1)
    );
    assert_eq!(search("d", Some("-*")), (vec![], 1));
}

/// Review finding: a page that ends at `maxResults` has already passed over the entries
/// between its last match and the next one, which the next page passes over again, so
/// `skippedFiles` summed over the pages counted them twice.
#[test]
fn skipped_files_summed_over_pages_counts_each_entry_once() {
    let fx = Fixture::new();
    fx.write("a.txt", "hit\nhit\n");
    fx.write("b.bin", "hit\0\n");
    fx.write("c.bin", "\0");
    fx.write("d.txt", "hit\n");
    fx.write("e.bin", "\0");
    let ctx = fx.ctx(CAP);
    let whole = grep_files(&ctx, &args("hit")).unwrap();
    assert_eq!((whole.count, whole.skipped_files), (3, 3));
    for max_results in 1..=3 {
        let pages = follow_grep(
            &ctx,
            &GrepFilesArgs {
                max_results: Some(max_results),
                ..args("hit")
            },
        );
        assert_eq!(hits(&pages), hits(std::slice::from_ref(&whole)));
        let skipped: Vec<u64> = pages.iter().map(|p| p.skipped_files).collect();
        // Each page but the last stops at the match after its last one, past b.bin and
        // c.bin for the pages that end at a.txt; the last page counts all three.
        let expected: &[u64] = match max_results {
            // a.txt:1 | a.txt:2 | d.txt:1 (b.bin, c.bin, e.bin passed over)
            1 => &[0, 0, 3],
            // a.txt:1-2 | d.txt:1
            2 => &[0, 3],
            _ => &[3],
        };
        assert_eq!(skipped, expected, "maxResults {max_results}");
    }
}

#[test]
fn a_match_whose_path_cannot_fit_is_the_page_budget_error() {
    let fx = Fixture::new();
    let long = format!("{}/{}/f.txt", "a".repeat(250), "b".repeat(250));
    fx.write(&long, "hit\n");
    fx.write("0.txt", "hit\n");
    let ctx = fx.ctx(1024);
    // The first page returns the short path's match and stops before the long one…
    let page = grep_files(&ctx, &args("hit")).unwrap();
    assert_eq!(
        hits(std::slice::from_ref(&page)),
        [("0.txt".to_string(), 1)]
    );
    assert!(page.truncated);
    // …whose page is the error naming the setting.
    let result = grep_files(
        &ctx,
        &GrepFilesArgs {
            cursor: page.next_cursor,
            ..args("hit")
        },
    );
    assert_fits(&result, 1024);
    let err = result.unwrap_err();
    assert_eq!(err.kind, ErrorKind::PageTooSmall);
    assert!(
        err.message.contains("agent.max_tool_result_bytes"),
        "{}",
        err.message
    );
    // With a larger cap it fits.
    let pages = follow_grep(&fx.ctx(4096), &args("hit"));
    assert_eq!(hits(&pages).len(), 2);
}
