//! The WIT a tool author builds against, embedded so that `sluice wit DIR` writes it without
//! a Sluice build: the `sluice:tools` package ([`crate::WIT`]) and the WASI packages the
//! host implements ([`WASI_WIT`]): WASI 0.2 (version [`WASI_VERSION`]) with `wasi:http`,
//! and `wasi:config` (version [`WASI_CONFIG_VERSION`]).
//!
//! The layout written is the one `wit-bindgen`, `componentize-py -d DIR` and
//! `componentize-js --wit DIR` read: `DIR/sluice-tools.wit` and, in `DIR/deps/`, one file per
//! WASI 0.2 package and the directory `config/` of `wasi:config`.

use sluice_operator_files::RegularFileError;
use std::path::{Path, PathBuf};

/// The WASI version of [`WASI_WIT`]: what wasmtime-wasi 48.0.8 implements. Components
/// importing any 0.2.x version link.
pub const WASI_VERSION: &str = "0.2.12";

/// The `wasi:config` version of [`WASI_WIT`]: what wasmtime-wasi-config 48.0.8 implements.
pub const WASI_CONFIG_VERSION: &str = "0.2.0-rc.1";

/// The WASI WIT packages as (path under `deps/`, text), from wasmtime-wasi 48.0.8,
/// wasmtime-wasi-http 48.0.8 (`http.wit`) and wasmtime-wasi-config 48.0.8 (`config/`)
/// (`host/sluice-builtins/wasi/`).
pub const WASI_WIT: [(&str, &str); 9] = [
    ("cli.wit", include_str!("../wasi/cli.wit")),
    ("clocks.wit", include_str!("../wasi/clocks.wit")),
    ("filesystem.wit", include_str!("../wasi/filesystem.wit")),
    ("http.wit", include_str!("../wasi/http.wit")),
    ("io.wit", include_str!("../wasi/io.wit")),
    ("random.wit", include_str!("../wasi/random.wit")),
    ("sockets.wit", include_str!("../wasi/sockets.wit")),
    ("config/store.wit", include_str!("../wasi/config/store.wit")),
    ("config/world.wit", include_str!("../wasi/config/world.wit")),
];

/// The file name of the `sluice:tools` package in the directory written.
pub const SLUICE_TOOLS_FILE: &str = "sluice-tools.wit";

/// Why the WIT could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WitError {
    /// A file is already there with other contents; nothing was overwritten.
    #[error(
        "{path} already exists with other contents; nothing was written (remove it, or write to another directory)"
    )]
    Differs {
        /// The file.
        path: PathBuf,
    },
    /// The file system refused.
    #[error("failed to write {path}: {reason}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why, in the operating system's words.
        reason: String,
    },
}

/// Every file [`write_wit`] writes, as (path relative to the directory, text): the
/// `sluice:tools` package first, then `deps/<package>.wit` for each WASI package.
pub fn wit_files() -> Vec<(PathBuf, &'static str)> {
    let mut files = vec![(PathBuf::from(SLUICE_TOOLS_FILE), crate::WIT)];
    files.extend(
        WASI_WIT
            .iter()
            .map(|(name, text)| (Path::new("deps").join(name), *text)),
    );
    files
}

/// Writes [`wit_files`] into `dir` (created if missing) and returns the paths written, in
/// order. A file that is already there with the same text is left as is; one with other text
/// stops it before anything is written ([`WitError::Differs`]). Each file is written to a
/// temporary name beside it and renamed, so none is ever half-written.
///
/// # Errors
/// [`WitError::Differs`], or [`WitError::Io`] when a directory or file cannot be made.
pub fn write_wit(dir: &Path) -> Result<Vec<PathBuf>, WitError> {
    let io = |path: &Path, e: std::io::Error| WitError::Io {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let files: Vec<(PathBuf, &str)> = wit_files()
        .into_iter()
        .map(|(rel, text)| (dir.join(rel), text))
        .collect();
    for (path, text) in &files {
        // Read without blocking and only when regular (a FIFO there would hang a plain
        // read); a file larger than any WIT file written here differs from it.
        let limit = text.len() as u64;
        match sluice_operator_files::read_regular(path, limit) {
            Ok(existing) if existing == text.as_bytes() => {}
            Ok(_) | Err(RegularFileError::TooLarge(_)) => {
                return Err(WitError::Differs { path: path.clone() });
            }
            Err(RegularFileError::NotFound(_)) => {}
            Err(e) => {
                return Err(WitError::Io {
                    path: path.clone(),
                    reason: e.to_string(),
                });
            }
        }
    }
    for (path, text) in &files {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temporary = path.with_file_name(format!(".{name}.tmp"));
        std::fs::write(&temporary, text).map_err(|e| io(&temporary, e))?;
        std::fs::rename(&temporary, path).map_err(|e| io(path, e))?;
    }
    Ok(files.into_iter().map(|(p, _)| p).collect())
}
