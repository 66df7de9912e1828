//! What a configuration says about OCI registries, without the client that talks to them:
//! the `oci://` reference grammar ([`OciReference`]), the bounds of one fetch ([`Limits`]) and
//! the lock file's name ([`LOCK_FILE_NAME`]). `sluice-config` reads these and links no HTTP
//! or TLS stack; `sluice-registry`, which fetches, re-exports them all under the same paths.

pub mod limits;
pub mod reference;

pub use limits::Limits;
pub use reference::{OciReference, ReferenceError};

/// The lock file's name, beside `sluice.toml`: the digest every `oci://` reference resolved to.
pub const LOCK_FILE_NAME: &str = "sluice.lock";
