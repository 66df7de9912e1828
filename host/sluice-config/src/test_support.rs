//! What the unit tests of the tables share: a `sluice.toml` of given text, resolved.

use crate::{Config, Overrides};

/// `text` as a `sluice.toml` (in a directory of its own, which is also the one root),
/// resolved with no environment; an error as its message with the file's path shown as
/// `<file>`.
pub(crate) fn resolve_text(text: &str) -> Result<Config, String> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("sluice.toml");
    std::fs::write(&file, text).expect("write sluice.toml");
    let overrides = Overrides {
        roots: vec![dir.path().display().to_string()],
        ..Overrides::default()
    };
    Config::resolve(Some(&file), &|_| None, &overrides)
        .map_err(|e| e.to_string().replace(&file.display().to_string(), "<file>"))
}
