//! Talking to a registry with `oci-client`: manifests and blobs by digest or tag, checked
//! against their digests, and pushes in the WebAssembly artifact layout (one
//! `application/wasm` layer under an `application/vnd.wasm.config.v0+json` config, as
//! `wkg oci push` writes them).

use std::collections::BTreeMap;
use std::time::Duration;

use oci_client::client::{ClientConfig, ClientProtocol, ImageLayer};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{
    IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_INDEX_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciDescriptor,
    OciImageManifest,
};
use oci_client::secrets::RegistryAuth;

use crate::RegistryError;
use crate::auth::Credentials;
use crate::reference::{OciReference, sha256_digest};
use crate::signature::{SIGNATURE_ANNOTATION, SIMPLE_SIGNING_MEDIA_TYPE, SignatureLayer};

/// The media type of a component layer.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";

/// The media type of the config of a WebAssembly artifact.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";

/// The largest component Sluice pulls, in bytes (256 MiB).
pub const MAX_COMPONENT_BYTES: u64 = 256 << 20;

/// The largest signature payload Sluice pulls, in bytes (64 KiB; cosign's are ~250 bytes).
pub(crate) const MAX_PAYLOAD_BYTES: u64 = 64 << 10;

/// How long connecting to a registry may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a read from a registry may stall.
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

/// A registry client for one reference's registry.
pub(crate) struct Remote {
    client: oci_client::Client,
    auth: RegistryAuth,
}

impl Remote {
    /// A client for `reference`'s registry: plain HTTP when the registry is loopback or
    /// `insecure`, HTTPS otherwise.
    pub(crate) fn new(reference: &OciReference, insecure: bool, credentials: &Credentials) -> Self {
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
        }
    }

    /// The manifest `reference` names (by digest, or by tag), with its digest computed from
    /// its bytes. When the reference has a digest, the bytes must have it.
    pub(crate) async fn manifest(
        &self,
        reference: &OciReference,
    ) -> Result<(Vec<u8>, String), RegistryError> {
        let (raw, _) = self
            .client
            .pull_manifest_raw(
                &reference.to_client(),
                &self.auth,
                &[
                    OCI_IMAGE_MEDIA_TYPE,
                    IMAGE_MANIFEST_MEDIA_TYPE,
                    OCI_IMAGE_INDEX_MEDIA_TYPE,
                ],
            )
            .await
            .map_err(|e| fetch_error(reference, "its manifest", e))?;
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
        Ok((raw.to_vec(), actual))
    }

    /// The blob `descriptor` names, at most `limit` bytes, checked against its digest.
    pub(crate) async fn blob(
        &self,
        reference: &OciReference,
        descriptor: &OciDescriptor,
        what: &'static str,
        limit: u64,
    ) -> Result<Vec<u8>, RegistryError> {
        if descriptor.size < 0 || descriptor.size as u64 > limit {
            return Err(RegistryError::Layout {
                reference: reference.to_string(),
                digest: descriptor.digest.clone(),
                reason: format!(
                    "{what} is {} bytes, over the limit of {limit} bytes",
                    descriptor.size
                ),
            });
        }
        let mut bytes = Vec::with_capacity(descriptor.size as usize);
        self.client
            .pull_blob(&reference.to_client(), descriptor, &mut bytes)
            .await
            .map_err(|e| fetch_error(reference, what, e))?;
        let actual = sha256_digest(&bytes);
        if actual != descriptor.digest {
            return Err(RegistryError::Digest {
                reference: reference.to_string(),
                what,
                expected: descriptor.digest.clone(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// The cosign signature manifest stored for `digest` under `tag` (its raw bytes and
    /// digest), or `None` when the registry has none.
    pub(crate) async fn signature_manifest(
        &self,
        reference: &OciReference,
        tag: &str,
    ) -> Result<Option<(Vec<u8>, String)>, RegistryError> {
        let at = reference.with_tag(tag);
        match self
            .client
            .pull_manifest_raw(
                &at.to_client(),
                &self.auth,
                &[OCI_IMAGE_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE],
            )
            .await
        {
            Ok((raw, _)) => {
                let digest = sha256_digest(&raw);
                Ok(Some((raw.to_vec(), digest)))
            }
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(fetch_error(&at, "its cosign signature manifest", e)),
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
                &reference.to_client(),
                layers,
                config,
                &self.auth,
                Some(manifest),
            )
            .await
            .map_err(|e| fetch_error(reference, "the push", e))?;
        let (_, digest) = self.manifest(reference).await?;
        Ok(digest)
    }
}

/// The one `application/wasm` layer of a component manifest.
///
/// # Errors
/// The reason, when `raw` is not an image manifest with exactly one such layer.
pub(crate) fn wasm_layer(raw: &[u8]) -> Result<OciDescriptor, String> {
    let value: serde_json::Value =
        serde_json::from_slice(raw).map_err(|e| format!("its manifest is not JSON: {e}"))?;
    let media_type = value
        .get("mediaType")
        .and_then(|m| m.as_str())
        .unwrap_or("");
    if media_type == OCI_IMAGE_INDEX_MEDIA_TYPE || value.get("manifests").is_some() {
        return Err("it is an image index (several platforms), not a component artifact: point at the manifest that has the application/wasm layer".into());
    }
    let manifest: OciImageManifest = serde_json::from_value(value)
        .map_err(|e| format!("its manifest is not an OCI image manifest: {e}"))?;
    let wasm: Vec<&OciDescriptor> = manifest
        .layers
        .iter()
        .filter(|l| l.media_type == WASM_LAYER_MEDIA_TYPE)
        .collect();
    match wasm.as_slice() {
        [one] => Ok((*one).clone()),
        _ => Err(format!(
            "a component artifact has exactly one {WASM_LAYER_MEDIA_TYPE} layer (as `wkg oci push` or `oras push … component.wasm:{WASM_LAYER_MEDIA_TYPE}` write it); this manifest has {} such layer(s) among layers of types [{}]",
            wasm.len(),
            manifest
                .layers
                .iter()
                .map(|l| l.media_type.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The simple signing layers of a cosign signature manifest (their descriptors and
/// signatures).
pub(crate) fn signature_layers(raw: &[u8]) -> Result<Vec<(OciDescriptor, Option<String>)>, String> {
    let manifest: OciImageManifest = serde_json::from_slice(raw)
        .map_err(|e| format!("its cosign signature manifest is not an OCI image manifest: {e}"))?;
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

fn is_not_found(e: &OciDistributionError) -> bool {
    match e {
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        OciDistributionError::ServerError { code, .. } => *code == 404,
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().any(|e| {
            matches!(
                e.code,
                OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown
            )
        }),
        _ => false,
    }
}

/// The error of a failed request. A digest mismatch found by `oci-client` is a refusal;
/// anything else is a fetch failure. Credentials are never part of either.
fn fetch_error(
    reference: &OciReference,
    what: &'static str,
    e: OciDistributionError,
) -> RegistryError {
    match e {
        OciDistributionError::DigestError(oci_client::errors::DigestError::VerificationError {
            expected,
            actual,
        }) => RegistryError::Digest {
            reference: reference.to_string(),
            what,
            expected,
            actual,
        },
        other => RegistryError::Fetch {
            reference: reference.to_string(),
            reason: format!("{what}: {other}"),
        },
    }
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
