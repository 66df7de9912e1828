//! grep_files reading the files it searches through a [`DirSource`] (inside a component the
//! host's `sluice:tools/whole-files`, which reads the announced files ahead on a thread of
//! its own). Pages and cursors are those of the search that reads files itself; each
//! directory's files are announced when the walk enters it, each once, and a queue that puts
//! every announcement before the earlier ones holds them in the order they are read; nothing
//! before a cursor, ignored, or in a directory not entered is announced.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use sluice_file_tools::{
    DirChunk, DirNames, DirSource, GrepFilesArgs, GrepFilesPage, WholeFile, WholeRead, grep_files,
    grep_files_from,
};

use crate::grep_source::HostLike;
use crate::support::{Fixture, fake_pem, follow_grep, follow_grep_from};

/// A source that lists as the host does and reads whole files by the host's rules, natively,
/// recording what was announced and what was read (paths relative to the root).
struct Reader {
    listing: HostLike,
    root: PathBuf,
    announced: RefCell<Vec<String>>,
    read: RefCell<Vec<String>>,
    /// Announcements (false) and reads (true), in order.
    events: RefCell<Vec<(bool, String)>>,
    /// The host's queue: each announcement goes before what was announced earlier, and a
    /// read drops what comes before its file.
    queue: RefCell<std::collections::VecDeque<String>>,
    /// Reads of files that were not in the queue, and files dropped from it.
    not_queued: RefCell<Vec<String>>,
    dropped: RefCell<Vec<String>>,
}

impl Reader {
    fn new(root: PathBuf) -> Self {
        Reader {
            listing: HostLike::new(root.clone()),
            root,
            announced: RefCell::default(),
            read: RefCell::default(),
            events: RefCell::default(),
            queue: RefCell::default(),
            not_queued: RefCell::default(),
            dropped: RefCell::default(),
        }
    }

    fn rel(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap()
            .to_str()
            .unwrap()
            .to_string()
    }

    /// What was announced and what was read since the last look.
    fn taken(&self) -> (Vec<String>, Vec<String>) {
        (self.announced.take(), self.read.take())
    }
}

impl DirSource for Reader {
    fn chunk(&self, _: &Path, _: u64, _: u32) -> Option<std::io::Result<DirChunk>> {
        panic!("grep_files asks for whole listings, never chunks");
    }

    fn names(&self, dir: &Path) -> Option<std::io::Result<DirNames>> {
        self.listing.names(dir)
    }

    fn read_ahead(&self, paths: &[&Path], rules: WholeRead) {
        assert_eq!(rules.max_bytes, 5 << 20);
        assert_eq!(rules.sniff_bytes, 8 << 10);
        for p in paths {
            self.announced.borrow_mut().push(self.rel(p));
            self.events.borrow_mut().push((false, self.rel(p)));
        }
        let mut queue = self.queue.borrow_mut();
        for p in paths.iter().rev() {
            queue.push_front(self.rel(p));
        }
    }

    fn read_whole(&self, path: &Path, rules: WholeRead) -> Option<WholeFile> {
        let rel = self.rel(path);
        self.read.borrow_mut().push(rel.clone());
        self.events.borrow_mut().push((true, rel.clone()));
        let mut queue = self.queue.borrow_mut();
        match queue.iter().position(|p| *p == rel) {
            Some(i) => {
                self.dropped.borrow_mut().extend(queue.drain(..i));
                queue.pop_front();
            }
            None => self.not_queued.borrow_mut().push(rel),
        }
        let name = path.file_name()?.to_str()?;
        if sluice_file_tools::KeyNamePolicy::is_key_file(
            &sluice_file_tools::KeyNames::default(),
            name,
        ) {
            return Some(WholeFile::PassedOver);
        }
        let bytes = std::fs::read(path).ok()?;
        let sniffed = &bytes[..bytes.len().min(rules.sniff_bytes as usize)];
        Some(
            if bytes.len() as u64 > rules.max_bytes
                || sniffed.contains(&0)
                || sluice_file_tools::keys::has_armor(&bytes)
            {
                WholeFile::PassedOver
            } else {
                WholeFile::Bytes(bytes)
            },
        )
    }
}

/// Files in runs between directories, and every kind the search passes over: binary, armor
/// inside, a key name, an ignored file, a file over 64 KiB (read in two parts natively) and
/// one with `\r\n` line ends.
fn tree() -> Fixture {
    let fx = Fixture::new();
    fx.write(".gitignore", "*.log\n");
    fx.write("a1.txt", "hit a1\n");
    fx.write("a2.log", "hit ignored\n");
    fx.write("a3.bin", b"hit\0binary\n");
    fx.write("b/inner.txt", "hit inner\n");
    fx.write("c1.txt", format!("hit c1\n{}", fake_pem("RSA", 3)));
    fx.write("c2.txt", "hit c2 crlf\r\nno\r\nhit again\r\n");
    fx.write("d/e/deep.txt", "hit deep\n");
    fx.write("d/f.txt", "hit f\n");
    fx.write("id_rsa", "hit key name\n");
    fx.write("z.txt", format!("{}\nhit z\n", "x".repeat(70_000)));
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

fn json(v: &[GrepFilesPage]) -> String {
    serde_json::to_string(v).unwrap()
}

#[test]
fn pages_read_through_the_source_equal_pages_of_the_search_that_reads_itself() {
    let fx = tree();
    let reader = Reader::new(fx.root());
    for cap in [1024, 8192] {
        let ctx = fx.ctx(cap);
        for max_results in [1, 2, 5, 500] {
            let direct = follow_grep(&ctx, &args(max_results));
            let through = follow_grep_from(&ctx, &args(max_results), Some(&reader));
            assert_eq!(json(&through), json(&direct), "cap {cap}, {max_results}");
            for (i, page) in through.iter().enumerate().skip(1) {
                let resumed = grep_files(
                    &ctx,
                    &GrepFilesArgs {
                        cursor: through[i - 1].next_cursor.clone(),
                        ..args(max_results)
                    },
                )
                .unwrap();
                assert_eq!(json(&[resumed]), json(std::slice::from_ref(page)));
            }
        }
    }
    let all = follow_grep(&fx.ctx(8192), &args(500));
    let lines: Vec<(&str, u64)> = all[0]
        .results
        .iter()
        .map(|m| (m.path.as_str(), m.line))
        .collect();
    assert_eq!(
        lines,
        [
            ("a1.txt", 1),
            ("b/inner.txt", 1),
            ("c2.txt", 1),
            ("c2.txt", 3),
            ("d/e/deep.txt", 1),
            ("d/f.txt", 1),
            ("z.txt", 2)
        ]
    );
    // a3.bin (binary), c1.txt (armor inside), id_rsa (a key name).
    assert_eq!(all[0].skipped_files, 3);
}

#[test]
fn each_directorys_files_are_announced_when_it_is_entered_and_read_in_the_queues_order() {
    let fx = tree();
    let reader = Reader::new(fx.root());
    let ctx = fx.ctx(8192);
    grep_files_from(&ctx, &args(500), Some(&reader)).unwrap();
    let (announced, read) = reader.taken();
    // Each directory's files when it is entered (the ignored a2.log not among them); the key
    // name id_rsa is announced and asked for: the source passes over key names itself.
    assert_eq!(
        announced,
        [
            ".gitignore",
            "a1.txt",
            "a3.bin",
            "c1.txt",
            "c2.txt",
            "id_rsa",
            "z.txt",
            "b/inner.txt",
            "d/f.txt",
            "d/e/deep.txt"
        ]
    );
    assert_eq!(
        read,
        [
            ".gitignore",
            "a1.txt",
            "a3.bin",
            "b/inner.txt",
            "c1.txt",
            "c2.txt",
            "d/e/deep.txt",
            "d/f.txt",
            "id_rsa",
            "z.txt"
        ]
    );
    // A queue that puts each announcement first holds the files in the order they are
    // read: every read takes the file at its front.
    assert_eq!(reader.not_queued.take(), Vec::<String>::new());
    assert_eq!(reader.dropped.take(), Vec::<String>::new());
    assert!(reader.queue.take().is_empty());
    // Announced before it was read: each run when its first file is reached.
    let events = reader.events.take();
    for (i, (is_read, path)) in events.iter().enumerate() {
        if *is_read {
            assert!(
                events[..i].contains(&(false, path.clone())),
                "{path} read before it was announced: {events:?}"
            );
        }
    }

    // A resume announces nothing before its cursor: the second page starts after c2.txt's
    // first line.
    let first = grep_files_from(&ctx, &args(3), Some(&reader)).unwrap();
    assert_eq!(first.results.last().unwrap().path, "c2.txt");
    reader.taken();
    reader.queue.take();
    let second = grep_files_from(
        &ctx,
        &GrepFilesArgs {
            cursor: first.next_cursor,
            ..args(3)
        },
        Some(&reader),
    )
    .unwrap();
    assert_eq!(second.results[0].path, "c2.txt");
    assert_eq!(second.results[0].line, 3);
    assert_eq!(second.count, 3);
    // The page ends at the fourth match, in z.txt: that is as far as it read.
    let (announced, read) = reader.taken();
    assert_eq!(
        announced,
        ["c2.txt", "id_rsa", "z.txt", "d/f.txt", "d/e/deep.txt"]
    );
    assert_eq!(
        read,
        ["c2.txt", "d/e/deep.txt", "d/f.txt", "id_rsa", "z.txt"]
    );
    assert_eq!(reader.not_queued.take(), Vec::<String>::new());
}
