//! The sorted walk of `grep_files`: depth first, names in byte order, from the root down
//! so that every `.gitignore` on the way applies, visiting only the searched path and what
//! is under it.
//!
//! The walk keeps its own stack of open directories instead of recursing, so the depth of
//! a tree costs heap, not call stack: a component's stack is small (a tree about 500
//! directories deep used to end the call with "call stack exhausted"). What bounds the depth
//! now is the system's limit on the length of a path (`PATH_MAX`, 4,096 bytes on Linux): a
//! directory whose path is longer cannot be listed, and is passed over like any other
//! directory that cannot be read.
//!
//! A resume **seeks**: a cursor carries the position of its entry as the index of each
//! component in its sorted directory (see [`Seek`]), so the walk lists only the directories on
//! the way to that entry, skipping every subtree before it without descending into it, and a
//! resume costs what the remaining work costs. The positioned entry's path must match the
//! cursor's check; when it does not (the tree changed, or the cursor carries no position) the
//! walk starts again from the beginning and counts its way back to the cursor's entry number,
//! as every resume did before.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::{PRUNED_DIRS, Search, Visit};
use crate::error::{ErrorKind, Result, ToolError, quote};
use crate::list::{DirNames, DirSource};
use crate::sys::{Kind, Listing};

/// The state of one sorted walk.
pub(super) struct Walk<'w> {
    /// The root directory.
    root: &'w Path,
    /// The components of the searched directory, relative to the root.
    target: &'w [String],
    /// The searched path as shown, for messages.
    shown: &'w str,
    /// The `.gitignore` of every directory on the way, outermost first.
    ignores: Vec<Gitignore>,
    /// The number the next entry below the target gets.
    pub(super) number: u64,
    /// Where to jump to, while jumping.
    seek: Option<Seek>,
    /// True when the seek could not reach its entry; nothing was visited, and the caller
    /// walks again without it.
    pub(super) missed: bool,
    /// Where directories are listed, when not by the walk itself.
    source: Option<&'w dyn DirSource>,
}

/// A jump to the entry a cursor names.
#[derive(Clone, Debug)]
pub(super) struct Seek {
    /// The entry's index in its sorted directory, for each component below the searched
    /// directory (names first, then the entries whose names could not be read).
    pub(super) indices: Vec<u64>,
    /// The entry's number in the walk.
    pub(super) number: u64,
    /// The cursor's check of the entry (`super::cursor::entry_check`).
    pub(super) path_check: u32,
    /// The component reached so far.
    level: usize,
}

impl Seek {
    /// A jump to entry number `number` at `indices`, whose path has the check `path_check`.
    pub(super) fn new(indices: Vec<u64>, number: u64, path_check: u32) -> Self {
        Seek {
            indices,
            number,
            path_check,
            level: 0,
        }
    }
}

/// A directory the walk is inside: its entries not yet visited.
struct Frame {
    /// The directory.
    dir: PathBuf,
    /// Its path relative to the root (empty for the root).
    rel_dir: String,
    /// Its depth: the number of components of `rel_dir`.
    depth: usize,
    /// Its entries not yet visited, in order.
    entries: std::vec::IntoIter<(OsString, Kind)>,
    /// Its entries that could not be read, not yet visited.
    unreadable: std::ops::Range<u64>,
    /// True when it holds a `.gitignore`, whose rules are the last of `Walk::ignores`.
    has_ignore_file: bool,
    /// How many of its entries were taken (visited or skipped by a seek), unreadable
    /// ones included: the index of the next.
    taken: u64,
}

/// What to do after one entry.
enum Step {
    /// Go on with the next entry of the same directory.
    Next,
    /// Enter this directory.
    Enter(Frame),
    /// The page is done.
    Done,
}

impl<'w> Walk<'w> {
    /// A walk of the root `root` down to the searched path `target` (its components) and
    /// everything under it; `shown` is the searched path for messages.
    /// With `seek`, the walk jumps to the entry it names first (see the module docs). With
    /// `source`, directories are listed through it where it can list them.
    pub(super) fn new(
        root: &'w Path,
        target: &'w [String],
        shown: &'w str,
        seek: Option<Seek>,
        source: Option<&'w dyn DirSource>,
    ) -> Self {
        Walk {
            root,
            target,
            shown,
            ignores: Vec::new(),
            number: 0,
            seek,
            missed: false,
            source,
        }
    }

    /// Walks to the end, or until the page is done.
    ///
    /// # Errors
    /// A directory on the way to the target (or the target) that cannot be listed, a
    /// target inside a pruned or ignored directory, and what visiting an entry fails with.
    pub(super) fn run(&mut self, search: &mut Search<'_>) -> Result<()> {
        let mut stack: Vec<Frame> = Vec::new();
        // `at`: the index of the entry being visited in each directory from the target down.
        search.page.at.clear();
        if let Some(root) = self.enter(self.root.to_path_buf(), String::new(), 0)? {
            if self.missed {
                return Ok(());
            }
            if root.depth >= self.target.len() {
                search.page.at.push(0);
            }
            self.announce_files(search, &root);
            stack.push(root);
        }
        while let Some(frame) = stack.last_mut() {
            let below_target = frame.depth >= self.target.len();
            if below_target && let Some(last) = search.page.at.last_mut() {
                *last = frame.taken;
            }
            frame.taken += 1;
            let step = if let Some((name, kind)) = frame.entries.next() {
                self.entry(search, frame, name, kind)?
            } else if let Some(k) = frame.unreadable.next() {
                // Entries that could not be read (names that are not UTF-8, in a
                // component) are counted, not lost silently.
                let number = self.next_number();
                let rel = format!("{}/\u{fffd}{k}", frame.rel_dir);
                match search.visit(number, &rel, &frame.dir, Visit::Skipped)? {
                    true => Step::Done,
                    false => Step::Next,
                }
            } else {
                if frame.has_ignore_file {
                    self.ignores.pop();
                }
                if below_target {
                    search.page.at.pop();
                }
                stack.pop();
                Step::Next
            };
            // While seeking, every entry taken below the target is a directory on the way
            // to the cursor's entry, and must be entered.
            if below_target && self.seek.is_some() && !matches!(step, Step::Enter(_)) {
                self.missed = true;
                return Ok(());
            }
            match step {
                Step::Next => {}
                Step::Enter(child) => {
                    if self.missed {
                        return Ok(());
                    }
                    if child.depth >= self.target.len() {
                        search.page.at.push(0);
                    }
                    self.announce_files(search, &child);
                    stack.push(child);
                }
                Step::Done => return Ok(()),
            }
        }
        Ok(())
    }

    /// Lists the directory `dir` (at `rel_dir`, `depth` components below the root) and
    /// pushes its `.gitignore`. `None` when it cannot be listed and lies below the target.
    fn enter(&mut self, dir: PathBuf, rel_dir: String, depth: usize) -> Result<Option<Frame>> {
        let listing = match self.list(&dir) {
            Ok(l) => l,
            Err(e) if depth <= self.target.len() => {
                return Err(ToolError::io(self.shown, &e));
            }
            // An unreadable directory below the target is passed over; the walk goes on.
            Err(_) => return Ok(None),
        };
        let Listing {
            entries,
            unreadable,
        } = listing;
        let has_ignore_file = entries
            .iter()
            .any(|(n, k)| *k == Kind::File && n.as_encoded_bytes() == b".gitignore");
        let mut pushed = false;
        if has_ignore_file {
            let mut builder = GitignoreBuilder::new(&dir);
            // A .gitignore that cannot be read or parsed adds no rules.
            let _ = builder.add(dir.join(".gitignore"));
            if let Ok(gi) = builder.build() {
                self.ignores.push(gi);
                pushed = true;
            }
        }
        let mut frame = Frame {
            dir,
            rel_dir,
            depth,
            entries: entries.into_iter(),
            unreadable: 0..unreadable,
            has_ignore_file: pushed,
            taken: 0,
        };
        if depth >= self.target.len() {
            self.seek_in(&mut frame);
        }
        Ok(Some(frame))
    }

    /// When seeking, skips the entries of `frame` (a directory at or below the target)
    /// before the one the seek names at its depth; at the last component, checks that
    /// entry's path and ends the seek there, numbering it as the cursor's entry. Sets
    /// `missed` when the entry is not there.
    fn seek_in(&mut self, frame: &mut Frame) {
        let Some(seek) = &mut self.seek else { return };
        let Some(&index) = seek.indices.get(seek.level) else {
            self.missed = true;
            return;
        };
        let names = frame.entries.len() as u64;
        let rel = if index < names {
            if index > 0 {
                frame.entries.nth(index as usize - 1);
            }
            let name = frame.entries.as_slice()[0].0.to_string_lossy();
            join(&frame.rel_dir, &name)
        } else if index - names < frame.unreadable.end {
            frame.entries = Vec::new().into_iter();
            frame.unreadable.start = index - names;
            format!("{}/\u{fffd}{}", frame.rel_dir, index - names)
        } else {
            self.missed = true;
            return;
        };
        frame.taken = index;
        seek.level += 1;
        if seek.level == seek.indices.len() {
            if super::cursor::entry_check(&rel, seek.number, true) == seek.path_check {
                self.number = seek.number;
                self.seek = None;
            } else {
                self.missed = true;
            }
        }
    }

    /// Visits one entry of `frame`.
    fn entry(
        &mut self,
        search: &mut Search<'_>,
        frame: &mut Frame,
        os_name: OsString,
        kind: Kind,
    ) -> Result<Step> {
        // The path opens the entry by its real name; results show it lossily.
        let path = frame.dir.join(&os_name);
        let name = os_name.to_string_lossy().into_owned();
        let rel = join(&frame.rel_dir, &name);
        let depth = frame.depth;
        if depth < self.target.len() {
            // Above the target: only the next directory on the way to it.
            if name != self.target[depth] {
                return Ok(Step::Next);
            }
            self.refuse_excluded(&name, &path, true, false)?;
            // Nothing else of this directory is visited.
            frame.entries = Vec::new().into_iter();
            frame.unreadable = 0..0;
            return Ok(self
                .enter(path, rel, depth + 1)?
                .map_or(Step::Next, Step::Enter));
        }
        if kind == Kind::Dir {
            let pruned = PRUNED_DIRS.contains(&name.as_str()) || search.ctx.keys.is_key_dir(&name);
            if pruned || self.ignored(&path, true) {
                return Ok(Step::Next);
            }
            return Ok(self
                .enter(path, rel, depth + 1)?
                .map_or(Step::Next, Step::Enter));
        }
        if self.ignored(&path, false) {
            return Ok(Step::Next);
        }
        let what = search.judge(&rel, kind == Kind::File);
        let number = self.next_number();
        if what == Visit::File && search.wants_announcing(number, &path) {
            // Not announced with its directory (the walk reached the cursor inside it, or
            // the directory holds more files than one announcement): this file and those
            // after it in its directory.
            let mut run = vec![path.clone()];
            run.extend(self.files_ahead(search, frame));
            search.announce(run);
        }
        Ok(match search.visit(number, &rel, &path, what)? {
            true => Step::Done,
            false => Step::Next,
        })
    }

    /// Announces the files of `frame`, a directory just entered, that the search will read,
    /// to its source ([`Search::announce`]), unless the walk is above the searched
    /// directory, still seeking, or before the cursor's entry.
    fn announce_files(&self, search: &mut Search<'_>, frame: &Frame) {
        if search.source.is_none()
            || frame.depth < self.target.len()
            || self.seek.is_some()
            || search.resume.as_ref().is_some_and(|c| self.number < c.file)
        {
            return;
        }
        let run = self.files_ahead(search, frame);
        search.announce(run);
    }

    /// The files of `frame` not yet visited that the search will read, in order: regular
    /// files not ignored that it searches ([`Search::judge`]), at most
    /// [`super::READ_AHEAD_RUN`].
    fn files_ahead(&self, search: &Search<'_>, frame: &Frame) -> Vec<PathBuf> {
        let mut run = Vec::new();
        for (name, kind) in frame.entries.as_slice() {
            if run.len() == super::READ_AHEAD_RUN {
                break;
            }
            if *kind != Kind::File {
                continue;
            }
            let path = frame.dir.join(name);
            let rel = join(&frame.rel_dir, &name.to_string_lossy());
            if !self.ignored(&path, false) && search.judge(&rel, true) == Visit::File {
                run.push(path);
            }
        }
        run
    }

    /// Checks the way from the root to a searched *file* as the walk checks the way to a
    /// searched directory: no directory on the way is `.git` or `node_modules`, and no
    /// `.gitignore` on the way (from the root down) excludes a directory on the way or the
    /// file itself. A file is searched without a walk, so this is all it shares with one;
    /// a file named `.git` (a worktree's) is a file like any other.
    ///
    /// # Errors
    /// `invalid-argument` naming what excludes the file, as for a directory.
    pub(super) fn check_way_to_file(&mut self) -> Result<()> {
        let mut dir = self.root.to_path_buf();
        for (depth, name) in self.target.iter().enumerate() {
            let gitignore = dir.join(".gitignore");
            if std::fs::symlink_metadata(&gitignore).is_ok_and(|m| m.is_file()) {
                let mut builder = GitignoreBuilder::new(&dir);
                // As in a walk: a .gitignore that cannot be read or parsed adds no rules.
                let _ = builder.add(gitignore);
                if let Ok(gi) = builder.build() {
                    self.ignores.push(gi);
                }
            }
            let path = dir.join(name);
            let is_dir = depth + 1 < self.target.len();
            self.refuse_excluded(name, &path, is_dir, true)?;
            dir = path;
        }
        Ok(())
    }

    /// Refuses `name` at `path`, a component of the way to the searched path (a directory
    /// when `is_dir`), when it is a pruned directory or a `.gitignore` excludes it; the
    /// message tells how to read what was asked for (a file when `target_is_file`).
    fn refuse_excluded(
        &self,
        name: &str,
        path: &Path,
        is_dir: bool,
        target_is_file: bool,
    ) -> Result<()> {
        let read = if target_is_file {
            "read it with read_file"
        } else {
            "read its files with read_file"
        };
        if is_dir && PRUNED_DIRS.contains(&name) {
            return Err(ToolError::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{} is inside {name}, which grep_files does not search; {read}",
                    quote(self.shown)
                ),
            ));
        }
        if self.ignored(path, is_dir) {
            let list = if target_is_file {
                ""
            } else {
                "list it with list_dir or "
            };
            return Err(ToolError::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{} is excluded by a .gitignore, and grep_files does not search ignored files; {list}{read}",
                    quote(self.shown)
                ),
            ));
        }
        Ok(())
    }

    /// The sorted entries of `dir`: from the source when it can list it, else read here.
    fn list(&self, dir: &Path) -> std::io::Result<Listing> {
        let Some(names) = self.source.and_then(|s| s.names(dir)) else {
            return crate::sys::list(dir);
        };
        let DirNames {
            entries,
            unreadable,
        } = names?;
        let entries = entries
            .into_iter()
            .map(|(name, kind)| (OsString::from(name), Kind::from(kind)))
            .collect();
        Ok(Listing {
            entries,
            unreadable,
        })
    }

    fn next_number(&mut self) -> u64 {
        let n = self.number;
        self.number += 1;
        n
    }

    /// True when the innermost `.gitignore` that has a say about `path` ignores it.
    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        for gi in self.ignores.iter().rev() {
            match gi.matched(path, is_dir) {
                ignore::Match::Ignore(_) => return true,
                ignore::Match::Whitelist(_) => return false,
                ignore::Match::None => {}
            }
        }
        false
    }
}

/// The path of `name` in the directory at `rel_dir` (relative to the root; empty for the root).
fn join(rel_dir: &str, name: &str) -> String {
    if rel_dir.is_empty() {
        name.to_string()
    } else {
        format!("{rel_dir}/{name}")
    }
}
