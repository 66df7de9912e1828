//! Tool names: what a component's exports are called once offered to a model, how a policy
//! changes that (`prefix`, `functions.<f>.name`), and what a collision says to do.
//!
//! The rule is [`sluice_protocol::valid_tool_name`] (1 to 64 characters of `A-Z a-z 0-9 _ -`,
//! what every model API and MCP accept); the derived name of an export is its WIT name with `-` replaced by `_`.

use crate::policy::{FunctionPolicy, PolicyOrigin, ToolPolicy};

pub use sluice_protocol::{MAX_TOOL_NAME_BYTES, TOOL_NAME_RULE, valid_tool_name};

/// How one export of a component is named, and where its policy is configured.
#[derive(Clone, Debug)]
pub(crate) struct Naming {
    /// The key of `[functions.<key>]` that addresses the export: its WIT name for a
    /// function of the world (`read-file`), its derived name for a function of an exported
    /// interface (`stats_count_words`).
    pub(crate) key: String,
    /// Where its policy is configured, if it is.
    pub(crate) origin: Option<PolicyOrigin>,
}

impl Naming {
    /// The keys that rename this tool, in words.
    pub(crate) fn fix(&self) -> String {
        match &self.origin {
            Some(origin) => origin.rename_keys(&self.key),
            None => format!("`prefix` or `functions.{}.name` in its policy", self.key),
        }
    }
}

/// What to set to end a collision between two tools named alike: a key of the second one's
/// policy, or of the first's.
pub(crate) fn collision_fix(first: &Naming, second: &Naming) -> String {
    format!("{}; or {}", second.fix(), first.fix())
}

/// An export of a component as the host names it before the policy applies.
pub(crate) struct Export<'a> {
    /// The derived tool name (`read_file`, `stats_count_words`).
    pub(crate) derived: String,
    /// The WIT function name (`read-file`, `count-words`).
    pub(crate) function: &'a str,
    /// The export's full path (`read-file`, `acme:textstats/stats@0.1.0/count-words`).
    pub(crate) path: &'a str,
    /// True for a function of the component's world (not of an exported interface).
    pub(crate) world_level: bool,
}

impl Export<'_> {
    /// True when `key` of a policy's `functions` table names this export: its full path,
    /// its WIT name (a function of the world only; inside an interface it could name
    /// several) or its derived tool name.
    pub(crate) fn is_named_by(&self, key: &str) -> bool {
        key == self.path || key == self.derived || (self.world_level && key == self.function)
    }

    /// The key that addresses this export in messages.
    pub(crate) fn key(&self) -> String {
        if self.world_level {
            self.function.to_string()
        } else {
            self.derived.clone()
        }
    }

    /// The tool's name under `policy`, and the function's own settings if it has any, with
    /// their key in `functions`.
    pub(crate) fn named<'p>(
        &self,
        policy: &'p ToolPolicy,
    ) -> (String, Option<(&'p str, &'p FunctionPolicy)>) {
        let own = policy
            .functions
            .iter()
            .find(|(k, _)| self.is_named_by(k))
            .map(|(k, f)| (k.as_str(), f));
        let name = match (own.and_then(|(_, f)| f.name.clone()), &policy.prefix) {
            (Some(name), _) => name,
            // One `_` between: a prefix that ends with one gets no second (`h_` → `h_name`).
            (None, Some(prefix)) if prefix.ends_with('_') => format!("{prefix}{}", self.derived),
            (None, Some(prefix)) => format!("{prefix}_{}", self.derived),
            (None, None) => self.derived.clone(),
        };
        (name, own)
    }
}

/// The tool names an unknown-tool observation lists (docs/observations.md#shapes): the
/// closest to the name asked for first, and the one to suggest, if any is close.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Nearest<'a> {
    /// The name the model most likely meant: the closest whose edit distance (case and
    /// `-`/`_` aside) is at most 1 + a quarter of the asked name's length, or one that
    /// holds the asked name (of 3 characters or more). `None` when no name is that close.
    pub(crate) suggestion: Option<&'a str>,
    /// Every known name, closest first (ties by name).
    pub(crate) ranked: Vec<&'a str>,
}

/// Ranks `known` by how close each is to `asked` ([`Nearest`]). A name asked for that is
/// longer than twice the longest valid tool name is compared with none (nothing is close to
/// it, and the comparison would cost its length times every name's).
pub(crate) fn nearest<'a>(asked: &str, known: impl IntoIterator<Item = &'a str>) -> Nearest<'a> {
    let mut ranked: Vec<&'a str> = known.into_iter().collect();
    if asked.len() > 2 * MAX_TOOL_NAME_BYTES {
        ranked.sort_unstable();
        return Nearest {
            suggestion: None,
            ranked,
        };
    }
    let fold = |s: &str| s.to_ascii_lowercase().replace('-', "_");
    let want = fold(asked);
    let mut scored: Vec<(usize, bool, &'a str)> = ranked
        .drain(..)
        .map(|name| {
            let have = fold(name);
            let holds = want.chars().count() >= 3 && have.contains(&want);
            (strsim::osa_distance(&want, &have), holds, name)
        })
        .collect();
    scored.sort_unstable_by(|a, b| (a.0, a.2).cmp(&(b.0, b.2)));
    let close = 1 + asked.chars().count() / 4;
    let suggestion = scored
        .iter()
        .find(|(d, _, _)| *d <= close)
        .or_else(|| scored.iter().find(|(_, holds, _)| *holds))
        .map(|(_, _, name)| *name);
    Nearest {
        suggestion,
        ranked: scored.into_iter().map(|(_, _, name)| name).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn the_name_rule_is_what_every_model_api_takes() {
        assert!(valid_tool_name("fs_read_file-2"));
        // MCP allows `.`; OpenAI, Anthropic and Bedrock refuse it.
        assert!(!valid_tool_name("fs.read_file"));
        assert!(valid_tool_name(&"a".repeat(64)));
        assert!(!valid_tool_name(&"a".repeat(65)));
        assert!(!valid_tool_name(""));
        assert!(!valid_tool_name("read file"));
        assert!(!valid_tool_name("fs/read"));
        assert!(!valid_tool_name("lire_é"));
    }

    #[test]
    fn a_policy_prefixes_or_renames() {
        let export = Export {
            derived: "read_file".into(),
            function: "read-file",
            path: "read-file",
            world_level: true,
        };
        let mut policy = ToolPolicy {
            prefix: Some("fs".into()),
            ..ToolPolicy::default()
        };
        assert_eq!(export.named(&policy).0, "fs_read_file");
        // A prefix that ends with `_` gets no second one.
        let underscored = ToolPolicy {
            prefix: Some("h_".into()),
            ..ToolPolicy::default()
        };
        assert_eq!(export.named(&underscored).0, "h_read_file");
        let doubled = ToolPolicy {
            prefix: Some("h__".into()),
            ..ToolPolicy::default()
        };
        assert_eq!(export.named(&doubled).0, "h__read_file");
        policy.functions.insert(
            "read-file".into(),
            FunctionPolicy {
                name: Some("cat".into()),
                ..FunctionPolicy::default()
            },
        );
        assert_eq!(export.named(&policy).0, "cat");
        // By the derived name too.
        let mut by_derived = ToolPolicy::default();
        by_derived.functions.insert(
            "read_file".into(),
            FunctionPolicy {
                name: Some("fs.read".into()),
                ..FunctionPolicy::default()
            },
        );
        assert_eq!(export.named(&by_derived).0, "fs.read");
    }

    #[test]
    fn the_nearest_name_is_suggested() {
        let known = [
            "read_file",
            "tail_file",
            "grep_files",
            "list_dir",
            "json_query",
        ];
        let n = nearest("json_qeury", known);
        assert_eq!(n.suggestion, Some("json_query"));
        assert_eq!(n.ranked[0], "json_query");
        assert_eq!(nearest("Read-File", known).suggestion, Some("read_file"));
        assert_eq!(nearest("grep", known).suggestion, Some("grep_files"));
        let n = nearest("cat", known);
        assert_eq!(n.suggestion, None);
        assert_eq!(n.ranked.len(), 5);
        let long = "n".repeat(1000);
        let n = nearest(&long, known);
        assert_eq!(n.suggestion, None);
        assert_eq!(
            n.ranked,
            [
                "grep_files",
                "json_query",
                "list_dir",
                "read_file",
                "tail_file"
            ]
        );
    }

    #[test]
    fn a_collision_names_the_keys_that_end_it() {
        let builtin = Naming {
            key: "read-file".into(),
            origin: Some(PolicyOrigin::Builtins("read_file".into())),
        };
        let sibling = Naming {
            key: "read-file".into(),
            origin: Some(PolicyOrigin::Sibling(PathBuf::from("/d/fs.toml"))),
        };
        assert_eq!(
            collision_fix(&builtin, &sibling),
            "prefix = \"…\" or [functions.read-file] name = \"…\" in /d/fs.toml; or [tools.read_file] prefix = \"…\" or [tools.read_file.functions.read-file] name = \"…\" in the configuration file, or leave read_file out of `builtins = [...]`"
        );
    }
}
