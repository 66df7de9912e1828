//! `sluice:tools/whole-files`: whole files read by the host for a tool that searches them,
//! ahead of the tool on a thread of the call's own.
//!
//! `grep_files` reads every file it searches whole. Through `wasi:filesystem` a file costs
//! four crossings (open, `stat`, read, drop) on the call's thread, and the kernel's part of
//! them (the open and the copy of the bytes) was three fifths of that thread's time. Here a
//! file costs one crossing, and the files the tool announces with `read-ahead` (the run of
//! files it visits next, in its walk's order) are read by a **read-ahead thread** while the
//! tool searches the ones before, so on two cores reading and searching overlap.
//!
//! The rules are those of the call's own `wasi:filesystem` (`crate::host::open_at`), and
//! stricter: a path is opened beneath its preopen by `cap-primitives`, one plain name at a
//! time without following a symlink anywhere (what a walk listed is what is read, even if an
//! entry is swapped for a symlink in between), non-blocking, and refused when it is one of the files the
//! configuration names (`crate::host::refused`); a name that is key material by the
//! operator's policy is not opened at all. What is read is what the file tools would pass
//! over or search: a file that is not regular, larger than the tool's limit, holds a NUL byte
//! in its first bytes, or holds PEM armor ([`sluice_keys::has_armor`]) is passed over.
//!
//! The read-ahead is bounded: at most [`READ_AHEAD_BYTES`] (plus one file) and
//! [`READ_AHEAD_FILES`] read and not yet taken, starting at [`FIRST_WINDOW`] and growing with
//! what the tool takes, [`MAX_ANNOUNCED`] announced and not yet read; it stops at the call's
//! deadline, and when the call ends (its `ReadAhead` is dropped) after the file it is
//! reading. It holds one descriptor at a time, outside the call's count of descriptors.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use cap_primitives::fs::{FollowSymlinks, OpenOptions};
use sluice_keys::{KeyNamePolicy, KeyNames};

use crate::host::refused::RefusedFiles;
use crate::host::state::CallState;

/// The WIT types of `sluice:tools/whole-files`, generated from `wit/sluice-tools.wit`
/// (`crate::host::bindings`): `whole-read`, `passed-over`, `whole-file`.
pub use crate::host::bindings::whole_files::{PassedOver, WholeFile, WholeRead};

/// The most bytes one whole read takes, whatever the tool asks (64 MiB): a larger file is
/// `too-large`.
pub const MAX_WHOLE_BYTES: u64 = 64 << 20;

/// How far ahead of the tool the read-ahead thread reads: it starts another file while
/// fewer bytes than this are read and not yet taken (8 MiB), so it holds at most 8 MiB plus
/// one file.
pub const READ_AHEAD_BYTES: usize = 8 << 20;

/// How far ahead of the tool the read-ahead thread reads: files read and not yet taken.
pub const READ_AHEAD_FILES: usize = 256;

/// How far ahead the read-ahead starts: 4 files and 256 KiB. The window grows by twice
/// what the tool takes (files and bytes), up to [`READ_AHEAD_FILES`] and
/// [`READ_AHEAD_BYTES`], so that a call that stops early (a page found its matches in the
/// first files) has read little for nothing.
pub const FIRST_WINDOW: (usize, usize) = (4, 256 << 10);

/// The most paths announced and not yet read; later announcements are passed over (their
/// files are read when asked for).
pub const MAX_ANNOUNCED: usize = 4096;

/// Files up to this size are read in one read; a larger one reads its sniffed head first,
/// so that a large binary file is read no further (64 KiB, as the file tools do).
const ONE_READ_BYTES: u64 = 64 * 1024;

/// What reading a file by the call's rules needs besides the file.
#[derive(Clone)]
struct Rules {
    refused: Arc<RefusedFiles>,
    key_names: Arc<KeyNames>,
}

impl Rules {
    /// The rules of the call in `state`.
    fn of(state: &CallState) -> Rules {
        Rules {
            refused: state.refused.clone(),
            key_names: state.budget.key_names.clone(),
        }
    }
}

/// One call's read-ahead: the announced files and the thread that reads them.
pub(crate) struct ReadAhead {
    shared: Arc<Shared>,
    /// The call's preopens (guest path, directory), taken at the first announcement.
    preopens: Vec<(String, Arc<File>)>,
    rules: Rules,
    deadline: Instant,
    /// False once the thread could not be started: announcements are then passed over.
    started: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    /// What the read-ahead thread waits on: files announced, taken, the call's end.
    work: Condvar,
    /// What the tool's thread waits on: the file it asked for, read.
    done: Condvar,
}

#[derive(Default)]
struct Queue {
    slots: VecDeque<Slot>,
    /// The number the next slot gets.
    next_seq: u64,
    /// Bytes and files of the slots read and not yet taken.
    ready_bytes: usize,
    ready_files: usize,
    /// Files and bytes the tool took from the queue: the window grows with them.
    taken_files: usize,
    taken_bytes: usize,
    /// Set when the call ends.
    closed: bool,
    /// True while the read-ahead thread waits on `work`, and while the tool's thread waits
    /// on `done`: a wake costs tens of µs on a VM, so only a waiting thread is woken.
    worker_waiting: bool,
    taker_waiting: bool,
}

/// One announced file.
struct Slot {
    seq: u64,
    /// The guest path, as announced.
    path: String,
    /// Its preopen and the path beneath it.
    dir: Arc<File>,
    rel: String,
    rules: WholeRead,
    state: SlotState,
}

enum SlotState {
    Waiting,
    Reading,
    Done(WholeFile),
}

impl Queue {
    /// Takes slot `i` out, keeping the counts of what is ready.
    fn remove(&mut self, i: usize) -> Option<Slot> {
        let slot = self.slots.remove(i)?;
        if let SlotState::Done(file) = &slot.state {
            self.ready_files -= 1;
            self.ready_bytes -= bytes_of(file);
        }
        Some(slot)
    }

    /// How far ahead the read-ahead may read now, in files and bytes ([`FIRST_WINDOW`]).
    fn window(&self) -> (usize, usize) {
        (
            (FIRST_WINDOW.0 + 2 * self.taken_files).min(READ_AHEAD_FILES),
            (FIRST_WINDOW.1 + 2 * self.taken_bytes).min(READ_AHEAD_BYTES),
        )
    }

    /// The first slot waiting to be read, when the read-ahead may read another: fewer than
    /// `files` files and `bytes` bytes are read and not taken.
    fn next_to_read(&self, (files, bytes): (usize, usize)) -> Option<usize> {
        if self.ready_files >= files || self.ready_bytes >= bytes {
            return None;
        }
        self.slots
            .iter()
            .position(|s| matches!(s.state, SlotState::Waiting))
    }
}

fn bytes_of(file: &WholeFile) -> usize {
    match file {
        WholeFile::Bytes(b) => b.len(),
        WholeFile::PassedOver(_) => 0,
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, Queue> {
    shared.queue.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        lock(&self.shared).closed = true;
        self.shared.work.notify_all();
    }
}

/// How long the tool's thread spins for a file being read, and the read-ahead thread for
/// files to read, before they sleep (100 µs): most files take less, and a sleep and a wake
/// cost about as much on a VM.
const SPIN: std::time::Duration = std::time::Duration::from_micros(100);

impl ReadAhead {
    /// The read-ahead of the call in `state`, its thread started.
    fn start(state: &mut CallState) -> wasmtime::Result<ReadAhead> {
        let preopens = crate::host::preopens::of_call(state)?;
        Ok(ReadAhead::new(
            preopens,
            Rules::of(state),
            state.budget.deadline,
        ))
    }

    /// A read-ahead over `preopens` (guest path, directory) by `rules` until `deadline`, its
    /// thread started (when it cannot be, announcements are passed over).
    fn new(preopens: Vec<(String, Arc<File>)>, rules: Rules, deadline: Instant) -> ReadAhead {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            work: Condvar::new(),
            done: Condvar::new(),
        });
        let started = {
            let (shared, rules) = (shared.clone(), rules.clone());
            std::thread::Builder::new()
                .name("sluice-read-ahead".into())
                .spawn(move || read_ahead(&shared, &rules, deadline))
                .is_ok()
        };
        ReadAhead {
            shared,
            preopens,
            rules,
            deadline,
            started,
        }
    }

    /// Puts `paths` before every file announced earlier (see the WIT's `read-ahead`).
    fn announce(&self, paths: Vec<String>, rules: WholeRead) {
        if !self.started {
            return;
        }
        let mut queue = lock(&self.shared);
        let room = MAX_ANNOUNCED.saturating_sub(queue.slots.len());
        let mut slots = Vec::with_capacity(paths.len().min(room));
        for path in paths.into_iter().take(room) {
            let Some((dir, rel)) = crate::host::preopens::beneath(&self.preopens, &path) else {
                continue;
            };
            let seq = queue.next_seq;
            queue.next_seq += 1;
            slots.push(Slot {
                seq,
                path,
                dir,
                rel,
                rules,
                state: SlotState::Waiting,
            });
        }
        for slot in slots.into_iter().rev() {
            queue.slots.push_front(slot);
        }
        if queue.worker_waiting {
            self.shared.work.notify_one();
        }
    }

    /// The file at `path` by `rules`: from the read-ahead when it was announced with the same
    /// rules (the files announced before it dropped), else read now. `None` when the call's
    /// deadline passes while it waits for the read-ahead.
    fn take(&self, path: &str, rules: WholeRead) -> Option<WholeFile> {
        let mut queue = lock(&self.shared);
        let Some(i) = queue
            .slots
            .iter()
            .position(|s| s.path == path && s.rules == rules)
        else {
            drop(queue);
            return Some(self.read_now(path, rules));
        };
        for _ in 0..i {
            queue.remove(0);
        }
        let mut spun = false;
        loop {
            match queue.slots.front().map(|s| &s.state) {
                // Not started: read it here rather than wait for the thread.
                Some(SlotState::Waiting) => {
                    queue.taken_files += 1;
                    let slot = queue.remove(0)?;
                    self.wake_worker(&queue);
                    drop(queue);
                    return Some(read(&slot.dir, &slot.rel, rules, &self.rules, None));
                }
                Some(SlotState::Done(file)) => {
                    let bytes = bytes_of(file);
                    queue.taken_files += 1;
                    queue.taken_bytes += bytes;
                    let slot = queue.remove(0)?;
                    self.wake_worker(&queue);
                    drop(queue);
                    let SlotState::Done(file) = slot.state else {
                        unreachable!("the slot was done")
                    };
                    return Some(file);
                }
                Some(SlotState::Reading) if !spun => {
                    drop(queue);
                    let until = Instant::now() + SPIN;
                    while Instant::now() < until {
                        for _ in 0..64 {
                            std::hint::spin_loop();
                        }
                        let front = lock(&self.shared);
                        if !matches!(
                            front.slots.front().map(|s| &s.state),
                            Some(SlotState::Reading)
                        ) {
                            break;
                        }
                    }
                    spun = true;
                    queue = lock(&self.shared);
                }
                Some(SlotState::Reading) => {
                    let left = self.deadline.checked_duration_since(Instant::now())?;
                    queue.taker_waiting = true;
                    queue = self
                        .shared
                        .done
                        .wait_timeout(queue, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                    queue.taker_waiting = false;
                }
                None => unreachable!("the slot at 0 is the one asked for"),
            }
        }
    }

    /// Wakes the read-ahead thread when it waits and there is work for it: it stopped at its
    /// window, and what is read and not taken is down to half of it.
    fn wake_worker(&self, queue: &Queue) {
        if queue.worker_waiting
            && queue
                .next_to_read({
                    let (files, bytes) = queue.window();
                    (files / 2, bytes / 2)
                })
                .is_some()
        {
            self.shared.work.notify_one();
        }
    }

    /// The file at `path` read on the calling thread.
    fn read_now(&self, path: &str, rules: WholeRead) -> WholeFile {
        read_path(&self.preopens, path, rules, &self.rules)
    }
}

/// The read-ahead thread: reads the announced files in order while the bounds allow, until
/// the call ends or its deadline passes.
fn read_ahead(shared: &Shared, rules: &Rules, deadline: Instant) {
    let mut last_dir = LastDir::default();
    let mut idle_since: Option<Instant> = None;
    let mut queue = lock(shared);
    loop {
        if queue.closed {
            return;
        }
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return;
        };
        let Some(i) = queue.next_to_read(queue.window()) else {
            if idle_since.is_none() {
                // A walk announces the next directory's files within microseconds of the
                // last: spin for them before sleeping (a sleep and a wake cost more).
                idle_since = Some(Instant::now());
            }
            if idle_since.is_some_and(|t| t.elapsed() < SPIN) {
                drop(queue);
                for _ in 0..64 {
                    std::hint::spin_loop();
                }
                queue = lock(shared);
                continue;
            }
            queue.worker_waiting = true;
            queue = shared
                .work
                .wait_timeout(queue, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            queue.worker_waiting = false;
            continue;
        };
        idle_since = None;
        let slot = &mut queue.slots[i];
        slot.state = SlotState::Reading;
        let (seq, dir, rel, read_rules) =
            (slot.seq, slot.dir.clone(), slot.rel.clone(), slot.rules);
        drop(queue);
        let file = read(&dir, &rel, read_rules, rules, Some(&mut last_dir));
        queue = lock(shared);
        // The tool may have moved past it (dropped) while it was read.
        if let Some(slot) = queue.slots.iter_mut().find(|s| s.seq == seq) {
            let bytes = bytes_of(&file);
            slot.state = SlotState::Done(file);
            queue.ready_files += 1;
            queue.ready_bytes += bytes;
        }
        if queue.taker_waiting {
            shared.done.notify_one();
        }
    }
}

/// The directory of the last file the read-ahead thread read, kept open: a directory's files
/// are read one after another, and opening each by its name in its open directory spares
/// opening its directories again from the preopen.
#[derive(Default)]
struct LastDir {
    /// The preopen and the directory's path beneath it.
    key: Option<(Arc<File>, String)>,
    dir: Option<File>,
}

/// Opens the file `rel` beneath `dir` for reading, exactly as its names say: every component
/// is opened without following a symlink (a symlink anywhere in the path, or a `.`, `..` or
/// empty component, fails), non-blocking, through `last`'s directory when it is the file's.
///
/// A walk lists a directory, then reads its files: an entry swapped for a symlink in between
/// (to a key directory, to another file) must not be read through it. cap-primitives keeps
/// every open beneath `dir` whatever the path holds.
fn open_beneath(dir: &Arc<File>, rel: &str, last: &mut LastDir) -> std::io::Result<File> {
    let (parent, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    let plain = |c: &str| !c.is_empty() && c != "." && c != "..";
    if !plain(name) || (!parent.is_empty() && !parent.split('/').all(plain)) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a whole read takes a path of plain names",
        ));
    }
    let mut options = OpenOptions::new();
    options.read(true);
    // `_cap_fs_ext_*` are cap-primitives' public hooks for the options `std` lacks: the name
    // is not followed if it is a symlink, and the open never waits for a FIFO's other end.
    options._cap_fs_ext_follow(FollowSymlinks::No);
    options._cap_fs_ext_nonblock(true);
    if parent.is_empty() {
        return cap_primitives::fs::open(dir, Path::new(name), &options);
    }
    let same = last
        .key
        .as_ref()
        .is_some_and(|(d, p)| Arc::ptr_eq(d, dir) && p == parent);
    let parent_dir = match &last.dir {
        Some(open) if same => open,
        _ => {
            *last = LastDir::default();
            let mut components = parent.split('/');
            let first = components.next().unwrap_or(parent);
            let mut opened = cap_primitives::fs::open_dir_nofollow(dir, Path::new(first))?;
            for c in components {
                opened = cap_primitives::fs::open_dir_nofollow(&opened, Path::new(c))?;
            }
            last.key = Some((dir.clone(), parent.to_string()));
            last.dir.insert(opened)
        }
    };
    cap_primitives::fs::open(parent_dir, Path::new(name), &options)
}

/// Reads the file at the guest path `path` (beneath one of `preopens`) whole on the calling
/// thread; `unreadable` when no preopen holds it.
fn read_path(
    preopens: &[(String, Arc<File>)],
    path: &str,
    read_rules: WholeRead,
    rules: &Rules,
) -> WholeFile {
    match crate::host::preopens::beneath(preopens, path) {
        Some((dir, rel)) => read(&dir, &rel, read_rules, rules, None),
        None => WholeFile::PassedOver(PassedOver::Unreadable),
    }
}

/// Reads the file `rel` beneath `dir` whole by `read_rules` and the call's `rules` (see the
/// module docs), opening it through `last` when given.
fn read(
    dir: &Arc<File>,
    rel: &str,
    read_rules: WholeRead,
    rules: &Rules,
    last: Option<&mut LastDir>,
) -> WholeFile {
    let mut fresh = LastDir::default();
    let last = last.unwrap_or(&mut fresh);
    use PassedOver as P;
    let name = rel.rsplit('/').next().unwrap_or(rel);
    if rules.key_names.is_key_file(name) || rules.refused.is_refused_name(name) {
        return WholeFile::PassedOver(P::KeyMaterial);
    }
    let Ok(mut file) = open_beneath(dir, rel, last) else {
        return WholeFile::PassedOver(P::Unreadable);
    };
    let Ok(meta) = file.metadata() else {
        return WholeFile::PassedOver(P::Unreadable);
    };
    if rules.refused.is_refused_file(&meta) {
        return WholeFile::PassedOver(P::Unreadable);
    }
    if !meta.is_file() {
        return WholeFile::PassedOver(P::NotFile);
    }
    let size = meta.len();
    if size > read_rules.max_bytes.min(MAX_WHOLE_BYTES) {
        return WholeFile::PassedOver(P::TooLarge);
    }
    let sniff = size.min(read_rules.sniff_bytes) as usize;
    let mut bytes = Vec::with_capacity(size as usize);
    let head = if size <= ONE_READ_BYTES {
        size
    } else {
        sniff as u64
    };
    if (&mut file).take(head).read_to_end(&mut bytes).is_err() {
        return WholeFile::PassedOver(P::Unreadable);
    }
    if bytes[..sniff.min(bytes.len())].contains(&0) {
        return WholeFile::PassedOver(P::Binary);
    }
    if size > head && file.take(size - head).read_to_end(&mut bytes).is_err() {
        return WholeFile::PassedOver(P::Unreadable);
    }
    if sluice_keys::has_armor(&bytes) {
        return WholeFile::PassedOver(P::KeyMaterial);
    }
    WholeFile::Bytes(bytes)
}

/// `sluice:tools/whole-files`, linked by [`crate::host::bindings::add_to_linker`]. The call's
/// read-ahead starts at its first announcement.
impl crate::host::bindings::whole_files::Host for CallState {
    fn read_ahead(&mut self, paths: Vec<String>, rules: WholeRead) -> wasmtime::Result<()> {
        if self.read_ahead.is_none() {
            self.read_ahead = Some(ReadAhead::start(self)?);
        }
        if let Some(ahead) = &self.read_ahead {
            ahead.announce(paths, rules);
        }
        Ok(())
    }

    fn read(&mut self, path: String, rules: WholeRead) -> wasmtime::Result<WholeFile> {
        match &self.read_ahead {
            Some(ahead) => ahead
                .take(&path, rules)
                .ok_or_else(|| crate::limits::Interrupt::Timeout.into()),
            None => {
                let preopens = crate::host::preopens::of_call(self)?;
                Ok(read_path(&preopens, &path, rules, &Rules::of(self)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const RULES: WholeRead = WholeRead {
        max_bytes: 5 << 20,
        sniff_bytes: 8 << 10,
    };

    fn rules(refused: &[PathBuf]) -> Rules {
        Rules {
            refused: Arc::new(RefusedFiles::new(refused.iter().cloned())),
            key_names: Arc::new(KeyNames::default()),
        }
    }

    use std::path::PathBuf;

    /// A root with one file of each kind a whole read tells apart, preopened at `/root`.
    fn root() -> (tempfile::TempDir, Vec<(String, Arc<File>)>) {
        let d = tempfile::tempdir().unwrap();
        let w = |name: &str, bytes: &[u8]| std::fs::write(d.path().join(name), bytes).unwrap();
        w("text.txt", b"one\r\ntwo\n");
        w("big.txt", &b"x".repeat(70_000));
        w("too-large.txt", &b"x".repeat(100));
        w("binary.dat", b"ab\0cd");
        w("late-nul.txt", &[&b"a".repeat(9_000)[..], b"\0"].concat());
        w("armor.txt", b"x\n-----BEGIN RSA PRIVATE KEY-----\nAAAA\n");
        w("server.pem", b"no armor, a key name\n");
        w("secret.txt", b"refused by the configuration\n");
        std::fs::create_dir(d.path().join("dir")).unwrap();
        w("dir/in.txt", b"in");
        #[cfg(unix)]
        std::os::unix::fs::symlink("/etc/hostname", d.path().join("escape")).unwrap();
        let dir = Arc::new(File::open(d.path()).unwrap());
        (d, vec![("/root".to_string(), dir)])
    }

    #[test]
    fn a_whole_read_passes_over_what_the_file_tools_pass_over() {
        let (d, preopens) = root();
        let rules = rules(&[d.path().join("secret.txt")]);
        let dir = &preopens[0].1;
        // Opened by its whole path, and through the directory of the file before (the
        // read-ahead thread's way): the same answers.
        let last = std::cell::RefCell::new(LastDir::default());
        let read = |rel: &str, max_bytes: u64| {
            let rules_of_read = WholeRead { max_bytes, ..RULES };
            let by_path = read(dir, rel, rules_of_read, &rules, None);
            let by_dir = read(
                dir,
                rel,
                rules_of_read,
                &rules,
                Some(&mut last.borrow_mut()),
            );
            assert_eq!(by_path, by_dir, "{rel}");
            by_path
        };
        use PassedOver as P;
        assert_eq!(
            read("text.txt", 9),
            WholeFile::Bytes(b"one\r\ntwo\n".to_vec())
        );
        assert_eq!(
            read("big.txt", 5 << 20),
            WholeFile::Bytes(b"x".repeat(70_000))
        );
        // A NUL after the sniffed head is text, as the file tools judge it.
        assert_eq!(
            read("late-nul.txt", 5 << 20),
            WholeFile::Bytes([&b"a".repeat(9_000)[..], b"\0"].concat())
        );
        assert_eq!(
            read("too-large.txt", 99),
            WholeFile::PassedOver(P::TooLarge)
        );
        assert_eq!(
            read("too-large.txt", 100),
            WholeFile::Bytes(b"x".repeat(100))
        );
        assert_eq!(
            read("too-large.txt", u64::MAX),
            WholeFile::Bytes(b"x".repeat(100))
        );
        assert_eq!(
            read("binary.dat", 5 << 20),
            WholeFile::PassedOver(P::Binary)
        );
        assert_eq!(
            read("armor.txt", 5 << 20),
            WholeFile::PassedOver(P::KeyMaterial)
        );
        assert_eq!(
            read("server.pem", 5 << 20),
            WholeFile::PassedOver(P::KeyMaterial)
        );
        // By name (the configuration's file names are key names to the tools) and by
        // identity, through another name.
        assert_eq!(
            read("secret.txt", 5 << 20),
            WholeFile::PassedOver(P::KeyMaterial)
        );
        std::fs::hard_link(d.path().join("secret.txt"), d.path().join("other.txt")).unwrap();
        assert_eq!(
            read("other.txt", 5 << 20),
            WholeFile::PassedOver(P::Unreadable)
        );
        assert_eq!(read("dir", 5 << 20), WholeFile::PassedOver(P::NotFile));
        assert_eq!(
            read("dir/in.txt", 5 << 20),
            WholeFile::Bytes(b"in".to_vec())
        );
        // Plain names only: no `.`, `..` or empty component.
        for odd in ["dir/../text.txt", "./text.txt", "dir//in.txt", "dir/.", ""] {
            assert_eq!(
                read(odd, 5 << 20),
                WholeFile::PassedOver(P::Unreadable),
                "{odd}"
            );
        }
        assert_eq!(
            read("dir/../../x", 5 << 20),
            WholeFile::PassedOver(P::Unreadable)
        );
        assert_eq!(
            read("dir/../dir/in.txt", 5 << 20),
            WholeFile::PassedOver(P::Unreadable)
        );
        assert_eq!(
            read("missing.txt", 5 << 20),
            WholeFile::PassedOver(P::Unreadable)
        );
        // Nothing outside the preopen: `..`, absolute paths, a symlink out of it.
        assert_eq!(read("../x", 5 << 20), WholeFile::PassedOver(P::Unreadable));
        assert_eq!(
            read("/etc/hostname", 5 << 20),
            WholeFile::PassedOver(P::Unreadable)
        );
        #[cfg(unix)]
        {
            assert_eq!(
                read("escape", 5 << 20),
                WholeFile::PassedOver(P::Unreadable)
            );
            std::os::unix::fs::symlink("..", d.path().join("dir/up")).unwrap();
            std::os::unix::fs::symlink("/etc", d.path().join("dir/etc")).unwrap();
            assert_eq!(
                read("dir/up/text.txt", 5 << 20),
                WholeFile::PassedOver(P::Unreadable)
            );
            assert_eq!(
                read("dir/up/../x", 5 << 20),
                WholeFile::PassedOver(P::Unreadable)
            );
            assert_eq!(
                read("dir/etc/hostname", 5 << 20),
                WholeFile::PassedOver(P::Unreadable)
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_anywhere_in_the_path_is_not_followed_even_inside_the_preopen() {
        let (d, preopens) = root();
        let dir = &preopens[0].1;
        std::fs::create_dir(d.path().join("keys")).unwrap();
        std::fs::write(d.path().join("keys/tok.txt"), "SECRET").unwrap();
        // A listed file swapped for a symlink to a file in a key directory, and a listed
        // directory swapped for one to the key directory.
        std::os::unix::fs::symlink("keys/tok.txt", d.path().join("swapped.txt")).unwrap();
        std::os::unix::fs::symlink("keys", d.path().join("swapped-dir")).unwrap();
        let mut last = LastDir::default();
        for rel in ["swapped.txt", "swapped-dir/tok.txt"] {
            assert_eq!(
                read(dir, rel, RULES, &rules(&[]), None),
                WholeFile::PassedOver(PassedOver::Unreadable),
                "{rel}"
            );
            assert_eq!(
                read(dir, rel, RULES, &rules(&[]), Some(&mut last)),
                WholeFile::PassedOver(PassedOver::Unreadable),
                "{rel} through the directory cache"
            );
        }
        // The real entries are read.
        assert_eq!(
            read(dir, "keys/tok.txt", RULES, &rules(&[]), None),
            WholeFile::Bytes(b"SECRET".to_vec())
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_passed_over_without_waiting_for_a_writer() {
        let (d, preopens) = root();
        let fifo = d.path().join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        assert_eq!(
            read(&preopens[0].1, "fifo", RULES, &rules(&[]), None),
            WholeFile::PassedOver(PassedOver::NotFile)
        );
    }

    fn paths(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| format!("/root/{n}")).collect()
    }

    #[test]
    fn announced_files_are_taken_in_order_and_others_are_read_now() {
        let (_d, preopens) = root();
        let deadline = Instant::now() + Duration::from_secs(60);
        let ahead = ReadAhead::new(preopens, rules(&[]), deadline);
        ahead.announce(
            paths(&["binary.dat", "text.txt", "big.txt", "armor.txt"]),
            RULES,
        );
        // text.txt: binary.dat before it is dropped.
        assert_eq!(
            ahead.take("/root/text.txt", RULES),
            Some(WholeFile::Bytes(b"one\r\ntwo\n".to_vec()))
        );
        assert_eq!(lock(&ahead.shared).slots.len(), 2);
        // Announced with other rules: read now, the queue kept.
        assert_eq!(
            ahead.take(
                "/root/big.txt",
                WholeRead {
                    max_bytes: 10,
                    ..RULES
                }
            ),
            Some(WholeFile::PassedOver(PassedOver::TooLarge))
        );
        assert_eq!(
            ahead.take("/root/big.txt", RULES),
            Some(WholeFile::Bytes(b"x".repeat(70_000)))
        );
        // Not announced (dropped): read now.
        assert_eq!(
            ahead.take("/root/binary.dat", RULES),
            Some(WholeFile::PassedOver(PassedOver::Binary))
        );
        assert_eq!(
            ahead.take("/root/armor.txt", RULES),
            Some(WholeFile::PassedOver(PassedOver::KeyMaterial))
        );
        assert_eq!(
            ahead.take("/elsewhere/x", RULES),
            Some(WholeFile::PassedOver(PassedOver::Unreadable))
        );
        let queue = lock(&ahead.shared);
        assert!(queue.slots.is_empty());
        assert_eq!((queue.ready_files, queue.ready_bytes), (0, 0));
    }

    /// Polls `done` for up to 10 s.
    fn eventually(mut done: impl FnMut() -> bool) -> bool {
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if done() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    #[test]
    fn the_read_ahead_window_grows_with_what_is_taken_up_to_its_bounds() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..600 {
            std::fs::write(d.path().join(format!("{i:03}")), "x").unwrap();
        }
        // Files of 5 MiB: the third waits while the first two (10 MiB) are not taken.
        for big in ["big1", "big2", "big3"] {
            std::fs::write(d.path().join(big), vec![b'x'; 5 << 20]).unwrap();
        }
        let preopens = vec![("/root".to_string(), Arc::new(File::open(d.path()).unwrap()))];
        let deadline = Instant::now() + Duration::from_secs(60);
        let ahead = ReadAhead::new(preopens, rules(&[]), deadline);
        let names: Vec<String> = (0..600).map(|i| format!("{i:03}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        ahead.announce(paths(&names), RULES);
        let ready = || {
            let q = lock(&ahead.shared);
            (q.ready_files, q.ready_bytes)
        };
        // The first window: 4 files.
        assert!(eventually(|| ready() == (4, 4)));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(ready(), (4, 4), "no further");
        // It grows by twice what is taken: 50 taken, 104 ahead.
        for i in 0..50 {
            assert_eq!(
                ahead.take(&format!("/root/{i:03}"), RULES),
                Some(WholeFile::Bytes(b"x".to_vec()))
            );
        }
        // A waiting read-ahead is woken when what is ready falls below half its window, and
        // then reads up to it: between 52 and 104 files ahead, never more.
        let within = |window: usize| {
            let (files, bytes) = ready();
            files == bytes && files >= window / 2 && files <= window
        };
        assert!(eventually(|| within(104)), "{:?}", ready());
        std::thread::sleep(Duration::from_millis(50));
        assert!(within(104), "no further: {:?}", ready());
        // Up to 256 files: 150 taken.
        for i in 50..150 {
            assert!(ahead.take(&format!("/root/{i:03}"), RULES).is_some());
        }
        assert!(eventually(|| within(READ_AHEAD_FILES)), "{:?}", ready());
        std::thread::sleep(Duration::from_millis(50));
        assert!(within(READ_AHEAD_FILES), "no further: {:?}", ready());
        // Taking the last announced file drops all before it.
        assert_eq!(
            ahead.take("/root/599", RULES),
            Some(WholeFile::Bytes(b"x".to_vec()))
        );
        assert_eq!(ready(), (0, 0));
        // 151 bytes taken: a window of 256 KiB + 302 bytes holds one file of 5 MiB.
        ahead.announce(paths(&["big1", "big2", "big3"]), RULES);
        assert!(eventually(|| ready() == (1, 5 << 20)));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(ready(), (1, 5 << 20), "one file past the window");
        // 5 MiB taken: the window is 8 MiB, and one file more is read past it.
        assert_eq!(
            ahead.take("/root/big1", RULES),
            Some(WholeFile::Bytes(vec![b'x'; 5 << 20]))
        );
        assert!(eventually(|| ready() == (2, 10 << 20)));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(ready(), (2, 10 << 20), "8 MiB and one file ahead at most");

        // The call's end ends the thread (it holds the other reference to the queue).
        let shared = Arc::downgrade(&ahead.shared);
        drop(ahead);
        assert!(eventually(|| shared.strong_count() == 0));
    }

    #[test]
    fn a_wait_for_the_read_ahead_ends_at_the_deadline() {
        let (_d, preopens) = root();
        let deadline = Instant::now() + Duration::from_millis(200);
        let ahead = ReadAhead::new(preopens, rules(&[]), deadline);
        ahead.announce(paths(&["text.txt"]), RULES);
        // As if the thread were stuck reading it.
        let mut queue = lock(&ahead.shared);
        queue.slots[0].state = SlotState::Reading;
        drop(queue);
        assert_eq!(ahead.take("/root/text.txt", RULES), None);
        assert!(Instant::now() >= deadline);
    }
}
