//! grep_files resumes that seek: a cursor carries its entry's position in
//! the sorted walk, a resume jumps there instead of walking back, and the results are those
//! of one unpaged search, whatever the tree and wherever the pages stop.

use std::collections::BTreeSet;
use std::time::Duration;

use proptest::prelude::*;
use sluice_file_tools::{Context, GrepFilesArgs, GrepFilesPage, Limits, Root, Roots, grep_files};

use crate::support::{CAP, Fixture, follow_grep};

fn hits(pages: &[GrepFilesPage]) -> Vec<(String, u64)> {
    pages
        .iter()
        .flat_map(|p| p.results.iter().map(|m| (m.path.clone(), m.line)))
        .collect()
}

/// `d0`…`d4`, each with `e0`…`e4`, each with `f0.txt`…`f3.txt` matching `hit` on lines 1
/// and 3: 100 files, 200 matches, walked `d0/e0/f0.txt` first.
fn deep_tree() -> Fixture {
    let fx = Fixture::new();
    for d in 0..5 {
        for e in 0..5 {
            for f in 0..4 {
                fx.write(&format!("d{d}/e{e}/f{f}.txt"), "hit\nno\nhit\n");
            }
        }
    }
    fx
}

fn page_of(ctx: &Context, cursor: Option<String>, max_results: u64) -> GrepFilesPage {
    grep_files(
        ctx,
        &GrepFilesArgs {
            pattern: "hit".into(),
            max_results: Some(max_results),
            cursor,
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn a_cursor_deep_in_a_tree_names_its_position_and_resumes_where_one_search_goes_on() {
    let fx = deep_tree();
    let ctx = fx.ctx(1 << 20);
    let all = hits(&[page_of(&ctx, None, 500)]);
    assert_eq!(all.len(), 200);
    let first = page_of(&ctx, None, 50);
    // Match 50 is line 3 of d1/e1/f0.txt: entry 24 of the walk, at index 1 of the root,
    // 1 of d1 and 0 of d1/e1.
    assert_eq!(
        hits(std::slice::from_ref(&first)).last(),
        Some(&("d1/e1/f0.txt".to_string(), 3))
    );
    let cursor = first.next_cursor.unwrap();
    assert!(cursor.starts_with("g1.24.3."), "{cursor}");
    assert!(cursor.ends_with(".1-1-0"), "{cursor}");
    assert!(cursor.len() <= 62, "{cursor}");
    let second = page_of(&ctx, Some(cursor), 50);
    assert_eq!(hits(std::slice::from_ref(&second)), all[50..100]);
    // Following every cursor returns the one search's matches.
    let pages = follow_grep(
        &ctx,
        &GrepFilesArgs {
            pattern: "hit".into(),
            max_results: Some(7),
            ..Default::default()
        },
    );
    assert_eq!(hits(&pages), all);
}

#[test]
fn a_seek_needs_only_the_cursors_entry_to_stay_where_it_was() {
    let fx = deep_tree();
    let ctx = fx.ctx(1 << 20);
    let all = hits(&[page_of(&ctx, None, 500)]);
    let cursor = page_of(&ctx, None, 50).next_cursor.unwrap();
    // A file added in a subtree the seek skips moves every later entry number; the seek
    // does not count, so the resume still goes on after d1/e1/f0.txt line 3.
    fx.write("d0/e0/new.txt", "hit\n");
    let page = page_of(&ctx, Some(cursor.clone()), 50);
    assert_eq!(hits(std::slice::from_ref(&page)), all[50..100]);
    // A position that leads elsewhere (here an empty directory shifts the entry's index)
    // falls back to counting the way back to the entry number, as before seeking.
    std::fs::remove_file(fx.root().join("d0/e0/new.txt")).unwrap();
    fx.mkdir("d1/e1/a");
    let page = page_of(&ctx, Some(cursor.clone()), 50);
    assert_eq!(hits(std::slice::from_ref(&page)), all[50..100]);
    // So does an altered position.
    let (head, _) = cursor.rsplit_once('.').unwrap();
    for position in ["0-0-0", "4-4-3", "9", "1-1-0-5"] {
        let page = page_of(&ctx, Some(format!("{head}.{position}")), 50);
        assert_eq!(
            hits(std::slice::from_ref(&page)),
            all[50..100],
            "{position}"
        );
    }
    // A position that is not numbers is not a cursor of this search.
    for position in ["", "a", "1--0", "1-+1-0", "1-1-0."] {
        let err = grep_files(
            &ctx,
            &GrepFilesArgs {
                pattern: "hit".into(),
                cursor: Some(format!("{head}.{position}")),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_eq!(
            err.kind,
            sluice_file_tools::ErrorKind::InvalidArgument,
            "{position}"
        );
    }
}

#[test]
fn a_cursor_too_long_for_its_position_resumes_by_counting() {
    let fx = Fixture::new();
    // 21 levels of 10-entry directories: the position (21 indices and 20 dashes) does not
    // fit in 62 bytes beside the rest of the cursor.
    let mut dir = String::new();
    for level in 0..21 {
        for sibling in 0..9 {
            fx.mkdir(&format!("{dir}{sibling}"));
        }
        dir.push_str(&format!("{level}x/"));
    }
    fx.write(&format!("{dir}f.txt"), "hit\nhit\n");
    let ctx = fx.ctx(CAP);
    let first = page_of(&ctx, None, 1);
    let cursor = first.next_cursor.unwrap();
    assert_eq!(cursor.split('.').count(), 4, "{cursor}");
    let page = page_of(&ctx, Some(cursor), 1);
    assert_eq!(
        hits(std::slice::from_ref(&page)),
        [(format!("{dir}f.txt"), 2)]
    );
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A file's lines: each matches `hit` or not.
fn lines() -> impl Strategy<Value = Vec<bool>> {
    prop::collection::vec(any::<bool>(), 0..6)
}

proptest! {
    #![proptest_config(config())]

    /// Pages concatenated are one unpaged search, whether they stop at `maxResults` or at
    /// the time budget after every entry; trees with ignored files and directories, pruned
    /// directories, symlinks and empty directories.
    #[test]
    fn pages_concatenated_are_one_unpaged_search(
        files in prop::collection::btree_map("[a-c]{1,2}(/[a-c]{1,2}){0,3}\\.(txt|log)", lines(), 1..24),
        empty_dirs in prop::collection::vec("[a-c]{1,2}(/[a-c]{1,2}){0,2}/0", 0..3),
        links in prop::collection::vec("[a-c]{1,2}(/[a-c]{1,2}){0,2}/l", 0..3),
        ignore in prop::sample::select(vec!["", "*.log\n", "b/\n", "*.log\n!a/*.log\n", ".git\nc\n"]),
        max_results in 1u64..6,
        path in prop::sample::select(vec!["", "a", "b", "a/a"]),
    ) {
        let fx = Fixture::new();
        for (rel, lines) in &files {
            let body: String = lines.iter().map(|&hit| if hit { "a hit\n" } else { "none\n" }).collect();
            fx.write(rel, body);
        }
        for rel in &empty_dirs {
            // A name already taken by a file is left as it is.
            let _ = std::fs::create_dir_all(fx.root().join(rel));
        }
        for rel in &links {
            let _ = std::fs::create_dir_all(fx.root().join(rel).parent().unwrap());
            let _ = std::os::unix::fs::symlink("a.txt", fx.root().join(rel));
        }
        fx.write(".gitignore", ignore);
        fx.write(".git/x.txt", "hit\n");
        fx.write("node_modules/x.txt", "hit\n");
        let roots = Roots::new(vec![Root::new("w", fx.root())]);
        let ctx = Context::new(roots.clone(), Limits::new(1 << 20));
        let args = GrepFilesArgs {
            pattern: "hit".into(),
            path: (!path.is_empty()).then(|| path.to_string()),
            max_results: Some(500),
            ..Default::default()
        };
        let one = match grep_files(&ctx, &args) {
            Ok(page) => page,
            // The path is missing or ignored in this tree: nothing to page.
            Err(_) => return Ok(()),
        };
        prop_assert!(!one.truncated);
        let by_results = follow_grep(&ctx, &GrepFilesArgs { max_results: Some(max_results), ..args.clone() });
        prop_assert_eq!(hits(&by_results), hits(std::slice::from_ref(&one)));
        // (Their `skippedFiles` are not summed: a page that ends at `maxResults` found the
        // next match first, and the next page passes again over what lies between.)
        // Each call out of time at once: it visits one entry past its cursor and stops.
        let expired = Context::new(roots, Limits::new(1 << 20).with_time_budget(Duration::ZERO));
        let by_entry = follow_grep(&expired, &args);
        prop_assert_eq!(hits(&by_entry), hits(std::slice::from_ref(&one)));
        prop_assert_eq!(
            by_entry.iter().map(|p| p.skipped_files).sum::<u64>(),
            one.skipped_files
        );
        let mut seen = BTreeSet::new();
        for p in &by_entry {
            if let Some(c) = &p.next_cursor {
                prop_assert!(c.len() <= 62, "{}", c);
                prop_assert!(seen.insert(c.clone()), "a cursor came back: {}", c);
            }
        }
    }
}
