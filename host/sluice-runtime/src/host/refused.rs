//! The files no tool may read: the sources of secrets and keys the configuration names
//! (docs/keys.md#secret-files).
//!
//! A secret is withheld from the observations of the tools loaded with it, but a file tool
//! granted the directory its file is in would serve the file itself (and, a page or a grep
//! match at a time, all of it). So every file in [`ToolPolicy::refused_files`] (and the
//! component's own secret files) is refused twice over, in every tool:
//!
//! - **by name**: the host's `sluice:tools/key-policy` answers that a file of that name is
//!   key material, so the built-in file tools refuse it as they refuse `*.pem`
//!   (`key-material`; `grep_files` counts it in `skippedFiles`; `list_dir` lists it);
//! - **by identity**: the host's `open-at` refuses to open a file whose device and inode
//!   are those of a refused file, whatever the path (a hard link under another name, a
//!   symlink), for every component: the guest sees `access` ("permission denied").
//!
//! Identities are taken when the component loads and again, at most once per
//! [`RECHECK_INTERVAL`](crate::host::preopens::RECHECK_INTERVAL), at an open, so a file put in a
//! secret's place later (a rotated secret) is refused too; a file that was refused stays
//! refused for the life of the loaded component.
//!
//! [`ToolPolicy::refused_files`]: crate::policy::ToolPolicy::refused_files

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use crate::host::preopens::{FileId, RECHECK_INTERVAL, file_id};

/// The refused files of one component, by name and by identity.
#[derive(Debug)]
pub(crate) struct RefusedFiles {
    paths: Vec<PathBuf>,
    /// The file names (last path components) of `paths`.
    names: BTreeSet<String>,
    ids: Mutex<Ids>,
}

#[derive(Debug)]
struct Ids {
    seen: Vec<FileId>,
    checked: Instant,
}

impl RefusedFiles {
    /// The files at `paths`, their identities taken now (a path that does not exist now is
    /// refused by name, and by identity once it does).
    pub(crate) fn new(paths: impl IntoIterator<Item = PathBuf>) -> RefusedFiles {
        let mut unique: Vec<PathBuf> = Vec::new();
        for p in paths {
            if !unique.contains(&p) {
                unique.push(p);
            }
        }
        let names = unique
            .iter()
            .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
            .collect();
        let seen = unique.iter().filter_map(|p| file_id(p.as_path())).collect();
        RefusedFiles {
            paths: unique,
            names,
            ids: Mutex::new(Ids {
                seen,
                checked: Instant::now(),
            }),
        }
    }

    /// True when a file called `name` is refused by name.
    pub(crate) fn is_refused_name(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// True when the open file with metadata `m` is a refused file (by its identity; never
    /// where the platform has no inode).
    pub(crate) fn is_refused_file(&self, m: &std::fs::Metadata) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            self.is_refused_id((m.dev(), m.ino()))
        }
        #[cfg(not(unix))]
        {
            let _ = m;
            false
        }
    }

    /// True when the file with identity `id` (device, inode) is a refused file.
    pub(crate) fn is_refused_id(&self, id: FileId) -> bool {
        if self.paths.is_empty() {
            return false;
        }
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        if ids.checked.elapsed() >= RECHECK_INTERVAL {
            for now in self.paths.iter().filter_map(|p| file_id(p.as_path())) {
                if !ids.seen.contains(&now) {
                    ids.seen.push(now);
                }
            }
            ids.checked = Instant::now();
        }
        ids.seen.contains(&id)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn refused_by_name_and_by_identity_hard_links_and_replacements_included() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("token.txt");
        std::fs::write(&secret, "s3cret-value-19chars").unwrap();
        let link = dir.path().join("innocent.log");
        std::fs::hard_link(&secret, &link).unwrap();
        let other = dir.path().join("other.txt");
        std::fs::write(&other, "x").unwrap();
        let refused = RefusedFiles::new([secret.clone(), secret.clone()]);
        assert_eq!(refused.paths, std::slice::from_ref(&secret));
        assert!(refused.is_refused_name("token.txt"));
        assert!(!refused.is_refused_name("innocent.log"));
        assert!(refused.is_refused_id(file_id(&link).unwrap()));
        assert!(!refused.is_refused_id(file_id(&other).unwrap()));
        // A new file in the secret's place is refused after the recheck interval (made so
        // here rather than waited for); the old one stays refused.
        let old = file_id(&secret).unwrap();
        std::fs::remove_file(&secret).unwrap();
        std::fs::write(&secret, "rotated-secret-value").unwrap();
        let new = file_id(&secret).unwrap();
        refused.ids.lock().unwrap().checked -= RECHECK_INTERVAL;
        assert!(refused.is_refused_id(new));
        assert!(refused.is_refused_id(old));
        assert!(!RefusedFiles::new([]).is_refused_id(new));
    }
}
