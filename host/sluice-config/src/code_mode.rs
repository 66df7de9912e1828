//! The `[code_mode]` table: the limits of a script's tool calls (the built-in `run_script`,
//! docs/code-mode.md#limits). The script's own timeout and memory are its tool policy's
//! (`[tools.run_script]` `timeout_ms`, default 30,000; `memory_mib`, default 256).
//!
//! ```
//! use sluice_config::{Config, Overrides};
//!
//! let config = Config::resolve(None, &|_| None, &Overrides::default())?;
//! assert_eq!(config.code_mode.inner_max_result_bytes, 4 << 20);
//! assert_eq!(config.code_mode.max_inner_calls, 1_000);
//! # Ok::<(), sluice_config::ConfigError>(())
//! ```

use serde::Deserialize;

use crate::ConfigError;
use crate::file::Raw;
use crate::keys::{
    CODE_MODE_INNER_MAX_RESULT_BYTES, CODE_MODE_MAX_INNER_BYTES, CODE_MODE_MAX_INNER_CALLS, Layers,
};
use sluice_protocol::limits::{
    DEFAULT_INNER_MAX_RESULT_BYTES, DEFAULT_MAX_INNER_BYTES, DEFAULT_MAX_INNER_CALLS,
};

/// The built-in tool that runs scripts (code mode).
pub const SCRIPT_TOOL: &str = "run_script";

/// The largest `code_mode.max_inner_calls`.
pub(crate) const MAX_MAX_INNER_CALLS: u64 = 1_000_000;

/// The largest `code_mode.max_inner_bytes`, in bytes (64 GiB).
pub(crate) const MAX_MAX_INNER_BYTES: u64 = 64 << 30;

/// The smallest `code_mode.inner_max_result_bytes`, in bytes (as for the cap).
pub(crate) const MIN_INNER_MAX_RESULT_BYTES: u64 = 1_024;

/// The limits of a script's tool calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeModeConfig {
    /// `code_mode.inner_max_result_bytes`: the cap on each observation a script's tool call
    /// returns to the script, in bytes (1,024 to 16,777,216; default 4,194,304).
    pub inner_max_result_bytes: u32,
    /// `code_mode.max_inner_calls`: the most tool calls one script may make (1 to
    /// 1,000,000; default 1,000).
    pub max_inner_calls: u32,
    /// `code_mode.max_inner_bytes`: the most bytes of observations one script's calls may
    /// return in all (1,024 to 68,719,476,736; default 1,073,741,824).
    pub max_inner_bytes: u64,
}

impl Default for CodeModeConfig {
    fn default() -> Self {
        CodeModeConfig {
            inner_max_result_bytes: DEFAULT_INNER_MAX_RESULT_BYTES,
            max_inner_calls: DEFAULT_MAX_INNER_CALLS,
            max_inner_bytes: DEFAULT_MAX_INNER_BYTES,
        }
    }
}

/// `[code_mode]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileCodeMode {
    inner_max_result_bytes: Option<Raw>,
    max_inner_calls: Option<Raw>,
    max_inner_bytes: Option<Raw>,
}

impl FileCodeMode {
    /// Resolves `[code_mode]` of the file (file keys only).
    pub(crate) fn resolve(&self, layers: &Layers<'_>) -> Result<CodeModeConfig, ConfigError> {
        Ok(CodeModeConfig {
            inner_max_result_bytes: CODE_MODE_INNER_MAX_RESULT_BYTES.integer_or_default(
                None,
                self.inner_max_result_bytes.as_ref(),
                layers,
            )? as u32,
            max_inner_calls: CODE_MODE_MAX_INNER_CALLS.integer_or_default(
                None,
                self.max_inner_calls.as_ref(),
                layers,
            )? as u32,
            max_inner_bytes: CODE_MODE_MAX_INNER_BYTES.integer_or_default(
                None,
                self.max_inner_bytes.as_ref(),
                layers,
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, Overrides};

    fn resolve(text: &str) -> Result<Config, String> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sluice.toml");
        std::fs::write(&file, text).unwrap();
        Config::resolve(Some(&file), &|_| None, &Overrides::default())
            .map_err(|e| e.to_string().replace(&file.display().to_string(), "<file>"))
    }

    #[test]
    fn the_limits_resolve_and_reach_run_script_alone() {
        let c =
            resolve("[code_mode]\ninner_max_result_bytes = 65536\nmax_inner_calls = 5\n").unwrap();
        assert_eq!(c.code_mode.inner_max_result_bytes, 65_536);
        assert_eq!(c.code_mode.max_inner_calls, 5);
        assert_eq!(c.code_mode.max_inner_bytes, 1 << 30);
        let script = c.tools.iter().find(|t| t.name == "run_script").unwrap();
        assert_eq!(script.tool_calls, Some(c.code_mode));
        assert_eq!(script.timeout_ms, 30_000);
        assert!(
            script.read.is_empty(),
            "run_script reads through the other tools"
        );
        for t in c.tools.iter().filter(|t| t.name != "run_script") {
            assert_eq!(t.tool_calls, None, "{}", t.name);
        }
    }

    #[test]
    fn a_bad_limit_names_its_key_and_range() {
        assert_eq!(
            resolve("[code_mode]\ninner_max_result_bytes = 16777217\n").unwrap_err(),
            "code_mode.inner_max_result_bytes must be an integer from 1024 to 16777216 (bytes); got 16777217 (from <file> line 2)"
        );
        let e = resolve("[code_mode]\nmax_inner_call = 3\n").unwrap_err();
        assert!(e.contains("max_inner_call"), "{e}");
        assert!(e.contains("max_inner_calls"), "{e}");
    }
}
