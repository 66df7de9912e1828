//! The preopened directories of a loaded component, opened once and shared by its calls
//! (a call's cost must not grow with the number of roots granted).
//!
//! Every call still gets a fresh WASI context, but opening each root's directory by path on
//! every call cost a path walk and an `open(2)` per root. Here the roots are opened when the
//! component is loaded, and each call's context takes clones of those handles (a reference
//! count each). The handles are `O_PATH` directory descriptors (wasmtime-wasi's
//! `open_ambient_dir`): every open beneath them is an `openat` and a listing opens the
//! directory again, so a handle keeps no position that concurrent calls could disturb.
//!
//! wasmtime-wasi 48's `WasiCtxBuilder::preopened_dir` takes a path, not an open directory,
//! so the handles are opened through one builder and its filesystem context
//! ([`WasiFilesystemCtx`], which is `Clone`) is what the calls copy.
//!
//! A root's path may come to name another directory (a deployment that swaps a symlink, a
//! directory removed and made again). At most once per [`RECHECK_INTERVAL`] a call compares
//! each root's path with what was opened (device and inode) and opens the roots again when
//! one changed, so a call sees a replaced root at most that long after the change. A root
//! that could not be opened is tried again by every call, which fails as before
//! (`root NAME (DIR) is not available: …`) until it can be.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use wasmtime_wasi::filesystem::WasiFilesystemCtx;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use crate::policy::RootGrant;

/// File operations run on the calling thread (a pool thread) instead of a blocking-pool hop:
/// measured 4× faster for file tools. Every descriptor a call opens is made with it.
pub(crate) const ALLOW_BLOCKING_CURRENT_THREAD: bool = true;

/// How long opened roots are used before their paths are checked again (1 s).
pub(crate) const RECHECK_INTERVAL: Duration = Duration::from_secs(1);

/// A component's roots, opened (see the module docs).
pub(crate) struct Preopens {
    roots: Vec<RootGrant>,
    opened: Mutex<Opened>,
}

/// The roots as last opened.
struct Opened {
    /// The filesystem context every call copies, or why a root could not be opened.
    fs: Result<WasiFilesystemCtx, PreopenError>,
    /// Each root's identity (device, inode) when it was opened.
    ids: Vec<Option<FileId>>,
    /// When the roots were opened or last checked.
    checked: Instant,
}

/// A root that could not be opened: every call of the component fails with it (a tool error
/// of kind `io`) until it can be.
#[derive(Clone, Debug, thiserror::Error)]
#[error("root {name} ({}) is not available: {reason}", dir.display())]
pub(crate) struct PreopenError {
    /// The root's name.
    name: String,
    /// Its host directory.
    dir: PathBuf,
    /// wasmtime-wasi's error opening it (an I/O error). Not the `source`: its text is in
    /// the message. Shared, since every call gets the same error.
    reason: Arc<wasmtime::Error>,
}

/// The preopened directories of the call in `state`: each one's guest path (`/logs`) and its
/// host directory.
///
/// # Errors
/// wasmtime's error when the call's resource table is full.
pub(crate) fn of_call(
    state: &mut crate::host::state::CallState,
) -> wasmtime::Result<Vec<(String, Arc<std::fs::File>)>> {
    use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemCtxView};
    use wasmtime_wasi::p2::bindings::filesystem::preopens::Host;
    let mut view = WasiFilesystemCtxView {
        ctx: state.wasi.filesystem(),
        table: &mut state.table,
    };
    let preopens = Host::get_directories(&mut view)?;
    let mut dirs = Vec::with_capacity(preopens.len());
    for (resource, guest) in preopens {
        if let Descriptor::Dir(d) = state.table.delete(resource)? {
            dirs.push((guest, d.dir.clone()));
        }
    }
    Ok(dirs)
}

/// The preopened directory of `preopens` ([`of_call`]) that holds the guest path `path` (the
/// longest guest path that is a prefix of it, at a `/`) and the rest of `path` relative to it
/// (empty for the preopen itself); `None` when no preopen holds it.
pub(crate) fn beneath(
    preopens: &[(String, Arc<std::fs::File>)],
    path: &str,
) -> Option<(Arc<std::fs::File>, String)> {
    preopens
        .iter()
        .filter_map(|(guest, dir)| {
            let rest = path.strip_prefix(guest.as_str())?;
            (rest.is_empty() || rest.starts_with('/') || guest.ends_with('/')).then_some((
                dir,
                guest.len(),
                rest,
            ))
        })
        .max_by_key(|(_, len, _)| *len)
        .map(|(dir, _, rest)| (dir.clone(), rest.trim_start_matches('/').to_string()))
}

/// A file's identity: (device, inode).
pub(crate) type FileId = (u64, u64);

impl Preopens {
    /// Opens `roots` now; a root that cannot be opened is tried again at the next call.
    pub(crate) fn new(roots: &[RootGrant]) -> Preopens {
        Preopens {
            roots: roots.to_vec(),
            opened: Mutex::new(open(roots)),
        }
    }

    /// The filesystem context of a new call: the roots, preopened at `/<name>`.
    ///
    /// # Errors
    /// [`PreopenError`], a root that cannot be opened: `root NAME (DIR) is not available:
    /// REASON`.
    pub(crate) fn filesystem(&self) -> Result<WasiFilesystemCtx, PreopenError> {
        let mut opened = self.opened.lock().unwrap_or_else(PoisonError::into_inner);
        let due = opened.checked.elapsed() >= RECHECK_INTERVAL;
        let stale = opened.fs.is_err()
            || (due && {
                let now: Vec<Option<FileId>> = self.roots.iter().map(|r| file_id(&r.dir)).collect();
                now != opened.ids || now.contains(&None)
            });
        if stale {
            *opened = open(&self.roots);
        } else if due {
            opened.checked = Instant::now();
        }
        opened.fs.clone()
    }
}

/// Opens every root through one WASI builder and keeps its filesystem context.
fn open(roots: &[RootGrant]) -> Opened {
    // Identities first: if a path is swapped between this and the open, the next check
    // sees a difference and opens it again.
    let ids = roots.iter().map(|r| file_id(&r.dir)).collect();
    let mut builder = WasiCtxBuilder::new();
    builder.allow_blocking_current_thread(ALLOW_BLOCKING_CURRENT_THREAD);
    let fs = roots
        .iter()
        .try_for_each(|root| {
            let perms = if root.write {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            builder
                .preopened_dir(&root.dir, format!("/{}", root.name), perms)
                .map(drop)
                .map_err(|e| PreopenError {
                    name: root.name.clone(),
                    dir: root.dir.clone(),
                    reason: Arc::new(e),
                })
        })
        .map(|()| builder.build().filesystem().clone());
    Opened {
        fs,
        ids,
        checked: Instant::now(),
    }
}

/// The identity of the directory at `path` (symlinks followed), or `None` when it cannot be
/// read (or, off Unix, ever: such roots are opened again at every check).
pub(crate) fn file_id(path: &Path) -> Option<FileId> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(name: &str, dir: &Path) -> RootGrant {
        RootGrant {
            name: name.into(),
            dir: dir.to_path_buf(),
            write: false,
        }
    }

    #[test]
    fn a_missing_root_fails_each_call_until_it_exists() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("later");
        let preopens = Preopens::new(&[grant("data", &dir)]);
        let err = preopens.filesystem().err().unwrap().to_string();
        assert!(
            err.starts_with(&format!("root data ({}) is not available: ", dir.display())),
            "{err}"
        );
        std::fs::create_dir(&dir).unwrap();
        // No waiting for the recheck interval: a failed root is tried on every call.
        assert!(preopens.filesystem().is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn a_replaced_root_is_opened_again_after_the_recheck_interval() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("root");
        std::fs::create_dir(&dir).unwrap();
        let preopens = Preopens::new(&[grant("data", &dir)]);
        let first = preopens.opened.lock().unwrap().ids.clone();
        assert_eq!(first, vec![file_id(&dir)]);
        std::fs::rename(&dir, tmp.path().join("old")).unwrap();
        std::fs::create_dir(&dir).unwrap();
        // Within the interval the roots as opened are used.
        preopens.filesystem().unwrap();
        assert_eq!(preopens.opened.lock().unwrap().ids, first);
        // Past it (made so here rather than waited for), the change is seen.
        preopens.opened.lock().unwrap().checked -= RECHECK_INTERVAL;
        preopens.filesystem().unwrap();
        let now = preopens.opened.lock().unwrap().ids.clone();
        assert_eq!(now, vec![file_id(&dir)]);
        assert_ne!(now, first);
    }
}
