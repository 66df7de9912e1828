//! Publishing components: [`Fetcher::push`] stores a component in the WebAssembly OCI
//! layout Sluice reads, and [`Fetcher::sign`] adds a cosign key-pair signature for its
//! manifest digest beside the ones already there, then reads it back and verifies it.
//!
//! The on-registry format (what `wkg oci push` and `cosign sign --key` write, and what
//! [`Fetcher::fetch`] checks) is described in docs/components.md#publishing.

use serde::Serialize;

use crate::layout::LayoutError;
use crate::remote::{Remote, wasm_layer};
use crate::signature::{self, SignatureFailure};
use crate::signing::KeyPair;
use crate::{Fetcher, OciReference, RegistryError, sha256_digest};

/// What [`Fetcher::push`] stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pushed {
    /// The reference pushed to (`oci://REGISTRY/REPOSITORY:TAG`).
    pub reference: String,
    /// The manifest digest the registry now serves for the tag.
    pub digest: String,
    /// The reference pinned to that digest, for `component = "…"` in sluice.toml.
    pub pinned: String,
    /// The digest of the component itself (its `application/wasm` layer).
    pub component: String,
    /// The component's size, in bytes.
    pub bytes: usize,
}

/// What [`Fetcher::sign`] did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Signed {
    /// The component's reference, pinned to the digest signed.
    pub reference: String,
    /// The manifest digest signed.
    pub digest: String,
    /// The signature manifest's digest (tag `sha256-<hex>.sig`).
    pub signature: String,
    /// How many signatures the registry now holds for the digest.
    pub signatures: usize,
    /// False when the digest already had a signature by this key: nothing was pushed.
    pub added: bool,
}

impl Fetcher {
    /// Pushes `wasm` to `reference`, which names a tag, as a component artifact (one
    /// `application/wasm` layer under an `application/vnd.wasm.config.v0+json` config), with
    /// this fetcher's credentials for the registry.
    ///
    /// # Errors
    /// [`RegistryError::Publish`] for a reference with a digest or bytes that are not a
    /// component, before anything is sent; [`RegistryError::Fetch`] when the registry
    /// refuses the push.
    pub async fn push(
        &self,
        reference: &OciReference,
        wasm: &[u8],
        insecure: bool,
    ) -> Result<Pushed, RegistryError> {
        let refuse = |reason: String| RegistryError::Publish {
            reference: reference.to_string(),
            reason,
        };
        if reference.digest().is_some() || reference.tag().is_none() {
            return Err(refuse(
                "a push names a tag (oci://REGISTRY/REPOSITORY:TAG), not a digest: the registry computes the digest".into(),
            ));
        }
        if let Some(reason) = sluice_operator_files::not_a_component(wasm) {
            return Err(refuse(reason.into()));
        }
        let remote = self.remote(reference, insecure);
        let digest = remote.push_component(reference, wasm).await?;
        Ok(Pushed {
            reference: reference.to_string(),
            pinned: reference.pinned(&digest).to_string(),
            digest,
            component: sha256_digest(wasm),
            bytes: wasm.len(),
        })
    }

    /// Signs the component `reference` names (a tag, resolved now, or a digest) with `pair`:
    /// the cosign payload for its manifest digest, added to the signatures the registry
    /// already holds for it (none is removed), then read back and verified with the pair's
    /// public key. Signing a digest this key already signed pushes nothing.
    ///
    /// # Errors
    /// [`RegistryError::Layout`] when the reference is not a component artifact (Sluice
    /// signs only what it loads); [`RegistryError::Fetch`] when the registry cannot be
    /// read or refuses the push; [`RegistryError::Signature`] when the signature read back
    /// does not verify.
    pub async fn sign(
        &self,
        reference: &OciReference,
        pair: &KeyPair,
        insecure: bool,
    ) -> Result<Signed, RegistryError> {
        let remote = self.remote(reference, insecure);
        let (raw, digest) = remote.manifest(reference).await?;
        wasm_layer(&raw).map_err(|reason| RegistryError::Layout {
            reference: reference.to_string(),
            digest: digest.clone(),
            reason: LayoutError::NotSigned(Box::new(reason)),
        })?;
        let pinned = reference.pinned(&digest);
        let public = pair.public_key("the signing key");
        let existing = self.fetch_signature(&remote, &pinned, &digest).await?;
        let mut layers = existing.map(|(_, layers)| layers).unwrap_or_default();
        let already = signature::verify(&digest, &layers, std::slice::from_ref(&public)).is_ok();
        if !already {
            let repository = format!("{}/{}", reference.registry(), reference.repository());
            let layer = pair
                .sign(&repository, &digest)
                .map_err(|e| RegistryError::Publish {
                    reference: pinned.to_string(),
                    reason: e.to_string(),
                })?;
            layers.push(layer);
            remote
                .push_signature(&pinned, &signature::signature_tag(&digest), &layers)
                .await?;
        }
        // Read back what the registry now serves, and verify it as a load would.
        let failure = |failure| RegistryError::Signature {
            reference: pinned.to_string(),
            digest: digest.clone(),
            failure,
        };
        let (signature_digest, stored) = self
            .fetch_signature(&remote, &pinned, &digest)
            .await?
            .ok_or_else(|| {
                failure(SignatureFailure::Unsigned {
                    tag: signature::signature_tag(&digest),
                })
            })?;
        signature::verify(&digest, &stored, std::slice::from_ref(&public)).map_err(failure)?;
        Ok(Signed {
            reference: pinned.to_string(),
            digest,
            signature: signature_digest,
            signatures: stored.len(),
            added: !already,
        })
    }

    fn remote(&self, reference: &OciReference, insecure: bool) -> Remote {
        Remote::new(
            reference,
            insecure,
            &(self.credentials)(reference.registry()),
            self.limits,
        )
    }
}
