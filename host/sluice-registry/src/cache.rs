//! The content-addressed cache of what was pulled: manifests, component layers and
//! signature payloads, each stored under its own digest (`<dir>/blobs/sha256/<hex>`) and
//! checked against it on every read, so a damaged or edited file is never served.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::reference::{sha256_digest, valid_digest};

/// Blobs by digest under one directory.
#[derive(Clone, Debug)]
pub struct BlobCache {
    dir: PathBuf,
}

impl BlobCache {
    /// A cache rooted at `dir` (created on the first write).
    pub fn new(dir: impl Into<PathBuf>) -> BlobCache {
        BlobCache { dir: dir.into() }
    }

    /// The cache's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the blob of `digest` is kept: `<dir>/blobs/sha256/<hex>`.
    pub fn path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.dir.join("blobs").join("sha256").join(hex)
    }

    /// The blob of `digest`, when the cache holds it and its bytes still have that digest.
    /// A file whose bytes do not match is removed (and logged), and reads as absent.
    pub fn get(&self, digest: &str) -> Option<Vec<u8>> {
        if !valid_digest(digest) {
            return None;
        }
        let path = self.path(digest);
        let bytes = std::fs::read(&path).ok()?;
        let actual = sha256_digest(&bytes);
        if actual != digest {
            tracing::warn!(
                path = %path.display(),
                expected = digest,
                actual,
                "removing a cached blob whose bytes do not match its digest"
            );
            let _ = std::fs::remove_file(&path);
            return None;
        }
        Some(bytes)
    }

    /// Stores `bytes` under their digest and returns it; a reader never sees half a file
    /// (temporary file, then rename).
    ///
    /// # Errors
    /// The I/O error, when the directory or the file cannot be written.
    pub fn put(&self, bytes: &[u8]) -> std::io::Result<String> {
        let digest = sha256_digest(bytes);
        let path = self.path(&digest);
        if path.exists() {
            return Ok(digest);
        }
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(bytes)?;
        tmp.persist(&path).map_err(|e| e.error)?;
        Ok(digest)
    }

    /// A new temporary file in the cache's blob directory, for a blob being streamed in:
    /// [`BlobCache::commit`] moves it under its digest; dropped, it is removed.
    ///
    /// # Errors
    /// The I/O error, when the directory or the file cannot be made.
    pub(crate) fn stage(&self) -> std::io::Result<tempfile::NamedTempFile> {
        let dir = self.dir.join("blobs").join("sha256");
        std::fs::create_dir_all(&dir)?;
        tempfile::NamedTempFile::new_in(dir)
    }

    /// Moves `staged` (from [`BlobCache::stage`], its bytes checked to have `digest`, a
    /// valid `sha256:<hex>` the caller computed) under `digest`, and returns its path.
    ///
    /// # Errors
    /// The I/O error, when the file cannot be flushed or moved.
    pub(crate) fn commit(
        &self,
        mut staged: tempfile::NamedTempFile,
        digest: &str,
    ) -> std::io::Result<PathBuf> {
        staged.flush()?;
        let path = self.path(digest);
        staged.persist(&path).map_err(|e| e.error)?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_served_only_while_their_bytes_match() {
        let dir = tempfile::tempdir().unwrap();
        let cache = BlobCache::new(dir.path());
        let digest = cache.put(b"component bytes").unwrap();
        assert_eq!(digest, sha256_digest(b"component bytes"));
        assert_eq!(cache.get(&digest).as_deref(), Some(&b"component bytes"[..]));
        std::fs::write(cache.path(&digest), b"edited bytes").unwrap();
        assert_eq!(cache.get(&digest), None, "an edited blob is not served");
        assert!(!cache.path(&digest).exists(), "and is removed");
        assert_eq!(cache.get("sha256:nothex"), None);
    }
}
