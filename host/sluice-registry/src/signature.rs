//! cosign key-pair signatures, as `cosign sign --key` stores them in a registry: an OCI
//! image manifest tagged `sha256-<hex>.sig` in the component's repository, each layer a
//! *simple signing* payload (`application/vnd.dev.cosign.simplesigning.v1+json`) with its
//! base64 signature in the annotation `dev.cosignproject.cosign/signature`. A payload
//! names the digest it signs in `critical.image.docker-manifest-digest`.
//!
//! A component is verified when at least one layer's signature verifies with one of the
//! configured public keys ([`PublicKey`]: ECDSA P-256 and P-384, Ed25519, RSA) and its
//! payload names the component's manifest digest. Keyless signatures (Fulcio certificates,
//! Rekor entries) are not checked: only key-pair signatures verify.
//!
//! The crypto is `ring`'s, the provider of the rustls that Sluice's TLS already runs on; the
//! key is read with RustCrypto's `spki`. The `sigstore` crate (0.15) does the same checks
//! but builds only with `aws-lc-rs` or OpenSSL as its crypto: a second crypto stack, built
//! from C (aws-lc-sys took ~45 MB of a debug target directory here), for four signature
//! algorithms.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use ring::signature::{self as sig, UnparsedPublicKey, VerificationAlgorithm};
use serde::{Deserialize, Serialize};
use spki::der::DecodePem as _;
use spki::der::referenced::OwnedToRef as _;
use spki::{ObjectIdentifier, SubjectPublicKeyInfoOwned};

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

/// A public key that may sign components (`verify.key`): the subject public key of a PEM
/// `PUBLIC KEY` and the signature algorithms cosign signs with for its kind of key.
#[derive(Clone)]
pub struct PublicKey {
    name: String,
    kind: &'static str,
    key: Vec<u8>,
    algorithms: &'static [&'static dyn VerificationAlgorithm],
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublicKey")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// `id-ecPublicKey` (RFC 5480).
pub(crate) const EC_PUBLIC_KEY: ObjectIdentifier =
    ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
/// `secp256r1` (RFC 5480).
pub(crate) const P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
/// `secp384r1` (RFC 5480).
const P384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");
/// `rsaEncryption` (RFC 8017).
const RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
/// `id-Ed25519` (RFC 8410).
const ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");

/// What cosign signs with a P-256 key: SHA-256.
static P256_ALGORITHMS: [&dyn VerificationAlgorithm; 1] = [&sig::ECDSA_P256_SHA256_ASN1];
/// What cosign signs with a P-384 key: SHA-256 (its default), or SHA-384.
static P384_ALGORITHMS: [&dyn VerificationAlgorithm; 2] =
    [&sig::ECDSA_P384_SHA256_ASN1, &sig::ECDSA_P384_SHA384_ASN1];
/// What cosign signs with an RSA key: PKCS#1 v1.5 over SHA-256.
static RSA_ALGORITHMS: [&dyn VerificationAlgorithm; 1] = [&sig::RSA_PKCS1_2048_8192_SHA256];
/// Ed25519 (pure).
static ED25519_ALGORITHMS: [&dyn VerificationAlgorithm; 1] = [&sig::ED25519];

/// The key kinds Sluice verifies, as messages list them.
const SUPPORTED: &str = "ECDSA P-256 or P-384, Ed25519, RSA 2048-8192 bits";

impl PublicKey {
    /// Reads a PEM public key (`-----BEGIN PUBLIC KEY-----`, as `cosign generate-key-pair`
    /// writes `cosign.pub`), named in messages by its path.
    ///
    /// # Errors
    /// [`KeyError`] when the file cannot be read or holds no public key of a supported
    /// algorithm.
    pub fn load(path: &Path) -> Result<PublicKey, KeyError> {
        let pem =
            sluice_operator_files::read_regular(path, sluice_operator_files::MAX_SECRET_FILE_BYTES)
                .map_err(|e| KeyError {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                })?;
        PublicKey::from_pem(&path.display().to_string(), &pem).map_err(|e| KeyError {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
    }

    /// A key from PEM text (a `PUBLIC KEY`, the X.509 SubjectPublicKeyInfo), named `name` in
    /// messages. The signatures it verifies are the ones cosign makes with such a key
    /// (sigstore's `signature` package, which cosign signs with): ECDSA P-256 over SHA-256
    /// (what `cosign generate-key-pair` makes), ECDSA P-384 over SHA-256 or SHA-384
    /// (cosign's default hash, or `--signing-algorithm ecdsa-sha2-384-nistp384`), Ed25519,
    /// and RSA PKCS#1 v1.5 over SHA-256, all DER-encoded as cosign stores them.
    ///
    /// # Errors
    /// [`PublicKeyError`] when the text is not a PEM public key, or one of another algorithm
    /// (P-521 among them: `ring`, the crypto the rest of Sluice's TLS uses, has no P-521).
    pub fn from_pem(name: &str, pem: &[u8]) -> Result<PublicKey, PublicKeyError> {
        let spki = SubjectPublicKeyInfoOwned::from_pem(pem).map_err(PublicKeyError::NotPem)?;
        let (algorithm, parameters) = spki
            .algorithm
            .owned_to_ref()
            .oids()
            .map_err(PublicKeyError::Algorithm)?;
        let (kind, algorithms): (&'static str, &'static [&'static dyn VerificationAlgorithm]) =
            match (algorithm, parameters) {
                (EC_PUBLIC_KEY, Some(P256)) => ("ECDSA P-256", &P256_ALGORITHMS),
                (EC_PUBLIC_KEY, Some(P384)) => ("ECDSA P-384", &P384_ALGORITHMS),
                (RSA, _) => ("RSA", &RSA_ALGORITHMS),
                (ED25519, _) => ("Ed25519", &ED25519_ALGORITHMS),
                (EC_PUBLIC_KEY, Some(curve)) => return Err(PublicKeyError::Curve(curve)),
                (other, _) => return Err(PublicKeyError::Unsupported(other)),
            };
        let key = spki
            .subject_public_key
            .as_bytes()
            .ok_or(PublicKeyError::PartialByte)?
            .to_vec();
        Ok(PublicKey {
            name: name.to_string(),
            kind,
            key,
            algorithms,
        })
    }

    /// How messages name the key (its path).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kind of key (`ECDSA P-256`, `ECDSA P-384`, `Ed25519`, `RSA`).
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    fn verifies(&self, signature_b64: &str, payload: &[u8]) -> bool {
        let Ok(signature) = base64::engine::general_purpose::STANDARD.decode(signature_b64.trim())
        else {
            return false;
        };
        self.algorithms.iter().any(|algorithm| {
            UnparsedPublicKey::new(*algorithm, &self.key)
                .verify(payload, &signature)
                .is_ok()
        })
    }
}

/// A SubjectPublicKeyInfo as PEM: `key` under `algorithm` with `parameters`.
// Infallible: DER lengths fail only past 256 MiB, and the keys here are ring's public keys of
// at most 97 bytes.
#[allow(clippy::expect_used)]
pub(crate) fn spki_pem(
    algorithm: ObjectIdentifier,
    parameters: Option<&ObjectIdentifier>,
    key: &[u8],
) -> String {
    let spki = spki::SubjectPublicKeyInfoRef {
        algorithm: spki::AlgorithmIdentifierRef {
            oid: algorithm,
            parameters: parameters.map(spki::der::AnyRef::from),
        },
        subject_public_key: spki::der::asn1::BitStringRef::from_bytes(key)
            .expect("a key of whole bytes"),
    };
    spki::der::EncodePem::to_pem(&spki, spki::der::pem::LineEnding::LF)
        .expect("a SubjectPublicKeyInfo encodes")
}

/// Why PEM text is not a public key Sluice verifies with ([`PublicKey::from_pem`]).
#[derive(Debug, thiserror::Error)]
pub enum PublicKeyError {
    /// Not PEM, or not a `PUBLIC KEY` in it.
    #[error("it is not a PEM public key (-----BEGIN PUBLIC KEY-----): {0}")]
    NotPem(#[source] spki::der::Error),
    /// The algorithm identifier does not decode.
    #[error("its algorithm identifier cannot be read: {0}")]
    Algorithm(#[source] spki::der::Error),
    /// An ECDSA key on a curve `ring` does not verify.
    #[error(
        "it is an ECDSA key on the curve {0}, which Sluice does not verify (supported: {SUPPORTED})"
    )]
    Curve(ObjectIdentifier),
    /// A key of another algorithm.
    #[error(
        "it is a key of the algorithm {0}, which Sluice does not verify (supported: {SUPPORTED})"
    )]
    Unsupported(ObjectIdentifier),
    /// The key's bit string ends mid-byte.
    #[error("its public key is not a whole number of bytes")]
    PartialByte,
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
        "it is not signed: the registry has no cosign signature for it (looked for the tag {tag}); sign it with `sluice tools sign REF --key FILE` (docs/components.md#publishing)"
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
    use crate::signing::KeyPair;

    const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    fn key_pair(name: &str) -> (KeyPair, PublicKey) {
        let pair = KeyPair::generate().unwrap();
        let key = PublicKey::from_pem(name, pair.public_key_pem().as_bytes()).unwrap();
        (pair, key)
    }

    fn layer(pair: &KeyPair, digest: &str) -> SignatureLayer {
        pair.sign("127.0.0.1:5000/tools/wc", digest).unwrap()
    }

    #[test]
    fn a_signature_verifies_only_with_its_key_and_for_its_digest() {
        let (signer, key) = key_pair("cosign.pub");
        assert_eq!(key.kind(), "ECDSA P-256");
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
        assert_eq!(
            verify(D2, &[tampered], std::slice::from_ref(&key)),
            Err(SignatureFailure::OtherKey {
                count: 1,
                keys: "cosign.pub".into()
            })
        );
        let unsigned = SignatureLayer {
            payload: payload("r", D1),
            signature: None,
        };
        assert_eq!(
            verify(D1, &[unsigned], std::slice::from_ref(&key)),
            Err(SignatureFailure::OtherKey {
                count: 1,
                keys: "cosign.pub".into()
            })
        );
        let garbled = SignatureLayer {
            signature: Some("not base64!".into()),
            ..layer(&signer, D1)
        };
        assert_eq!(
            verify(D1, &[garbled], &[key]),
            Err(SignatureFailure::OtherKey {
                count: 1,
                keys: "cosign.pub".into()
            })
        );
    }

    /// A signature `cosign sign --key` made, with its public key and payload: the test
    /// vector of sigstore-rs (`src/cosign/signature_layers.rs`,
    /// `build_correct_signature_layer_without_bundle`; public data, no private key), so the
    /// format checked is cosign's own and not only this crate's signer's.
    #[test]
    fn a_signature_made_by_cosign_verifies() {
        const COSIGN_PUB: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAENptdY/l3nB0yqkXLBWkZWQwo6+cu
OSWS1X9vPavpiQOoTTGC0xX57OojUadxF1cdQmrsiReWg2Wn4FneJfa8xw==
-----END PUBLIC KEY-----";
        const DIGEST: &str =
            "sha256:f3cfc9d0dbf931d3db4685ec659b7ac68e2a578219da4aae65427886e649b06b";
        let payload = format!(
            r#"{{"critical":{{"identity":{{"docker-reference":"registry-testing.svc.lan/busybox"}},"image":{{"docker-manifest-digest":"{DIGEST}"}},"type":"cosign container image signature"}},"optional":null}}"#
        );
        let signature = "MEUCIQD6q/COgzOyW0YH1Dk+CCYSt4uAhm3FDHUwvPI55zwnlwIgE0ZK58ZOWpZw8YVmBapJhBqCfdPekIknimuO0xH8Jh8=";
        let key = PublicKey::from_pem("cosign.pub", COSIGN_PUB.as_bytes()).unwrap();
        let layer = SignatureLayer {
            payload: payload.into_bytes(),
            signature: Some(signature.into()),
        };
        assert_eq!(
            verify(
                DIGEST,
                std::slice::from_ref(&layer),
                std::slice::from_ref(&key)
            ),
            Ok("cosign.pub".into())
        );
        let mut flipped = layer.clone();
        flipped.payload[20] ^= 1;
        assert_eq!(
            verify(DIGEST, &[flipped], &[key]),
            Err(SignatureFailure::OtherKey {
                count: 1,
                keys: "cosign.pub".into()
            })
        );
    }

    #[test]
    fn p384_and_ed25519_keys_verify_what_they_signed() {
        let rng = ring::rand::SystemRandom::new();
        let payload = payload("reg/wc", D1);
        let alg = &sig::ECDSA_P384_SHA384_ASN1_SIGNING;
        let pkcs8 = sig::EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        let p384 = sig::EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap();
        let ed_pkcs8 = sig::Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let ed = sig::Ed25519KeyPair::from_pkcs8(ed_pkcs8.as_ref()).unwrap();
        use sig::KeyPair as _;
        let cases = [
            (
                "ECDSA P-384",
                spki_pem(EC_PUBLIC_KEY, Some(&P384), p384.public_key().as_ref()),
                p384.sign(&rng, &payload).unwrap().as_ref().to_vec(),
            ),
            (
                "Ed25519",
                spki_pem(ED25519, None, ed.public_key().as_ref()),
                ed.sign(&payload).as_ref().to_vec(),
            ),
        ];
        for (kind, pem, signature) in cases {
            let key = PublicKey::from_pem("k.pub", pem.as_bytes()).unwrap();
            assert_eq!(key.kind(), kind);
            let layer = SignatureLayer {
                payload: payload.clone(),
                signature: Some(base64::engine::general_purpose::STANDARD.encode(&signature)),
            };
            assert_eq!(verify(D1, &[layer], &[key]), Ok("k.pub".into()), "{kind}");
        }
    }

    #[test]
    fn keys_of_other_algorithms_are_refused_by_name() {
        // An X25519 key (RFC 8410 example): a key, but not one that signs.
        let x25519 = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VuAyEAhSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo=\n-----END PUBLIC KEY-----\n";
        let e = PublicKey::from_pem("x.pub", x25519.as_bytes()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it is a key of the algorithm 1.3.101.110, which Sluice does not verify (supported: ECDSA P-256 or P-384, Ed25519, RSA 2048-8192 bits)"
        );
        let e = PublicKey::from_pem("x.pub", b"not a key")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("it is not a PEM public key"), "{e}");
        let private = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n-----END PRIVATE KEY-----\n";
        let e = PublicKey::from_pem("x.pub", private.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("it is not a PEM public key"), "{e}");
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
    }
}
