//! `oci://REGISTRY/REPOSITORY:TAG` and `oci://REGISTRY/REPOSITORY@sha256:…` references, as
//! an operator writes them in a policy (`component = "oci://…"`) or on the command line.
//!
//! The registry is always explicit (no implicit Docker Hub), and a reference names a tag, a
//! digest, or both (`repo:tag@sha256:…`, where the digest decides). Only SHA-256 digests
//! are accepted, as 64 lowercase hex digits.

use std::fmt;
use std::net::IpAddr;

/// The scheme every reference starts with.
pub const SCHEME: &str = "oci://";

/// What a reference looks like, for error messages.
pub const REFERENCE_RULE: &str = "oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:<64 hex digits> (REGISTRY is a host name or address with an optional :PORT)";

/// A parsed `oci://` reference.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OciReference {
    registry: String,
    repository: String,
    tag: Option<String>,
    digest: Option<String>,
}

/// Why a reference cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid component reference {reference:?}: {reason}; a reference is {REFERENCE_RULE}")]
pub struct ReferenceError {
    /// The reference as written.
    pub reference: String,
    /// What is wrong with it.
    pub reason: String,
}

impl OciReference {
    /// Parses `text`, which must start with [`SCHEME`].
    ///
    /// # Errors
    /// [`ReferenceError`] naming what is wrong: no `oci://`, no registry or repository, no
    /// tag or digest, a digest that is not `sha256:` and 64 lowercase hex digits, or a
    /// repository or tag the OCI distribution grammar does not allow.
    pub fn parse(text: &str) -> Result<OciReference, ReferenceError> {
        let fail = |reason: &str| ReferenceError {
            reference: text.to_string(),
            reason: reason.to_string(),
        };
        let rest = text
            .strip_prefix(SCHEME)
            .ok_or_else(|| fail("it does not start with oci://"))?;
        let (registry, path) = rest
            .split_once('/')
            .ok_or_else(|| fail("it names no repository after the registry"))?;
        let registry_ok = !registry.is_empty()
            && registry
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b));
        if !registry_ok {
            return Err(fail(
                "the registry must be a host name or address with an optional :PORT",
            ));
        }
        let (name_tag, digest) = match path.split_once('@') {
            Some((n, d)) => (n, Some(d)),
            None => (path, None),
        };
        // A `:` after the last `/` starts the tag.
        let (repository, tag) = match name_tag.rsplit_once(':') {
            Some((n, t)) if !t.contains('/') => (n, Some(t)),
            _ => (name_tag, None),
        };
        if !valid_repository(repository) {
            return Err(fail(
                "the repository must be lowercase path components of letters and digits separated by `.`, `_`, `__` or `-` and joined by `/`",
            ));
        }
        if let Some(t) = tag
            && !valid_tag(t)
        {
            return Err(fail(
                "a tag is 1 to 128 characters of letters, digits, `_`, `.` and `-`, not starting with `.` or `-`",
            ));
        }
        if let Some(d) = digest
            && !valid_digest(d)
        {
            return Err(fail(
                "the digest must be sha256: followed by 64 lowercase hex digits",
            ));
        }
        if tag.is_none() && digest.is_none() {
            return Err(fail(
                "it names neither a tag (:1.0) nor a digest (@sha256:…); Sluice does not assume :latest",
            ));
        }
        Ok(OciReference {
            registry: registry.to_string(),
            repository: repository.to_string(),
            tag: tag.map(str::to_string),
            digest: digest.map(str::to_string),
        })
    }

    /// The registry, `host[:port]`.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The repository, `a/b/c`.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag, if the reference names one.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The digest (`sha256:…`), if the reference pins one.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// The same repository pinned to `digest` (no tag): `oci://REGISTRY/REPOSITORY@digest`.
    pub fn pinned(&self, digest: &str) -> OciReference {
        OciReference {
            registry: self.registry.clone(),
            repository: self.repository.clone(),
            tag: None,
            digest: Some(digest.to_string()),
        }
    }

    /// The same repository at `tag` (no digest).
    pub fn with_tag(&self, tag: &str) -> OciReference {
        OciReference {
            registry: self.registry.clone(),
            repository: self.repository.clone(),
            tag: Some(tag.to_string()),
            digest: None,
        }
    }

    /// True when the registry is this machine: `localhost` or a loopback address (127.0.0.0/8,
    /// `::1`). Sluice speaks plain HTTP only to these, unless the policy says `insecure`.
    pub fn is_loopback(&self) -> bool {
        let host = match self.registry.strip_prefix('[') {
            Some(rest) => rest.split(']').next().unwrap_or(rest),
            None => self.registry.split(':').next().unwrap_or(&self.registry),
        };
        host.eq_ignore_ascii_case("localhost")
            || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

impl fmt::Display for OciReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

/// True for `sha256:` followed by 64 lowercase hex digits.
pub fn valid_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The OCI distribution grammar for repository names: path components of lowercase
/// letters and digits, separated within a component by `.`, `_`, `__` or runs of `-`.
fn valid_repository(repository: &str) -> bool {
    !repository.is_empty()
        && repository.len() <= 255
        && repository.split('/').all(|component| {
            let bytes = component.as_bytes();
            let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
            !bytes.is_empty()
                && alnum(bytes[0])
                && alnum(bytes[bytes.len() - 1])
                && bytes
                    .iter()
                    .all(|&b| alnum(b) || b == b'.' || b == b'_' || b == b'-')
                && !component.contains("..")
                && !component.contains("___")
                && !component.contains("._")
                && !component.contains("_.")
        })
}

/// `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`.
fn valid_tag(tag: &str) -> bool {
    let bytes = tag.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && (bytes[0].is_ascii_alphanumeric() || bytes[0] == b'_')
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn tags_and_digests_parse_and_print_back() {
        let r = OciReference::parse("oci://127.0.0.1:5000/tools/wc:1.0").unwrap();
        assert_eq!(r.registry(), "127.0.0.1:5000");
        assert_eq!(r.repository(), "tools/wc");
        assert_eq!(r.tag(), Some("1.0"));
        assert_eq!(r.digest(), None);
        assert_eq!(r.to_string(), "oci://127.0.0.1:5000/tools/wc:1.0");
        assert!(r.is_loopback());
        assert_eq!(
            r.pinned(D).to_string(),
            format!("oci://127.0.0.1:5000/tools/wc@{D}")
        );

        let r = OciReference::parse(&format!("oci://ghcr.io/acme/wc@{D}")).unwrap();
        assert_eq!(r.tag(), None);
        assert_eq!(r.digest(), Some(D));
        assert!(!r.is_loopback());

        let r = OciReference::parse(&format!("oci://[::1]:5000/wc:v2@{D}")).unwrap();
        assert_eq!((r.tag(), r.digest()), (Some("v2"), Some(D)));
        assert!(r.is_loopback());
        assert!(
            OciReference::parse("oci://localhost/a:b")
                .unwrap()
                .is_loopback()
        );
    }

    #[test]
    fn bad_references_say_what_is_wrong() {
        let reason = |text: &str| OciReference::parse(text).unwrap_err().reason;
        assert!(reason("ghcr.io/acme/wc:1").contains("does not start with oci://"));
        assert!(reason("oci://ghcr.io").contains("no repository"));
        assert!(reason("oci://ghcr.io/acme/wc").contains("neither a tag"));
        assert!(reason("oci://ghcr.io/Acme/wc:1").contains("lowercase"));
        assert!(reason("oci://ghcr.io/acme/wc:-x").contains("a tag is"));
        assert!(reason("oci://ghcr.io/acme/wc@sha256:abc").contains("64 lowercase hex"));
        assert!(reason("oci://ghcr.io/acme/wc@md5:abc").contains("sha256:"));
        assert!(reason("oci://gh cr.io/acme/wc:1").contains("registry"));
        let e = OciReference::parse("oci://x/").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("invalid component reference \"oci://x/\"")
        );
    }

    #[test]
    fn digests_are_sha256_hex() {
        assert!(valid_digest(D));
        assert!(!valid_digest(&D.to_uppercase()));
        assert!(!valid_digest(&D[..70]));
    }
}
