//! Roots and the paths inside them: lexical normalisation, symlink resolution, and the
//! outside-the-root check.
//!
//! Inside a component the WASI sandbox (cap-std) already refuses every escape; this module
//! refuses them first, with a message that says what was wrong, and resolves symlinks so that
//! key-material names are checked on the path a symlink leads to as well as the path asked.

use std::path::{Path, PathBuf};

use crate::error::{ErrorKind, Result, ToolError};
use crate::keys::{KeyNamePolicy, is_key_path};

/// Most symlinks followed while resolving one path (as Linux's `MAXSYMLINKS`).
pub const MAX_SYMLINK_HOPS: usize = 40;

/// A named directory a tool may read.
#[derive(Clone, Debug)]
pub struct Root {
    /// The name the model passes as `root`.
    pub name: String,
    /// Where the root is: a host directory natively, a preopened directory (`/<name>`)
    /// inside a component.
    pub dir: PathBuf,
}

impl Root {
    /// A root called `name` at `dir`.
    pub fn new(name: impl Into<String>, dir: impl Into<PathBuf>) -> Self {
        Root {
            name: name.into(),
            dir: dir.into(),
        }
    }

    /// Normalises `asked` (relative to this root) and resolves its symlinks.
    ///
    /// # Errors
    /// `outside-root` for an absolute path, a `..` above the root, or a symlink that
    /// resolves outside it (absolute targets included); `io` when more than
    /// [`MAX_SYMLINK_HOPS`] symlinks are followed.
    pub fn resolve(&self, asked: &str) -> Result<Target> {
        let shown = normalize(asked)?;
        let resolved = self.follow_symlinks(&shown)?;
        let fs_path = resolved.iter().fold(self.dir.clone(), |p, c| p.join(c));
        Ok(Target {
            shown: join(&shown),
            shown_parts: shown,
            resolved_parts: resolved,
            fs_path,
        })
    }

    /// Resolves every symlink along `parts`, returning the components of the real path
    /// relative to the root.
    fn follow_symlinks(&self, parts: &[String]) -> Result<Vec<String>> {
        let shown = join(parts);
        let mut resolved: Vec<String> = Vec::with_capacity(parts.len());
        let mut pending: std::collections::VecDeque<String> = parts.iter().cloned().collect();
        let mut hops = 0;
        while let Some(part) = pending.pop_front() {
            match part.as_str() {
                "." => continue,
                ".." => {
                    if resolved.pop().is_none() {
                        return Err(ToolError::outside_root(&shown));
                    }
                    continue;
                }
                _ => {}
            }
            let candidate = resolved
                .iter()
                .fold(self.dir.clone(), |p, c| p.join(c))
                .join(&part);
            let is_link = crate::sys::stat(&candidate, false)
                .is_ok_and(|m| m.kind == crate::sys::Kind::Symlink);
            if !is_link {
                resolved.push(part);
                continue;
            }
            hops += 1;
            if hops > MAX_SYMLINK_HOPS {
                return Err(ToolError::new(
                    ErrorKind::Io,
                    format!("too many levels of symlinks (more than {MAX_SYMLINK_HOPS}): {shown}"),
                ));
            }
            let target = std::fs::read_link(&candidate).map_err(|e| ToolError::io(&shown, &e))?;
            let target = target.to_string_lossy();
            if target.starts_with('/') {
                return Err(ToolError::outside_root(&shown));
            }
            for (i, c) in target.split('/').filter(|c| !c.is_empty()).enumerate() {
                pending.insert(i, c.to_string());
            }
        }
        Ok(resolved)
    }
}

/// A path inside a root, as asked and as resolved.
#[derive(Clone, Debug)]
pub struct Target {
    /// The path as results show it: normalised, relative to the root, `/`-separated, `.`
    /// for the root itself.
    pub shown: String,
    /// The components of [`Target::shown`].
    pub shown_parts: Vec<String>,
    /// The components of the path after following symlinks, relative to the root.
    pub resolved_parts: Vec<String>,
    /// The path to open (inside the root's directory).
    pub fs_path: PathBuf,
}

impl Target {
    /// Refuses the target when its name, as asked or as resolved, is key material.
    /// `is_dir` says whether the target is a directory (then directory patterns apply to its
    /// own name too).
    pub fn refuse_key_names(&self, keys: &dyn KeyNamePolicy, is_dir: bool) -> Result<()> {
        if is_key_path(keys, &self.shown_parts, is_dir)
            || is_key_path(keys, &self.resolved_parts, is_dir)
        {
            return Err(ToolError::new(
                ErrorKind::KeyMaterial,
                format!("refusing to read key material: {}", self.shown),
            ));
        }
        Ok(())
    }
}

/// The roots of one call; the first is the default.
#[derive(Clone, Debug)]
pub struct Roots(Vec<Root>);

impl Roots {
    /// The roots, the first being the default.
    pub fn new(roots: Vec<Root>) -> Self {
        Roots(roots)
    }

    /// The root called `name`, or the first root when `name` is `None`.
    ///
    /// # Errors
    /// `invalid-argument` naming the roots there are, when `name` is not one of them or
    /// there are none.
    pub fn pick(&self, name: Option<&str>) -> Result<&Root> {
        let Some(first) = self.0.first() else {
            return Err(ToolError::new(
                ErrorKind::InvalidArgument,
                "this tool has no root directory granted; ask the operator to grant one",
            ));
        };
        let Some(name) = name else { return Ok(first) };
        self.0.iter().find(|r| r.name == name).ok_or_else(|| {
            let names: Vec<&str> = self.0.iter().map(|r| r.name.as_str()).collect();
            ToolError::new(
                ErrorKind::InvalidArgument,
                format!(
                    "root must be one of: {}; got {:?}",
                    names.join(", "),
                    crate::error::quote(name)
                ),
            )
        })
    }

    /// The roots in order.
    pub fn iter(&self) -> impl Iterator<Item = &Root> {
        self.0.iter()
    }
}

/// Lexically normalises a path relative to a root: drops empty and `.` components and
/// applies `..`.
///
/// # Errors
/// `outside-root` for an absolute path or a `..` that climbs above the root.
pub fn normalize(asked: &str) -> Result<Vec<String>> {
    if asked.contains('\0') {
        return Err(ToolError::new(
            ErrorKind::InvalidArgument,
            format!(
                "path {} holds a NUL character (\\u0000), which no file name can; give the path as the entries of list_dir spell it",
                crate::error::quote(asked)
            ),
        ));
    }
    if asked.starts_with('/') || asked.starts_with('\\') || has_drive_prefix(asked) {
        return Err(ToolError::outside_root(asked));
    }
    let mut parts: Vec<String> = Vec::new();
    for c in asked.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(ToolError::outside_root(asked));
                }
            }
            other => parts.push(other.to_string()),
        }
    }
    Ok(parts)
}

fn has_drive_prefix(p: &str) -> bool {
    let b = p.as_bytes();
    b.len() >= 2
        && b[0].is_ascii_alphabetic()
        && b[1] == b':'
        && (b.len() == 2 || b[2] == b'\\' || b[2] == b'/')
}

/// Joins components with `/`; `.` for none.
pub fn join(parts: &[String]) -> String {
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

/// The path of `rel` (a `/`-separated path relative to the root) under `dir`.
pub fn under(dir: &Path, rel: &str) -> PathBuf {
    rel.split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .fold(dir.to_path_buf(), |p, c| p.join(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes() {
        assert_eq!(normalize("a/./b//c/").unwrap(), ["a", "b", "c"]);
        assert_eq!(normalize("a/../b").unwrap(), ["b"]);
        assert_eq!(join(&normalize("").unwrap()), ".");
        assert_eq!(join(&normalize("./").unwrap()), ".");
        assert_eq!(
            normalize("f.txt\0x").unwrap_err().kind,
            ErrorKind::InvalidArgument
        );
        for bad in [
            "/etc/passwd",
            "..",
            "a/../../b",
            "../x",
            "C:\\x",
            "\\\\server",
        ] {
            let err = normalize(bad).unwrap_err();
            assert_eq!(err.kind, ErrorKind::OutsideRoot, "{bad}");
            assert!(
                err.message.starts_with("path is outside the root: "),
                "{bad}"
            );
        }
    }
}
