//! Where a component comes from ([`Source`]), the policy it loads under
//! ([`ComponentSpec`]), and the digest its pin is checked against ([`sha256_hex`]).

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::policy::ToolPolicy;

/// Where a tool's component comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A built-in tool (`read_file`, …): a component the binary embeds (`sluice-builtins`),
    /// given by whoever assembles the toolbox. Its descriptions come from the WIT it is
    /// built from ([`crate::component::docs::TOOLS_WIT`]): the Rust toolchain drops doc comments from
    /// components.
    Builtin {
        /// The tool's name (`read_file`): the world of [`crate::component::docs::TOOLS_WIT`] it
        /// implements, with `_` for `-`.
        name: &'static str,
        /// The component.
        wasm: &'static [u8],
    },
    /// Component bytes, named for messages (usually a file path).
    Bytes {
        /// What to call it in messages.
        name: String,
        /// The component.
        wasm: Arc<Vec<u8>>,
    },
}

impl Source {
    /// How messages name it: `built-in read_file`, or the name given.
    pub fn describe(&self) -> String {
        match self {
            Source::Builtin { name, .. } => format!("built-in {name}"),
            Source::Bytes { name, .. } => name.clone(),
        }
    }

    /// The component's bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Source::Builtin { wasm, .. } => wasm,
            Source::Bytes { wasm, .. } => wasm.as_slice(),
        }
    }
}

/// A component to load and the policy its tools run under.
#[derive(Clone, Debug)]
pub struct ComponentSpec {
    /// Where the component comes from.
    pub source: Source,
    /// What its tools may use.
    pub policy: ToolPolicy,
}

/// The lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}
