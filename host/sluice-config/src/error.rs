//! [`ConfigError`]: why a configuration cannot be used, in messages that name the key, the
//! value, where it came from and what is allowed.

use std::path::PathBuf;

/// A configuration that cannot be used. The message names the key, the value, its source
/// and what is allowed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The configuration file cannot be read.
    #[error("failed to read {path}: {reason}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why, in the operating system's words.
        reason: String,
    },
    /// The configuration file is not valid TOML or has unknown keys.
    #[error("invalid configuration file {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// A value is out of range or of the wrong type.
    #[error("{key} must be {allowed}; got {value} (from {origin})")]
    Value {
        /// The key, as written in `sluice.toml` (`agent.max_tool_result_bytes`).
        key: String,
        /// The value as given.
        value: String,
        /// What is allowed.
        allowed: String,
        /// Where it came from (`--max-tool-result-bytes`, an env var, the file).
        origin: String,
    },
    /// A key the operator API cannot change: it is read once at boot.
    #[error(
        "{key} is read at boot only (from sluice.toml, the environment or a flag): restart Sluice to change it; the keys that can change at run time are {allowed}"
    )]
    BootOnly {
        /// The key as given.
        key: String,
        /// The run-time keys, comma-separated.
        allowed: String,
    },
    /// A key the operator API does not know.
    #[error(
        "unknown configuration key {key:?}; the keys that can change at run time are {allowed}"
    )]
    UnknownKey {
        /// The key as given.
        key: String,
        /// The run-time keys, comma-separated.
        allowed: String,
    },
    /// Two tools entries have one name (a component of the tools directory is named after
    /// its file, a built-in or a `[tools.NAME]` table after its name).
    #[error("two tools entries are named {name:?}: {first} and {second}; {fix}")]
    Collision {
        /// The name.
        name: String,
        /// The first entry, as messages name it (`the built-in tool read_file`, a path).
        first: String,
        /// The second entry: its component file.
        second: String,
        /// What to rename.
        fix: String,
    },
    /// A root cannot be used.
    #[error("root {name:?} ({dir}, set by {origin}): {reason}")]
    Root {
        /// The root's name.
        name: String,
        /// The directory as given.
        dir: String,
        /// What set it: `--root DIR`, `roots.NAME in FILE line N`, or the default.
        origin: String,
        /// Why.
        reason: String,
    },
}
