//! Where a component finds its roots, told to the model: a tool that takes file paths but
//! no root name opens them in the guest's file system, where each granted root is
//! preopened at `/<root name>`. Its description ends with a sentence that says so;
//! without it, a model passes host paths or bare names the tool cannot open.

use wasmtime::component::types::Type;

use crate::policy::RootGrant;

/// Argument names that take a path, compared without case, `_` and `-`; names ending in
/// `path`, `file`, `dir` or `directory` count too (`sourcePath`, `inputFile`).
const PATH_ARGUMENTS: &[&str] = &[
    "path",
    "paths",
    "file",
    "files",
    "dir",
    "directory",
    "filename",
    "folder",
];

/// The sentence that ends the description of a tool whose arguments are `fields` under the
/// roots `roots`, or `None` when it takes no path (no string argument named like one) or
/// takes a `root` name (as the built-ins and Sluice-style tools do, whose paths are relative
/// to that root):
///
/// - `Paths: the granted directories are mounted at /data (read-only) and /out
///   (read-write); give paths under them, like /data/…` ;
/// - `Paths: no directory is granted to this tool, so it can open no file.`
pub fn sentence(fields: &[(String, Type)], roots: &[RootGrant]) -> Option<String> {
    let takes_root = fields.iter().any(|(n, _)| n == "root");
    let takes_path = fields.iter().any(|(n, t)| is_path_argument(n, t));
    if takes_root || !takes_path {
        return None;
    }
    let Some(first) = roots.first() else {
        return Some("Paths: no directory is granted to this tool, so it can open no file.".into());
    };
    let mounts: Vec<String> = roots
        .iter()
        .map(|r| {
            format!(
                "/{} ({})",
                r.name,
                if r.write { "read-write" } else { "read-only" }
            )
        })
        .collect();
    let listed = match mounts.as_slice() {
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
        [] => String::new(),
    };
    let (verb, noun) = if roots.len() == 1 {
        ("is", "directory")
    } else {
        ("are", "directories")
    };
    Some(format!(
        "Paths: the granted {noun} {verb} mounted at {listed}; give paths under {}, like /{}/….",
        if roots.len() == 1 { "it" } else { "them" },
        first.name
    ))
}

/// True for an argument named like a path whose type is a string, an optional string or a
/// list of strings.
fn is_path_argument(name: &str, ty: &Type) -> bool {
    let n: String = name
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect();
    let named = PATH_ARGUMENTS.contains(&n.as_str())
        || ["path", "paths", "file", "dir", "directory"]
            .iter()
            .any(|end| n.ends_with(end));
    named && is_stringish(ty)
}

fn is_stringish(ty: &Type) -> bool {
    match ty {
        Type::String => true,
        Type::Option(o) => is_stringish(&o.ty()),
        Type::List(l) => is_stringish(&l.ty()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn root(name: &str, write: bool) -> RootGrant {
        RootGrant {
            name: name.into(),
            dir: PathBuf::from("/srv").join(name),
            write,
        }
    }

    #[test]
    fn tools_taking_paths_are_told_where_roots_are_mounted() {
        let path = vec![("path".to_string(), Type::String)];
        assert_eq!(
            sentence(&path, &[root("data", false)]).as_deref(),
            Some(
                "Paths: the granted directory is mounted at /data (read-only); give paths under it, like /data/…."
            )
        );
        let source = vec![("sourcePath".to_string(), Type::String)];
        assert_eq!(
            sentence(
                &source,
                &[root("data", false), root("logs", false), root("out", true)]
            )
            .as_deref(),
            Some(
                "Paths: the granted directories are mounted at /data (read-only), /logs (read-only) and /out (read-write); give paths under them, like /data/…."
            )
        );
        assert_eq!(
            sentence(&path, &[]).as_deref(),
            Some("Paths: no directory is granted to this tool, so it can open no file.")
        );
    }

    #[test]
    fn tools_without_paths_or_with_a_root_name_are_not() {
        let roots = [root("data", false)];
        assert_eq!(sentence(&[("text".into(), Type::String)], &roots), None);
        assert_eq!(sentence(&[("path".into(), Type::U64)], &roots), None);
        assert_eq!(
            sentence(
                &[("path".into(), Type::String), ("root".into(), Type::String)],
                &roots
            ),
            None
        );
    }
}
