//! Reading a directory's entries without losing any to one bad entry.
//!
//! Natively this is `std::fs::read_dir`. Inside a WASI 0.2 component, names must be UTF-8
//! strings: the host answers an entry whose name is not with an error, and wasi-libc's
//! `readdir` (under `std::fs::read_dir`) was seen to lose the entries around such an error.
//! So in a component the entries are read straight from `wasi:filesystem`, one by one, and
//! an entry that cannot be read is counted, not fatal. This also skips the extra `stat`
//! per entry that wasi-libc makes for `d_ino`.

use std::ffi::OsString;
use std::io;
use std::path::Path;

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

#[cfg(not(target_os = "wasi"))]
mod platform {
    use super::*;

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
}

#[cfg(target_os = "wasi")]
mod platform {
    use super::*;
    use wasip2::filesystem::types::{
        Descriptor, DescriptorFlags, DescriptorType, ErrorCode, OpenFlags, PathFlags,
    };

    pub(super) fn list(dir: &Path) -> io::Result<Listing> {
        let path = dir
            .to_str()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path is not UTF-8"))?;
        let preopens = wasip2::filesystem::preopens::get_directories();
        // The preopen with the longest guest path that is a prefix of `path`.
        let (descriptor, rel) = preopens
            .iter()
            .filter_map(|(d, guest)| {
                let rest = path.strip_prefix(guest.as_str())?;
                (rest.is_empty() || rest.starts_with('/') || guest.ends_with('/')).then_some((
                    d,
                    guest.len(),
                    rest,
                ))
            })
            .max_by_key(|(_, len, _)| *len)
            .map(|(d, _, rest)| (d, rest.trim_start_matches('/')))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "no preopened directory holds this path",
                )
            })?;
        let opened: Descriptor;
        let dir_descriptor = if rel.is_empty() {
            descriptor
        } else {
            opened = descriptor
                .open_at(
                    PathFlags::empty(),
                    rel,
                    OpenFlags::DIRECTORY,
                    DescriptorFlags::READ,
                )
                .map_err(to_io)?;
            &opened
        };
        let stream = dir_descriptor.read_directory().map_err(to_io)?;
        let mut listing = Listing::default();
        loop {
            match stream.read_directory_entry() {
                Ok(Some(entry)) => {
                    let kind = match entry.type_ {
                        DescriptorType::RegularFile => Kind::File,
                        DescriptorType::Directory => Kind::Dir,
                        DescriptorType::SymbolicLink => Kind::Symlink,
                        _ => Kind::Other,
                    };
                    listing.entries.push((OsString::from(entry.name), kind));
                }
                Ok(None) => break,
                Err(_) => listing.unreadable += 1,
            }
        }
        Ok(listing)
    }

    fn to_io(code: ErrorCode) -> io::Error {
        let kind = match code {
            ErrorCode::NoEntry => io::ErrorKind::NotFound,
            ErrorCode::NotDirectory => io::ErrorKind::NotADirectory,
            ErrorCode::Access | ErrorCode::NotPermitted => io::ErrorKind::PermissionDenied,
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, format!("{code:?}"))
    }
}
