//! A policy as `sluice.toml` and a tools directory write it: the policy keys, declared once
//! (by `policy_keys!` below), make both file shapes: [`Policy`], the keys alone (a tools
//! directory's sibling `*.toml`, whose component is the sibling `.wasm`), and
//! [`PolicyFile`], a `[tools.NAME]` table (the source keys `component` and `builtin`
//! first, the policy keys, then the `oci://` keys `verify` and `insecure`). Each is its own
//! struct so that serde's unknown-key error lists only the keys allowed where the typo was
//! made, in the order the docs give them (docs/configuration.md#tool-policies).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::file::Raw;
use crate::functions::FunctionFile;
use crate::http_credentials::CredentialFile;
use crate::secrets::SecretFile;

/// Declares [`Policy`] and [`PolicyFile`] from one list of policy keys, and
/// [`PolicyFile::policy`], which copies them from one to the other.
macro_rules! policy_keys {
    ($($(#[$attr:meta])* $key:ident: $ty:ty,)*) => {
        /// A policy as a tools directory's sibling `*.toml` holds it: the policy keys alone.
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(crate) struct Policy {
            $($(#[$attr])* pub(crate) $key: $ty,)*
        }

        /// A `[tools.NAME]` table of `sluice.toml`: where the component comes from, the
        /// policy keys ([`Policy`]), and how an `oci://` component is trusted.
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(crate) struct PolicyFile {
            /// Path of the component, relative to the configuration file.
            pub(crate) component: Option<String>,
            /// Name of a built-in tool.
            pub(crate) builtin: Option<String>,
            $($(#[$attr])* pub(crate) $key: $ty,)*
            /// `verify.key` (oci:// components only).
            pub(crate) verify: Option<VerifyFile>,
            /// Plain HTTP to a non-loopback registry (oci:// components only).
            pub(crate) insecure: Option<bool>,
        }

        impl PolicyFile {
            /// The policy keys, without the source.
            pub(crate) fn policy(&self) -> Policy {
                Policy {
                    $($key: self.$key.clone(),)*
                }
            }
        }
    };
}

policy_keys! {
    #[serde(default)]
    read: Option<Vec<String>>,
    #[serde(default)]
    write: Vec<String>,
    memory_mib: Option<Raw>,
    timeout_ms: Option<Raw>,
    #[serde(default)]
    env: Vec<String>,
    sha256: Option<String>,
    destructive: Option<bool>,
    description: Option<String>,
    prefix: Option<String>,
    #[serde(default)]
    functions: BTreeMap<String, FunctionFile>,
    #[serde(default)]
    http: Vec<String>,
    #[serde(default)]
    http_methods: Vec<String>,
    #[serde(default)]
    http_private: bool,
    http_max_response_bytes: Option<Raw>,
    http_max_connections: Option<Raw>,
    #[serde(default)]
    config: BTreeMap<String, Raw>,
    #[serde(default)]
    secrets: BTreeMap<String, SecretFile>,
    #[serde(default)]
    http_credentials: BTreeMap<String, CredentialFile>,
}

/// `verify = { key = "cosign.pub" }` or `verify.key = ["a.pub", "b.pub"]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct VerifyFile {
    pub(crate) key: KeyList,
}

/// One public key's path, or several.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum KeyList {
    One(String),
    Many(Vec<String>),
}
