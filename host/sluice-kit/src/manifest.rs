//! `tool.toml`, the project's manifest: how `sluice build` builds it ([`Manifest`]).
//!
//! ```toml
//! [build]
//! command = "sh build.sh"          # run with `sh -c` in the project directory
//! output = "build/notes.wasm"      # the component it makes, relative to the directory
//! ```
//!
//! Unknown keys are refused, so a typo never passes silently; new tables (test cases, schema
//! refinements) are added here as optional fields, so every older manifest stays valid.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::KitError;

/// The manifest's file name in a project directory.
pub const MANIFEST_FILE: &str = "tool.toml";

/// A parsed `tool.toml`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// `[build]`: how to build the component.
    pub build: BuildSection,
}

/// The `[build]` table of `tool.toml`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildSection {
    /// `command`: the build, run with `sh -c` in the project directory; not empty. Its
    /// environment is the caller's (the toolchains come from `PATH`).
    pub command: String,
    /// `output`: the component the command makes, relative to the project directory (not
    /// absolute, not empty).
    pub output: PathBuf,
}

impl Manifest {
    /// Parses the text of `path` (named in errors).
    ///
    /// # Errors
    /// [`KitError::Manifest`]: not TOML, an unknown or missing key, a value of the wrong type,
    /// an empty `command`, an empty or absolute `output`.
    pub fn parse(text: &str, path: &Path) -> Result<Manifest, KitError> {
        let invalid = |reason: String| KitError::Manifest {
            path: path.to_path_buf(),
            reason,
        };
        let manifest: Manifest =
            toml::from_str(text).map_err(|e| invalid(e.to_string().trim_end().to_string()))?;
        if manifest.build.command.trim().is_empty() {
            return Err(invalid("[build] command is empty".to_string()));
        }
        if manifest.build.output.as_os_str().is_empty() {
            return Err(invalid("[build] output is empty".to_string()));
        }
        if manifest.build.output.is_absolute() {
            return Err(invalid(format!(
                "[build] output is an absolute path ({}); give it relative to the project directory",
                manifest.build.output.display()
            )));
        }
        Ok(manifest)
    }

    /// Reads `dir/tool.toml`.
    ///
    /// # Errors
    /// [`KitError::NoManifest`] when there is none, [`KitError::Io`] when it cannot be read
    /// (not a regular file, over 1 MiB, not UTF-8), or [`Manifest::parse`]'s errors.
    pub fn read(dir: &Path) -> Result<Manifest, KitError> {
        let path = dir.join(MANIFEST_FILE);
        let text = match sluice_operator_files::read_text(
            &path,
            sluice_operator_files::MAX_CONFIG_FILE_BYTES,
        ) {
            Ok(text) => text,
            Err(sluice_operator_files::RegularFileError::NotFound(_)) => {
                return Err(KitError::NoManifest {
                    dir: dir.to_path_buf(),
                });
            }
            Err(e) => {
                return Err(KitError::Io {
                    action: "read",
                    path,
                    reason: e.to_string(),
                });
            }
        };
        Manifest::parse(&text, &path)
    }
}
