//! The file tools of Sluice as a plain Rust library: `read_file`, `tail_file`,
//! `grep_files` and `list_dir`, exactly as `docs/paging.md` and `docs/keys.md` describe them.
//!
//! Each tool takes a [`Context`] (the roots it may read, the cap of this call, the
//! key-material names) and its arguments, and returns a result that fits its page budget
//! ([`budget::page_bytes`]) or a [`ToolError`] the model can read. Results serialise
//! (camelCase, absent fields omitted) to exactly the JSON the host shows for the matching
//! WIT records of `sluice:tools/files`, so this crate is tested natively and the guest
//! components in `tools/*` are thin adapters over it.
//!
//! ```
//! use sluice_file_tools::{Context, Limits, ReadFileArgs, Root, Roots, read_file};
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("app.log"), "one\ntwo\nthree\n")?;
//! let ctx = Context::new(Roots::new(vec![Root::new("logs", dir.path())]), Limits::new(65_536));
//! let page = read_file(&ctx, &ReadFileArgs { path: "app.log".into(), ..Default::default() })?;
//! assert_eq!(page.content, "one\ntwo\nthree\n");
//! assert_eq!(page.total_lines, Some(3));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod budget;
pub mod error;
/// The key rules (names and armor), from `sluice-keys`, which the host shares.
pub use sluice_keys as keys;
pub mod root;

mod args;
mod carry;
mod file;
mod grep;
mod list;
mod page_read;
mod read;
mod sys;
mod tail;
mod text;

pub use budget::Limits;
pub use carry::{FileVersion, KeyCarries, KeyCarry};
pub use error::{ErrorKind, ToolError};
pub use file::BINARY_SNIFF_BYTES;
pub use grep::{
    DEFAULT_MAX_RESULTS, GrepFilesArgs, GrepFilesPage, GrepMatch, MAX_FILE_BYTES, MAX_MAX_RESULTS,
    MAX_PATTERN_CHARS, MAX_TEXT_CHARS, grep_files, grep_files_from,
};
pub use keys::{KeyNamePolicy, KeyNames};
pub use list::{
    DirChunk, DirEntry, DirNames, DirSource, EntryKind, ListDirArgs, ListDirPage, WholeFile,
    WholeRead, list_dir, list_dir_from,
};
pub use read::{ReadFileArgs, ReadFilePage, read_file};
pub use root::{Root, Roots};
pub use sys::preopened_paths;
pub use tail::{DEFAULT_TAIL_LINES, MAX_TAIL_LINES, TailFileArgs, TailFilePage, tail_file};

/// Everything a file tool needs besides its arguments.
#[derive(Clone, Debug)]
pub struct Context {
    /// The roots the tool may read; the first is the default.
    pub roots: Roots,
    /// The cap and deadline of this call.
    pub limits: Limits,
    /// Names refused as key material.
    pub keys: std::sync::Arc<dyn KeyNamePolicy>,
    /// Where `read_file` keeps what a page knew where it ended, for the next page
    /// ([`KeyCarries`]); `None` (the default) judges every page on its whole look-back.
    pub carries: Option<std::sync::Arc<dyn KeyCarries>>,
}

impl Context {
    /// A context with the default key-material names.
    pub fn new(roots: Roots, limits: Limits) -> Self {
        Context {
            roots,
            limits,
            keys: std::sync::Arc::new(KeyNames::default()),
            carries: None,
        }
    }

    /// This context with `carries` kept between `read_file` pages.
    pub fn with_key_carries(self, carries: std::sync::Arc<dyn KeyCarries>) -> Self {
        Context {
            carries: Some(carries),
            ..self
        }
    }
}
