//! `sluice tools …`: the subcommands over components, in files and in registries.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::ConfigArgs;

#[derive(Debug, Subcommand)]
pub(crate) enum ToolsCommand {
    /// Show what a component would provide (tools and their schemas) and what it imports,
    /// before granting it anything. Does not run it. For `oci://…`: also its digest and
    /// signature status (verified with --key; without one, how many signatures the
    /// registry holds, unchecked).
    Inspect {
        /// The component: a `*.wasm` file, or `oci://REGISTRY/REPOSITORY:TAG` (or
        /// `@sha256:…`).
        target: String,
        #[command(flatten)]
        registry: RegistryArgs,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Fetch a component from a registry into the cache, verify it (with --key), and pin
    /// its digest in sluice.lock (beside sluice.toml). Prints the digest, the pinned
    /// reference and the pull and verify times.
    Pull {
        /// `oci://REGISTRY/REPOSITORY:TAG` or `oci://REGISTRY/REPOSITORY@sha256:…`.
        reference: String,
        #[command(flatten)]
        registry: RegistryArgs,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Resolve the tags of every `oci://` component of the configuration again, fetch and
    /// verify what they name now, and rewrite sluice.lock.
    Update {
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Push a component to a registry in the WebAssembly OCI layout Sluice loads (one
    /// `application/wasm` layer, as `wkg oci push` writes it). Prints the manifest digest
    /// and the pinned reference for `component = "…"`. Credentials: the docker config file,
    /// or SLUICE_REGISTRY_USERNAME and SLUICE_REGISTRY_PASSWORD.
    Push {
        /// The component (`*.wasm`).
        #[arg(value_name = "FILE")]
        component: PathBuf,
        /// `oci://REGISTRY/REPOSITORY:TAG`.
        reference: String,
        /// Speak plain HTTP to a registry that is not on this machine.
        #[arg(long)]
        insecure: bool,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Sign a component in a registry with a key pair, as `cosign sign --key` does: a
    /// cosign signature for its manifest digest, added beside those already there, read
    /// back and verified before this returns. A load with `verify.key` = the pair's `.pub`
    /// then accepts it.
    Sign {
        /// `oci://REGISTRY/REPOSITORY:TAG` (resolved now) or `…@sha256:…`.
        reference: String,
        /// The private key (PKCS#8 PEM, as `sluice tools keygen` writes PREFIX.key).
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// Speak plain HTTP to a registry that is not on this machine.
        #[arg(long)]
        insecure: bool,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Make a signing key pair (ECDSA P-256, cosign's default): PREFIX.key, the private
    /// key (PKCS#8 PEM, mode 0600; keep it secret), and PREFIX.pub, the public key for
    /// `verify.key`. Never overwrites a file.
    Keygen {
        /// Where to write the pair: PREFIX.key and PREFIX.pub.
        #[arg(long, value_name = "PREFIX", default_value = "sluice")]
        output_key_prefix: PathBuf,
    },
}

/// How to reach and trust a registry (for the commands that name a reference).
#[derive(Debug, Args)]
pub(crate) struct RegistryArgs {
    /// A public key (PEM, as `cosign generate-key-pair` writes cosign.pub) that must have
    /// signed the component's digest with cosign; repeat for more (any one may have
    /// signed). Keyless signatures are not checked.
    #[arg(long = "key", value_name = "FILE")]
    pub(crate) keys: Vec<PathBuf>,

    /// Speak plain HTTP to a registry that is not on this machine (loopback registries
    /// always get plain HTTP).
    #[arg(long)]
    pub(crate) insecure: bool,
}
