//! `sluice:tools/listing`: directory listings read by the host, so that a page of `list_dir`
//! costs what a page is.
//!
//! Through `wasi:filesystem`, every page of a listing reads the whole directory: wasmtime-wasi
//! 48's `read-directory` `stat`s every entry on the host, and the guest then takes the
//! entries one crossing at a time, to sort them and keep one page. Here the host reads the
//! names natively (the kind comes from the directory entry itself, `d_type`, with a `stat`
//! only where the file system does not give it), sorts them once, and keeps the sorted
//! names in a small process-wide cache of [`MAX_CACHED_SNAPSHOTS`] snapshots (at most
//! [`MAX_CACHED_BYTES`] bytes of names in all), keyed by the directory's identity and change
//! times (device, inode, mtime, ctime, size), so the next page of an unchanged directory
//! reads no directory at all. Sizes are read for the entries of the chunk only, at the time
//! it is asked for.
//!
//! A directory whose mtime or ctime is less than [`RACY_SECONDS`] old when it is read is
//! not cached: an entry added within the same timestamp tick would not change its key.
//!
//! The rules are `list_dir`'s (docs/paging.md#list_dir): names sorted by bytes, symlinks not
//! followed, names that are not UTF-8 or that spell a PEM armor line withheld and counted.
//! `dir` is resolved beneath the call's preopen by `cap-primitives`, as every open of the
//! call is (the private `open_at` module): `..`, absolute paths and symlinks cannot leave it.

use std::ffi::OsString;
use std::fs::File;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cap_primitives::fs::FollowSymlinks;

use crate::host::state::CallState;

/// The most entries one `list-chunk` call returns.
pub const MAX_CHUNK_ENTRIES: u32 = 65_536;

/// How many directory snapshots the host keeps.
pub const MAX_CACHED_SNAPSHOTS: usize = 8;

/// The most bytes of names (plus 5 bytes of bookkeeping per entry) the cache holds in all;
/// a larger directory is listed but not kept.
pub const MAX_CACHED_BYTES: usize = 64 << 20;

/// A directory changed less than this many seconds before it was read is not cached.
pub const RACY_SECONDS: i64 = 2;

/// How often reading a directory checks the call's deadline: every this many entries.
const DEADLINE_CHECK_ENTRIES: usize = 1024;

/// A directory of more entries than this is sorted, and its answer built, on a thread of
/// its own that the call waits for no longer than its deadline (see [`finish`]); a smaller
/// one here (sorting 16,384 names takes a few ms).
const SORT_HERE_ENTRIES: usize = 16_384;

/// The WIT types of `sluice:tools/listing`, generated from `wit/sluice-tools.wit`
/// (`crate::host::bindings`): `entry-kind`, `listed-entry`, `listing-chunk`, `listing-error`,
/// `named-entry`, `name-listing`.
pub use crate::host::bindings::listing::{
    EntryKind, ListedEntry, ListingChunk, ListingError, NameListing, NamedEntry,
};

impl From<std::io::Error> for ListingError {
    fn from(e: std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        match e.kind() {
            K::NotFound => ListingError::NotFound,
            // cap-std refuses a path that leaves the preopen with an error of its own, which
            // carries no OS error; the file system's EACCES/EPERM are about a directory
            // inside it, and are `failed`, so the tool reports I/O, not an escape.
            K::PermissionDenied if e.raw_os_error().is_none() => ListingError::NotPermitted,
            K::PermissionDenied => ListingError::Failed("permission denied".into()),
            K::NotADirectory => ListingError::NotDirectory,
            _ => ListingError::Failed(e.to_string()),
        }
    }
}

/// One directory's entries: the names back to back in `names`, entry `i` ending at
/// `ends[i]`, so that a directory of any size is a few buffers (read without a buffer per
/// name, and freed at once). As read ([`read_unsorted`]) they are in the directory's order
/// and `withheld` counts the entries that could not be read; a snapshot that is cached and
/// paged through is sorted by name and withholds armor names too ([`snapshot`]).
#[derive(Debug, Default)]
struct Snapshot {
    names: String,
    ends: Vec<u32>,
    kinds: Vec<EntryKind>,
    withheld: u64,
}

impl Snapshot {
    fn len(&self) -> usize {
        self.ends.len()
    }

    /// Appends an entry.
    ///
    /// # Errors
    /// When the names would take more than 4 GiB.
    fn push(&mut self, name: &str, kind: EntryKind) -> std::io::Result<()> {
        self.names.push_str(name);
        let end = u32::try_from(self.names.len())
            .map_err(|_| std::io::Error::other("the directory's names take more than 4 GiB"))?;
        self.ends.push(end);
        self.kinds.push(kind);
        Ok(())
    }

    /// The indices of the entries in byte order of their names.
    fn order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_unstable_by(|&a, &b| self.name(a).as_bytes().cmp(self.name(b).as_bytes()));
        order
    }

    fn name(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.names[start..self.ends[i] as usize]
    }

    fn bytes(&self) -> usize {
        self.names.len() + 5 * self.ends.len()
    }
}

/// What identifies a directory and its contents: device, inode, mtime and ctime (ns), size.
type Key = (u64, u64, i128, i128, u64);

/// The snapshots kept, most recently used last.
static CACHE: Mutex<Vec<(Key, Arc<Snapshot>)>> = Mutex::new(Vec::new());

/// `sluice:tools/listing`, linked by [`crate::host::bindings::add_to_linker`]. A directory still
/// being read when the call's deadline passes ends the call with its timeout, as the epoch
/// ends guest code: a host call cannot be interrupted, and one that ran on would hold the
/// call's thread past the deadline (the pool would take it for stuck in a system call).
impl crate::host::bindings::listing::Host for CallState {
    fn list_chunk(
        &mut self,
        dir: String,
        offset: u64,
        count: u32,
    ) -> wasmtime::Result<Result<ListingChunk, ListingError>> {
        let Some((preopen, rel)) = preopen_of(self, &dir)? else {
            return Ok(Err(ListingError::Unsupported));
        };
        answer(list_chunk(
            &preopen,
            &rel,
            offset,
            count,
            Some(self.budget.deadline),
        ))
    }

    fn list_names(&mut self, dir: String) -> wasmtime::Result<Result<NameListing, ListingError>> {
        let Some((preopen, rel)) = preopen_of(self, &dir)? else {
            return Ok(Err(ListingError::Unsupported));
        };
        answer(list_names(&preopen, &rel, Some(self.budget.deadline)))
    }
}

/// The guest's answer for a listing, or the call's end when its deadline passed while the
/// directory was read.
fn answer<T>(listed: std::io::Result<T>) -> wasmtime::Result<Result<T, ListingError>> {
    match listed {
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
            Err(crate::limits::Interrupt::Timeout.into())
        }
        other => Ok(other.map_err(ListingError::from)),
    }
}

/// The preopened directory that holds the guest path `dir` and the rest of `dir` relative to
/// it ([`crate::host::preopens::beneath`]).
fn preopen_of(state: &mut CallState, dir: &str) -> wasmtime::Result<Option<(Arc<File>, String)>> {
    Ok(crate::host::preopens::beneath(
        &crate::host::preopens::of_call(state)?,
        dir,
    ))
}

/// Entries `offset..offset + count` (at most [`MAX_CHUNK_ENTRIES`]) of the directory `rel`
/// beneath `preopen`, with sizes of the regular files among them. Reading the directory
/// stops at `until` (the call's deadline), so that a directory too large to read in the
/// call's time ends the call with its timeout instead of holding its thread past it.
///
/// # Errors
/// When the directory cannot be opened (it does not exist, is not a directory, or leaves
/// the preopen) or read, and [`std::io::ErrorKind::TimedOut`] when `until` passes while
/// it is read.
pub fn list_chunk(
    preopen: &File,
    rel: &str,
    offset: u64,
    count: u32,
    until: Option<Instant>,
) -> std::io::Result<ListingChunk> {
    let dir = open_beneath(preopen, rel)?;
    let snapshot = snapshot(&dir, until)?;
    let len = snapshot.len() as u64;
    let start = offset.min(len) as usize;
    let end = offset
        .saturating_add(u64::from(count.min(MAX_CHUNK_ENTRIES)))
        .min(len) as usize;
    let entries = (start..end)
        .map(|i| {
            let name = snapshot.name(i);
            let kind = snapshot.kinds[i];
            let size = (kind == EntryKind::File)
                .then(|| cap_primitives::fs::stat(&dir, Path::new(name), FollowSymlinks::No))
                .and_then(|m| m.ok())
                .map(|m| m.len());
            ListedEntry {
                name: name.to_string(),
                kind,
                size,
            }
        })
        .collect();
    Ok(ListingChunk {
        total: len,
        withheld: snapshot.withheld,
        entries,
    })
}

/// Every entry of the directory `rel` beneath `preopen`, sorted by name in byte order, with
/// kinds and no sizes; names that are not UTF-8 counted in `unreadable`, armor names listed.
/// Read now and not cached: a walk visits each directory once, and would only push the
/// snapshots `list_dir` pages through out of the cache. Reading stops at `until`, as in
/// [`list_chunk`].
///
/// # Errors
/// As [`list_chunk`].
pub fn list_names(
    preopen: &File,
    rel: &str,
    until: Option<Instant>,
) -> std::io::Result<NameListing> {
    let dir = open_beneath(preopen, rel)?;
    let read = read_unsorted(&dir, until)?;
    finish(read.len(), until, move || {
        Ok(NameListing {
            entries: read
                .order()
                .into_iter()
                .map(|i| NamedEntry {
                    name: read.name(i).to_string(),
                    kind: read.kinds[i],
                })
                .collect(),
            unreadable: read.withheld,
        })
    })
}

/// The directory `rel` beneath `preopen` (the preopen itself for `""`), opened by
/// `cap-primitives`, so that it cannot leave the preopen.
fn open_beneath(preopen: &File, rel: &str) -> std::io::Result<File> {
    if rel.is_empty() {
        preopen.try_clone()
    } else {
        cap_primitives::fs::open_dir(preopen, Path::new(rel))
    }
}

/// The sorted listing of `dir`: the cached one while the directory's key is unchanged,
/// else read now (and cached when it is neither racy nor too large).
fn snapshot(dir: &File, until: Option<Instant>) -> std::io::Result<Arc<Snapshot>> {
    let key = key_of(dir)?;
    if let Some(key) = key {
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = cache.iter().position(|(k, _)| *k == key) {
            let hit = cache.remove(i);
            let snapshot = hit.1.clone();
            cache.push(hit);
            return Ok(snapshot);
        }
    }
    let read_at = std::time::SystemTime::now();
    let read = read_unsorted(dir, until)?;
    // Built and cached on the sorting thread when there is one, so that a directory whose
    // sort outlasts the call is cached all the same, and the next call pages from it.
    finish(read.len(), until, move || {
        let snapshot = Arc::new(sorted_without_armor(&read)?);
        drop(read);
        if let Some(key) = key
            && !racy(key, read_at)
            && snapshot.bytes() <= MAX_CACHED_BYTES
        {
            let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
            cache.retain(|(k, _)| *k != key);
            cache.push((key, snapshot.clone()));
            while cache.len() > MAX_CACHED_SNAPSHOTS
                || cache.iter().map(|(_, s)| s.bytes()).sum::<usize>() > MAX_CACHED_BYTES
            {
                cache.remove(0);
            }
        }
        Ok(snapshot)
    })
}

/// The cache key of the open directory `dir`; `None` where the platform has no inode.
#[cfg(unix)]
fn key_of(dir: &File) -> std::io::Result<Option<Key>> {
    use std::os::unix::fs::MetadataExt;
    let m = dir.metadata()?;
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    Ok(Some((
        m.dev(),
        m.ino(),
        ns(m.mtime(), m.mtime_nsec()),
        ns(m.ctime(), m.ctime_nsec()),
        m.size(),
    )))
}

#[cfg(not(unix))]
fn key_of(_dir: &File) -> std::io::Result<Option<Key>> {
    Ok(None)
}

/// True when the directory changed less than [`RACY_SECONDS`] before `read_at`.
fn racy(key: Key, read_at: std::time::SystemTime) -> bool {
    let now = read_at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    let newest = key.2.max(key.3);
    now - newest < i128::from(RACY_SECONDS) * 1_000_000_000
}

/// `read` sorted by name, without the names that spell a PEM armor line (counted in
/// `withheld`, with the entries that could not be read).
fn sorted_without_armor(read: &Snapshot) -> std::io::Result<Snapshot> {
    let mut snapshot = Snapshot {
        names: String::with_capacity(read.names.len()),
        ends: Vec::with_capacity(read.len()),
        kinds: Vec::with_capacity(read.len()),
        withheld: read.withheld,
    };
    for i in read.order() {
        let name = read.name(i);
        if sluice_keys::has_armor(name.as_bytes()) {
            snapshot.withheld += 1;
        } else {
            snapshot.push(name, read.kinds[i])?;
        }
    }
    Ok(snapshot)
}

/// The error of a listing stopped at the call's deadline.
fn timed_out() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "the call's time ran out while the directory was read",
    )
}

/// The entries of `dir` whose names are UTF-8, in the directory's order, with kinds from the
/// directory entries (`d_type`; `cap-primitives` `stat`s only where the file system does not
/// give one); `withheld` counts the entries left out (names that are not UTF-8, entries that
/// could not be read). Every [`DEADLINE_CHECK_ENTRIES`] entries from the first it stops
/// with [`std::io::ErrorKind::TimedOut`] if `until` has passed.
fn read_unsorted(dir: &File, until: Option<Instant>) -> std::io::Result<Snapshot> {
    let mut read = Snapshot::default();
    for (i, entry) in cap_primitives::fs::read_base_dir(dir)?.enumerate() {
        if i % DEADLINE_CHECK_ENTRIES == 0 && until.is_some_and(|t| Instant::now() >= t) {
            return Err(timed_out());
        }
        let Ok(entry) = entry else {
            read.withheld += 1;
            continue;
        };
        let name: OsString = entry.file_name();
        let Some(name) = name.to_str() else {
            read.withheld += 1;
            continue;
        };
        let kind = match entry.file_type() {
            Ok(t) if t.is_symlink() => EntryKind::Symlink,
            Ok(t) if t.is_dir() => EntryKind::Directory,
            Ok(t) if t.is_file() => EntryKind::File,
            _ => EntryKind::Other,
        };
        read.push(name, kind)?;
    }
    Ok(read)
}

/// Runs `work` (the sort of a directory of `entries` entries and what is built from it) and
/// returns its answer, or [`std::io::ErrorKind::TimedOut`] when `until` passes first.
///
/// A host call cannot be interrupted, and sorting a directory of millions of entries takes
/// seconds: so a directory of more than [`SORT_HERE_ENTRIES`] entries is sorted on a thread
/// of its own, which the call waits for no longer than `until`. Past it the call ends with
/// its timeout while that thread finishes on its own (what it builds for `list_chunk` is
/// still cached) and frees what it made there, not on the call's thread. A smaller directory
/// is sorted here, and its answer refused if `until` passed meanwhile.
fn finish<T: Send + 'static>(
    entries: usize,
    until: Option<Instant>,
    work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    let Some(until) = until else {
        return work();
    };
    if entries <= SORT_HERE_ENTRIES {
        let done = work()?;
        return if Instant::now() >= until {
            Err(timed_out())
        } else {
            Ok(done)
        };
    }
    let (sender, receiver) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("sluice-listing-sort".into())
        .spawn(move || {
            // The call may have ended: then its answer is dropped here.
            let _ = sender.send(work());
        })?;
    match receiver.recv_timeout(until.saturating_duration_since(Instant::now())) {
        Ok(done) => done,
        Err(_) => Err(timed_out()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &Path) -> File {
        File::open(dir).expect("the test directory opens")
    }

    fn names(chunk: &ListingChunk) -> Vec<(&str, EntryKind, Option<u64>)> {
        chunk
            .entries
            .iter()
            .map(|e| (e.name.as_str(), e.kind, e.size))
            .collect()
    }

    #[test]
    fn chunks_are_sorted_by_bytes_with_kinds_and_file_sizes() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("b.log"), "12345").unwrap();
        std::fs::write(d.path().join("B.log"), "").unwrap();
        std::fs::create_dir(d.path().join("a")).unwrap();
        std::fs::write(d.path().join("é"), "xy").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("b.log", d.path().join("c")).unwrap();
        let root = open(d.path());
        let all = list_chunk(&root, "", 0, 100, None).unwrap();
        let mut expected = vec![
            ("B.log", EntryKind::File, Some(0)),
            ("a", EntryKind::Directory, None),
            ("b.log", EntryKind::File, Some(5)),
        ];
        #[cfg(unix)]
        expected.push(("c", EntryKind::Symlink, None));
        expected.push(("é", EntryKind::File, Some(2)));
        assert_eq!(names(&all), expected);
        assert_eq!(all.total, expected.len() as u64);
        assert_eq!(all.withheld, 0);

        let middle = list_chunk(&root, "", 1, 2, None).unwrap();
        assert_eq!(names(&middle), expected[1..3].to_vec());
        assert_eq!(middle.total, expected.len() as u64);
        let past = list_chunk(&root, "", 99, 2, None).unwrap();
        assert!(past.entries.is_empty());
        assert_eq!(past.total, expected.len() as u64);
    }

    #[test]
    fn armor_names_and_names_that_are_not_utf8_are_withheld() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("-----BEGIN RSA PRIVATE KEY-----"), "").unwrap();
        std::fs::write(d.path().join("ok.txt"), "").unwrap();
        let mut withheld = 1;
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::ffi::OsStrExt;
            let bad = std::ffi::OsStr::from_bytes(b"bad\xff");
            std::fs::write(d.path().join(bad), "").unwrap();
            withheld += 1;
        }
        let chunk = list_chunk(&open(d.path()), "", 0, 10, None).unwrap();
        assert_eq!(names(&chunk), [("ok.txt", EntryKind::File, Some(0))]);
        assert_eq!((chunk.total, chunk.withheld), (1, withheld));
    }

    #[test]
    fn directories_beneath_the_preopen_only() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/x"), "").unwrap();
        std::fs::create_dir(d.path().join("outside")).unwrap();
        let preopen = open(&root);
        let sub = list_chunk(&preopen, "sub", 0, 10, None).unwrap();
        assert_eq!(names(&sub), [("x", EntryKind::File, Some(0))]);
        assert!(list_chunk(&preopen, "../outside", 0, 10, None).is_err());
        assert!(list_chunk(&preopen, "missing", 0, 10, None).is_err());
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("../outside", root.join("escape")).unwrap();
            let e = list_chunk(&preopen, "escape", 0, 10, None).unwrap_err();
            assert!(matches!(ListingError::from(e), ListingError::NotPermitted));
        }
        // Leaving the preopen is `not-permitted`; the file system refusing access to a
        // directory inside it (EACCES, which root never sees here) is I/O.
        let e = list_chunk(&preopen, "../outside", 0, 10, None).unwrap_err();
        assert!(matches!(ListingError::from(e), ListingError::NotPermitted));
        #[cfg(target_os = "linux")]
        assert!(matches!(
            // EACCES on Linux.
            ListingError::from(std::io::Error::from_raw_os_error(13)),
            ListingError::Failed(words) if words == "permission denied"
        ));
    }

    #[test]
    fn a_changed_directory_is_read_again_and_an_unchanged_one_comes_from_the_cache() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("one"), "").unwrap();
        let root = open(d.path());
        // Just changed: racy, so read every time and never kept.
        assert_eq!(list_chunk(&root, "", 0, 10, None).unwrap().total, 1);
        let key = key_of(&root).unwrap();
        let cached = |key: Option<Key>| {
            key.is_some_and(|k| CACHE.lock().unwrap().iter().any(|(c, _)| *c == k))
        };
        assert!(!cached(key));
        std::fs::write(d.path().join("two"), "").unwrap();
        assert_eq!(list_chunk(&root, "", 0, 10, None).unwrap().total, 2);
        if key.is_none() {
            return; // No inode on this platform: nothing is cached.
        }
        // Once the directory is older than the racy window, a listing is kept; waiting for
        // the clock is the event here.
        std::thread::sleep(std::time::Duration::from_millis(
            RACY_SECONDS as u64 * 1000 + 100,
        ));
        assert_eq!(list_chunk(&root, "", 0, 10, None).unwrap().total, 2);
        let key = key_of(&root).unwrap();
        assert!(cached(key));
        // A new entry changes the key: the next chunk sees it.
        std::fs::write(d.path().join("three"), "").unwrap();
        let chunk = list_chunk(&root, "", 0, 10, None).unwrap();
        assert_eq!(
            chunk
                .entries
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>(),
            ["one", "three", "two"]
        );
    }

    #[test]
    fn whole_listings_are_sorted_with_kinds_and_armor_names_listed() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
        std::fs::write(root.join("sub/b.log"), "12345").unwrap();
        std::fs::write(root.join("sub/-----BEGIN RSA PRIVATE KEY-----"), "").unwrap();
        std::fs::write(root.join("sub/A"), "").unwrap();
        let mut unreadable = 0;
        #[cfg(unix)]
        std::os::unix::fs::symlink("b.log", root.join("sub/c")).unwrap();
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::ffi::OsStrExt;
            let bad = std::ffi::OsStr::from_bytes(b"bad\xff");
            std::fs::write(root.join("sub").join(bad), "").unwrap();
            unreadable += 1;
        }
        std::fs::create_dir(d.path().join("outside")).unwrap();
        let preopen = open(&root);
        let listing = list_names(&preopen, "sub", None).unwrap();
        let got: Vec<(&str, EntryKind)> = listing
            .entries
            .iter()
            .map(|e| (e.name.as_str(), e.kind))
            .collect();
        let mut expected = vec![
            ("-----BEGIN RSA PRIVATE KEY-----", EntryKind::File),
            ("A", EntryKind::File),
            ("b.log", EntryKind::File),
        ];
        #[cfg(unix)]
        expected.push(("c", EntryKind::Symlink));
        expected.push(("deeper", EntryKind::Directory));
        assert_eq!(got, expected);
        assert_eq!(listing.unreadable, unreadable);

        let top = list_names(&preopen, "", None).unwrap();
        assert_eq!(top.entries.len(), 1);
        assert_eq!(top.entries[0].name, "sub");
        assert!(list_names(&preopen, "../outside", None).is_err());
        assert_eq!(
            list_names(&preopen, "missing", None).unwrap_err().kind(),
            std::io::ErrorKind::NotFound
        );
    }

    #[test]
    fn reading_stops_at_the_deadline() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..3000 {
            std::fs::write(d.path().join(format!("f{i:04}")), "").unwrap();
        }
        let root = open(d.path());
        let past = Some(Instant::now());
        let e = list_names(&root, "", past).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        assert_eq!(
            e.to_string(),
            "the call's time ran out while the directory was read"
        );
        let ended = answer::<NameListing>(Err(e)).unwrap_err();
        assert_eq!(
            ended.downcast_ref::<crate::limits::Interrupt>(),
            Some(&crate::limits::Interrupt::Timeout)
        );
        let e = list_chunk(&root, "", 0, 10, past).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        let later = Some(Instant::now() + std::time::Duration::from_secs(3600));
        assert_eq!(list_names(&root, "", later).unwrap().entries.len(), 3000);
        assert_eq!(list_chunk(&root, "", 0, 10, later).unwrap().total, 3000);
    }

    #[test]
    fn a_large_directory_is_sorted_on_a_thread_the_call_stops_waiting_for() {
        use std::time::Duration;
        let large = SORT_HERE_ENTRIES + 1;
        let (done, finished) = std::sync::mpsc::channel();
        let soon = Some(Instant::now() + Duration::from_millis(20));
        let e = finish(large, soon, move || {
            std::thread::sleep(Duration::from_millis(300));
            done.send(()).unwrap();
            Ok(1)
        })
        .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        // The work is not cut off: it ends on its own thread.
        finished.recv_timeout(Duration::from_secs(60)).unwrap();
        let later = Some(Instant::now() + Duration::from_secs(3600));
        assert_eq!(finish(large, later, || Ok(7)).unwrap(), 7);
        // A small directory is sorted here, and refused when the deadline passed meanwhile.
        let past = Some(Instant::now());
        assert_eq!(
            finish(10, past, || Ok(7)).unwrap_err().kind(),
            std::io::ErrorKind::TimedOut
        );
        assert_eq!(finish(large, None, || Ok(7)).unwrap(), 7);
    }

    #[test]
    fn a_directory_sorted_on_a_thread_lists_as_one_sorted_here() {
        let d = tempfile::tempdir().unwrap();
        let n = SORT_HERE_ENTRIES + 100;
        // Created in an order unlike the sorted one.
        for i in (0..n).rev() {
            std::fs::write(d.path().join(format!("n{:05}", (i * 7919) % n)), "").unwrap();
        }
        std::fs::write(d.path().join("-----BEGIN RSA PRIVATE KEY-----"), "").unwrap();
        let root = open(d.path());
        let later = Some(Instant::now() + std::time::Duration::from_secs(3600));
        let expected: Vec<String> = (0..n).map(|i| format!("n{i:05}")).collect();
        let listing = list_names(&root, "", later).unwrap();
        assert_eq!(listing.entries.len(), n + 1);
        assert_eq!(listing.entries[0].name, "-----BEGIN RSA PRIVATE KEY-----");
        let listed: Vec<&str> = listing.entries[1..]
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(listed, expected);
        assert!(listing.entries.iter().all(|e| e.kind == EntryKind::File));
        let chunk = list_chunk(&root, "", n as u64 - 2, 10, later).unwrap();
        assert_eq!((chunk.total, chunk.withheld), (n as u64, 1));
        assert_eq!(
            names(&chunk),
            [
                (expected[n - 2].as_str(), EntryKind::File, Some(0)),
                (expected[n - 1].as_str(), EntryKind::File, Some(0)),
            ]
        );
    }

    #[test]
    fn racy_means_changed_within_the_window() {
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(100);
        let s = 1_000_000_000i128;
        assert!(racy((0, 0, 99 * s, 99 * s, 0), now));
        assert!(racy((0, 0, 90 * s, 99 * s, 0), now));
        assert!(!racy((0, 0, 97 * s, 98 * s, 0), now));
    }
}
