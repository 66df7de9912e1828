//! Where a policy is configured ([`PolicyOrigin`]), so that a message can name the key that
//! changes it.

use std::path::PathBuf;

/// Where a policy is configured, for messages that name the key to change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyOrigin {
    /// A `[tools.NAME]` table of `sluice.toml` (`NAME` is the table's key).
    Table(String),
    /// A built-in tool listed in `builtins` (or offered by default), with no table of its
    /// own (the tool's name).
    Builtins(String),
    /// A component of the tools directory; its policy is this sibling `*.toml` (which may
    /// not exist yet).
    Sibling(PathBuf),
}

impl PolicyOrigin {
    /// The keys that rename tool `tool` (exported as `export`) of this policy, in words:
    /// `prefix = "…" or [tools.fs.functions.read-file] name = "…" in sluice.toml`.
    pub fn rename_keys(&self, export: &str) -> String {
        match self {
            PolicyOrigin::Table(name) => format!(
                "[tools.{}] prefix = \"…\" or [tools.{}.functions.{}] name = \"…\" in the configuration file",
                toml_key(name),
                toml_key(name),
                toml_key(export)
            ),
            PolicyOrigin::Builtins(name) => format!(
                "[tools.{name}] prefix = \"…\" or [tools.{name}.functions.{}] name = \"…\" in the configuration file, or leave {name} out of `builtins = [...]`",
                toml_key(export)
            ),
            PolicyOrigin::Sibling(file) => format!(
                "prefix = \"…\" or [functions.{}] name = \"…\" in {}",
                toml_key(export),
                file.display()
            ),
        }
    }

    /// Where policy key `key` (`memory_mib`) of this policy is set, in words:
    /// `tools.stats.memory_mib in the configuration file`, `memory_mib in tools/stats.toml`.
    pub fn key_at(&self, key: &str) -> String {
        match self {
            PolicyOrigin::Table(name) | PolicyOrigin::Builtins(name) => {
                format!("tools.{}.{key} in the configuration file", toml_key(name))
            }
            PolicyOrigin::Sibling(file) => format!("{key} in {}", file.display()),
        }
    }
}

/// `key` as a TOML key: bare when it can be, quoted otherwise (`"iface/read-file"`).
pub fn toml_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        key.to_string()
    } else {
        format!("{key:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_quoted_only_when_it_must_be() {
        assert_eq!(toml_key("read-file"), "read-file");
        assert_eq!(toml_key("iface/read-file"), "\"iface/read-file\"");
        assert_eq!(toml_key(""), "\"\"");
    }

    #[test]
    fn messages_name_the_key_where_the_policy_is() {
        let table = PolicyOrigin::Table("fs".into());
        assert_eq!(
            table.key_at("memory_mib"),
            "tools.fs.memory_mib in the configuration file"
        );
        assert_eq!(
            PolicyOrigin::Sibling("tools/stats.toml".into()).key_at("memory_mib"),
            "memory_mib in tools/stats.toml"
        );
        assert_eq!(
            table.rename_keys("iface/read-file"),
            "[tools.fs] prefix = \"…\" or [tools.fs.functions.\"iface/read-file\"] name = \"…\" in the configuration file"
        );
        assert_eq!(
            PolicyOrigin::Builtins("read_file".into()).rename_keys("read-file"),
            "[tools.read_file] prefix = \"…\" or [tools.read_file.functions.read-file] name = \"…\" in the configuration file, or leave read_file out of `builtins = [...]`"
        );
        assert_eq!(
            PolicyOrigin::Sibling("tools/fs.toml".into()).rename_keys("read-file"),
            "prefix = \"…\" or [functions.read-file] name = \"…\" in tools/fs.toml"
        );
    }
}
