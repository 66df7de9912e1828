//! The built-in `list_dir` tool: the `list-dir` world of `sluice:tools` as a thin adapter over
//! [`sluice_pager::list_dir_from`], with the page's entries read by the host
//! (`sluice:tools/listing`), which sorts a directory once and keeps it, instead of the
//! `wasi:filesystem` directory stream, which costs the whole directory on every page.

#![allow(unsafe_code)] // The generated export glue is unsafe.

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({
        world: "list-dir",
        path: "../../wit",
        with: {
            "sluice:tools/types@0.1.1": sluice_guest::types,
            "sluice:tools/files@0.1.1": sluice_guest::files,
            "sluice:tools/budget@0.1.1": sluice_guest::budget,
            "sluice:tools/key-policy@0.1.1": sluice_guest::key_policy,
        },
    });
}

use std::path::Path;

use bindings::sluice::tools::listing;
use sluice_guest::{files, types};
use sluice_pager::{DirChunk, DirSource, EntryKind};

struct Tool;

impl bindings::Guest for Tool {
    fn list_dir(args: files::ListDirArgs) -> Result<files::ListDirPage, types::ToolError> {
        sluice_guest::run(
            sluice_guest::list_args(args),
            |ctx, args| sluice_pager::list_dir_from(ctx, args, Some(&HostListing)),
            sluice_guest::list_page,
        )
    }
}

/// The host's `sluice:tools/listing`.
struct HostListing;

impl DirSource for HostListing {
    fn chunk(&self, dir: &Path, offset: u64, count: u32) -> Option<std::io::Result<DirChunk>> {
        let dir = dir.to_str()?;
        match listing::list_chunk(dir, offset, count) {
            Ok(chunk) => Some(Ok(DirChunk {
                total: chunk.total,
                withheld: chunk.withheld,
                entries: chunk
                    .entries
                    .into_iter()
                    .map(|e| (e.name, kind(e.kind), e.size))
                    .collect(),
            })),
            Err(e) => {
                use listing::ListingError as L;
                use std::io::{Error, ErrorKind as K};
                Some(Err(match e {
                    L::Unsupported => return None,
                    L::NotFound => Error::new(K::NotFound, "no such file or directory"),
                    L::NotPermitted => Error::new(K::PermissionDenied, "not permitted"),
                    L::NotDirectory => Error::new(K::NotADirectory, "not a directory"),
                    L::Failed(words) => Error::other(words),
                }))
            }
        }
    }
}

fn kind(k: files::EntryKind) -> EntryKind {
    match k {
        files::EntryKind::File => EntryKind::File,
        files::EntryKind::Directory => EntryKind::Directory,
        files::EntryKind::Symlink => EntryKind::Symlink,
        files::EntryKind::Other => EntryKind::Other,
    }
}

bindings::export!(Tool with_types_in bindings);
