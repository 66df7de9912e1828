//! What Sluice reads from a registry, at most, and for how long, as configuration sets it
//! (`[registry]`, `docs/configuration.md#registry`): the largest manifest, the largest
//! component, one request's deadline, with their keys and defaults.

use std::time::Duration;

/// The configuration key of [`Limits::max_manifest_bytes`].
pub const KEY_MAX_MANIFEST_BYTES: &str = "registry.max_manifest_bytes";

/// The configuration key of [`Limits::max_component_bytes`].
pub const KEY_MAX_COMPONENT_BYTES: &str = "registry.max_component_bytes";

/// The configuration key of [`Limits::timeout`] (whole seconds).
pub const KEY_TIMEOUT_SECS: &str = "registry.timeout_secs";

/// [`Limits::max_manifest_bytes`] when not set: 4 MiB, the size the OCI distribution spec
/// asks every registry to accept (component and cosign manifests are under 2 KiB).
pub const DEFAULT_MAX_MANIFEST_BYTES: u64 = 4 << 20;

/// [`Limits::max_component_bytes`] when not set: 256 MiB.
pub const DEFAULT_MAX_COMPONENT_BYTES: u64 = 256 << 20;

/// [`Limits::timeout`] when not set: 60 seconds.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The bounds on what one fetch reads from a registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest manifest read (a component's, or its cosign signature manifest), in
    /// bytes; a longer one is refused unread past the limit. Default
    /// [`DEFAULT_MAX_MANIFEST_BYTES`]; `registry.max_manifest_bytes`.
    pub max_manifest_bytes: u64,
    /// The largest component layer pulled, in bytes; a layer whose descriptor gives more is
    /// refused before it is asked for. Default [`DEFAULT_MAX_COMPONENT_BYTES`];
    /// `registry.max_component_bytes`.
    pub max_component_bytes: u64,
    /// How long one request to a registry (a manifest, a blob, a token), its whole body
    /// included, may take. Default [`DEFAULT_TIMEOUT`]; `registry.timeout_secs`.
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_manifest_bytes: DEFAULT_MAX_MANIFEST_BYTES,
            max_component_bytes: DEFAULT_MAX_COMPONENT_BYTES,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_four_mib_256_mib_and_a_minute() {
        assert_eq!(
            Limits::default(),
            Limits {
                max_manifest_bytes: 4_194_304,
                max_component_bytes: 268_435_456,
                timeout: Duration::from_secs(60),
            }
        );
    }
}
