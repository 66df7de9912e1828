//! The `[cache]` table: the bound on the cache of compiled components
//! (`docs/configuration.md#cache`; the cache itself: `sluice_runtime::engine::cache`).

use serde::Deserialize;

use crate::ConfigError;
use crate::file::Raw;
use crate::keys::CACHE_MAX_BYTES;

/// The key of the bound.
pub const KEY_CACHE_MAX_BYTES: &str = "cache.max_bytes";

/// The largest `cache.max_bytes`: 1 TiB.
pub(crate) const MAX_CACHE_BYTES: u64 = 1 << 40;

/// `[cache]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileCache {
    max_bytes: Option<Raw>,
}

impl FileCache {
    /// `cache.max_bytes` (0 to 1 TiB), or `None` when unset (the cache's own default,
    /// 512 MiB).
    pub(crate) fn resolve(&self, file_label: &str) -> Result<Option<u64>, ConfigError> {
        CACHE_MAX_BYTES.file_integer(self.max_bytes.as_ref(), file_label)
    }
}

#[cfg(test)]
mod tests {
    fn resolve(text: &str) -> Result<Option<u64>, String> {
        crate::test_support::resolve_text(text).map(|c| c.cache_max_bytes)
    }

    #[test]
    fn the_bound_is_unset_by_default_and_refused_out_of_range_by_name() {
        assert_eq!(resolve(""), Ok(None));
        assert_eq!(resolve("[cache]\nmax_bytes = 0\n"), Ok(Some(0)));
        assert_eq!(
            resolve("[cache]\nmax_bytes = 1073741824\n"),
            Ok(Some(1 << 30))
        );
        assert_eq!(
            resolve("[cache]\nmax_bytes = 1099511627777\n").unwrap_err(),
            "cache.max_bytes must be an integer from 0 to 1099511627776 (bytes); got 1099511627777 (from <file> line 2)"
        );
        assert_eq!(
            resolve("[cache]\nmax_bytes = \"512MiB\"\n").unwrap_err(),
            "cache.max_bytes must be an integer from 0 to 1099511627776 (bytes); got \"512MiB\" (from <file> line 2)"
        );
        let e = resolve("[cache]\ndir = \"/tmp\"\n").unwrap_err();
        assert!(e.contains("unknown field `dir`"), "{e}");
    }
}
