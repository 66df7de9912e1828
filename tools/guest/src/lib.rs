//! The guest side of `sluice:tools@0.1.5` for Rust tools built on [`sluice_file_tools`].
//!
//! [`bindings`] holds the bindings of the shared interfaces (`types`, `files`, `budget`,
//! `key-policy`, `listing`, `key-carries`, `whole-files`), generated once here; each tool crate generates its
//! own world with `with:` pointing at them, so the conversions below exist once. [`context`]
//! builds the pager's [`Context`] for the current call from what the host grants: the
//! preopened roots, the cap, the time budget and the key-material names. [`HostListing`] is
//! the host's `listing` and `whole-files` as the pager's
//! [`DirSource`](sluice_file_tools::DirSource), and
//! [`HostKeyCarries`] its `key-carries` as the pager's
//! [`KeyCarries`](sluice_file_tools::KeyCarries).

use std::sync::Arc;
use std::time::Duration;

use sluice_file_tools::{Context, KeyNamePolicy, Limits, Root, Roots, ToolError as PagerError};

/// Bindings of the shared `sluice:tools` interfaces (imports only).
#[allow(missing_docs, unsafe_code, unreachable_pub, clippy::all)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "guest-support",
        path: "../../wit",
        inline: "
            package sluice:guest-support;
            world guest-support {
                import sluice:tools/types@0.1.5;
                import sluice:tools/files@0.1.5;
                import sluice:tools/budget@0.1.5;
                import sluice:tools/key-policy@0.1.5;
                import sluice:tools/listing@0.1.5;
                import sluice:tools/key-carries@0.1.5;
                import sluice:tools/whole-files@0.1.5;
            }
        ",
        generate_all,
    });
}

pub use bindings::sluice::tools::{
    budget, files, key_carries, key_policy, listing, types, whole_files,
};
pub use host_key_carries::HostKeyCarries;
pub use host_listing::{HostFiles, HostListing};

mod host_key_carries;
mod host_listing;

/// The pager context of the current call: every preopened directory is a root named by its
/// guest path without the leading `/` (the host preopens root `logs` at `/logs`), in the
/// order the host granted them; the cap and time budget come from `budget`, the key names
/// from `key-policy`.
pub fn context() -> Result<Context, types::ToolError> {
    let roots = sluice_file_tools::preopened_paths()
        .into_iter()
        .map(|path| {
            let name = path.trim_start_matches('/').to_string();
            Root::new(name, path)
        })
        .collect();
    let limits = Limits::new(budget::max_result_bytes())
        .with_time_budget(Duration::from_millis(u64::from(budget::time_budget_ms())));
    Ok(Context {
        roots: Roots::new(roots),
        limits,
        keys: Arc::new(HostKeyNames),
        carries: None,
    })
}

/// Key-material names as the host's policy (`sluice:tools/key-policy`) says.
#[derive(Debug)]
struct HostKeyNames;

impl KeyNamePolicy for HostKeyNames {
    fn is_key_file(&self, name: &str) -> bool {
        key_policy::is_key_name(name, false)
    }

    fn is_key_dir(&self, name: &str) -> bool {
        key_policy::is_key_name(name, true)
    }
}

/// The WIT `tool-error` for a pager error.
pub fn tool_error(e: PagerError) -> types::ToolError {
    use sluice_file_tools::ErrorKind as K;
    use types::ToolError as T;
    let m = e.message;
    match e.kind {
        K::InvalidArgument => T::InvalidArgument(m),
        K::NotFound => T::NotFound(m),
        K::OutsideRoot => T::OutsideRoot(m),
        K::WrongKind => T::WrongKind(m),
        K::BinaryFile => T::BinaryFile(m),
        K::KeyMaterial => T::KeyMaterial(m),
        K::PageTooSmall => T::PageTooSmall(m),
        _ => T::Io(m),
    }
}

/// Runs a pager tool in the current call's context and converts its result.
pub fn run<A, P, W>(
    args: A,
    tool: impl FnOnce(&Context, &A) -> Result<P, PagerError>,
    convert: impl FnOnce(P) -> W,
) -> Result<W, types::ToolError> {
    let ctx = context()?;
    tool(&ctx, &args).map(convert).map_err(tool_error)
}

/// `read-file-args` → pager arguments.
pub fn read_args(a: files::ReadFileArgs) -> sluice_file_tools::ReadFileArgs {
    sluice_file_tools::ReadFileArgs {
        path: a.path,
        root: a.root,
        start_line: a.start_line,
        line_count: a.line_count,
        offset: a.offset,
    }
}

/// Pager page → `read-file-page`.
pub fn read_page(p: sluice_file_tools::ReadFilePage) -> files::ReadFilePage {
    files::ReadFilePage {
        path: p.path,
        size: p.size,
        offset: p.offset,
        next_offset: p.next_offset,
        next_line: p.next_line,
        line_truncated: p.line_truncated,
        start_line: p.start_line,
        end_line: p.end_line,
        total_lines: p.total_lines,
        invalid_utf8: p.invalid_utf8,
        content_bytes: p.content_bytes,
        content: p.content,
    }
}

/// `tail-file-args` → pager arguments.
pub fn tail_args(a: files::TailFileArgs) -> sluice_file_tools::TailFileArgs {
    sluice_file_tools::TailFileArgs {
        path: a.path,
        root: a.root,
        lines: a.lines,
    }
}

/// Pager page → `tail-file-page`.
pub fn tail_page(p: sluice_file_tools::TailFilePage) -> files::TailFilePage {
    files::TailFilePage {
        path: p.path,
        truncated: p.truncated,
        count: p.count,
        lines: p.lines,
    }
}

/// `grep-files-args` → pager arguments.
pub fn grep_args(a: files::GrepFilesArgs) -> sluice_file_tools::GrepFilesArgs {
    sluice_file_tools::GrepFilesArgs {
        pattern: a.pattern,
        path: a.path,
        root: a.root,
        glob: a.glob,
        case_sensitive: a.case_sensitive,
        max_results: a.max_results,
        cursor: a.cursor,
    }
}

/// Pager page → `grep-files-page`.
pub fn grep_page(p: sluice_file_tools::GrepFilesPage) -> files::GrepFilesPage {
    files::GrepFilesPage {
        path: p.path,
        count: p.count,
        truncated: p.truncated,
        next_cursor: p.next_cursor,
        stopped_by: p.stopped_by,
        skipped_files: p.skipped_files,
        results: p
            .results
            .into_iter()
            .map(|m| files::GrepMatch {
                path: m.path,
                line: m.line,
                text: m.text,
            })
            .collect(),
    }
}

/// `list-dir-args` → pager arguments.
pub fn list_args(a: files::ListDirArgs) -> sluice_file_tools::ListDirArgs {
    sluice_file_tools::ListDirArgs {
        path: a.path,
        root: a.root,
        offset: a.offset,
    }
}

/// Pager page → `list-dir-page`.
pub fn list_page(p: sluice_file_tools::ListDirPage) -> files::ListDirPage {
    use sluice_file_tools::EntryKind as K;
    files::ListDirPage {
        path: p.path,
        total: p.total,
        offset: p.offset,
        next_offset: p.next_offset,
        withheld: p.withheld,
        count: p.count,
        entries: p
            .entries
            .into_iter()
            .map(|e| files::DirEntry {
                name: e.name,
                kind: match e.kind {
                    K::File => files::EntryKind::File,
                    K::Directory => files::EntryKind::Directory,
                    K::Symlink => files::EntryKind::Symlink,
                    K::Other => files::EntryKind::Other,
                },
                size: e.size,
                name_truncated: e.name_truncated,
            })
            .collect(),
    }
}
