//! The `[mcp]` table: what `sluice mcp` and `POST /mcp` of `sluice serve` serve.

use serde::Deserialize;

use crate::ConfigError;
use crate::file::Raw;
use crate::keys::{Layers, MCP_ALLOW_DESTRUCTIVE, MCP_TOOLS_PER_PAGE};

/// `mcp.tools_per_page` when not set: more than any configuration has, so one page.
pub use sluice_protocol::limits::DEFAULT_MCP_TOOLS_PER_PAGE as DEFAULT_TOOLS_PER_PAGE;

/// The largest `mcp.tools_per_page`.
pub const MAX_TOOLS_PER_PAGE: u32 = 1000;

/// Settings of the MCP server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpConfig {
    /// `mcp.allow_destructive`: list and run destructive tools (a `write` grant or
    /// `destructive = true`) over MCP, without Sluice's approval pause: the MCP client's own
    /// approval applies, guided by `destructiveHint`. Default false: they are not listed,
    /// and a call of one is answered as an unknown tool.
    pub allow_destructive: bool,
    /// `mcp.tools_per_page`: tools in one `tools/list` page (1 to 1,000; default 100).
    pub tools_per_page: u32,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            allow_destructive: false,
            tools_per_page: DEFAULT_TOOLS_PER_PAGE,
        }
    }
}

/// `[mcp]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileMcp {
    allow_destructive: Option<Raw>,
    tools_per_page: Option<Raw>,
}

impl FileMcp {
    /// Resolves `[mcp]` with the flag `--allow-destructive` (`allow_destructive_flag`) and
    /// the environment above the file.
    pub(crate) fn resolve(
        &self,
        allow_destructive_flag: bool,
        layers: &Layers<'_>,
    ) -> Result<McpConfig, ConfigError> {
        Ok(McpConfig {
            allow_destructive: MCP_ALLOW_DESTRUCTIVE.boolean(
                allow_destructive_flag,
                self.allow_destructive.as_ref(),
                layers,
            )?,
            tools_per_page: MCP_TOOLS_PER_PAGE.integer_or_default(
                None,
                self.tools_per_page.as_ref(),
                layers,
            )? as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, Overrides};

    fn resolve(
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
        flag: bool,
    ) -> Result<McpConfig, String> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sluice.toml");
        std::fs::write(&file, text).unwrap();
        let overrides = Overrides {
            roots: vec![dir.path().display().to_string()],
            allow_destructive: flag,
            ..Overrides::default()
        };
        Config::resolve(Some(&file), env, &overrides)
            .map(|c| c.mcp)
            .map_err(|e| e.to_string().replace(&file.display().to_string(), "<file>"))
    }

    #[test]
    fn defaults_and_precedence() {
        assert_eq!(resolve("", &|_| None, false).unwrap(), McpConfig::default());
        let on = "[mcp]\nallow_destructive = true\ntools_per_page = 2\n";
        assert_eq!(
            resolve(on, &|_| None, false).unwrap(),
            McpConfig {
                allow_destructive: true,
                tools_per_page: 2
            }
        );
        let env_off = |k: &str| (k == "SLUICE_MCP_ALLOW_DESTRUCTIVE").then(|| "false".to_string());
        assert!(!resolve(on, &env_off, false).unwrap().allow_destructive);
        assert!(resolve("", &env_off, true).unwrap().allow_destructive);
    }

    #[test]
    fn bad_values_name_the_key() {
        assert_eq!(
            resolve("[mcp]\nallow_destructive = \"yes\"\n", &|_| None, false).unwrap_err(),
            "mcp.allow_destructive must be true or false; got \"yes\" (from <file> line 2)"
        );
        assert_eq!(
            resolve("[mcp]\ntools_per_page = 0\n", &|_| None, false).unwrap_err(),
            "mcp.tools_per_page must be an integer from 1 to 1000; got 0 (from <file> line 2)"
        );
        let e = resolve("[mcp]\nallow = true\n", &|_| None, false).unwrap_err();
        assert!(e.contains("unknown field `allow`"), "{e}");
    }
}
