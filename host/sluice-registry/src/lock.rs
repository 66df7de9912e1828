//! `sluice.lock`: the digest every `oci://` reference resolved to, like `Cargo.lock`. A start
//! honours it (a tag is not resolved again, and a locked component comes from the cache with
//! no network); `sluice tools update` resolves the tags again and rewrites it.
//!
//! ```toml
//! # Written by Sluice: the digests the oci:// components of sluice.toml resolved to.
//! version = 1
//!
//! [[component]]
//! reference = "oci://registry.example/tools/wc:1.0"
//! digest = "sha256:…"      # the manifest
//! component = "sha256:…"   # its application/wasm layer
//! signature = "sha256:…"   # the cosign signature manifest that verified it (with verify.key)
//! ```

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::RegistryError;
use crate::reference::valid_digest;

pub use sluice_registry_terms::LOCK_FILE_NAME;

/// The format version this build writes and reads.
pub const LOCK_VERSION: u32 = 1;

const HEADER: &str = "# Written by Sluice: the digests the oci:// components of sluice.toml resolved to.\n# `sluice tools update` resolves the tags again and rewrites this file.\n";

/// One pinned reference.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockEntry {
    /// The reference as the configuration writes it (`oci://…:TAG`).
    pub reference: String,
    /// The manifest digest it resolved to.
    pub digest: String,
    /// The digest of the manifest's `application/wasm` layer.
    pub component: String,
    /// The digest of the cosign signature manifest that verified it, when keys were given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LockFile {
    version: u32,
    #[serde(default, rename = "component")]
    components: Vec<LockEntry>,
}

/// The lock file in memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lock {
    path: PathBuf,
    entries: BTreeMap<String, LockEntry>,
}

impl Lock {
    /// Reads the lock at `path`; a missing file is an empty lock.
    ///
    /// # Errors
    /// [`RegistryError::Lock`] when the file cannot be read, is not a lock of this version,
    /// or holds a digest that is not `sha256:` and 64 hex digits.
    pub fn load(path: &Path) -> Result<Lock, RegistryError> {
        let fail = |reason: String| RegistryError::Lock {
            path: path.to_path_buf(),
            reason,
        };
        let text = match sluice_operator_files::read_text(
            path,
            sluice_operator_files::MAX_CONFIG_FILE_BYTES,
        ) {
            Ok(t) => t,
            Err(sluice_operator_files::RegularFileError::NotFound(_)) => {
                return Ok(Lock::empty(path));
            }
            Err(e) => return Err(fail(e.to_string())),
        };
        let file: LockFile = toml::from_str(&text).map_err(|e| fail(e.to_string()))?;
        if file.version != LOCK_VERSION {
            return Err(fail(format!(
                "version {} is not one this build reads ({LOCK_VERSION}); delete it and start again to re-resolve",
                file.version
            )));
        }
        let mut entries = BTreeMap::new();
        for entry in file.components {
            for digest in [
                Some(&entry.digest),
                Some(&entry.component),
                entry.signature.as_ref(),
            ]
            .into_iter()
            .flatten()
            {
                if !valid_digest(digest) {
                    return Err(fail(format!(
                        "the entry of {} holds {digest:?}, which is not sha256: and 64 lowercase hex digits",
                        entry.reference
                    )));
                }
            }
            entries.insert(entry.reference.clone(), entry);
        }
        Ok(Lock {
            path: path.to_path_buf(),
            entries,
        })
    }

    /// An empty lock that will be written to `path`.
    pub fn empty(path: &Path) -> Lock {
        Lock {
            path: path.to_path_buf(),
            entries: BTreeMap::new(),
        }
    }

    /// Where it is written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entry of `reference` (as written in the configuration).
    pub fn get(&self, reference: &str) -> Option<&LockEntry> {
        self.entries.get(reference)
    }

    /// Every entry, by reference.
    pub fn entries(&self) -> impl Iterator<Item = &LockEntry> {
        self.entries.values()
    }

    /// Adds or replaces the entry of `entry.reference`.
    pub fn insert(&mut self, entry: LockEntry) {
        self.entries.insert(entry.reference.clone(), entry);
    }

    /// Keeps only the entries whose reference `keep` accepts.
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.entries.retain(|r, _| keep(r));
    }

    /// Writes the lock (a temporary file, then a rename: never half a file).
    ///
    /// # Errors
    /// [`RegistryError::Lock`] when it cannot be written.
    pub fn save(&self) -> Result<(), RegistryError> {
        let fail = |reason: String| RegistryError::Lock {
            path: self.path.clone(),
            reason,
        };
        let file = LockFile {
            version: LOCK_VERSION,
            components: self.entries.values().cloned().collect(),
        };
        let body = toml::to_string(&file).map_err(|e| fail(e.to_string()))?;
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| fail(e.to_string()))?;
        tmp.write_all(HEADER.as_bytes())
            .and_then(|()| tmp.write_all(body.as_bytes()))
            .map_err(|e| fail(e.to_string()))?;
        tmp.persist(&self.path)
            .map_err(|e| fail(e.error.to_string()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    #[test]
    fn a_lock_round_trips_and_refuses_bad_digests() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE_NAME);
        let mut lock = Lock::load(&path).unwrap();
        assert_eq!(lock.entries().count(), 0, "a missing file is an empty lock");
        let entry = LockEntry {
            reference: "oci://127.0.0.1:5000/wc:1".into(),
            digest: D1.into(),
            component: D2.into(),
            signature: None,
        };
        lock.insert(entry.clone());
        lock.save().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# Written by Sluice"), "{text}");
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("[[component]]"))
                .count(),
            1
        );
        assert_eq!(
            Lock::load(&path).unwrap().get(&entry.reference),
            Some(&entry)
        );

        std::fs::write(&path, text.replace(D1, "sha256:abc")).unwrap();
        let e = Lock::load(&path).unwrap_err().to_string();
        assert!(e.contains("\"sha256:abc\", which is not sha256:"), "{e}");
        std::fs::write(&path, "version = 7\n").unwrap();
        let e = Lock::load(&path).unwrap_err().to_string();
        assert!(e.contains("version 7 is not one this build reads"), "{e}");
    }
}
