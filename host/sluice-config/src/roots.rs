//! Roots: the named directories the file tools may read (`[roots]`, `--root NAME=DIR`).

use std::path::{Path, PathBuf};

use crate::ConfigError;

/// A named root directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RootConfig {
    /// Its name: what the model passes as `root`.
    pub name: String,
    /// The directory, made absolute.
    pub dir: PathBuf,
}

/// What a root name may be.
const ROOT_NAME_RULE: &str = "a root name is 1 to 64 characters of letters, digits, `_`, `-` and `.`, other than `.` and `..`";

/// The roots: `--root` flags (`flags`, in order), else `[roots]` (`table`, directories
/// relative to `base`, the file's directory), else the current directory; two with one name
/// are refused.
pub(crate) fn resolve(
    flags: &[String],
    table: &toml::Table,
    base: &Path,
    file_label: &str,
) -> Result<Vec<RootConfig>, ConfigError> {
    let mut roots = Vec::new();
    if !flags.is_empty() {
        for r in flags {
            roots.push(root_from_flag(r, &format!("--root {r}"))?);
        }
    } else if !table.is_empty() {
        for (name, dir) in table {
            let Some(dir) = dir.as_str() else {
                return Err(ConfigError::Value {
                    key: format!("roots.{name}"),
                    value: dir.to_string(),
                    allowed: "a directory path (a string)".into(),
                    origin: file_label.to_string(),
                });
            };
            roots.push(root(
                name,
                &base.join(dir),
                dir,
                &format!("{} in {file_label}", root_key(name)),
            )?);
        }
    } else {
        let default = "default: the current directory, as no --root and no [roots] is given";
        roots.push(root_from_flag(".", default)?);
    }
    for (i, r) in roots.iter().enumerate() {
        if roots[..i].iter().any(|o| o.name == r.name) {
            return Err(ConfigError::Root {
                name: r.name.clone(),
                dir: r.dir.display().to_string(),
                origin: "--root".into(),
                reason: "two roots have this name; name them apart with --root NAME=DIR".into(),
            });
        }
    }
    Ok(roots)
}

/// `DIR` (named by its last component) or `NAME=DIR`, as given by `origin` (`--root DIR`,
/// for messages).
pub(crate) fn root_from_flag(flag: &str, origin: &str) -> Result<RootConfig, ConfigError> {
    if let Some((name, dir)) = flag.split_once('=') {
        if valid_name(name) {
            return root(name, Path::new(dir), dir, origin);
        }
        // A directory whose path holds `=` is still taken whole, when it exists.
        if !Path::new(flag).exists() {
            return Err(ConfigError::Root {
                name: name.to_string(),
                dir: dir.to_string(),
                origin: origin.to_string(),
                reason: format!("the name is not allowed: {ROOT_NAME_RULE} (--root NAME=DIR)"),
            });
        }
    }
    let path = Path::new(flag);
    let absolute = std::path::absolute(path).map_err(|e| ConfigError::Root {
        name: flag.to_string(),
        dir: flag.to_string(),
        origin: origin.to_string(),
        reason: e.to_string(),
    })?;
    let name = absolute
        .canonicalize()
        .unwrap_or_else(|_| absolute.clone())
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| valid_name(n))
        .unwrap_or_else(|| "root".to_string());
    root(&name, path, flag, origin)
}

/// A root called `name` at `dir` (`shown` is how the operator wrote it, `origin` what set
/// it: `--root …`, `roots.NAME in FILE`).
pub(crate) fn root(
    name: &str,
    dir: &Path,
    shown: &str,
    origin: &str,
) -> Result<RootConfig, ConfigError> {
    let fail = |reason: String| ConfigError::Root {
        name: name.to_string(),
        dir: shown.to_string(),
        origin: origin.to_string(),
        reason,
    };
    if !valid_name(name) {
        return Err(fail(ROOT_NAME_RULE.into()));
    }
    let dir = dir
        .canonicalize()
        .map_err(|e| fail(format!("cannot be opened: {e}")))?;
    if !dir.is_dir() {
        return Err(fail("is not a directory".into()));
    }
    Ok(RootConfig {
        name: name.to_string(),
        dir,
    })
}

/// The key of `[roots]` entry `name` as messages show it: `roots.logs`, or with the name
/// quoted where TOML needs it (`roots."."`).
pub(crate) fn root_key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
    if bare {
        format!("roots.{name}")
    } else {
        format!("roots.{name:?}")
    }
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}
