//! cosign key-pair signatures, as `cosign sign --key` stores them in a registry: an OCI
//! image manifest tagged `sha256-<hex>.sig` in the component's repository, each layer a
//! *simple signing* payload (`application/vnd.dev.cosign.simplesigning.v1+json`) with its
//! base64 signature in the annotation `dev.cosignproject.cosign/signature`. A payload
//! names the digest it signs in `critical.image.docker-manifest-digest`.
//!
//! A component is verified when at least one layer's signature verifies with one of the
//! configured public keys (the `sigstore` crate's [`CosignVerificationKey`]: ECDSA P-256,
//! P-384 and P-521, Ed25519, RSA) and its payload names the component's manifest digest.
//! Keyless signatures (Fulcio certificates, Rekor entries) are not checked: only
//! key-pair signatures verify.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sigstore::crypto::{CosignVerificationKey, Signature};

/// The media type of a simple signing payload layer.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";

/// The annotation holding a layer's base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

/// The `critical.type` of a cosign payload.
pub const PAYLOAD_TYPE: &str = "cosign container image signature";

/// The tag cosign stores the signatures of `digest` under: `sha256-<hex>.sig`.
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replace(':', "-"))
}

/// The simple signing payload cosign signs for `digest` of `repository`
/// (`REGISTRY/REPOSITORY`), as compact JSON.
pub fn payload(repository: &str, digest: &str) -> Vec<u8> {
    let payload = SimpleSigning {
        critical: Critical {
            identity: Identity {
                docker_reference: repository.to_string(),
            },
            image: Image {
                docker_manifest_digest: digest.to_string(),
            },
            kind: PAYLOAD_TYPE.to_string(),
        },
    };
    serde_json::to_vec(&payload).unwrap_or_default()
}

#[derive(Serialize, Deserialize)]
struct SimpleSigning {
    critical: Critical,
}

#[derive(Serialize, Deserialize)]
struct Critical {
    identity: Identity,
    image: Image,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Serialize, Deserialize)]
struct Identity {
    #[serde(rename = "docker-reference")]
    docker_reference: String,
}

#[derive(Serialize, Deserialize)]
struct Image {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: String,
}

/// A public key that may sign components (`verify.key`).
#[derive(Clone, Debug)]
pub struct PublicKey {
    name: String,
    key: CosignVerificationKey,
}

impl PublicKey {
    /// Reads a PEM public key (`-----BEGIN PUBLIC KEY-----`, as `cosign generate-key-pair`
    /// writes `cosign.pub`), named in messages by its path.
    ///
    /// # Errors
    /// [`KeyError`] when the file cannot be read or holds no public key of a supported
    /// algorithm.
    pub fn load(path: &Path) -> Result<PublicKey, KeyError> {
        let pem = std::fs::read(path).map_err(|e| KeyError {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        PublicKey::from_pem(&path.display().to_string(), &pem).map_err(|reason| KeyError {
            path: path.to_path_buf(),
            reason,
        })
    }

    /// A key from PEM text, named `name` in messages.
    ///
    /// # Errors
    /// The parser's reason when the text is not a public key of a supported algorithm.
    pub fn from_pem(name: &str, pem: &[u8]) -> Result<PublicKey, String> {
        let key = CosignVerificationKey::try_from_pem(pem).map_err(|e| {
            format!(
                "it is not a PEM public key of a supported algorithm (ECDSA P-256/384/521, Ed25519, RSA): {e}"
            )
        })?;
        Ok(PublicKey {
            name: name.to_string(),
            key,
        })
    }

    /// How messages name the key (its path).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn verifies(&self, signature_b64: &str, payload: &[u8]) -> bool {
        self.key
            .verify_signature(Signature::Base64Encoded(signature_b64.as_bytes()), payload)
            .is_ok()
    }
}

/// A public key file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("cannot use the public key {path}: {reason}")]
pub struct KeyError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// One signature layer: the payload and its base64 signature (absent when the layer has
/// no signature annotation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureLayer {
    /// The payload bytes, as stored in the registry.
    pub payload: Vec<u8>,
    /// The base64 signature over `payload`.
    pub signature: Option<String>,
}

/// Why a component's signature check failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureFailure {
    /// The registry has no signature manifest for the digest.
    #[error(
        "it is not signed: the registry has no cosign signature for it (looked for the tag {tag})"
    )]
    Unsigned {
        /// The tag looked for.
        tag: String,
    },
    /// Signatures exist, but none verifies with the configured keys.
    #[error(
        "none of its {count} cosign signature(s) verifies with the configured key(s) {keys}: it was signed by another key"
    )]
    OtherKey {
        /// Signature layers found.
        count: usize,
        /// The configured keys, comma-separated.
        keys: String,
    },
    /// A signature verifies, but it signs another digest (a signature copied from another
    /// component).
    #[error(
        "the cosign signature that verifies with {key} signs {signed}, not this digest: it belongs to another component"
    )]
    OtherDigest {
        /// The key it verified with.
        key: String,
        /// The digest its payload names.
        signed: String,
    },
}

/// Checks `layers` (the signature layers stored for `digest` under [`signature_tag`])
/// against `keys`: `Ok` with the name of the key that verified when one layer's signature
/// verifies and its payload names `digest` as a cosign payload.
///
/// # Errors
/// [`SignatureFailure::OtherDigest`] when a signature verifies but signs another digest,
/// else [`SignatureFailure::OtherKey`] (also for a layer without a signature).
pub fn verify(
    digest: &str,
    layers: &[SignatureLayer],
    keys: &[PublicKey],
) -> Result<String, SignatureFailure> {
    let mut other_digest = None;
    for layer in layers {
        let Some(signature) = &layer.signature else {
            continue;
        };
        for key in keys {
            if !key.verifies(signature, &layer.payload) {
                continue;
            }
            match serde_json::from_slice::<SimpleSigning>(&layer.payload) {
                Ok(p)
                    if p.critical.image.docker_manifest_digest == digest
                        && p.critical.kind == PAYLOAD_TYPE =>
                {
                    return Ok(key.name.clone());
                }
                Ok(p) => {
                    other_digest = Some(SignatureFailure::OtherDigest {
                        key: key.name.clone(),
                        signed: p.critical.image.docker_manifest_digest,
                    });
                }
                Err(e) => {
                    other_digest = Some(SignatureFailure::OtherDigest {
                        key: key.name.clone(),
                        signed: format!("a payload that is not a cosign payload ({e})"),
                    });
                }
            }
        }
    }
    Err(other_digest.unwrap_or_else(|| SignatureFailure::OtherKey {
        count: layers.len(),
        keys: keys
            .iter()
            .map(|k| k.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use sigstore::crypto::SigningScheme;

    const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    fn key_pair(name: &str) -> (sigstore::crypto::SigStoreSigner, PublicKey) {
        let signer = SigningScheme::ECDSA_P256_SHA256_ASN1
            .create_signer()
            .unwrap();
        let pem = signer
            .to_sigstore_keypair()
            .unwrap()
            .public_key_to_pem()
            .unwrap();
        let key = PublicKey::from_pem(name, pem.as_bytes()).unwrap();
        (signer, key)
    }

    fn layer(signer: &sigstore::crypto::SigStoreSigner, digest: &str) -> SignatureLayer {
        let payload = payload("127.0.0.1:5000/tools/wc", digest);
        let signature =
            base64::engine::general_purpose::STANDARD.encode(signer.sign(&payload).unwrap());
        SignatureLayer {
            payload,
            signature: Some(signature),
        }
    }

    #[test]
    fn a_signature_verifies_only_with_its_key_and_for_its_digest() {
        let (signer, key) = key_pair("cosign.pub");
        let (other_signer, other_key) = key_pair("other.pub");
        let signed = [layer(&signer, D1)];
        assert_eq!(
            verify(D1, &signed, std::slice::from_ref(&key)),
            Ok("cosign.pub".into())
        );
        assert_eq!(
            verify(D1, &signed, &[other_key.clone(), key.clone()]),
            Ok("cosign.pub".into()),
            "any configured key may have signed it"
        );
        assert_eq!(
            verify(D1, &[layer(&other_signer, D1)], std::slice::from_ref(&key)),
            Err(SignatureFailure::OtherKey {
                count: 1,
                keys: "cosign.pub".into()
            })
        );
        assert_eq!(
            verify(D2, &signed, std::slice::from_ref(&key)),
            Err(SignatureFailure::OtherDigest {
                key: "cosign.pub".into(),
                signed: D1.into()
            })
        );
        let mut tampered = layer(&signer, D1);
        tampered.payload = payload("127.0.0.1:5000/tools/wc", D2);
        assert!(matches!(
            verify(D2, &[tampered], std::slice::from_ref(&key)),
            Err(SignatureFailure::OtherKey { .. })
        ));
        let unsigned = SignatureLayer {
            payload: payload("r", D1),
            signature: None,
        };
        assert!(matches!(
            verify(D1, &[unsigned], &[key]),
            Err(SignatureFailure::OtherKey { count: 1, .. })
        ));
    }

    #[test]
    fn the_payload_is_cosigns_simple_signing_format() {
        let p: serde_json::Value = serde_json::from_slice(&payload("reg/wc", D1)).unwrap();
        assert_eq!(
            p,
            serde_json::json!({"critical": {"identity": {"docker-reference": "reg/wc"}, "image": {"docker-manifest-digest": D1}, "type": "cosign container image signature"}})
        );
        assert_eq!(
            signature_tag(D1),
            "sha256-1111111111111111111111111111111111111111111111111111111111111111.sig"
        );
        let e = PublicKey::from_pem("x.pub", b"not a key").unwrap_err();
        assert!(e.contains("not a PEM public key"), "{e}");
    }
}
