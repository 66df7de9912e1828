//! The `[store]` table: where sessions are kept, a SQLite file (`store.path`) or a
//! PostgreSQL database (`store.url`), never both.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::ConfigError;
use crate::keys::{Layers, STORE_PATH, STORE_URL};

/// What `store.url` may be, as messages say it.
pub const STORE_URL_RULE: &str =
    "a PostgreSQL URL, postgres://USER:PASSWORD@HOST:PORT/DATABASE (or postgresql://…)";

/// `[store]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileStore {
    path: Option<String>,
    url: Option<String>,
}

impl FileStore {
    /// `store.path` (a path of the file relative to `base`) and `store.url`, each from its
    /// flag (`path_flag`, `url_flag`), variable or the file; an error for a URL that is not
    /// PostgreSQL's, or for both set.
    pub(crate) fn resolve(
        &self,
        path_flag: Option<&Path>,
        url_flag: Option<&str>,
        base: &Path,
        layers: &Layers<'_>,
    ) -> Result<(Option<PathBuf>, Option<String>), ConfigError> {
        let path = match (path_flag, STORE_PATH.env_value(layers.env), &self.path) {
            (Some(p), _, _) => Some(p.to_path_buf()),
            (None, Some(p), _) => Some(PathBuf::from(p)),
            (None, None, Some(p)) => Some(base.join(p)),
            (None, None, None) => None,
        };
        let Some((url, origin)) = STORE_URL
            .given(url_flag, None, layers)
            .or_else(|| self.url.clone().map(|u| (u, layers.file_label.to_string())))
        else {
            return Ok((path, None));
        };
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(ConfigError::Value {
                key: STORE_URL.name.into(),
                value: not_shown(&url),
                allowed: STORE_URL_RULE.into(),
                origin,
            });
        }
        if path.is_some() {
            return Err(ConfigError::Value {
                key: "store".into(),
                value: "both a PostgreSQL URL and a database file".into(),
                allowed: "either store.url (--store-url, SLUICE_STORE_URL) or store.path (--store, SLUICE_STORE), not both".into(),
                origin,
            });
        }
        Ok((None, Some(url)))
    }
}

/// A URL that is not PostgreSQL's as a message shows it: its scheme only, as it may hold a
/// password.
fn not_shown(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, _))
            if !scheme.is_empty()
                && scheme.len() <= 20
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
        {
            format!("a URL starting {scheme:?} (not shown: it may hold a password)")
        }
        _ => "a value that is not a URL (not shown: it may hold a password)".to_string(),
    }
}
