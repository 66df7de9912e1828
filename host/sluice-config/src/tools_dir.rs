//! The tools directory (`--tools DIR`, `tools_dir`): every `*.wasm` with its sibling
//! `*.toml` policy. One bad entry (a policy that does not parse or grants what cannot be
//! granted, a name another entry has) leaves only that entry out, as an unloadable
//! component does (docs/configuration.md#tools-directory): it is a [`RejectedTool`] with
//! its reason, and the other tools start; `strict` refuses the start instead.

use std::path::{Path, PathBuf};

use sluice_grants::PolicyOrigin;

use crate::ConfigError;
use crate::file::Source;
use crate::policy_file::Policy;
use crate::tools::{Resolver, ToolConfig, ToolSource};

/// A tools-directory entry left out because its policy or its name is wrong; it is offered
/// as unavailable with [`RejectedTool::reason`], as a component that fails to load is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RejectedTool {
    /// The component file (`DIR/NAME.wasm`).
    pub component: PathBuf,
    /// What is wrong, as the error that `strict` stops on says it.
    pub reason: String,
}

/// One entry of the tools directory: its policy resolved, or the error that leaves it out.
pub(crate) type Entry = Result<ToolConfig, (PathBuf, ConfigError)>;

impl Resolver<'_> {
    /// Every `*.wasm` in `dir`, sorted by name, each with its sibling `*.toml` policy or
    /// none (nothing granted). Entries that are not regular files (a FIFO, a directory, a
    /// dangling link) are listed too, so loading them reports why they are unavailable
    /// (and `strict` refuses to start) instead of leaving them out without a word. An
    /// entry whose policy is wrong, or whose name one of `earlier` (or an entry before it)
    /// has, is an `Err` with its component and the error.
    ///
    /// # Errors
    /// [`ConfigError::Read`] when `dir` cannot be listed.
    pub(crate) fn directory(
        &self,
        dir: &Path,
        earlier: &[ToolConfig],
    ) -> Result<Vec<Entry>, ConfigError> {
        let read_dir = std::fs::read_dir(dir).map_err(|e| ConfigError::Read {
            path: dir.to_path_buf(),
            reason: e.to_string(),
        })?;
        let mut wasm: Vec<PathBuf> = read_dir
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
            .collect();
        wasm.sort();
        let mut out: Vec<Entry> = Vec::new();
        for path in wasm {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let taken = earlier
                .iter()
                .chain(out.iter().filter_map(|e| e.as_ref().ok()))
                .find(|t| t.name == name);
            let entry = match taken {
                Some(first) => Err(collision(first, &path, &name)),
                None => self.sibling(dir, &path, &name),
            };
            out.push(entry.map_err(|e| (path, e)));
        }
        Ok(out)
    }

    /// The entry of component `path` named `name`, with its sibling policy if any.
    fn sibling(&self, dir: &Path, path: &Path, name: &str) -> Result<ToolConfig, ConfigError> {
        let policy_path = path.with_extension("toml");
        let (policy, origin) = if policy_path.exists() {
            let text = sluice_operator_files::read_text(
                &policy_path,
                sluice_operator_files::MAX_CONFIG_FILE_BYTES,
            )
            .map_err(|e| ConfigError::Read {
                path: policy_path.clone(),
                reason: e.to_string(),
            })?;
            let source = Source {
                path: &policy_path,
                text: &text,
                label: policy_path.display().to_string(),
            };
            let policy: Policy = source.parse().map_err(sibling_source_error)?;
            (policy, policy_path.display().to_string())
        } else {
            (Policy::default(), path.display().to_string())
        };
        let by = (PolicyOrigin::Sibling(policy_path.clone()), dir);
        let source = ToolSource::Component(path.to_path_buf());
        self.entry(name, source, &policy, by, &origin)
    }
}

/// Why component `second` (named `name`) cannot be an entry: `first` has its name.
fn collision(first: &ToolConfig, second: &Path, name: &str) -> ConfigError {
    let (first_is, also) = match (&first.origin, &first.source) {
        (PolicyOrigin::Builtins(_), _) => (
            format!("the built-in tool {name}"),
            format!(", or leave {name} out of `builtins` in sluice.toml"),
        ),
        (PolicyOrigin::Table(_), _) => (
            format!(
                "[tools.{name}] of {}",
                first
                    .configured_in
                    .strip_suffix(&format!(" [tools.{name}]"))
                    .unwrap_or(&first.configured_in)
            ),
            format!(", or rename the table [tools.{name}]"),
        ),
        (PolicyOrigin::Sibling(_), ToolSource::Component(path)) => {
            (path.display().to_string(), String::new())
        }
        (PolicyOrigin::Sibling(_), _) => (first.configured_in.clone(), String::new()),
    };
    ConfigError::Collision {
        name: name.to_string(),
        first: first_is,
        second: second.display().to_string(),
        fix: format!(
            "the tools directory names an entry after its file, so rename {} (and its policy {name}.toml with it){also}",
            second.display()
        ),
    }
}

/// A tools-directory policy's parse error, with a clearer message when it sets `component`
/// or `builtin`: the component of a sibling policy is its `.wasm`.
fn sibling_source_error(e: ConfigError) -> ConfigError {
    match e {
        ConfigError::Parse { path, message }
            if message.contains("unknown field `component`")
                || message.contains("unknown field `builtin`") =>
        {
            let line = message.split(',').next().unwrap_or_default();
            ConfigError::Parse {
                path,
                message: format!(
                    "{line}: a tools-directory policy describes its sibling .wasm; `component` and `builtin` are not allowed here"
                ),
            }
        }
        other => other,
    }
}
