//! Why a component could not be fetched, or was refused.

use std::path::PathBuf;
use std::time::Duration;

use crate::layout::LayoutError;
use crate::limits::{KEY_TIMEOUT_SECS, seconds};
use crate::reference::ReferenceError;
use crate::signature::{KeyError, SignatureFailure};

/// Why a component could not be fetched, or was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The reference is not valid.
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    /// A public key cannot be used.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The registry could not be reached, refused the request, or does not have it.
    #[error("failed to fetch {reference}: {reason}")]
    Fetch {
        /// The reference.
        reference: String,
        /// What failed, in the client's words (never with credentials).
        reason: String,
    },
    /// The registry served bytes whose digest is not the one asked for.
    #[error(
        "refusing {reference}: the registry served {what} whose digest is {actual}, not {expected}; nothing was loaded"
    )]
    Digest {
        /// The reference.
        reference: String,
        /// What was served (`a manifest`, `the component layer`).
        what: &'static str,
        /// The digest asked for (the pin, or the manifest's layer digest).
        expected: String,
        /// The digest of what was served.
        actual: String,
    },
    /// The registry sent more than Sluice reads: a manifest over its limit, or a blob
    /// longer than its descriptor says. The rest was not read (the connection was dropped).
    #[error(
        "refusing {reference}: the registry sent {what} of more than {limit} bytes, {}; the rest was not read and nothing was loaded",
        bound_rule(*.key)
    )]
    TooLarge {
        /// The reference.
        reference: String,
        /// What was read (`its manifest`, `the component layer`).
        what: &'static str,
        /// The bound, in bytes.
        limit: u64,
        /// The configuration key that sets the bound (`registry.max_manifest_bytes`), or
        /// `None` when the bound is the size the blob's descriptor gives.
        key: Option<&'static str>,
    },
    /// A request to the registry, its body included, did not complete in time.
    #[error(
        "failed to fetch {reference}: {what} did not arrive within {}, the deadline of every registry request (raise it with {KEY_TIMEOUT_SECS} in sluice.toml)",
        seconds(*.after)
    )]
    Deadline {
        /// The reference.
        reference: String,
        /// What was asked for (`its manifest`, `the component layer`).
        what: &'static str,
        /// The deadline that passed ([`crate::Limits::timeout`]).
        after: Duration,
    },
    /// The artifact is not a component in the WebAssembly layout.
    #[error("refusing {reference} ({digest}): {reason}")]
    Layout {
        /// The reference.
        reference: String,
        /// The manifest (or layer) digest.
        digest: String,
        /// What is wrong with it.
        #[source]
        reason: LayoutError,
    },
    /// The signature check failed.
    #[error("refusing {reference} ({digest}): signature check failed: {failure}")]
    Signature {
        /// The reference.
        reference: String,
        /// The manifest digest whose signature was checked.
        digest: String,
        /// What failed.
        failure: SignatureFailure,
    },
    /// A push or a signature was refused before anything was sent (a reference without a
    /// tag, bytes that are not a component), or the registry did not take the push (it
    /// cannot be reached, or refused it; the client's error with its causes).
    #[error("did not publish to {reference}: {reason}")]
    Publish {
        /// The reference pushed or signed.
        reference: String,
        /// Why, and what is allowed.
        reason: String,
    },
    /// The lock file cannot be read or written.
    #[error("the lock file {path}: {reason}")]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The cache cannot be written.
    #[error("failed to write the component cache {path}: {reason}")]
    Cache {
        /// The cache directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// How a [`RegistryError::TooLarge`] message names its bound.
fn bound_rule(key: Option<&'static str>) -> String {
    match key {
        Some(key) => format!("the limit {key} sets (raise it in sluice.toml)"),
        None => "the size its descriptor in the manifest gives".into(),
    }
}
