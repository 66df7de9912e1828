//! Paths and the root: `..`, absolute paths, symlinks leaving the root, wrong kinds.

use sluice_file_tools::{
    Context, ErrorKind, GrepFilesArgs, ListDirArgs, ReadFileArgs, TailFileArgs, ToolError,
    grep_files, list_dir, read_file, tail_file,
};

use crate::support::{CAP, Fixture};

/// Runs all four tools on `path` and returns their errors (or `None` for a success).
fn all_tools(ctx: &Context, path: &str) -> Vec<(&'static str, Option<ToolError>)> {
    vec![
        (
            "read_file",
            read_file(
                ctx,
                &ReadFileArgs {
                    path: path.into(),
                    ..Default::default()
                },
            )
            .err(),
        ),
        (
            "tail_file",
            tail_file(
                ctx,
                &TailFileArgs {
                    path: path.into(),
                    ..Default::default()
                },
            )
            .err(),
        ),
        (
            "grep_files",
            grep_files(
                ctx,
                &GrepFilesArgs {
                    pattern: "secret".into(),
                    path: Some(path.into()),
                    ..Default::default()
                },
            )
            .err(),
        ),
        (
            "list_dir",
            list_dir(
                ctx,
                &ListDirArgs {
                    path: Some(path.into()),
                    ..Default::default()
                },
            )
            .err(),
        ),
    ]
}

#[track_caller]
fn assert_outside(ctx: &Context, path: &str) {
    for (tool, err) in all_tools(ctx, path) {
        let err = err.unwrap_or_else(|| panic!("{tool} {path:?} succeeded"));
        assert_eq!(
            err.kind,
            ErrorKind::OutsideRoot,
            "{tool} {path:?}: {}",
            err.message
        );
        assert!(
            err.message.contains("outside the root"),
            "{tool} {path:?}: {}",
            err.message
        );
    }
}

fn setup() -> Fixture {
    let fx = Fixture::new();
    std::fs::write(fx.outside().join("secret.txt"), "secret outside\n").unwrap();
    fx.write("sub/f.txt", "secret inside\n");
    fx
}

#[test]
fn dot_dot_leaving_the_root() {
    let fx = setup();
    let ctx = fx.ctx(CAP);
    for p in [
        "..",
        "../outside/secret.txt",
        "../outside",
        "sub/../../outside/secret.txt",
        "./../outside",
        "sub/../..",
    ] {
        assert_outside(&ctx, p);
    }
    // `..` that stays inside is fine.
    let page = read_file(
        &ctx,
        &ReadFileArgs {
            path: "sub/../sub/./f.txt".into(),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(page.path, "sub/f.txt");
    assert_eq!(page.content, "secret inside\n");
}

#[test]
fn absolute_paths() {
    let fx = setup();
    let ctx = fx.ctx(CAP);
    let inside = fx.root().join("sub/f.txt");
    let outside = fx.outside().join("secret.txt");
    for p in [
        "/etc/passwd",
        "/",
        inside.to_str().unwrap(),
        outside.to_str().unwrap(),
    ] {
        assert_outside(&ctx, p);
    }
}

#[test]
fn symlinks_leaving_the_root() {
    let fx = setup();
    let outside_dir = fx.outside();
    fx.symlink("../outside", "rel_dir");
    fx.symlink("../outside/secret.txt", "rel_file");
    fx.symlink("../../outside/secret.txt", "sub/deeper_rel");
    fx.symlink(&outside_dir, "abs_dir");
    fx.symlink(outside_dir.join("secret.txt"), "abs_file");
    // A chain: inside link -> link that leaves.
    fx.symlink("rel_dir", "chain");
    let ctx = fx.ctx(CAP);
    for p in [
        "rel_dir",
        "rel_dir/",
        "rel_dir/secret.txt",
        "rel_file",
        "sub/deeper_rel",
        "abs_dir",
        "abs_dir/",
        "abs_dir/secret.txt",
        "abs_file",
        "chain/",
        "chain/secret.txt",
    ] {
        assert_outside(&ctx, p);
    }
    // The walk from the root never follows them: counted as skipped, never searched.
    let page = grep_files(
        &ctx,
        &GrepFilesArgs {
            pattern: "secret".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let paths: Vec<&str> = page.results.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(paths, ["sub/f.txt"]);
    assert_eq!(page.skipped_files, 6);
    // list_dir shows them as symlinks.
    let page = list_dir(&ctx, &ListDirArgs::default()).unwrap();
    let links = page
        .entries
        .iter()
        .filter(|e| e.kind == sluice_file_tools::EntryKind::Symlink)
        .count();
    assert_eq!(links, 5);
}

#[test]
fn symlinks_inside_the_root_are_followed() {
    let fx = setup();
    fx.symlink("sub", "alias");
    fx.symlink("f.txt", "sub/same");
    fx.symlink("../sub/f.txt", "sub2/up");
    let ctx = fx.ctx(CAP);
    for p in ["alias/f.txt", "sub/same", "sub2/up", "alias/same"] {
        let page = read_file(
            &ctx,
            &ReadFileArgs {
                path: p.into(),
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{p}: {e}"));
        assert_eq!(page.content, "secret inside\n");
        assert_eq!(page.path, p, "results show the path as asked");
    }
    let page = list_dir(
        &ctx,
        &ListDirArgs {
            path: Some("alias/".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(page.path, "alias");
    assert_eq!(page.total, 2);
}

#[test]
fn symlink_loops_are_an_error_not_a_hang() {
    let fx = setup();
    fx.symlink("loop2", "loop1");
    fx.symlink("loop1", "loop2");
    let ctx = fx.ctx(CAP);
    for (tool, err) in all_tools(&ctx, "loop1") {
        let err = err.unwrap_or_else(|| panic!("{tool} succeeded"));
        assert_eq!(err.kind, ErrorKind::Io, "{tool}: {}", err.message);
        assert!(err.message.contains("symlinks"), "{tool}: {}", err.message);
    }
}

#[test]
fn wrong_kinds() {
    let fx = setup();
    let ctx = fx.ctx(CAP);
    let err = read_file(
        &ctx,
        &ReadFileArgs {
            path: "sub".into(),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::WrongKind);
    let err = tail_file(
        &ctx,
        &TailFileArgs {
            path: ".".into(),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::WrongKind);
    let err = list_dir(
        &ctx,
        &ListDirArgs {
            path: Some("sub/f.txt".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::WrongKind);
    // A file used as a directory.
    let err = read_file(
        &ctx,
        &ReadFileArgs {
            path: "sub/f.txt/x".into(),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(
        matches!(err.kind, ErrorKind::WrongKind | ErrorKind::NotFound),
        "{err:?}"
    );
}

#[test]
fn roots_by_name() {
    let fx = setup();
    std::fs::write(fx.outside().join("other.txt"), "other root\n").unwrap();
    let ctx = Context::new(
        sluice_file_tools::Roots::new(vec![
            sluice_file_tools::Root::new("work", fx.root()),
            sluice_file_tools::Root::new("logs", fx.outside()),
        ]),
        sluice_file_tools::Limits::new(CAP),
    );
    let page = read_file(
        &ctx,
        &ReadFileArgs {
            path: "other.txt".into(),
            root: Some("logs".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(page.content, "other root\n");
    let err = read_file(
        &ctx,
        &ReadFileArgs {
            path: "other.txt".into(),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
    let err = read_file(
        &ctx,
        &ReadFileArgs {
            path: "other.txt".into(),
            root: Some("nope".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(err.message.contains("work, logs"), "{}", err.message);
    let none = Context::new(
        sluice_file_tools::Roots::new(vec![]),
        sluice_file_tools::Limits::new(CAP),
    );
    assert_eq!(
        list_dir(&none, &ListDirArgs::default()).unwrap_err().kind,
        ErrorKind::InvalidArgument
    );
}
