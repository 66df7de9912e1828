//! grep_files walking through a [`DirSource`]: inside a component the host lists
//! each directory (`sluice:tools/listing`'s `list-names`), with no `stat` and no crossing per
//! entry. Pages and cursors are those of the walk that lists directories itself, the source
//! is asked for exactly the directories the walk enters, and a source that cannot list a
//! directory, or fails to, is handled as the walk's own listing would be.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sluice_file_tools::{
    DirChunk, DirNames, DirSource, EntryKind, ErrorKind, GrepFilesArgs, grep_files, grep_files_from,
};

use crate::support::{Fixture, follow_grep, follow_grep_from};

/// What the source does for a directory (relative to the root) other than list it.
#[derive(Clone, Copy)]
enum Answer {
    /// `None`: the walk lists it itself.
    Unsupported,
    /// An error.
    Fail,
}

/// A source that lists directories as the host does (names that are not UTF-8 counted, armor
/// names listed, kinds without following symlinks) and records which it was asked for.
pub(crate) struct HostLike {
    root: PathBuf,
    asked: RefCell<Vec<String>>,
    answers: HashMap<&'static str, Answer>,
}

impl HostLike {
    pub(crate) fn new(root: PathBuf) -> Self {
        HostLike {
            root,
            asked: RefCell::new(Vec::new()),
            answers: HashMap::new(),
        }
    }

    fn answering(mut self, dir: &'static str, answer: Answer) -> Self {
        self.answers.insert(dir, answer);
        self
    }

    fn asked(&self) -> Vec<String> {
        self.asked.take()
    }
}

impl DirSource for HostLike {
    fn chunk(&self, _: &Path, _: u64, _: u32) -> Option<std::io::Result<DirChunk>> {
        panic!("grep_files asks for whole listings, never chunks");
    }

    fn names(&self, dir: &Path) -> Option<std::io::Result<DirNames>> {
        let rel = dir.strip_prefix(&self.root).unwrap().to_str().unwrap();
        self.asked.borrow_mut().push(rel.to_string());
        match self.answers.get(rel) {
            Some(Answer::Unsupported) => return None,
            Some(Answer::Fail) => return Some(Err(std::io::Error::other("the disk is on fire"))),
            None => {}
        }
        let mut names = DirNames::default();
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let t = entry.file_type().unwrap();
            let kind = if t.is_symlink() {
                EntryKind::Symlink
            } else if t.is_dir() {
                EntryKind::Directory
            } else if t.is_file() {
                EntryKind::File
            } else {
                EntryKind::Other
            };
            match entry.file_name().into_string() {
                Ok(name) => names.entries.push((name, kind)),
                Err(_) => names.unreadable += 1,
            }
        }
        names
            .entries
            .sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        Some(Ok(names))
    }
}

/// A tree with every kind of entry the walk treats apart: ignored files and directories, a
/// pruned directory, a key directory and key names, an armor name, a symlink, a `.gitignore`
/// below the root, and enough matches in `b.txt` for several pages.
fn tree() -> Fixture {
    let fx = Fixture::new();
    fx.write("a/b/c.txt", "hit a/b/c\n");
    fx.write("a/z.txt", "hit a/z\nno\nhit again\n");
    fx.write("b.txt", "hit b\n".repeat(40));
    fx.write(".gitignore", "*.log\nbuild/\n");
    fx.write("app.log", "hit log\n");
    fx.write("build/out.txt", "hit build\n");
    fx.write("node_modules/x.js", "hit nm\n");
    fx.write("keys/k.txt", "hit key dir\n");
    fx.write("server.PEM", "hit pem\n");
    fx.write("-----BEGIN RSA PRIVATE KEY-----", "hit armor name\n");
    fx.symlink("b.txt", "link.txt");
    fx.write("sub/.gitignore", "local.txt\n");
    fx.write("sub/local.txt", "hit local\n");
    fx.write("sub/kept.txt", "hit kept\n");
    fx
}

fn args(max_results: u64) -> GrepFilesArgs {
    GrepFilesArgs {
        pattern: "hit".into(),
        case_sensitive: Some(true),
        max_results: Some(max_results),
        ..Default::default()
    }
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap()
}

#[test]
fn pages_through_a_source_equal_pages_of_the_walk_and_cursors_are_interchangeable() {
    let fx = tree();
    let source = HostLike::new(fx.root());
    for cap in [1024, 8192] {
        let ctx = fx.ctx(cap);
        for max_results in [1, 3, 7, 500] {
            let direct = follow_grep(&ctx, &args(max_results));
            let through = follow_grep_from(&ctx, &args(max_results), Some(&source));
            assert_eq!(json(&through), json(&direct), "cap {cap}, {max_results}");
            // Every cursor of the walk through the source resumes the walk that lists
            // directories itself at the same page, and the other way round.
            for (i, page) in through.iter().enumerate().skip(1) {
                let cursor = through[i - 1].next_cursor.clone();
                let resumed = grep_files(
                    &ctx,
                    &GrepFilesArgs {
                        cursor,
                        ..args(max_results)
                    },
                )
                .unwrap();
                assert_eq!(json(&resumed), json(page));
                let cursor = direct[i - 1].next_cursor.clone();
                let resumed = grep_files_from(
                    &ctx,
                    &GrepFilesArgs {
                        cursor,
                        ..args(max_results)
                    },
                    Some(&source),
                )
                .unwrap();
                assert_eq!(json(&resumed), json(&direct[i]));
            }
        }
    }
    let all = follow_grep(&fx.ctx(8192), &args(500));
    assert_eq!(all.len(), 1);
    let paths: Vec<(&str, u64)> = all[0]
        .results
        .iter()
        .map(|m| (m.path.as_str(), m.line))
        .filter(|(p, _)| *p != "b.txt")
        .collect();
    assert_eq!(
        paths,
        [
            ("a/b/c.txt", 1),
            ("a/z.txt", 1),
            ("a/z.txt", 3),
            ("sub/kept.txt", 1)
        ]
    );
    assert_eq!(all[0].count, 44);
    // The armor name, server.PEM and link.txt.
    assert_eq!(all[0].skipped_files, 3);
}

#[test]
fn the_source_is_asked_for_the_directories_the_walk_enters_once_each() {
    let fx = tree();
    let source = HostLike::new(fx.root());
    let ctx = fx.ctx(8192);
    grep_files_from(&ctx, &args(500), Some(&source)).unwrap();
    // Not build (ignored), keys (key material), node_modules (pruned).
    assert_eq!(source.asked(), ["", "a", "a/b", "sub"]);

    // A search of `a/b` lists the directories on the way to it, and it.
    grep_files_from(
        &ctx,
        &GrepFilesArgs {
            path: Some("a/b".into()),
            ..args(500)
        },
        Some(&source),
    )
    .unwrap();
    assert_eq!(source.asked(), ["", "a", "a/b"]);

    // A resume seeks: the walk lists only the directories on the way to the cursor's entry
    // and what follows it.
    let first = grep_files_from(&ctx, &args(2), Some(&source)).unwrap();
    assert_eq!(source.asked(), ["", "a", "a/b"]);
    let second = grep_files_from(
        &ctx,
        &GrepFilesArgs {
            cursor: first.next_cursor,
            ..args(2)
        },
        Some(&source),
    )
    .unwrap();
    assert_eq!(second.results[0].path, "a/z.txt");
    assert_eq!(source.asked(), ["", "a"]);
}

#[test]
fn a_directory_the_source_cannot_list_is_read_by_the_walk_and_one_it_fails_on_is_passed_over() {
    let fx = tree();
    let ctx = fx.ctx(8192);
    let direct = grep_files(&ctx, &args(500)).unwrap();

    let source = HostLike::new(fx.root()).answering("a", Answer::Unsupported);
    let page = grep_files_from(&ctx, &args(500), Some(&source)).unwrap();
    assert_eq!(json(&page), json(&direct));
    assert_eq!(source.asked(), ["", "a", "a/b", "sub"]);

    // A directory below the searched one that cannot be listed is passed over, as one the
    // walk cannot read itself.
    let source = HostLike::new(fx.root()).answering("a/b", Answer::Fail);
    let page = grep_files_from(&ctx, &args(500), Some(&source)).unwrap();
    let mut expected = direct.clone();
    expected.results.retain(|m| m.path != "a/b/c.txt");
    expected.count -= 1;
    assert_eq!(json(&page), json(&expected));

    // The searched directory itself: the error, naming it.
    let source = HostLike::new(fx.root()).answering("a", Answer::Fail);
    let err = grep_files_from(
        &ctx,
        &GrepFilesArgs {
            path: Some("a".into()),
            ..args(500)
        },
        Some(&source),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Io);
    assert_eq!(err.message, "failed to read a: the disk is on fire");
}

#[cfg(target_os = "linux")]
#[test]
fn a_name_that_is_not_utf8_is_counted_as_skipped_and_the_rest_is_searched() {
    use std::os::unix::ffi::OsStrExt;
    let fx = tree();
    let bad = fx.root().join(std::ffi::OsStr::from_bytes(b"bad\xff.txt"));
    std::fs::write(bad, "hit bad\n").unwrap();
    let ctx = fx.ctx(8192);
    let source = HostLike::new(fx.root());
    let page = grep_files_from(&ctx, &args(500), Some(&source)).unwrap();
    // Natively the walk reads the name lossily and searches the file; the host cannot give
    // the name to a component, so it is counted, as the `wasi:filesystem` walk counts it.
    let direct = grep_files(&ctx, &args(500)).unwrap();
    let mut expected = direct.clone();
    expected.results.retain(|m| m.path != "bad\u{fffd}.txt");
    expected.count -= 1;
    expected.skipped_files += 1;
    assert_eq!(json(&page), json(&expected));
    assert_eq!(expected.count, 44);
}
