//! Keeping the compiled-component cache to its bound: what it holds ([`CacheUsage`]), the
//! eviction after every write, and `sluice cache prune` ([`Pruned`]).
//!
//! An artifact is *stale* when its name carries another engine's key (another Sluice
//! version, target or settings wrote it): this engine never loads it, so a prune always
//! removes it, as it removes a digest record whose artifact is gone.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{ARTIFACT, CompiledCache};

/// What the compiled-component cache holds.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheUsage {
    /// The cache directory.
    pub dir: PathBuf,
    /// Artifacts this engine can load.
    pub artifacts: usize,
    /// Their size, in bytes.
    pub bytes: u64,
    /// Artifacts another engine (another Sluice version, target or settings) wrote: never
    /// loaded by this one.
    pub stale_artifacts: usize,
    /// Their size, in bytes.
    pub stale_bytes: u64,
    /// The bound (`cache.max_bytes`, default 512 MiB): after each write, the artifacts used
    /// longest ago are removed until the rest fit.
    pub max_bytes: u64,
}

/// What [`crate::ToolEngine::prune_cache`] removed, and what is left.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pruned {
    /// Artifacts removed (each with its digest record).
    pub removed: usize,
    /// Their size, in bytes.
    pub freed_bytes: u64,
    /// Digest records removed whose artifact was already gone.
    pub orphan_records: usize,
    /// The cache afterwards.
    pub left: CacheUsage,
}

/// One artifact in the directory.
struct Artifact {
    path: PathBuf,
    bytes: u64,
    used: SystemTime,
    /// Written by this engine (its name carries this engine's key).
    ours: bool,
}

impl CompiledCache {
    /// The artifacts in the directory, this engine's and the stale ones.
    fn artifacts(&self) -> Vec<Artifact> {
        let suffix = format!("-{:016x}.{ARTIFACT}", self.engine_key);
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == ARTIFACT))
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                let name = e.file_name();
                Some(Artifact {
                    ours: name.to_string_lossy().ends_with(&suffix),
                    path: e.path(),
                    bytes: meta.len(),
                    used: meta.modified().ok()?,
                })
            })
            .collect()
    }

    /// What the cache holds now.
    pub(crate) fn usage(&self) -> CacheUsage {
        let mut usage = CacheUsage {
            dir: self.dir.clone(),
            artifacts: 0,
            bytes: 0,
            stale_artifacts: 0,
            stale_bytes: 0,
            max_bytes: self.max_bytes,
        };
        for a in self.artifacts() {
            if a.ours {
                usage.artifacts += 1;
                usage.bytes += a.bytes;
            } else {
                usage.stale_artifacts += 1;
                usage.stale_bytes += a.bytes;
            }
        }
        usage
    }

    /// Removes artifacts (with their records) oldest first, by the time they were last
    /// used, until those left hold at most `bound` bytes; never `keep`. Returns how many
    /// were removed and their bytes.
    pub(super) fn evict(&self, keep: Option<&Path>, bound: u64) -> (usize, u64) {
        let mut artifacts = self.artifacts();
        let mut total: u64 = artifacts.iter().map(|a| a.bytes).sum();
        artifacts.sort_by_key(|a| a.used);
        let (mut removed, mut freed) = (0, 0);
        for a in artifacts {
            if total <= bound {
                break;
            }
            if Some(a.path.as_path()) == keep {
                continue;
            }
            if self.remove(&a.path) {
                total -= a.bytes;
                removed += 1;
                freed += a.bytes;
                tracing::debug!(path = %a.path.display(), "removed a compiled component (cache bound)");
            }
        }
        (removed, freed)
    }

    /// Removes every stale artifact and orphan record, then the artifacts used longest ago
    /// until at most `bound` bytes are left (`0` empties the cache). A process using the
    /// cache meanwhile loses nothing: a removed artifact is compiled again when next needed.
    pub(crate) fn prune(&self, bound: u64) -> Pruned {
        let (mut removed, mut freed) = (0, 0);
        for a in self.artifacts().into_iter().filter(|a| !a.ours) {
            if self.remove(&a.path) {
                removed += 1;
                freed += a.bytes;
            }
        }
        let mut orphan_records = 0;
        if let Ok(entries) = fs::read_dir(&self.dir) {
            for path in entries.filter_map(Result::ok).map(|e| e.path()) {
                let artifact = path
                    .to_str()
                    .and_then(|p| p.strip_suffix(".sha256"))
                    .filter(|p| p.ends_with(&format!(".{ARTIFACT}")));
                if artifact.is_some_and(|a| !Path::new(a).exists())
                    && fs::remove_file(&path).is_ok()
                {
                    orphan_records += 1;
                }
            }
        }
        let (evicted, evicted_bytes) = self.evict(None, bound);
        Pruned {
            removed: removed + evicted,
            freed_bytes: freed + evicted_bytes,
            orphan_records,
            left: self.usage(),
        }
    }

    /// Removes the artifact at `path` and its record; false when the artifact could not be
    /// removed.
    fn remove(&self, path: &Path) -> bool {
        let removed = fs::remove_file(path).is_ok();
        if removed {
            let _ = fs::remove_file(Self::record(path));
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use wasmtime::component::Component;

    use super::*;

    /// A prune removes what another engine wrote and the orphan records at once, then the
    /// oldest of this engine's artifacts down to the bound; the usage counts each kind.
    #[test]
    fn a_prune_removes_stale_artifacts_and_orphans_then_the_oldest_down_to_the_bound() {
        let tmp = tempfile::tempdir().unwrap();
        let engine = wasmtime::Engine::default();
        // The smallest component: the preamble alone.
        let component = Component::new(&engine, b"\0asm\x0d\x00\x01\x00").unwrap();
        let one = component.serialize().unwrap().len() as u64;
        let cache = CompiledCache::open(tmp.path().join("c"), &engine, 10 * one).unwrap();
        cache.store("a1", &component).unwrap();
        cache.store("a2", &component).unwrap();
        let old = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000);
        fs::File::options()
            .append(true)
            .open(cache.artifact("a1"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        // Another engine's artifact (with its record), and a record without an artifact.
        let stale = cache.dir().join("ab12-0123456789abcdef.cwasm");
        fs::write(&stale, vec![0u8; 100]).unwrap();
        fs::write(CompiledCache::record(&stale), "x\n").unwrap();
        let orphan = cache.dir().join("cd34-0123456789abcdef.cwasm.sha256");
        fs::write(&orphan, "x\n").unwrap();

        let usage = cache.usage();
        assert_eq!(
            (
                usage.artifacts,
                usage.bytes,
                usage.stale_artifacts,
                usage.stale_bytes
            ),
            (2, 2 * one, 1, 100)
        );
        assert_eq!(usage.max_bytes, 10 * one);

        let pruned = cache.prune(one);
        assert_eq!(pruned.removed, 2, "the stale one and the oldest");
        assert_eq!(pruned.freed_bytes, 100 + one);
        assert_eq!(pruned.orphan_records, 1);
        assert_eq!((pruned.left.artifacts, pruned.left.bytes), (1, one));
        assert_eq!(pruned.left.stale_artifacts, 0);
        assert!(!stale.exists() && !CompiledCache::record(&stale).exists());
        assert!(!orphan.exists());
        assert!(!cache.artifact("a1").exists(), "the one used longest ago");
        assert!(cache.artifact("a2").exists());
        assert!(CompiledCache::record(&cache.artifact("a2")).exists());

        let emptied = cache.prune(0);
        assert_eq!((emptied.removed, emptied.freed_bytes), (1, one));
        assert_eq!((emptied.left.artifacts, emptied.left.bytes), (0, 0));
    }
}
