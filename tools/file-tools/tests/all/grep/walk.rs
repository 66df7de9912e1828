//! The walk of grep_files: its order, skips and ignores (`.gitignore` from the root too), a
//! file path judged as the walk judges an entry, skipped files counted once over pages, a
//! match whose path cannot fit.

use super::*;

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
