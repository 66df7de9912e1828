//! Talking to a registry with `oci-client`: manifests and blobs by digest or tag, checked
//! against their digests, and pushes in the WebAssembly artifact layout (one
//! `application/wasm` layer under an `application/vnd.wasm.config.v0+json` config, as
//! `wkg oci push` writes them).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::time::Duration;

use oci_client::client::{ClientConfig, ClientProtocol, ImageLayer};
use oci_client::manifest::{
    IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_INDEX_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciDescriptor,
    OciImageManifest,
};
use oci_client::secrets::RegistryAuth;

use sha2::{Digest as _, Sha256};

use crate::RegistryError;
use crate::auth::Credentials;
use crate::cache::BlobCache;
use crate::layout::{LayoutError, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};
use crate::limits::{KEY_MAX_MANIFEST_BYTES, Limits, quoted};
use crate::pull::{Failure, Http};
use crate::reference::{OciReference, client_reference, sha256_digest, valid_digest};
use crate::signature::{SIGNATURE_ANNOTATION, SIMPLE_SIGNING_MEDIA_TYPE, SignatureLayer};

/// The media types a component manifest is asked for in (an index is refused by name).
const MANIFEST_TYPES: [&str; 3] = [
    OCI_IMAGE_MEDIA_TYPE,
    IMAGE_MANIFEST_MEDIA_TYPE,
    OCI_IMAGE_INDEX_MEDIA_TYPE,
];

/// The media types a cosign signature manifest is asked for in.
const SIGNATURE_MANIFEST_TYPES: [&str; 2] = [OCI_IMAGE_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE];

/// How long connecting to a registry may take (pushes).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a read from a registry may stall (pushes).
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Makes `ring` the process's default rustls crypto provider unless one is installed
/// already. `oci-client` is built without a provider of its own (its default would be
/// aws-lc-rs, a second crypto stack beside the ring that the rest of Sluice's TLS uses), so
/// its reqwest client takes the process default, and panics when there is none.
fn install_crypto_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // An error means another provider was installed first: that one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Plain HTTP for `reference`'s registry when it is loopback or `insecure`, HTTPS
/// otherwise (and for every other registry).
fn protocol(reference: &OciReference, insecure: bool) -> ClientProtocol {
    if insecure || reference.is_loopback() {
        ClientProtocol::HttpsExcept(vec![reference.registry().to_string()])
    } else {
        ClientProtocol::Https
    }
}

/// A registry client for one reference's repository: pulls through [`Http`] (bounded),
/// pushes through `oci-client`.
pub(crate) struct Remote {
    client: oci_client::Client,
    auth: RegistryAuth,
    http: Http,
}

impl Remote {
    /// A client for `reference`'s registry: plain HTTP when the registry is loopback or
    /// `insecure`, HTTPS otherwise; pulls bounded by `limits`.
    pub(crate) fn new(
        reference: &OciReference,
        insecure: bool,
        credentials: &Credentials,
        limits: Limits,
    ) -> Self {
        let scheme = if insecure || reference.is_loopback() {
            "http"
        } else {
            "https"
        };
        let base = format!(
            "{scheme}://{}",
            client_reference(reference).resolve_registry()
        );
        let config = ClientConfig {
            protocol: protocol(reference, insecure),
            connect_timeout: Some(CONNECT_TIMEOUT),
            read_timeout: Some(READ_TIMEOUT),
            // A component is one artifact, never a platform of an image index.
            platform_resolver: None,
            ..ClientConfig::default()
        };
        install_crypto_provider();
        Remote {
            client: oci_client::Client::new(config),
            auth: credentials.to_client(),
            http: Http::new(base, reference.repository(), credentials, limits),
        }
    }

    /// The manifest `reference` names (by digest, or by tag), at most
    /// [`Limits::max_manifest_bytes`], with its digest computed from its bytes. When the
    /// reference has a digest, the bytes must have it.
    pub(crate) async fn manifest(
        &self,
        reference: &OciReference,
    ) -> Result<(Vec<u8>, String), RegistryError> {
        let what = "its manifest";
        let at = reference.digest().or(reference.tag()).unwrap_or("latest");
        let raw = self
            .http
            .get_bytes(
                &format!("manifests/{at}"),
                &MANIFEST_TYPES.join(", "),
                self.http.limits().max_manifest_bytes,
            )
            .await
            .map_err(|f| self.failure(reference, what, f, Some(KEY_MAX_MANIFEST_BYTES)))?;
        let actual = sha256_digest(&raw);
        if let Some(expected) = reference.digest()
            && actual != expected
        {
            return Err(RegistryError::Digest {
                reference: reference.to_string(),
                what: "a manifest",
                expected: expected.to_string(),
                actual,
            });
        }
        Ok((raw, actual))
    }

    /// The blob `descriptor` names, when its descriptor gives at most `limit` bytes
    /// (`limit_key` the key that sets `limit`, if one does): streamed into `cache` (never
    /// more bytes than the descriptor gives) with its digest checked on the way, stored
    /// there under its digest when it matches, and returned.
    pub(crate) async fn blob(
        &self,
        reference: &OciReference,
        descriptor: &OciDescriptor,
        what: &'static str,
        (limit, limit_key): (u64, Option<&'static str>),
        cache: &BlobCache,
    ) -> Result<Vec<u8>, RegistryError> {
        let layout = |reason: LayoutError| RegistryError::Layout {
            reference: reference.to_string(),
            digest: descriptor.digest.clone(),
            reason,
        };
        if !valid_digest(&descriptor.digest) {
            return Err(layout(LayoutError::Digest {
                what,
                digest: quoted(descriptor.digest.as_bytes()),
            }));
        }
        let Ok(size) = u64::try_from(descriptor.size) else {
            return Err(layout(LayoutError::NegativeSize { what }));
        };
        if size > limit {
            return Err(layout(LayoutError::OverLimit {
                what,
                size,
                limit,
                key: limit_key,
            }));
        }
        let cache_error = |e: std::io::Error| RegistryError::Cache {
            path: cache.dir().to_path_buf(),
            reason: e.to_string(),
        };
        let mut staged = cache.stage().map_err(cache_error)?;
        let mut hasher = Sha256::new();
        self.http
            .get(
                &format!("blobs/{}", descriptor.digest),
                "*/*",
                size,
                &mut |chunk| {
                    hasher.update(chunk);
                    staged.write_all(chunk)
                },
            )
            .await
            .map_err(|f| self.failure(reference, what, f, None))?;
        let actual = format!("sha256:{:x}", hasher.finalize());
        if actual != descriptor.digest {
            return Err(RegistryError::Digest {
                reference: reference.to_string(),
                what,
                expected: descriptor.digest.clone(),
                actual,
            });
        }
        let path = cache.commit(staged, &actual).map_err(cache_error)?;
        std::fs::read(&path).map_err(cache_error)
    }

    /// The cosign signature manifest stored for `digest` under `tag` (its raw bytes and
    /// digest, at most [`Limits::max_manifest_bytes`]), or `None` when the registry has
    /// none.
    pub(crate) async fn signature_manifest(
        &self,
        reference: &OciReference,
        tag: &str,
    ) -> Result<Option<(Vec<u8>, String)>, RegistryError> {
        let at = reference.with_tag(tag);
        match self
            .http
            .get_bytes(
                &format!("manifests/{tag}"),
                &SIGNATURE_MANIFEST_TYPES.join(", "),
                self.http.limits().max_manifest_bytes,
            )
            .await
        {
            Ok(raw) => {
                let digest = sha256_digest(&raw);
                Ok(Some((raw, digest)))
            }
            Err(Failure::NotFound { .. }) => Ok(None),
            Err(f) => Err(self.failure(
                &at,
                "its cosign signature manifest",
                f,
                Some(KEY_MAX_MANIFEST_BYTES),
            )),
        }
    }

    /// The error of a failed read of `what` of `reference`.
    fn failure(
        &self,
        reference: &OciReference,
        what: &'static str,
        failure: Failure,
        key: Option<&'static str>,
    ) -> RegistryError {
        let reference = reference.to_string();
        match failure {
            Failure::TooLarge { limit } => RegistryError::TooLarge {
                reference,
                what,
                limit,
                key,
            },
            Failure::Deadline => RegistryError::Deadline {
                reference,
                what,
                after: self.http.limits().timeout,
            },
            Failure::NotFound { body } => RegistryError::Fetch {
                reference,
                reason: format!("{what}: the registry does not have it (404 Not Found): {body}"),
            },
            Failure::Other(reason) => RegistryError::Fetch {
                reference,
                reason: format!("{what}: {reason}"),
            },
            Failure::Sink(e) => RegistryError::Fetch {
                reference,
                reason: format!("{what}: writing it to the cache failed: {e}"),
            },
        }
    }

    /// Pushes `wasm` as a component artifact at `reference` (a tag) and returns the
    /// manifest digest.
    pub(crate) async fn push_component(
        &self,
        reference: &OciReference,
        wasm: &[u8],
    ) -> Result<String, RegistryError> {
        let layer = ImageLayer::new(wasm.to_vec(), WASM_LAYER_MEDIA_TYPE.to_string(), None);
        let config = serde_json::json!({
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": [sha256_digest(wasm)],
        });
        let config = oci_client::client::Config::new(
            serde_json::to_vec(&config).unwrap_or_default(),
            WASM_CONFIG_MEDIA_TYPE.to_string(),
            None,
        );
        self.push(reference, &[layer], config).await
    }

    /// Pushes cosign signature `layers` (payload and base64 signature) for `digest` at
    /// `reference`'s repository under `tag`, and returns the signature manifest's digest.
    pub(crate) async fn push_signature(
        &self,
        reference: &OciReference,
        tag: &str,
        layers: &[SignatureLayer],
    ) -> Result<String, RegistryError> {
        let layers: Vec<ImageLayer> = layers
            .iter()
            .map(|l| {
                let annotations = l
                    .signature
                    .as_ref()
                    .map(|s| BTreeMap::from([(SIGNATURE_ANNOTATION.to_string(), s.clone())]));
                ImageLayer::new(
                    l.payload.clone(),
                    SIMPLE_SIGNING_MEDIA_TYPE.to_string(),
                    annotations,
                )
            })
            .collect();
        let config = oci_client::client::Config::oci_v1(b"{}".to_vec(), None);
        self.push(&reference.with_tag(tag), &layers, config).await
    }

    async fn push(
        &self,
        reference: &OciReference,
        layers: &[ImageLayer],
        config: oci_client::client::Config,
    ) -> Result<String, RegistryError> {
        let mut manifest = OciImageManifest::build(layers, &config, None);
        manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.to_string());
        self.client
            .push(
                &client_reference(reference),
                layers,
                config,
                &self.auth,
                Some(manifest),
            )
            .await
            .map_err(|e| {
                // The client's error names the request; its sources say why (connection
                // refused, a TLS failure, an HTTP status).
                let mut reason = format!("the registry did not take the push: {e}");
                let mut source = std::error::Error::source(&e);
                while let Some(cause) = source {
                    reason.push_str(&format!(": {cause}"));
                    source = cause.source();
                }
                RegistryError::Publish {
                    reference: reference.to_string(),
                    reason,
                }
            })?;
        let (_, digest) = self.manifest(reference).await?;
        Ok(digest)
    }
}

/// The one `application/wasm` layer of a component manifest.
///
/// # Errors
/// The reason, when `raw` is not an image manifest with exactly one such layer.
pub(crate) fn wasm_layer(raw: &[u8]) -> Result<OciDescriptor, LayoutError> {
    let value: serde_json::Value = serde_json::from_slice(raw).map_err(LayoutError::NotJson)?;
    let media_type = value
        .get("mediaType")
        .and_then(|m| m.as_str())
        .unwrap_or("");
    if media_type == OCI_IMAGE_INDEX_MEDIA_TYPE || value.get("manifests").is_some() {
        return Err(LayoutError::ImageIndex);
    }
    let manifest: OciImageManifest =
        serde_json::from_value(value).map_err(LayoutError::NotImageManifest)?;
    let wasm: Vec<&OciDescriptor> = manifest
        .layers
        .iter()
        .filter(|l| l.media_type == WASM_LAYER_MEDIA_TYPE)
        .collect();
    match wasm.as_slice() {
        [one] => Ok((*one).clone()),
        _ => Err(LayoutError::WasmLayers {
            count: wasm.len(),
            types: manifest
                .layers
                .iter()
                .map(|l| l.media_type.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// The simple signing layers of a cosign signature manifest (their descriptors and
/// signatures).
pub(crate) fn signature_layers(
    raw: &[u8],
) -> Result<Vec<(OciDescriptor, Option<String>)>, LayoutError> {
    let manifest: OciImageManifest =
        serde_json::from_slice(raw).map_err(LayoutError::NotSignatureManifest)?;
    Ok(manifest
        .layers
        .into_iter()
        .filter(|l| l.media_type == SIMPLE_SIGNING_MEDIA_TYPE)
        .map(|l| {
            let signature = l
                .annotations
                .as_ref()
                .and_then(|a| a.get(SIGNATURE_ANNOTATION))
                .cloned();
            (l, signature)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain_http(reference: &str, insecure: bool) -> Vec<String> {
        let reference = OciReference::parse(reference).unwrap();
        match protocol(&reference, insecure) {
            ClientProtocol::HttpsExcept(plain) => plain,
            ClientProtocol::Https => Vec::new(),
            ClientProtocol::Http => vec!["every registry".into()],
        }
    }

    #[test]
    fn plain_http_only_for_loopback_registries_unless_insecure() {
        assert_eq!(
            plain_http("oci://127.0.0.1:5000/tools/wc:1", false),
            ["127.0.0.1:5000"]
        );
        assert_eq!(
            plain_http("oci://localhost:5000/tools/wc:1", false),
            ["localhost:5000"]
        );
        assert_eq!(
            plain_http("oci://ghcr.io/acme/wc:1", false),
            Vec::<String>::new()
        );
        assert_eq!(
            plain_http("oci://10.0.0.7:5000/acme/wc:1", false),
            Vec::<String>::new()
        );
        assert_eq!(
            plain_http("oci://10.0.0.7:5000/acme/wc:1", true),
            ["10.0.0.7:5000"]
        );
    }
}
