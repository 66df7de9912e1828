//! `config` and `secrets` of a tool policy: the values and secrets of a component's
//! `wasi:config/store`. Secrets are only located here; their values are read when the
//! component loads (`sluice_runtime::secrets`), so a secret that cannot be read makes its
//! component unavailable rather than stopping the start.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use sluice_grants::SecretSource;

use crate::ConfigError;
use crate::file::Raw;

/// What a config or secret key may be.
pub const CONFIG_KEY_RULE: &str = "1 to 128 characters of A-Z, a-z, 0-9, `_`, `.` and `-`";

/// True when `key` follows [`CONFIG_KEY_RULE`].
fn valid_config_key(key: &str) -> bool {
    (1..=128).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// `{ env = "VAR" }` or `{ file = "path" }` in `[secrets]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SecretFile {
    env: Option<String>,
    file: Option<String>,
}

/// A policy's checked config values and secret sources, by config key.
pub(crate) type ConfigAndSecrets = (BTreeMap<String, String>, BTreeMap<String, SecretSource>);

/// The checked `config` and `secrets` of a policy (secret files resolved against `base`);
/// `value_error(field, value, allowed)` makes the error naming the key.
pub(crate) fn config_and_secrets(
    config_raw: &BTreeMap<String, Raw>,
    secrets_raw: &BTreeMap<String, SecretFile>,
    base: &Path,
    value_error: &dyn Fn(&str, String, &str) -> ConfigError,
) -> Result<ConfigAndSecrets, ConfigError> {
    let key_error = |table: &str, key: &str| {
        value_error(
            table,
            format!("the key {key:?}"),
            &format!("a table whose keys are {CONFIG_KEY_RULE}"),
        )
    };
    let mut config = BTreeMap::new();
    for (key, value) in config_raw {
        if !valid_config_key(key) {
            return Err(key_error("config", key));
        }
        match value {
            Raw::String(s) => {
                config.insert(key.clone(), s.clone());
            }
            other => {
                return Err(value_error(
                    &format!("config.{key}"),
                    other.shown(),
                    "a string (config values are strings: quote numbers and booleans)",
                ));
            }
        }
    }
    let mut secrets = BTreeMap::new();
    for (key, s) in secrets_raw {
        if !valid_config_key(key) {
            return Err(key_error("secrets", key));
        }
        let field = format!("secrets.{key}");
        if config.contains_key(key) {
            return Err(value_error(
                &field,
                format!("{key:?}, also set in config"),
                "a key set in either config or secrets, not both",
            ));
        }
        secrets.insert(key.clone(), secret_source(s, &field, base, value_error)?);
    }
    Ok((config, secrets))
}

/// The source `s` names (a file resolved against `base`); the error names `field` (as
/// `value_error` takes it) and what is allowed.
pub(crate) fn secret_source(
    s: &SecretFile,
    field: &str,
    base: &Path,
    value_error: &dyn Fn(&str, String, &str) -> ConfigError,
) -> Result<SecretSource, ConfigError> {
    let allowed = "{ env = \"VAR\" } (an environment variable of the operator) or { file = \"path\" } (relative to this file)";
    match (&s.env, &s.file) {
        (Some(var), None) if !var.is_empty() && !var.contains(['=', '\0']) => {
            Ok(SecretSource::Env(var.clone()))
        }
        (None, Some(file)) if !file.trim().is_empty() => Ok(SecretSource::File(base.join(file))),
        (Some(var), None) => Err(value_error(field, format!("env = {var:?}"), allowed)),
        (None, Some(file)) => Err(value_error(field, format!("file = {file:?}"), allowed)),
        (Some(_), Some(_)) => Err(value_error(field, "both env and file".into(), allowed)),
        (None, None) => Err(value_error(field, "an empty table".into(), allowed)),
    }
}

impl crate::Config {
    /// Every file the configuration names as the source of a secret or a key: each tool's
    /// `secrets.KEY = { file = "…" }` and `http_credentials."HOST".secret = { file = "…" }`,
    /// `model.api_key_file` and `server.tls.key_file`,
    /// resolved, once each, in that order. No tool may read them
    /// (docs/keys.md#secret-files): the runtime refuses them by name and by identity in every
    /// tool, whichever tools are loaded.
    pub fn secret_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = Vec::new();
        let named = self
            .tools
            .iter()
            .flat_map(|t| {
                // A credential's file is a secret's source as much as one of `secrets`.
                let credentials = t.http.credentials.iter().map(|c| &c.secret);
                t.secrets.values().chain(credentials)
            })
            .filter_map(|s| match s {
                SecretSource::File(path) => Some(path),
                SecretSource::Env(_) => None,
            })
            .chain(self.model.api_key_file.as_ref())
            .chain(self.server.tls.as_ref().map(|t| &t.key_file));
        for path in named {
            if !files.contains(path) {
                files.push(path.clone());
            }
        }
        files
    }
}
