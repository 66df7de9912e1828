//! Making cosign key-pair signatures, as `cosign generate-key-pair` and `cosign sign --key`
//! make them: an ECDSA P-256 [`KeyPair`] (cosign's default kind of key), its two files, and
//! the signature layer for a component's manifest digest that [`crate::signature::verify`]
//! (and cosign) verify.
//!
//! The files [`KeyPair::write`] makes and [`KeyPair::load`] reads:
//! - `PREFIX.key`: the private key, PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), not
//!   encrypted, created with mode 0600. `openssl` reads it, and `cosign import-key-pair
//!   --key PREFIX.key` turns it into a cosign key file.
//! - `PREFIX.pub`: the public key, PEM (`-----BEGIN PUBLIC KEY-----`), what `verify.key`
//!   names, byte for byte the format of `cosign.pub`.
//!
//! cosign's own private key files (`ENCRYPTED SIGSTORE PRIVATE KEY`: scrypt and NaCl
//! secretbox under `COSIGN_PASSWORD`) are not read; [`KeyPair::load`] says so by name. A key
//! made by cosign signs with cosign, and Sluice verifies that signature the same way.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use ring::signature::{self as sig, KeyPair as _};
use spki::der::pem::LineEnding;

use crate::signature::{EC_PUBLIC_KEY, P256, PublicKey, SignatureLayer, payload, spki_pem};

/// The PEM label of a PKCS#8 private key.
const PRIVATE_KEY_LABEL: &str = "PRIVATE KEY";

/// An ECDSA P-256 key pair that signs components: made by [`KeyPair::generate`] or read
/// from a PKCS#8 file by [`KeyPair::load`]. Its private half leaves the process only
/// through [`KeyPair::write`].
pub struct KeyPair {
    pair: sig::EcdsaKeyPair,
    /// The PKCS#8 document (DER) the pair was made from, for [`KeyPair::write`].
    pkcs8: Vec<u8>,
    rng: ring::rand::SystemRandom,
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyPair").finish_non_exhaustive()
    }
}

/// The files of a key pair: `PREFIX.key` and `PREFIX.pub`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyFiles {
    /// The private key (PKCS#8 PEM, mode 0600).
    pub private_key: PathBuf,
    /// The public key (PEM), for `verify.key`.
    pub public_key: PathBuf,
}

impl KeyFiles {
    /// The files of the key pair at `prefix`: `PREFIX.key` and `PREFIX.pub` (the names
    /// `cosign generate-key-pair --output-key-prefix PREFIX` uses).
    pub fn at(prefix: &Path) -> KeyFiles {
        let with = |extension: &str| {
            let mut name = prefix.as_os_str().to_owned();
            name.push(extension);
            PathBuf::from(name)
        };
        KeyFiles {
            private_key: with(".key"),
            public_key: with(".pub"),
        }
    }
}

/// A signing key that cannot be made, read or written.
#[derive(Debug, thiserror::Error)]
#[error("cannot use the signing key {path}: {reason}")]
pub struct SigningKeyError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// Why a key pair cannot be made or read, or cannot sign.
#[derive(Debug, thiserror::Error)]
pub enum SigningError {
    /// The system has no random source to make a key from.
    #[error("no random source for a key pair")]
    NoRandomSource,
    /// The PKCS#8 key is not an ECDSA P-256 private key (`ring`'s reason, which is no
    /// `std::error::Error` without its `std` feature, so it is shown, not chained).
    #[error(
        "it is not an ECDSA P-256 private key ({0}); Sluice signs with P-256 keys, cosign's default kind (make one with `sluice tools keygen`)"
    )]
    NotP256(ring::error::KeyRejected),
    /// Signing failed (no random source for the signature's nonce).
    #[error("signing failed")]
    Failed,
}

impl KeyPair {
    /// A new key pair from the system's random source.
    ///
    /// # Errors
    /// [`SigningError::NoRandomSource`] when the system has no random source.
    pub fn generate() -> Result<KeyPair, SigningError> {
        let rng = ring::rand::SystemRandom::new();
        let alg = &sig::ECDSA_P256_SHA256_ASN1_SIGNING;
        let pkcs8 = sig::EcdsaKeyPair::generate_pkcs8(alg, &rng)
            .map_err(|_| SigningError::NoRandomSource)?;
        KeyPair::from_pkcs8(pkcs8.as_ref().to_vec())
    }

    fn from_pkcs8(pkcs8: Vec<u8>) -> Result<KeyPair, SigningError> {
        let rng = ring::rand::SystemRandom::new();
        let pair =
            sig::EcdsaKeyPair::from_pkcs8(&sig::ECDSA_P256_SHA256_ASN1_SIGNING, &pkcs8, &rng)
                .map_err(SigningError::NotP256)?;
        Ok(KeyPair { pair, pkcs8, rng })
    }

    /// Reads the private key at `path`: PKCS#8 PEM of an ECDSA P-256 key, as
    /// [`KeyPair::write`] and `openssl genpkey -algorithm EC -pkeyopt
    /// ec_paramgen_curve:P-256` write it.
    ///
    /// # Errors
    /// [`SigningKeyError`] when the file cannot be read (a missing file, not a regular
    /// file, over 1 MiB) or holds something else, named: cosign's encrypted key file, a SEC1
    /// `EC PRIVATE KEY` (with the `openssl pkcs8` command that converts it), a public key,
    /// a key of another algorithm or curve.
    pub fn load(path: &Path) -> Result<KeyPair, SigningKeyError> {
        let fail = |reason: String| SigningKeyError {
            path: path.to_path_buf(),
            reason,
        };
        let pem =
            sluice_operator_files::read_regular(path, sluice_operator_files::MAX_SECRET_FILE_BYTES)
                .map_err(|e| fail(e.to_string()))?;
        let (label, der) = spki::der::pem::decode_vec(&pem).map_err(|e| {
            fail(format!(
                "it is not a PEM private key (-----BEGIN {PRIVATE_KEY_LABEL}-----): {e}"
            ))
        })?;
        match label {
            PRIVATE_KEY_LABEL => KeyPair::from_pkcs8(der).map_err(|e| fail(e.to_string())),
            "ENCRYPTED SIGSTORE PRIVATE KEY" | "ENCRYPTED COSIGN PRIVATE KEY" => Err(fail(
                "it is cosign's encrypted key file, which Sluice does not decrypt; sign with `cosign sign --key` (Sluice verifies that signature the same way), or make a key with `sluice tools keygen`".into(),
            )),
            "EC PRIVATE KEY" => Err(fail(format!(
                "it is a SEC1 EC private key; convert it to PKCS#8 with `openssl pkcs8 -topk8 -nocrypt -in {} -out KEY.pem`",
                path.display()
            ))),
            "PUBLIC KEY" => Err(fail(
                "it is a public key; signing needs the private key (the .key file of the pair)"
                    .into(),
            )),
            other => Err(fail(format!(
                "it is a PEM `{other}`, not a private key (-----BEGIN {PRIVATE_KEY_LABEL}-----)"
            ))),
        }
    }

    /// Writes the pair to [`KeyFiles::at`] `prefix`, never over an existing file: the
    /// private key with mode 0600, then the public key. Both or neither: when the second
    /// cannot be written the first is removed.
    ///
    /// # Errors
    /// [`SigningKeyError`] naming a file that already exists, or one that cannot be
    /// written (with the OS error).
    pub fn write(&self, prefix: &Path) -> Result<KeyFiles, SigningKeyError> {
        let files = KeyFiles::at(prefix);
        for path in [&files.private_key, &files.public_key] {
            if path.symlink_metadata().is_ok() {
                return Err(SigningKeyError {
                    path: path.clone(),
                    reason: "it already exists, and a key is never overwritten; move it away or choose another prefix (--output-key-prefix)".into(),
                });
            }
        }
        write_new(&files.private_key, 0o600, self.private_key_pem().as_bytes())?;
        if let Err(e) = write_new(&files.public_key, 0o644, self.public_key_pem().as_bytes()) {
            let _ = std::fs::remove_file(&files.private_key);
            return Err(e);
        }
        Ok(files)
    }

    /// The private key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`, LF line endings).
    pub fn private_key_pem(&self) -> String {
        spki::der::pem::encode_string(PRIVATE_KEY_LABEL, LineEnding::LF, &self.pkcs8)
            .unwrap_or_default()
    }

    /// The public key as PEM (`-----BEGIN PUBLIC KEY-----`, LF line endings), what
    /// `cosign.pub` holds and [`PublicKey::from_pem`] reads.
    pub fn public_key_pem(&self) -> String {
        spki_pem(EC_PUBLIC_KEY, Some(&P256), self.pair.public_key().as_ref())
    }

    /// The public key, named `name` in messages.
    pub fn public_key(&self, name: &str) -> PublicKey {
        // A P-256 SubjectPublicKeyInfo made just above: it reads back.
        PublicKey::from_pem(name, self.public_key_pem().as_bytes())
            .unwrap_or_else(|e| unreachable!("a P-256 public key reads back: {e}"))
    }

    /// The cosign signature layer for `digest` of `repository` (`REGISTRY/REPOSITORY`): the
    /// simple signing [`payload`] and its DER ECDSA signature, base64, as `cosign sign --key`
    /// stores them.
    ///
    /// # Errors
    /// [`SigningError::Failed`] when signing fails (no random source).
    pub fn sign(&self, repository: &str, digest: &str) -> Result<SignatureLayer, SigningError> {
        let payload = payload(repository, digest);
        let signature = self
            .pair
            .sign(&self.rng, &payload)
            .map_err(|_| SigningError::Failed)?;
        Ok(SignatureLayer {
            payload,
            signature: Some(base64::engine::general_purpose::STANDARD.encode(signature.as_ref())),
        })
    }
}

/// Creates `path` (which must not exist) with `mode` and writes `bytes` to disk.
fn write_new(path: &Path, mode: u32, bytes: &[u8]) -> Result<(), SigningKeyError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let fail = |e: std::io::Error| SigningKeyError {
        path: path.to_path_buf(),
        reason: format!("cannot write it: {e}"),
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(fail)?;
    file.write_all(bytes).map_err(fail)?;
    file.sync_all().map_err(fail)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;
    use crate::signature::verify;

    const DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

    /// A pair written and read back signs what its written public key verifies; the files
    /// have cosign's names and PEM labels, the private one mode 0600.
    #[test]
    fn a_written_pair_reads_back_and_its_public_key_verifies_its_signatures() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("release");
        let files = KeyPair::generate().unwrap().write(&prefix).unwrap();
        assert_eq!(files.private_key, dir.path().join("release.key"));
        assert_eq!(files.public_key, dir.path().join("release.pub"));
        let private = std::fs::read_to_string(&files.private_key).unwrap();
        assert!(
            private.starts_with("-----BEGIN PRIVATE KEY-----\n"),
            "{private}"
        );
        assert!(
            private.ends_with("-----END PRIVATE KEY-----\n"),
            "{private}"
        );
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&files.private_key), 0o600);
        let loaded = KeyPair::load(&files.private_key).unwrap();
        let public = PublicKey::load(&files.public_key).unwrap();
        assert_eq!(public.kind(), "ECDSA P-256");
        let layer = loaded.sign("127.0.0.1:5000/tools/wc", DIGEST).unwrap();
        let name = files.public_key.display().to_string();
        assert_eq!(verify(DIGEST, &[layer], &[public]), Ok(name));
    }

    #[test]
    fn an_existing_file_is_never_overwritten_and_nothing_is_half_written() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("sluice");
        std::fs::write(dir.path().join("sluice.pub"), "mine").unwrap();
        let e = KeyPair::generate().unwrap().write(&prefix).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "cannot use the signing key {}: it already exists, and a key is never overwritten; move it away or choose another prefix (--output-key-prefix)",
                dir.path().join("sluice.pub").display()
            )
        );
        assert!(!dir.path().join("sluice.key").exists());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("sluice.pub")).unwrap(),
            "mine"
        );
    }

    /// What is not a P-256 PKCS#8 key is refused by what it is, with what to do.
    #[test]
    fn other_files_are_refused_by_what_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let reason = |text: &str| {
            let path = dir.path().join("k");
            std::fs::write(&path, text).unwrap();
            let e = KeyPair::load(&path).unwrap_err();
            assert_eq!(e.path, path);
            e.reason
        };
        let pem = |label: &str, der: &[u8]| {
            spki::der::pem::encode_string(label, LineEnding::LF, der).unwrap()
        };
        assert!(
            reason(&pem("ENCRYPTED SIGSTORE PRIVATE KEY", b"{}"))
                .starts_with("it is cosign's encrypted key file, which Sluice does not decrypt;")
        );
        assert!(
            reason(&pem("EC PRIVATE KEY", b"x")).starts_with(
                "it is a SEC1 EC private key; convert it to PKCS#8 with `openssl pkcs8"
            )
        );
        let pair = KeyPair::generate().unwrap();
        assert_eq!(
            reason(&pair.public_key_pem()),
            "it is a public key; signing needs the private key (the .key file of the pair)"
        );
        assert_eq!(
            reason(&pem("CERTIFICATE", b"x")),
            "it is a PEM `CERTIFICATE`, not a private key (-----BEGIN PRIVATE KEY-----)"
        );
        assert!(reason("not pem").starts_with("it is not a PEM private key"));
        // An Ed25519 PKCS#8 key (RFC 8410's example): a private key, of another kind.
        let ed25519 = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n-----END PRIVATE KEY-----\n";
        assert!(
            reason(ed25519).starts_with("it is not an ECDSA P-256 private key ("),
            "{}",
            reason(ed25519)
        );
        let missing = KeyPair::load(&dir.path().join("none.key")).unwrap_err();
        assert!(
            missing
                .to_string()
                .starts_with("cannot use the signing key ")
        );
    }
}
