//! The `[runtime]` table: how tool calls run. Calls run on a pool of threads of their own,
//! never on the threads that serve the API; `max_concurrent_calls` bounds how many run at
//! once, and `queue_timeout_ms` how long a call waits for a free slot before it fails with a
//! `busy` tool error. `baseline_compiler` says whether a server (`serve`, `mcp`) compiles a
//! component the cache does not hold with wasmtime's baseline compiler first
//! (docs/components.md#compiled-components).
//!
//! ```
//! use sluice_config::{Config, Overrides};
//!
//! let overrides = Overrides { max_concurrent_calls: Some("8".into()), ..Overrides::default() };
//! let config = Config::resolve(None, &|_| None, &overrides)?;
//! assert_eq!(config.runtime.max_concurrent_calls, 8);
//! assert_eq!(config.runtime.queue_timeout_ms, 10_000);
//!
//! let overrides = Overrides { max_concurrent_calls: Some("0".into()), ..Overrides::default() };
//! assert_eq!(
//!     Config::resolve(None, &|_| None, &overrides).unwrap_err().to_string(),
//!     "runtime.max_concurrent_calls must be an integer from 1 to 1024 (calls); got 0 (from --max-concurrent-calls)"
//! );
//! # Ok::<(), sluice_config::ConfigError>(())
//! ```

use serde::Deserialize;

use crate::file::Raw;
use crate::keys::{
    Layers, RUNTIME_BASELINE_COMPILER, RUNTIME_MAX_CONCURRENT_CALLS, RUNTIME_QUEUE_TIMEOUT_MS,
};
use crate::{ConfigError, Overrides};

pub use sluice_protocol::limits::{
    DEFAULT_QUEUE_TIMEOUT_MS, MAX_MAX_CONCURRENT_CALLS, default_max_concurrent_calls,
};

/// The largest `runtime.queue_timeout_ms`, in ms (one hour, as for tool timeouts).
pub const MAX_QUEUE_TIMEOUT_MS: u64 = 3_600_000;

/// The `[runtime]` table, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// `runtime.max_concurrent_calls`: tool calls that may run at once (1 to 1,024; default
    /// [`default_max_concurrent_calls`]).
    pub max_concurrent_calls: usize,
    /// `runtime.queue_timeout_ms`: how long a call waits for a free slot, in ms (0 to
    /// 3,600,000; default 10,000); 0 fails at once when every slot is taken.
    pub queue_timeout_ms: u64,
    /// `runtime.baseline_compiler`: in `serve` and `mcp` (not under `--strict`), compile a
    /// component the cache does not hold first with wasmtime's baseline compiler (Winch),
    /// whose code answers its first calls while Cranelift's compiles in the background; in
    /// `test` and `dev`, with Winch only (default true).
    pub baseline_compiler: bool,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            max_concurrent_calls: default_max_concurrent_calls(),
            queue_timeout_ms: DEFAULT_QUEUE_TIMEOUT_MS,
            baseline_compiler: true,
        }
    }
}

/// `[runtime]` as written in `sluice.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileRuntime {
    max_concurrent_calls: Option<Raw>,
    queue_timeout_ms: Option<Raw>,
    baseline_compiler: Option<Raw>,
}

impl FileRuntime {
    /// Resolves the table: flag, then environment, then file, then default.
    pub(crate) fn resolve(
        &self,
        overrides: &Overrides,
        layers: &Layers<'_>,
    ) -> Result<RuntimeConfig, ConfigError> {
        Ok(RuntimeConfig {
            max_concurrent_calls: RUNTIME_MAX_CONCURRENT_CALLS
                .integer(
                    overrides.max_concurrent_calls.as_deref(),
                    self.max_concurrent_calls.as_ref(),
                    layers,
                )?
                .map_or_else(default_max_concurrent_calls, |n| n as usize),
            queue_timeout_ms: RUNTIME_QUEUE_TIMEOUT_MS.integer_or_default(
                None,
                self.queue_timeout_ms.as_ref(),
                layers,
            )?,
            baseline_compiler: RUNTIME_BASELINE_COMPILER.boolean(
                false,
                self.baseline_compiler.as_ref(),
                layers,
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::Config;

    fn resolve(
        file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
        flag: Option<&str>,
    ) -> Result<RuntimeConfig, ConfigError> {
        let overrides = Overrides {
            max_concurrent_calls: flag.map(str::to_string),
            ..Overrides::default()
        };
        Config::resolve(file, env, &overrides).map(|c| c.runtime)
    }

    #[test]
    fn defaults_precedence_and_bounds() {
        let none = |_: &str| None;
        let defaults = resolve(None, &none, None).unwrap();
        assert_eq!(defaults, RuntimeConfig::default());
        assert!(defaults.max_concurrent_calls >= 2);
        assert_eq!(defaults.queue_timeout_ms, 10_000);

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sluice.toml");
        std::fs::write(
            &file,
            "[runtime]\nmax_concurrent_calls = 3\nqueue_timeout_ms = 0\n",
        )
        .unwrap();
        let env = |k: &str| (k == "SLUICE_RUNTIME_MAX_CONCURRENT_CALLS").then(|| "5".to_string());
        assert_eq!(
            resolve(Some(&file), &none, None).unwrap(),
            RuntimeConfig {
                max_concurrent_calls: 3,
                queue_timeout_ms: 0,
                baseline_compiler: true,
            }
        );
        assert_eq!(
            resolve(Some(&file), &env, None)
                .unwrap()
                .max_concurrent_calls,
            5
        );
        assert_eq!(
            resolve(Some(&file), &env, Some("1024"))
                .unwrap()
                .max_concurrent_calls,
            1024
        );

        for bad in ["0", "1025", "2.5", "many", ""] {
            assert_eq!(
                resolve(None, &none, Some(bad)).unwrap_err().to_string(),
                format!(
                    "runtime.max_concurrent_calls must be an integer from 1 to 1024 (calls); got {bad} (from --max-concurrent-calls)"
                )
            );
        }
        let env = |k: &str| (k == "SLUICE_RUNTIME_QUEUE_TIMEOUT_MS").then(|| "3600001".to_string());
        assert_eq!(
            resolve(None, &env, None).unwrap_err().to_string(),
            "runtime.queue_timeout_ms must be an integer from 0 to 3600000 (ms); got 3600001 (from SLUICE_RUNTIME_QUEUE_TIMEOUT_MS)"
        );
        std::fs::write(&file, "[runtime]\nmax_concurrent_calls = \"4\"\n").unwrap();
        assert_eq!(
            resolve(Some(&file), &none, None).unwrap_err().to_string(),
            format!(
                "runtime.max_concurrent_calls must be an integer from 1 to 1024 (calls); got \"4\" (from {} line 2)",
                file.display()
            )
        );
        std::fs::write(&file, "[runtime]\nbaseline_compiler = false\n").unwrap();
        assert!(!resolve(Some(&file), &none, None).unwrap().baseline_compiler);
        let env = |k: &str| (k == "SLUICE_RUNTIME_BASELINE_COMPILER").then(|| "yes".to_string());
        assert_eq!(
            resolve(Some(&file), &env, None).unwrap_err().to_string(),
            "runtime.baseline_compiler must be true or false; got yes (from SLUICE_RUNTIME_BASELINE_COMPILER)"
        );
        let env = |k: &str| (k == "SLUICE_RUNTIME_BASELINE_COMPILER").then(|| "1".to_string());
        assert!(resolve(Some(&file), &env, None).unwrap().baseline_compiler);
        std::fs::write(&file, "[runtime]\nthreads = 4\n").unwrap();
        let e = resolve(Some(&file), &none, None).unwrap_err().to_string();
        assert!(e.contains("unknown field `threads`"), "{e}");
    }
}
