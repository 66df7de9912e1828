//! `oci://REGISTRY/REPOSITORY:TAG` and `oci://REGISTRY/REPOSITORY@sha256:…` references: the
//! grammar lives in [`sluice_registry_terms::reference`] (configuration reads it without this
//! crate's client) and is re-exported here whole; this module adds what fetching needs, the
//! digest of bytes and the reference as `oci-client` takes it.

use sha2::{Digest as _, Sha256};

pub use sluice_registry_terms::reference::*;

/// `sha256:` and the lowercase hex SHA-256 of `bytes`: the digest of a blob or manifest.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// `reference` as `oci-client` takes it (`REGISTRY/REPOSITORY:TAG@DIGEST`).
pub(crate) fn client_reference(reference: &OciReference) -> oci_client::Reference {
    let (registry, repository) = (reference.registry(), reference.repository());
    match (reference.tag(), reference.digest()) {
        (Some(t), Some(d)) => oci_client::Reference::with_tag_and_digest(
            registry.into(),
            repository.into(),
            t.into(),
            d.into(),
        ),
        (_, Some(d)) => {
            oci_client::Reference::with_digest(registry.into(), repository.into(), d.into())
        }
        (Some(t), None) => {
            oci_client::Reference::with_tag(registry.into(), repository.into(), t.into())
        }
        (None, None) => {
            oci_client::Reference::with_tag(registry.into(), repository.into(), "latest".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_sha256_hex() {
        assert_eq!(
            sha256_digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(valid_digest(&sha256_digest(b"x")));
    }

    #[test]
    fn client_references_keep_the_tag_and_digest() {
        let d = sha256_digest(b"");
        let r = OciReference::parse(&format!("oci://127.0.0.1:5000/tools/wc:1.0@{d}")).unwrap();
        assert_eq!(
            client_reference(&r).whole(),
            format!("127.0.0.1:5000/tools/wc:1.0@{d}")
        );
        let r = OciReference::parse("oci://127.0.0.1:5000/tools/wc:1.0").unwrap();
        assert_eq!(client_reference(&r).whole(), "127.0.0.1:5000/tools/wc:1.0");
    }
}
