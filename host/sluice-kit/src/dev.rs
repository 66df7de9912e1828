//! `sluice dev`: watch a tool project's sources and, on every save, build it again and run
//! its tests (docs/authoring.md#the-loop). This module owns what counts as a source and the
//! wait for the next change; the binary runs [`crate::build`] and [`crate::cases`] in turn.
//!
//! Every file under the project directory is a source except what builds and tools write:
//! the directory of `[build] output` (`build/`), `target/`, `node_modules/`, `__pycache__/`,
//! `snapshots/`, anything whose name starts with `.` (`.git/`, an editor's `.swp`), names
//! ending in `~`, and the lock files the toolchains rewrite (`package-lock.json`,
//! `Cargo.lock`: `npm install` rewrote the first into a second round that rebuilt nothing
//! new). A change made during a round starts the next one.

use std::path::{Component, Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};

use crate::{KitError, Manifest};

/// How long a burst of file events is gathered before a rebuild: an editor's save is several
/// events (write, rename, chmod), and a formatter rewrites right after.
pub const SETTLE: Duration = Duration::from_millis(200);

/// Names that are no source, whatever the project: directories builds and tools write,
/// and the lock files toolchains rewrite.
const NOT_SOURCES: [&str; 6] = [
    "target",
    "node_modules",
    "__pycache__",
    "snapshots",
    "package-lock.json",
    "Cargo.lock",
];

/// Whether `path` (under `dir`) is a source of the project whose build writes into
/// `output_dir` (relative to `dir`).
pub fn is_source(dir: &Path, output_dir: &Path, path: &Path) -> bool {
    let Ok(relative) = path.strip_prefix(dir) else {
        return false;
    };
    if !output_dir.as_os_str().is_empty() && relative.starts_with(output_dir) {
        return false;
    }
    relative.components().all(|c| match c {
        Component::Normal(name) => {
            let name = name.to_string_lossy();
            !name.starts_with('.') && !name.ends_with('~') && !NOT_SOURCES.contains(&&*name)
        }
        _ => false,
    })
}

/// A watch on a project's sources: [`SourceWatcher::next_change`] waits for the next save.
pub struct SourceWatcher {
    dir: PathBuf,
    output_dir: PathBuf,
    events: mpsc::Receiver<notify::Result<notify::Event>>,
    _watcher: RecommendedWatcher,
}

impl std::fmt::Debug for SourceWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceWatcher")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl SourceWatcher {
    /// Watches every source of the project in `dir` (its `tool.toml` says where the build
    /// writes, which is not watched).
    ///
    /// # Errors
    /// [`Manifest::read`]'s errors; [`KitError::Io`] when the directory cannot be watched.
    pub fn new(dir: &Path) -> Result<SourceWatcher, KitError> {
        let dir = std::path::absolute(dir).map_err(|e| io("find", dir, &e))?;
        let manifest = Manifest::read(&dir)?;
        let output_dir = manifest
            .build
            .output
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let (tx, events) = mpsc::channel();
        let mut watcher = notify::recommended_watcher(move |event| {
            let _ = tx.send(event);
        })
        .map_err(|e| watch_error(&dir, &e))?;
        watcher
            .watch(&dir, RecursiveMode::Recursive)
            .map_err(|e| watch_error(&dir, &e))?;
        Ok(SourceWatcher {
            dir,
            output_dir,
            events,
            _watcher: watcher,
        })
    }

    /// Blocks until a source changes, then gathers the events of the next [`SETTLE`] and
    /// returns the sources changed (relative to the project, sorted, each once).
    ///
    /// # Errors
    /// [`KitError::Io`] when the watch fails (the directory went away).
    pub fn next_change(&self) -> Result<Vec<PathBuf>, KitError> {
        let mut changed = Vec::new();
        loop {
            let event = self.events.recv().map_err(|_| KitError::Io {
                action: "watch",
                path: self.dir.clone(),
                reason: "the watch ended".into(),
            })?;
            self.take(event, &mut changed)?;
            if !changed.is_empty() {
                break;
            }
        }
        while let Ok(event) = self.events.recv_timeout(SETTLE) {
            self.take(event, &mut changed)?;
        }
        changed.sort();
        changed.dedup();
        Ok(changed)
    }

    fn take(
        &self,
        event: notify::Result<notify::Event>,
        changed: &mut Vec<PathBuf>,
    ) -> Result<(), KitError> {
        let event = event.map_err(|e| watch_error(&self.dir, &e))?;
        if matches!(event.kind, notify::EventKind::Access(_)) {
            return Ok(());
        }
        changed.extend(
            event
                .paths
                .iter()
                .filter(|p| is_source(&self.dir, &self.output_dir, p))
                .filter_map(|p| p.strip_prefix(&self.dir).ok().map(Path::to_path_buf)),
        );
        Ok(())
    }
}

fn io(action: &'static str, path: &Path, e: &std::io::Error) -> KitError {
    KitError::Io {
        action,
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

fn watch_error(dir: &Path, e: &notify::Error) -> KitError {
    KitError::Io {
        action: "watch",
        path: dir.to_path_buf(),
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_what_the_author_edits_not_what_builds_write() {
        let dir = Path::new("/p");
        let out = Path::new("build");
        for source in [
            "tool.c",
            "src/lib.rs",
            "wit/world.wit",
            "tests.toml",
            "sample/notes.txt",
        ] {
            assert!(is_source(dir, out, &dir.join(source)), "{source}");
        }
        for not in [
            "build/notes.wasm",
            "target/debug/x",
            "node_modules/a/b.js",
            "__pycache__/app.pyc",
            "snapshots/a@1024.txt",
            ".git/index",
            ".tool.c.swp",
            "tool.c~",
            "package-lock.json",
            "Cargo.lock",
        ] {
            assert!(!is_source(dir, out, &dir.join(not)), "{not}");
        }
        assert!(!is_source(dir, out, Path::new("/elsewhere/tool.c")));
        // An output beside the sources leaves the sources watched.
        assert!(is_source(dir, Path::new(""), &dir.join("tool.c")));
    }

    /// A write to a source is seen, once, after the burst settles; writes to the build's
    /// output are not.
    #[test]
    fn a_save_is_one_change_and_the_build_output_is_not_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("tool.toml"),
            "[build]\ncommand = \"true\"\noutput = \"build/t.wasm\"\n",
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("build")).unwrap();
        let watcher = SourceWatcher::new(dir.path()).unwrap();
        let writer = {
            let dir = dir.path().to_path_buf();
            std::thread::spawn(move || {
                std::fs::write(dir.join("build/t.wasm"), "out").unwrap();
                std::thread::sleep(Duration::from_millis(50));
                std::fs::write(dir.join("tool.c"), "int x;").unwrap();
                std::fs::write(dir.join("tool.c"), "int y;").unwrap();
            })
        };
        let changed = watcher.next_change().unwrap();
        writer.join().unwrap();
        assert_eq!(changed, [PathBuf::from("tool.c")]);
    }
}
