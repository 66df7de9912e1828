//! The WebAssembly OCI artifact layout (one `application/wasm` layer, as `wkg oci push`
//! writes it): its media types, and why an artifact a registry holds is not in it (or is
//! not a cosign signature manifest).

/// The media type of a component layer.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";

/// The media type of the config of a WebAssembly artifact.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";

/// What is wrong with a manifest or a descriptor: why an artifact is not a component in the
/// WebAssembly layout (one `application/wasm` layer), or not a cosign signature manifest.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// The manifest is not JSON.
    #[error("its manifest is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// The manifest is an image index.
    #[error(
        "it is an image index (several platforms), not a component artifact: point at the manifest that has the application/wasm layer"
    )]
    ImageIndex,
    /// The manifest is JSON but not an OCI image manifest.
    #[error("its manifest is not an OCI image manifest: {0}")]
    NotImageManifest(#[source] serde_json::Error),
    /// The manifest has no `application/wasm` layer, or several.
    #[error(
        "a component artifact has exactly one {layer} layer (as `wkg oci push` or `oras push … component.wasm:{layer}` write it); this manifest has {count} such layer(s) among layers of types [{types}]",
        layer = WASM_LAYER_MEDIA_TYPE
    )]
    WasmLayers {
        /// How many it has.
        count: usize,
        /// The media types of all its layers, comma-separated.
        types: String,
    },
    /// The signature manifest is not an OCI image manifest.
    #[error("its cosign signature manifest is not an OCI image manifest: {0}")]
    NotSignatureManifest(#[source] serde_json::Error),
    /// A descriptor's digest is not a SHA-256 one.
    #[error("{what} has the digest {digest}, not sha256:<64 lowercase hex>")]
    Digest {
        /// What the descriptor describes (`the component`, `a signature payload`).
        what: &'static str,
        /// The digest, quoted as messages show a registry's text.
        digest: String,
    },
    /// A descriptor's size is negative.
    #[error("{what} has a negative size")]
    NegativeSize {
        /// What the descriptor describes.
        what: &'static str,
    },
    /// A descriptor's size is over the limit.
    #[error(
        "{what} is {size} bytes by its descriptor, over the limit of {limit} bytes{}",
        key.map_or(String::new(), |k| format!(" (raise it with {k} in sluice.toml)"))
    )]
    OverLimit {
        /// What the descriptor describes.
        what: &'static str,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
        /// The configuration key that raises the limit, when one does.
        key: Option<&'static str>,
    },
    /// Signing was asked of an artifact that is not a component.
    #[error("{0}; Sluice signs only components")]
    NotSigned(#[source] Box<LayoutError>),
}
