//! Components from OCI registries, fetched as safely as they are run.
//!
//! - [`OciReference`]: `oci://REGISTRY/REPOSITORY:TAG` or `…@sha256:…`.
//! - [`Fetcher::fetch`]: a component in the WebAssembly OCI artifact layout (one
//!   `application/wasm` layer), from the content-addressed [`BlobCache`] when the reference
//!   is pinned (by its digest, or by [`Lock`], `sluice.lock`) and from the registry
//!   otherwise, with every digest checked and, when public keys are given, a cosign
//!   key-pair signature for the manifest digest verified ([`signature`]), all before the
//!   caller sees a byte. A component that fails any check is a [`RegistryError`] naming the
//!   reference, the digest and what failed.
//! - [`Limits`]: every body read from a registry is bounded (a manifest by
//!   [`Limits::max_manifest_bytes`], a blob by its descriptor's size, streamed to the cache
//!   with its digest checked on the way) and every request has a deadline
//!   ([`Limits::timeout`]); what a registry says is [`limits::quoted`] in messages.
//! - [`auth::Credentials`]: from the environment or the docker config file, never logged.
//! - [`Fetcher::push`] and [`Fetcher::sign`] publish: the layout `wkg oci push` and
//!   `cosign sign --key` write, with keys from [`signing::KeyPair`] (`sluice tools push`,
//!   `sign` and `keygen`); [`push_component`] and [`push_signature`] are the raw steps.
//!
//! Plain HTTP is spoken only to loopback registries, or to a registry the caller marks
//! `insecure`. Keyless signing (Fulcio certificates, Rekor transparency entries) is out of
//! scope: only key-pair signatures verify.
//!
//! ```no_run
//! use sluice_registry::{Fetcher, Lock, OciReference, Request, Resolve};
//!
//! # async fn run() -> Result<(), sluice_registry::RegistryError> {
//! let reference = OciReference::parse("oci://127.0.0.1:5000/tools/wc:1.0")?;
//! let fetcher = Fetcher::new("/var/cache/sluice/components/oci");
//! let mut lock = Lock::load("sluice.lock".as_ref())?;
//! let fetched = fetcher
//!     .fetch(&Request { reference: &reference, keys: &[], insecure: false }, &mut lock, Resolve::Locked)
//!     .await?;
//! lock.save()?;
//! println!("{} is {} ({} bytes)", reference, fetched.digest, fetched.wasm.len());
//! # Ok(()) }
//! ```

pub mod auth;
pub mod cache;
mod error;
mod layout;
pub mod limits;
pub mod lock;
mod publish;
mod pull;
pub mod reference;
mod remote;
pub mod signature;
pub mod signing;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use auth::Credentials;
pub use cache::BlobCache;
pub use error::RegistryError;
pub use layout::{LayoutError, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};
pub use limits::Limits;
pub use lock::{LOCK_FILE_NAME, Lock, LockEntry};
pub use publish::{Pushed, Signed};
pub use reference::{OciReference, ReferenceError, sha256_digest};
pub use signature::{KeyError, PublicKey, PublicKeyError, SignatureFailure, SignatureLayer};
pub use signing::{KeyFiles, KeyPair, SigningError, SigningKeyError};

use crate::remote::{Remote, signature_layers, wasm_layer};

/// What to fetch.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The component.
    pub reference: &'a OciReference,
    /// Public keys, any of which may have signed it; empty: no signature check.
    pub keys: &'a [PublicKey],
    /// Speak plain HTTP to this (non-loopback) registry.
    pub insecure: bool,
}

/// How a tag reference is resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolve {
    /// The lock's digest for the reference when it has one (no network when the cache has
    /// the blobs), else the registry's.
    Locked,
    /// The registry's digest for the tag, whatever the lock says (`sluice tools update`).
    Update,
}

/// How a component's signature was checked.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase", tag = "status")]
pub enum SignatureStatus {
    /// No keys were given; nothing was checked.
    NotChecked,
    /// A cosign signature verified.
    Verified {
        /// The key it verified with (its path).
        key: String,
        /// The digest of the signature manifest.
        signature: String,
    },
}

/// A fetched, verified component.
#[derive(Clone, Debug)]
pub struct Fetched {
    /// The reference as asked for.
    pub reference: OciReference,
    /// The manifest digest (what a pin names).
    pub digest: String,
    /// The digest of the `application/wasm` layer (the component's own sha256).
    pub component_digest: String,
    /// The component.
    pub wasm: Arc<Vec<u8>>,
    /// The signature check.
    pub signature: SignatureStatus,
    /// True when nothing was asked of the registry.
    pub from_cache: bool,
    /// Time spent getting the manifest and the component (cache or registry).
    pub pull_time: Duration,
    /// Time spent on the signature (fetching it and verifying).
    pub verify_time: Duration,
}

type CredentialSource = dyn Fn(&str) -> Credentials + Send + Sync;

/// Fetches components into a [`BlobCache`].
#[derive(Clone)]
pub struct Fetcher {
    cache: BlobCache,
    credentials: Arc<CredentialSource>,
    limits: Limits,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("cache", &self.cache.dir())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    /// A fetcher caching under `cache_dir`, with the process's credentials
    /// ([`Credentials::from_process`]).
    pub fn new(cache_dir: impl Into<PathBuf>) -> Fetcher {
        Fetcher {
            cache: BlobCache::new(cache_dir),
            credentials: Arc::new(Credentials::from_process),
            limits: Limits::default(),
        }
    }

    /// The same fetcher with `limits` on what it reads from registries (default
    /// [`Limits::default`]).
    pub fn with_limits(self, limits: Limits) -> Fetcher {
        Fetcher { limits, ..self }
    }

    /// The limits on what this fetcher reads from registries.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The same fetcher with credentials from `credentials` (by registry).
    pub fn with_credentials(
        self,
        credentials: impl Fn(&str) -> Credentials + Send + Sync + 'static,
    ) -> Fetcher {
        Fetcher {
            credentials: Arc::new(credentials),
            ..self
        }
    }

    /// The cache.
    pub fn cache(&self) -> &BlobCache {
        &self.cache
    }

    /// Fetches and verifies `request`'s component and records its digests in `lock` (the
    /// caller saves it):
    /// 1. the manifest digest: the reference's own, else (with [`Resolve::Locked`]) the
    ///    lock's, else the registry's for the tag;
    /// 2. the manifest and its one `application/wasm` layer, from the cache or the
    ///    registry, each checked against its digest;
    /// 3. with keys: a cosign signature for the manifest digest (from the cache when the
    ///    lock names one that still verifies, else from the registry) that verifies with
    ///    one of the keys and names that digest.
    ///
    /// # Errors
    /// [`RegistryError`] naming the reference, the digest and what failed; nothing is
    /// returned for a component that fails a check.
    pub async fn fetch(
        &self,
        request: &Request<'_>,
        lock: &mut Lock,
        resolve: Resolve,
    ) -> Result<Fetched, RegistryError> {
        let reference = request.reference;
        let key = reference.to_string();
        let locked = lock.get(&key).cloned();
        let pin = reference
            .digest()
            .map(str::to_string)
            .or_else(|| match resolve {
                Resolve::Locked => locked.as_ref().map(|e| e.digest.clone()),
                Resolve::Update => None,
            });
        let started = Instant::now();
        // Built on first use: a pinned, cached component needs no client at all.
        let client = std::sync::OnceLock::new();
        let remote = || -> &Remote {
            client.get_or_init(|| {
                Remote::new(
                    reference,
                    request.insecure,
                    &(self.credentials)(reference.registry()),
                    self.limits,
                )
            })
        };
        let (manifest, digest, mut from_cache) = match &pin {
            Some(d) => match self.cache.get(d) {
                Some(raw) => (raw, d.clone(), true),
                None => {
                    let (raw, digest) = remote().manifest(&reference.pinned(d)).await?;
                    (raw, digest, false)
                }
            },
            None => {
                let (raw, digest) = remote().manifest(reference).await?;
                (raw, digest, false)
            }
        };
        let pinned = reference.pinned(&digest);
        let layer = wasm_layer(&manifest).map_err(|reason| RegistryError::Layout {
            reference: key.clone(),
            digest: digest.clone(),
            reason,
        })?;
        let wasm = match self.cache.get(&layer.digest) {
            Some(bytes) => bytes,
            None => {
                from_cache = false;
                remote()
                    .blob(
                        &pinned,
                        &layer,
                        "the component layer",
                        (
                            self.limits.max_component_bytes,
                            Some(limits::KEY_MAX_COMPONENT_BYTES),
                        ),
                        &self.cache,
                    )
                    .await?
            }
        };
        self.store(&manifest)?;
        let pull_time = started.elapsed();

        let started = Instant::now();
        let (signature, signature_digest) = if request.keys.is_empty() {
            (SignatureStatus::NotChecked, None)
        } else {
            let cached = locked
                .as_ref()
                .filter(|e| e.digest == digest)
                .and_then(|e| e.signature.as_ref())
                .and_then(|s| self.cached_signature(s).map(|layers| (s.clone(), layers)));
            let verified = match cached {
                Some((sig_digest, layers)) => signature::verify(&digest, &layers, request.keys)
                    .ok()
                    .map(|key| (key, sig_digest)),
                None => None,
            };
            let (key, sig_digest) = match verified {
                Some(v) => v,
                None => {
                    from_cache = false;
                    let (sig_digest, layers) = self
                        .fetch_signature(remote(), &pinned, &digest)
                        .await?
                        .ok_or_else(|| RegistryError::Signature {
                            reference: key.clone(),
                            digest: digest.clone(),
                            failure: SignatureFailure::Unsigned {
                                tag: signature::signature_tag(&digest),
                            },
                        })?;
                    let key_name =
                        signature::verify(&digest, &layers, request.keys).map_err(|failure| {
                            RegistryError::Signature {
                                reference: key.clone(),
                                digest: digest.clone(),
                                failure,
                            }
                        })?;
                    (key_name, sig_digest)
                }
            };
            (
                SignatureStatus::Verified {
                    key,
                    signature: sig_digest.clone(),
                },
                Some(sig_digest),
            )
        };
        let verify_time = started.elapsed();

        lock.insert(LockEntry {
            reference: key,
            digest: digest.clone(),
            component: layer.digest.clone(),
            signature: signature_digest,
        });
        Ok(Fetched {
            reference: reference.clone(),
            digest,
            component_digest: layer.digest,
            wasm: Arc::new(wasm),
            signature,
            from_cache,
            pull_time,
            verify_time,
        })
    }

    /// The cosign signature layers the registry holds for `digest` of `reference`'s
    /// repository (`None` when it holds none), with the signature manifest's digest. The
    /// manifest and payloads are cached.
    ///
    /// # Errors
    /// [`RegistryError`] when the registry cannot be asked, or serves a payload whose
    /// digest is not the one its manifest names.
    pub async fn signatures(
        &self,
        reference: &OciReference,
        digest: &str,
        insecure: bool,
    ) -> Result<Option<(String, Vec<SignatureLayer>)>, RegistryError> {
        let remote = Remote::new(
            reference,
            insecure,
            &(self.credentials)(reference.registry()),
            self.limits,
        );
        self.fetch_signature(&remote, &reference.pinned(digest), digest)
            .await
    }

    async fn fetch_signature(
        &self,
        remote: &Remote,
        pinned: &OciReference,
        digest: &str,
    ) -> Result<Option<(String, Vec<SignatureLayer>)>, RegistryError> {
        let tag = signature::signature_tag(digest);
        let Some((raw, sig_digest)) = remote.signature_manifest(pinned, &tag).await? else {
            return Ok(None);
        };
        let descriptors = signature_layers(&raw).map_err(|reason| RegistryError::Layout {
            reference: pinned.with_tag(&tag).to_string(),
            digest: sig_digest.clone(),
            reason,
        })?;
        let mut layers = Vec::new();
        for (descriptor, signature) in descriptors {
            let payload = match self.cache.get(&descriptor.digest) {
                Some(p) => p,
                None => {
                    remote
                        .blob(
                            pinned,
                            &descriptor,
                            "a signature payload",
                            (limits::MAX_SIGNATURE_PAYLOAD_BYTES, None),
                            &self.cache,
                        )
                        .await?
                }
            };
            layers.push(SignatureLayer { payload, signature });
        }
        self.store(&raw)?;
        Ok(Some((sig_digest, layers)))
    }

    /// The signature layers of the cached signature manifest `digest`, when the cache
    /// holds it and all its payloads.
    fn cached_signature(&self, digest: &str) -> Option<Vec<SignatureLayer>> {
        let raw = self.cache.get(digest)?;
        signature_layers(&raw)
            .ok()?
            .into_iter()
            .map(|(descriptor, signature)| {
                self.cache
                    .get(&descriptor.digest)
                    .map(|payload| SignatureLayer { payload, signature })
            })
            .collect()
    }

    fn store(&self, bytes: &[u8]) -> Result<(), RegistryError> {
        self.cache
            .put(bytes)
            .map(drop)
            .map_err(|e| RegistryError::Cache {
                path: self.cache.dir().to_path_buf(),
                reason: e.to_string(),
            })
    }
}

/// Pushes `wasm` to `reference` (which names a tag) as a component artifact: one
/// `application/wasm` layer under an `application/vnd.wasm.config.v0+json` config, the
/// layout `wkg oci push` writes. Returns the manifest digest.
///
/// # Errors
/// [`RegistryError::Fetch`] when the registry refuses the push.
pub async fn push_component(
    reference: &OciReference,
    wasm: &[u8],
    insecure: bool,
    credentials: &Credentials,
) -> Result<String, RegistryError> {
    Remote::new(reference, insecure, credentials, Limits::default())
        .push_component(reference, wasm)
        .await
}

/// Pushes cosign signature `layers` for `digest` into `reference`'s repository under the
/// tag cosign uses (`sha256-<hex>.sig`), replacing what was there. Returns the signature
/// manifest's digest.
///
/// # Errors
/// [`RegistryError::Fetch`] when the registry refuses the push.
pub async fn push_signature(
    reference: &OciReference,
    digest: &str,
    layers: &[SignatureLayer],
    insecure: bool,
    credentials: &Credentials,
) -> Result<String, RegistryError> {
    Remote::new(reference, insecure, credentials, Limits::default())
        .push_signature(reference, &signature::signature_tag(digest), layers)
        .await
}
