//! The `[registry]` table: the bounds on what a fetch of an `oci://` component reads from a
//! registry ([`sluice_registry_terms::Limits`]; `docs/configuration.md#registry`).

use std::time::Duration;

use serde::Deserialize;
use sluice_registry_terms::Limits;

use crate::ConfigError;
use crate::file::Raw;
use crate::keys::{
    REGISTRY_MAX_COMPONENT_BYTES, REGISTRY_MAX_MANIFEST_BYTES, REGISTRY_TIMEOUT_SECS,
};

/// The largest `registry.max_manifest_bytes`: 64 MiB.
pub(crate) const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// The largest `registry.max_component_bytes`: 1 GiB (a component is held in memory to be
/// compiled).
pub(crate) const MAX_COMPONENT_BYTES: u64 = 1 << 30;

/// The largest `registry.timeout_secs`: one hour.
pub(crate) const MAX_TIMEOUT_SECS: u64 = 3600;

/// `[registry]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileRegistry {
    max_manifest_bytes: Option<Raw>,
    max_component_bytes: Option<Raw>,
    timeout_secs: Option<Raw>,
}

impl FileRegistry {
    /// The limits `[registry]` sets, the defaults for the keys it does not.
    pub(crate) fn resolve(&self, file_label: &str) -> Result<Limits, ConfigError> {
        Ok(Limits {
            max_manifest_bytes: REGISTRY_MAX_MANIFEST_BYTES
                .file_integer_or_default(self.max_manifest_bytes.as_ref(), file_label)?,
            max_component_bytes: REGISTRY_MAX_COMPONENT_BYTES
                .file_integer_or_default(self.max_component_bytes.as_ref(), file_label)?,
            timeout: Duration::from_secs(
                REGISTRY_TIMEOUT_SECS
                    .file_integer_or_default(self.timeout_secs.as_ref(), file_label)?,
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(text: &str) -> Result<Limits, String> {
        crate::test_support::resolve_text(text).map(|c| c.registry)
    }

    #[test]
    fn defaults_and_values() {
        assert_eq!(resolve("").unwrap(), Limits::default());
        assert_eq!(
            resolve("[registry]\nmax_manifest_bytes = 65536\nmax_component_bytes = 1048576\ntimeout_secs = 5\n")
                .unwrap(),
            Limits {
                max_manifest_bytes: 65536,
                max_component_bytes: 1 << 20,
                timeout: Duration::from_secs(5),
            }
        );
    }

    #[test]
    fn bad_values_name_the_key() {
        assert_eq!(
            resolve("[registry]\ntimeout_secs = 0\n").unwrap_err(),
            "registry.timeout_secs must be an integer from 1 to 3600 (seconds); got 0 (from <file> line 2)"
        );
        assert_eq!(
            resolve("[registry]\nmax_manifest_bytes = \"4MiB\"\n").unwrap_err(),
            "registry.max_manifest_bytes must be an integer from 1024 to 67108864 (bytes); got \"4MiB\" (from <file> line 2)"
        );
        let e = resolve("[registry]\ntimeout = 5\n").unwrap_err();
        assert!(e.contains("unknown field `timeout`"), "{e}");
    }
}
