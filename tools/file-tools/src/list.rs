//! `list_dir`: one page of a directory listing (docs/paging.md#list_dir).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::Context;
use crate::budget::json_len;
use crate::error::{ErrorKind, Result, ToolError};
use crate::sys::Kind;
use crate::text::escaped_prefix;

/// Arguments of `list_dir`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListDirArgs {
    /// Directory, relative to the root; default the root.
    pub path: Option<String>,
    /// Name of the root; default the first.
    pub root: Option<String>,
    /// Index of the first entry (default 0), as returned in `nextOffset`.
    pub offset: Option<u64>,
}

/// What a directory entry is (the WIT enum `entry-kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link, not followed.
    Symlink,
    /// Anything else.
    Other,
}

impl From<Kind> for EntryKind {
    fn from(kind: Kind) -> Self {
        match kind {
            Kind::File => EntryKind::File,
            Kind::Dir => EntryKind::Directory,
            Kind::Symlink => EntryKind::Symlink,
            Kind::Other => EntryKind::Other,
        }
    }
}

impl From<EntryKind> for Kind {
    fn from(kind: EntryKind) -> Self {
        match kind {
            EntryKind::File => Kind::File,
            EntryKind::Directory => Kind::Dir,
            EntryKind::Symlink => Kind::Symlink,
            EntryKind::Other => Kind::Other,
        }
    }
}

/// One entry (the WIT record `dir-entry`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DirEntry {
    /// The entry's name (cut when `name_truncated`).
    pub name: String,
    /// What it is.
    pub kind: EntryKind,
    /// Size in bytes, for files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// `Some(true)` when the name was too long for a page and is cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_truncated: Option<bool>,
}

/// One page of a listing (the WIT record `list-dir-page`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListDirPage {
    /// The directory, relative to the root (`.` for the root).
    pub path: String,
    /// Entries in the directory.
    pub total: u64,
    /// Index of this page's first entry.
    pub offset: u64,
    /// Index of the next page's first entry; `None` on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// Entries left out of the listing (not in `total`): names that cannot be shown (not
    /// UTF-8, inside a component) or that spell a PEM private-key armor line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withheld: Option<u64>,
    /// `entries.len()`.
    pub count: u64,
    /// Entries sorted by name (byte order).
    pub entries: Vec<DirEntry>,
}

/// Directory listings and whole files read by someone else: inside a component, the host's
/// `sluice:tools/listing` and `whole-files`. [`list_dir_from`] takes a page's entries a chunk
/// at a time (the host reads and sorts the directory once and keeps it, so that a page costs
/// what a page is); [`grep_files_from`](crate::grep_files_from) walks through whole listings
/// without sizes (the host reads each directory with no `stat` per entry and no crossing per
/// entry) and reads the files it searches whole, announcing each run of them ahead
/// ([`DirSource::read_ahead`], [`DirSource::read_whole`]).
pub trait DirSource {
    /// Entries `offset..offset + count` of the directory at `dir` (the path the tool
    /// resolved, as [`Root`](crate::Root) paths are), sorted by name in byte order, with
    /// the same rules as [`list_dir`]: symlinks not followed, sizes for regular files,
    /// names that are not UTF-8 or that spell a PEM armor line withheld. `None` when this
    /// source cannot list `dir`: the tool then reads the directory itself.
    ///
    /// A page may take two chunks, and they may come from two readings of a directory that
    /// changed in between: the second starts one entry before the first's end, and unless
    /// it shows that entry there with the same `total` and `withheld`, the page starts over
    /// from one chunk large enough for any page.
    ///
    /// # Errors
    /// When the directory cannot be opened or read.
    fn chunk(&self, dir: &Path, offset: u64, count: u32) -> Option<std::io::Result<DirChunk>>;

    /// Every entry of the directory at `dir`, sorted by name in byte order, with kinds
    /// (symlinks not followed) and no sizes. Only names that are not UTF-8 are left out,
    /// counted in [`DirNames::unreadable`]; armor names are listed (a walk counts them as
    /// entries it does not read). `None` when this source cannot list `dir`, which is the
    /// default: the tool then reads the directory itself.
    ///
    /// # Errors
    /// When the directory cannot be opened or read.
    fn names(&self, dir: &Path) -> Option<std::io::Result<DirNames>> {
        let _ = dir;
        None
    }

    /// Announces the files (paths as [`Root`](crate::Root) paths are) the tool will ask
    /// [`DirSource::read_whole`] for next, in that order, so that the source may read them
    /// ahead while the tool works on the ones before. The default does nothing.
    fn read_ahead(&self, paths: &[&Path], rules: WholeRead) {
        let _ = (paths, rules);
    }

    /// The file at `path` read whole by `rules`: its bytes, or [`WholeFile::PassedOver`]
    /// when it is not a regular file, is larger than `rules.max_bytes`, holds a NUL byte in
    /// its first `rules.sniff_bytes`, holds PEM armor, is key material by name, or cannot be
    /// read. `None` when this source does not read files, which is the default: the tool then
    /// reads it itself.
    fn read_whole(&self, path: &Path, rules: WholeRead) -> Option<WholeFile> {
        let _ = (path, rules);
        None
    }
}

/// What a whole read ([`DirSource::read_whole`]) takes and passes over (the WIT record
/// `whole-read`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WholeRead {
    /// Files larger than this, in bytes, are passed over unread.
    pub max_bytes: u64,
    /// A NUL byte in the first this many bytes makes a file binary: passed over.
    pub sniff_bytes: u64,
}

/// A file read whole by a [`DirSource`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WholeFile {
    /// Its bytes, as many as its size when it was opened.
    Bytes(Vec<u8>),
    /// Passed over (see [`DirSource::read_whole`]).
    PassedOver,
}

/// A whole directory from [`DirSource::names`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirNames {
    /// The entries, sorted by name in byte order: name and kind.
    pub entries: Vec<(String, EntryKind)>,
    /// Entries left out: names that are not UTF-8, entries that could not be read.
    pub unreadable: u64,
}

/// One chunk of a [`DirSource`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirChunk {
    /// Entries listed (withheld ones not counted).
    pub total: u64,
    /// Entries withheld.
    pub withheld: u64,
    /// The chunk's entries, in order: name, kind, size (regular files).
    pub entries: Vec<(String, EntryKind, Option<u64>)>,
}

/// Entries to put on a page, in order: name, kind, size (regular files).
type Candidates = Vec<(String, EntryKind, Option<u64>)>;

/// The fewest bytes an entry adds to a page: `{"name":"x","kind":"file"}` and a comma. A page
/// of `page` bytes holds at most `page / MIN_ENTRY_BYTES` entries, so one chunk of that many
/// always covers it.
const MIN_ENTRY_BYTES: u64 = 27;

/// What a [`DirSource`] is first asked for: a page of entries of this many bytes (a name of
/// about 12 bytes with a size, `{"name":"Cargo.toml","kind":"file","size":1234}`). Every
/// entry asked for costs the host a `stat` and the guest a string; a page of shorter entries
/// takes a second chunk for the rest.
const TYPICAL_ENTRY_BYTES: u64 = 48;

/// Lists one page of `args.path`. Names only: key-material names are listed, never refused.
///
/// # Errors
/// Paths outside the root, a file instead of a directory, an `offset` past the number of
/// entries, a page budget below 320 bytes, and I/O failures.
pub fn list_dir(ctx: &Context, args: &ListDirArgs) -> Result<ListDirPage> {
    list_dir_from(ctx, args, None)
}

/// [`list_dir`], taking the page's entries from `source` when it can list the directory
/// (the results are the same; only the cost differs).
///
/// # Errors
/// As [`list_dir`].
pub fn list_dir_from(
    ctx: &Context,
    args: &ListDirArgs,
    source: Option<&dyn DirSource>,
) -> Result<ListDirPage> {
    let root = ctx.roots.pick(args.root.as_deref())?;
    let target = root.resolve(args.path.as_deref().unwrap_or(""))?;
    let page = ctx.limits.page_for(&target.shown)?;
    let shown = &crate::error::quote(&target.shown);
    let meta = crate::sys::stat(&target.fs_path, true).map_err(|e| ToolError::io(shown, &e))?;
    if !meta.is_dir() {
        let advice = if meta.is_file() {
            "; use read_file to read it"
        } else {
            " (a device, FIFO or socket)"
        };
        return Err(ToolError::new(
            ErrorKind::WrongKind,
            format!("{shown} is not a directory{advice}"),
        ));
    }
    let offset = args.offset.unwrap_or(0);
    // A source serves chunks: ask for what a page of typical entries holds, then (when they
    // all fit) for enough to fill the rest. Reading the directory itself costs the whole
    // directory however many entries are asked for: one round, enough to fill the page.
    let mut fill = Fill::new(page);
    let mut at = offset;
    // After a chunk whose entries all fitted: its `total`, `withheld` and last name. The
    // next chunk starts one entry early and must show that name there, with the same counts:
    // the host reads a directory that changed in the last seconds again for every chunk, so
    // two chunks may come from two readings of it.
    let mut continued: Option<(u64, u64, String)> = None;
    let mut started_over = false;
    let (total, withheld, next) = loop {
        // Entries enough for the rest of the page whatever their size; a later chunk starts
        // one entry early (checked below).
        let enough = fill.left() / MIN_ENTRY_BYTES + 1;
        let (from, early) = match continued {
            Some(_) => (at - 1, 1),
            None => (at, 0),
        };
        let first = continued.is_none() && !started_over;
        let want = if first {
            page / TYPICAL_ENTRY_BYTES + 1
        } else {
            enough
        };
        let chunk = source
            .and_then(|s| s.chunk(&target.fs_path, from, clamp_count(want + early)))
            .map(|c| c.map_err(|e| ToolError::io(shown, &e)))
            .transpose()?;
        let (total, withheld, mut entries) = match chunk {
            Some(chunk) => (chunk.total, chunk.withheld, chunk.entries),
            None => read_page(&target.fs_path, shown, from, clamp_count(enough + early))?,
        };
        if let Some((t, w, last)) = continued.take() {
            let same = total == t && withheld == w && entries.first().is_some_and(|e| e.0 == last);
            if !same {
                if started_over {
                    // Changing again: end the page at what one reading showed.
                    break (t, w, at);
                }
                // The directory changed between the chunks: start the page over from one
                // chunk that covers any page (one reading of the directory).
                fill = Fill::new(page);
                at = offset;
                started_over = true;
                continue;
            }
            entries.remove(0);
        }
        if offset > total {
            return Err(ToolError::new(
                ErrorKind::InvalidArgument,
                format!("offset {offset} is past the end of the directory ({total} entries)"),
            ));
        }
        let listed = entries.len() as u64;
        let last = entries.last().map(|e| e.0.clone());
        if let Some(next) = fill.add(entries, at) {
            break (total, withheld, next);
        }
        // Every entry fitted: the listing ended, or the next chunk fills the rest.
        at += listed;
        match last {
            Some(last) if at < total => continued = Some((total, withheld, last)),
            _ => break (total, withheld, at),
        }
    };
    Ok(ListDirPage {
        path: target.shown,
        total,
        offset,
        next_offset: (next < total).then_some(next),
        withheld: (withheld > 0).then_some(withheld),
        count: fill.entries.len() as u64,
        entries: fill.entries,
    })
}

/// Reads the directory `dir` itself: (total, withheld, entries `offset..offset + count` with
/// sizes of regular files). Names and kinds come from the directory; sizes are looked up for
/// those entries only.
fn read_page(dir: &Path, shown: &str, offset: u64, count: u32) -> Result<(u64, u64, Candidates)> {
    let listing = crate::sys::list(dir).map_err(|e| ToolError::io(shown, &e))?;
    let mut withheld = listing.unreadable;
    let names: Vec<(std::ffi::OsString, EntryKind)> = listing
        .entries
        .into_iter()
        .filter(|(name, _)| {
            // A name that spells an armor line would get the whole page refused.
            let armor = crate::keys::has_armor(name.as_encoded_bytes());
            withheld += u64::from(armor);
            !armor
        })
        .map(|(name, kind)| (name, EntryKind::from(kind)))
        .collect();
    let entries = names
        .iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(count as usize)
        .map(|(name, kind)| {
            let size = match kind {
                EntryKind::File => crate::sys::stat(&dir.join(name), false)
                    .ok()
                    .map(|m| m.size),
                _ => None,
            };
            (name.to_string_lossy().into_owned(), *kind, size)
        })
        .collect();
    Ok((names.len() as u64, withheld, entries))
}

/// `count` as a chunk size: a page is at most 524,288 bytes, so this never clamps.
fn clamp_count(count: u64) -> u32 {
    u32::try_from(count).unwrap_or(u32::MAX)
}

/// A page being filled with entries, in order.
struct Fill {
    entries: Vec<DirEntry>,
    /// Bytes used, `[` and `]` included.
    used: u64,
    /// The page budget, in escaped bytes.
    page: u64,
}

impl Fill {
    fn new(page: u64) -> Fill {
        Fill {
            entries: Vec::new(),
            used: 2, // `[` and `]`
            page,
        }
    }

    /// Bytes of the page still free.
    fn left(&self) -> u64 {
        self.page.saturating_sub(self.used)
    }

    /// Adds `candidates` (entry indexes from `first` on) while they fit; the index of the
    /// first entry left out when the page is full, `None` when all of them fitted.
    fn add(&mut self, candidates: Candidates, first: u64) -> Option<u64> {
        for (i, (name, kind, size)) in candidates.into_iter().enumerate() {
            let i = first + i as u64;
            let mut entry = DirEntry {
                name,
                kind,
                size,
                name_truncated: None,
            };
            let cost = json_len(&entry) + u64::from(!self.entries.is_empty());
            if self.used + cost > self.page {
                if self.entries.is_empty() {
                    // A name too long for a page on its own: cut it, and move past it.
                    let full = std::mem::take(&mut entry.name);
                    entry.name_truncated = Some(true);
                    let room = self.page - self.used - json_len(&entry);
                    entry.name = escaped_prefix(&full, room).to_string();
                    self.entries.push(entry);
                    return Some(i + 1);
                }
                return Some(i);
            }
            self.used += cost;
            self.entries.push(entry);
        }
        None
    }
}
