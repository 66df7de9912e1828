//! How the tools reach the file system: reading a directory without losing entries to one
//! bad entry, and reading files at offsets in as few calls as possible.
//!
//! Natively this is `std::fs`. Inside a WASI 0.2 component it is `wasi:filesystem` directly,
//! for two reasons:
//! - names must be UTF-8 strings: the host answers an entry whose name is not with an error,
//!   and wasi-libc's `readdir` (under `std::fs::read_dir`) was seen to lose the entries
//!   around such an error. Read one by one, an entry that cannot be read is counted, not
//!   fatal, and wasi-libc's extra `stat` per entry (for `d_ino`) is skipped;
//! - every `wasi:filesystem` call crosses the component boundary. Through `std::fs` a file
//!   costs eight of them (open, stat and metadata-hash for `fstat`, a stream, a read per
//!   buffer and one more to see the end, two drops); here it costs four (open, a `stat` of
//!   the open descriptor, one read, drop).
//!
//! Files are checked **by descriptor, after opening** ([`OpenFile::stat`]), never by name
//! before: a regular file swapped for a FIFO between a check by name and the open would
//! otherwise be opened and read as if it were the file. Opens never block: the host opens
//! every file of a component non-blocking (so a FIFO opens at once and is then refused by
//! its type), and natively this module asks for the same (`O_NONBLOCK`).
//!   `grep_files` reads tens of thousands of files per page, and every `read_file` page is
//!   a few reads.

use std::ffi::OsString;
use std::io;
use std::path::Path;

use crate::carry::FileVersion;

/// What kind of entry a directory holds (symlinks are not followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
    Symlink,
    Other,
}

/// The entries of one directory.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    /// (name, kind), sorted by name (byte order).
    pub(crate) entries: Vec<(OsString, Kind)>,
    /// Entries that could not be read (in a component: names that are not UTF-8).
    pub(crate) unreadable: u64,
}

/// The entries of `dir`, sorted by name.
///
/// # Errors
/// When `dir` itself cannot be opened or read.
pub(crate) fn list(dir: &Path) -> io::Result<Listing> {
    let mut listing = platform::list(dir)?;
    listing
        .entries
        .sort_unstable_by(|a, b| a.0.as_encoded_bytes().cmp(b.0.as_encoded_bytes()));
    Ok(listing)
}

/// What [`stat`] tells of a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    pub(crate) kind: Kind,
    /// Size in bytes.
    pub(crate) size: u64,
    /// Which version of the file's bytes this is, where the system tells and it was asked
    /// for ([`OpenFile::stat_with_version`] only).
    pub(crate) version: Option<FileVersion>,
}

impl Stat {
    pub(crate) fn is_dir(&self) -> bool {
        self.kind == Kind::Dir
    }

    pub(crate) fn is_file(&self) -> bool {
        self.kind == Kind::File
    }
}

/// The kind and size of what `path` names; with `follow`, of what a symlink there points
/// to, else of the symlink itself.
///
/// # Errors
/// When `path` does not exist or cannot be examined.
pub(crate) fn stat(path: &Path, follow: bool) -> io::Result<Stat> {
    platform::stat(path, follow)
}

/// The guest paths of the directories the host preopened (`/logs` for root `logs`), in the
/// order it granted them: in a component, the same list the tools resolve paths against,
/// fetched once per instance; natively (no host grants anything) none.
pub fn preopened_paths() -> Vec<String> {
    platform::preopened_paths()
}

/// A regular file opened for reading at offsets.
pub(crate) struct OpenFile {
    inner: platform::File,
}

impl OpenFile {
    /// Opens what `path` names for reading (following symlinks, as `std::fs::File::open`
    /// does; the host keeps every open beneath its preopen), without blocking: a FIFO or a
    /// device opens at once. Check what was opened with [`OpenFile::stat`] before reading.
    ///
    /// # Errors
    /// When it cannot be opened.
    pub(crate) fn open(path: &Path) -> io::Result<OpenFile> {
        platform::open(path).map(|inner| OpenFile { inner })
    }

    /// The kind and size of what was opened, now (a `stat` of the descriptor: whatever the
    /// path names by now, this is what will be read).
    ///
    /// # Errors
    /// When it cannot be examined.
    pub(crate) fn stat(&self) -> io::Result<Stat> {
        platform::fstat(&self.inner, false)
    }

    /// As [`OpenFile::stat`], with the [`FileVersion`] of what was opened where the system
    /// tells (in a component one more crossing: `metadata-hash`, so only `read_file` with key
    /// carries asks for it).
    ///
    /// # Errors
    /// When it cannot be examined.
    pub(crate) fn stat_with_version(&self) -> io::Result<Stat> {
        platform::fstat(&self.inner, true)
    }

    /// Appends the bytes `offset..offset + len` to `buf`, fewer when the file ends first.
    ///
    /// # Errors
    /// When a read fails.
    pub(crate) fn read_into(&mut self, offset: u64, len: u64, buf: &mut Vec<u8>) -> io::Result<()> {
        platform::read_into(&mut self.inner, offset, len, buf)
    }
}

#[cfg(not(target_os = "wasi"))]
mod platform {
    use std::io::{Read, Seek, SeekFrom};

    use super::*;

    pub(super) type File = std::fs::File;

    pub(super) fn preopened_paths() -> Vec<String> {
        Vec::new()
    }

    pub(super) fn list(dir: &Path) -> io::Result<Listing> {
        let mut listing = Listing::default();
        for entry in std::fs::read_dir(dir)? {
            let Ok(entry) = entry else {
                listing.unreadable += 1;
                continue;
            };
            let kind = match entry.file_type() {
                Ok(t) if t.is_symlink() => Kind::Symlink,
                Ok(t) if t.is_dir() => Kind::Dir,
                Ok(t) if t.is_file() => Kind::File,
                _ => Kind::Other,
            };
            listing.entries.push((entry.file_name(), kind));
        }
        Ok(listing)
    }

    pub(super) fn stat(path: &Path, follow: bool) -> io::Result<Stat> {
        let meta = if follow {
            std::fs::metadata(path)?
        } else {
            std::fs::symlink_metadata(path)?
        };
        Ok(Stat {
            kind: kind_of(meta.file_type()),
            size: meta.len(),
            version: None,
        })
    }

    fn kind_of(t: std::fs::FileType) -> Kind {
        if t.is_symlink() {
            Kind::Symlink
        } else if t.is_dir() {
            Kind::Dir
        } else if t.is_file() {
            Kind::File
        } else {
            Kind::Other
        }
    }

    pub(super) fn open(path: &Path) -> io::Result<File> {
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
        options.open(path)
    }

    pub(super) fn fstat(file: &File, with_version: bool) -> io::Result<Stat> {
        let meta = file.metadata()?;
        Ok(Stat {
            kind: kind_of(meta.file_type()),
            size: meta.len(),
            version: if with_version { version(&meta) } else { None },
        })
    }

    #[cfg(unix)]
    fn version(meta: &std::fs::Metadata) -> Option<FileVersion> {
        use std::os::unix::fs::MetadataExt;
        let ns = |s: i64, n: i64| {
            u64::try_from(s)
                .ok()?
                .checked_mul(1_000_000_000)?
                .checked_add(u64::try_from(n).ok()?)
        };
        Some(FileVersion {
            identity: (meta.dev(), meta.ino()),
            size: meta.len(),
            modified_ns: ns(meta.mtime(), meta.mtime_nsec())?,
            changed_ns: ns(meta.ctime(), meta.ctime_nsec())?,
        })
    }

    #[cfg(not(unix))]
    fn version(_: &std::fs::Metadata) -> Option<FileVersion> {
        None
    }

    pub(super) fn read_into(
        file: &mut File,
        offset: u64,
        len: u64,
        buf: &mut Vec<u8>,
    ) -> io::Result<()> {
        file.seek(SeekFrom::Start(offset))?;
        file.take(len).read_to_end(buf).map(drop)
    }
}

#[cfg(target_os = "wasi")]
mod platform {
    use super::*;
    use wasip2::filesystem::types::{
        Descriptor, DescriptorFlags, DescriptorType, ErrorCode, OpenFlags, PathFlags,
    };

    pub(super) type File = Descriptor;

    /// The most bytes asked of the host in one read (it allocates what is asked).
    const READ_CHUNK: u64 = 1 << 20;

    thread_local! {
        /// The preopened directories and their guest paths. A component instance serves
        /// one call, so they cannot change while it lives.
        static PREOPENS: Vec<(Descriptor, String)> = wasip2::filesystem::preopens::get_directories();
    }

    /// The guest paths of the preopened directories, in the order the host granted them.
    pub(crate) fn preopened_paths() -> Vec<String> {
        PREOPENS.with(|preopens| preopens.iter().map(|(_, path)| path.clone()).collect())
    }

    /// Calls `then` with the preopen that holds `path` (an absolute guest path) and the
    /// rest of `path` relative to it (empty for the preopen itself).
    fn resolve<T>(
        path: &Path,
        then: impl FnOnce(&Descriptor, &str) -> io::Result<T>,
    ) -> io::Result<T> {
        let path = path
            .to_str()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path is not UTF-8"))?;
        PREOPENS.with(|preopens| {
            // The preopen with the longest guest path that is a prefix of `path`.
            let (descriptor, rel) =
                preopens
                    .iter()
                    .filter_map(|(d, guest)| {
                        let rest = path.strip_prefix(guest.as_str())?;
                        (rest.is_empty() || rest.starts_with('/') || guest.ends_with('/'))
                            .then_some((d, guest.len(), rest))
                    })
                    .max_by_key(|(_, len, _)| *len)
                    .map(|(d, _, rest)| (d, rest.trim_start_matches('/')))
                    .ok_or_else(|| {
                        io::Error::new(
                            io::ErrorKind::NotFound,
                            "no preopened directory holds this path",
                        )
                    })?;
            then(descriptor, rel)
        })
    }

    pub(super) fn list(dir: &Path) -> io::Result<Listing> {
        resolve(dir, |preopen, rel| {
            let opened;
            let descriptor = if rel.is_empty() {
                preopen
            } else {
                opened = preopen
                    .open_at(
                        PathFlags::empty(),
                        rel,
                        OpenFlags::DIRECTORY,
                        DescriptorFlags::READ,
                    )
                    .map_err(to_io)?;
                &opened
            };
            let stream = descriptor.read_directory().map_err(to_io)?;
            let mut listing = Listing::default();
            loop {
                match stream.read_directory_entry() {
                    Ok(Some(entry)) => {
                        listing
                            .entries
                            .push((OsString::from(entry.name), kind(entry.type_)));
                    }
                    Ok(None) => break,
                    Err(_) => listing.unreadable += 1,
                }
            }
            Ok(listing)
        })
    }

    fn kind(t: DescriptorType) -> Kind {
        match t {
            DescriptorType::RegularFile => Kind::File,
            DescriptorType::Directory => Kind::Dir,
            DescriptorType::SymbolicLink => Kind::Symlink,
            _ => Kind::Other,
        }
    }

    pub(super) fn stat(path: &Path, follow: bool) -> io::Result<Stat> {
        resolve(path, |preopen, rel| {
            let stat = if rel.is_empty() {
                preopen.stat()
            } else if follow {
                preopen.stat_at(PathFlags::SYMLINK_FOLLOW, rel)
            } else {
                preopen.stat_at(PathFlags::empty(), rel)
            }
            .map_err(to_io)?;
            Ok(Stat {
                kind: kind(stat.type_),
                size: stat.size,
                version: None,
            })
        })
    }

    pub(super) fn open(path: &Path) -> io::Result<File> {
        resolve(path, |preopen, rel| {
            // The root itself is `.` of its preopen: an empty path names nothing.
            let rel = if rel.is_empty() { "." } else { rel };
            preopen
                .open_at(
                    PathFlags::SYMLINK_FOLLOW,
                    rel,
                    OpenFlags::empty(),
                    DescriptorFlags::READ,
                )
                .map_err(to_io)
        })
    }

    pub(super) fn fstat(file: &File, with_version: bool) -> io::Result<Stat> {
        let stat = file.stat().map_err(to_io)?;
        let ns = |t: Option<wasip2::clocks::wall_clock::Datetime>| {
            let t = t?;
            t.seconds
                .checked_mul(1_000_000_000)?
                .checked_add(u64::from(t.nanoseconds))
        };
        // The identity of what was opened: no hash, no version (nothing is carried).
        let hash = if with_version {
            file.metadata_hash().ok()
        } else {
            None
        };
        let version = hash.and_then(|hash| {
            Some(FileVersion {
                identity: (hash.lower, hash.upper),
                size: stat.size,
                modified_ns: ns(stat.data_modification_timestamp)?,
                changed_ns: ns(stat.status_change_timestamp)?,
            })
        });
        Ok(Stat {
            kind: kind(stat.type_),
            size: stat.size,
            version,
        })
    }

    pub(super) fn read_into(
        file: &mut File,
        mut offset: u64,
        mut len: u64,
        buf: &mut Vec<u8>,
    ) -> io::Result<()> {
        while len > 0 {
            let (bytes, end) = file.read(len.min(READ_CHUNK), offset).map_err(to_io)?;
            let n = bytes.len() as u64;
            if buf.is_empty() {
                // The host's bytes are in guest memory already: keep them, no copy.
                *buf = bytes;
            } else {
                buf.extend_from_slice(&bytes);
            }
            if end || n == 0 {
                break;
            }
            offset += n;
            len -= n;
        }
        Ok(())
    }

    /// The `io::Error` for a `wasi:filesystem` error code: the kinds the tools tell apart,
    /// and the code's name in words (`too many levels of symbolic links` for `loop`).
    fn to_io(code: ErrorCode) -> io::Error {
        let kind = match code {
            ErrorCode::NoEntry => io::ErrorKind::NotFound,
            ErrorCode::NotDirectory => io::ErrorKind::NotADirectory,
            ErrorCode::IsDirectory => io::ErrorKind::IsADirectory,
            ErrorCode::Access | ErrorCode::NotPermitted => io::ErrorKind::PermissionDenied,
            _ => io::ErrorKind::Other,
        };
        if matches!(code, ErrorCode::NotPermitted) {
            return io::Error::new(kind, crate::error::Escape);
        }
        let words = match code {
            ErrorCode::Loop => "too many levels of symbolic links".to_string(),
            ErrorCode::NoEntry => "no such file or directory".to_string(),
            other => other.name().replace('-', " "),
        };
        io::Error::new(kind, words)
    }
}
