//! grep_files: rows G1–G4 of `docs/regressions.md`, cases C7 (grep part), C9 and C10, and
//! the walk's rules (order, skips, ignores, globs, cursors, time budget).

mod time_budget; // Cursors and the time budget.
mod walk; // Order, skips, ignores, a file path as an entry, skipped counts, paths that cannot fit.

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
