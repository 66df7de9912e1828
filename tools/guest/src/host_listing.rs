//! The host's `sluice:tools/listing` and `whole-files` as the pager's [`DirSource`]:
//! `list_dir` pages through its chunks, and `grep_files` walks through its whole listings and
//! reads the files it searches whole, announced ahead.

use std::io::{Error, ErrorKind};
use std::path::Path;

use sluice_file_tools::{DirChunk, DirNames, DirSource, EntryKind, WholeFile, WholeRead};

use crate::{files, listing, whole_files};

/// Directory listings read by the host. A directory the host cannot list (`unsupported`: its
/// path names no preopened directory, or is not UTF-8) is `None`, and the tool reads it
/// itself through `wasi:filesystem`.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostListing;

impl DirSource for HostListing {
    fn chunk(&self, dir: &Path, offset: u64, count: u32) -> Option<std::io::Result<DirChunk>> {
        match listing::list_chunk(dir.to_str()?, offset, count) {
            Ok(chunk) => Some(Ok(DirChunk {
                total: chunk.total,
                withheld: chunk.withheld,
                entries: chunk
                    .entries
                    .into_iter()
                    .map(|e| (e.name, kind(e.kind), e.size))
                    .collect(),
            })),
            Err(e) => io_error(e).map(Err),
        }
    }

    fn names(&self, dir: &Path) -> Option<std::io::Result<DirNames>> {
        match listing::list_names(dir.to_str()?) {
            Ok(listing) => Some(Ok(DirNames {
                entries: listing
                    .entries
                    .into_iter()
                    .map(|e| (e.name, kind(e.kind)))
                    .collect(),
                unreadable: listing.unreadable,
            })),
            Err(e) => io_error(e).map(Err),
        }
    }
}

/// [`HostListing`] and the host's `sluice:tools/whole-files`: what `grep_files` walks and
/// reads through. A type of its own, so that a tool that only lists (`list_dir`) does not
/// import `whole-files`.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostFiles;

impl DirSource for HostFiles {
    fn chunk(&self, dir: &Path, offset: u64, count: u32) -> Option<std::io::Result<DirChunk>> {
        HostListing.chunk(dir, offset, count)
    }

    fn names(&self, dir: &Path) -> Option<std::io::Result<DirNames>> {
        HostListing.names(dir)
    }

    fn read_ahead(&self, paths: &[&Path], rules: WholeRead) {
        // A path that is not UTF-8 is not announced; it is read when asked for.
        let paths: Vec<String> = paths
            .iter()
            .filter_map(|p| p.to_str().map(str::to_string))
            .collect();
        whole_files::read_ahead(&paths, wit_rules(rules));
    }

    fn read_whole(&self, path: &Path, rules: WholeRead) -> Option<WholeFile> {
        Some(match whole_files::read(path.to_str()?, wit_rules(rules)) {
            whole_files::WholeFile::Bytes(bytes) => WholeFile::Bytes(bytes),
            whole_files::WholeFile::PassedOver(_) => WholeFile::PassedOver,
        })
    }
}

fn wit_rules(rules: WholeRead) -> whole_files::WholeRead {
    whole_files::WholeRead {
        max_bytes: rules.max_bytes,
        sniff_bytes: rules.sniff_bytes,
    }
}

/// The `io::Error` for a listing error; `None` for `unsupported`.
fn io_error(e: listing::ListingError) -> Option<Error> {
    use listing::ListingError as L;
    Some(match e {
        L::Unsupported => return None,
        L::NotFound => Error::new(ErrorKind::NotFound, "no such file or directory"),
        // The path leaves the preopen (the file system's own refusal comes as `failed`).
        L::NotPermitted => sluice_file_tools::error::Escape.into_io(),
        L::NotDirectory => Error::new(ErrorKind::NotADirectory, "not a directory"),
        L::Failed(words) => Error::other(words),
    })
}

fn kind(k: files::EntryKind) -> EntryKind {
    match k {
        files::EntryKind::File => EntryKind::File,
        files::EntryKind::Directory => EntryKind::Directory,
        files::EntryKind::Symlink => EntryKind::Symlink,
        files::EntryKind::Other => EntryKind::Other,
    }
}
