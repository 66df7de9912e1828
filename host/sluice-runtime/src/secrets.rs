//! `wasi:config/store` for components: the plain values and the secrets a policy grants,
//! resolved when the component loads, and the scan that withholds every secret value of a
//! component from its observations (docs/observations.md#secrets-are-withheld).
//!
//! The store is `wasi:config/store@0.2.0-rc.1` as wasmtime-wasi-config 48 implements it;
//! a component granted nothing sees an empty store.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use wasmtime_wasi_config::WasiConfigVariables;

/// The `wasi:config` release the host provides (wasmtime-wasi-config 48).
pub const WASI_CONFIG_VERSION: &str = "0.2.0-rc.1";

/// The shortest secret, in bytes. A shorter one refuses its component at load: replacing
/// every occurrence of a 1-byte secret in an observation would mangle it, and leaving short
/// secrets unscanned would let them leak (docs/configuration.md#config-and-secrets).
pub const MIN_SECRET_BYTES: usize = 8;

/// The marker that replaces each occurrence of the secret of config key `key` in an
/// observation: `[secret withheld: KEY]`.
pub fn withheld_marker(key: &str) -> String {
    format!("[secret withheld: {key}]")
}

/// A secret value. It has no `Display`, and its `Debug` prints `Secret(***)`, so that it
/// cannot reach a log line or an error message by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    /// The value itself, for the config store and the scan only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Where a secret comes from, as a policy names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretSource {
    /// `{ env = "VAR" }`: the operator's environment variable `VAR`, as it is.
    Env(String),
    /// `{ file = "path" }`: the file's contents (UTF-8), read at load, with one trailing
    /// `\n` (or `\r\n`) removed; the path is already resolved against the policy file.
    File(PathBuf),
}

impl std::fmt::Display for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretSource::Env(var) => write!(f, "environment variable {var}"),
            SecretSource::File(path) => write!(f, "file {}", path.display()),
        }
    }
}

/// The secrets of one component, longest first (so that a secret holding another is
/// withheld whole), shared by its calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Secrets(Vec<(String, Secret)>);

impl Secrets {
    /// The secrets `(config key, value)`.
    pub fn new(mut secrets: Vec<(String, Secret)>) -> Secrets {
        secrets.sort_by(|a, b| {
            b.1.expose()
                .len()
                .cmp(&a.1.expose().len())
                .then(a.0.cmp(&b.0))
        });
        Secrets(secrets)
    }

    /// Every secret of every set in `sets`, once (a set shared by several tools counts
    /// once), longest first.
    pub fn union<'a>(sets: impl IntoIterator<Item = &'a Secrets>) -> Secrets {
        let mut all: Vec<(String, Secret)> = Vec::new();
        for (key, secret) in sets.into_iter().flat_map(|s| s.0.iter()) {
            if !all
                .iter()
                .any(|(k, s)| k == key && s.expose() == secret.expose())
            {
                all.push((key.clone(), secret.clone()));
            }
        }
        Secrets::new(all)
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every occurrence of every secret replaced by [`withheld_marker`], and the
    /// keys withheld (in the order scanned; empty when none occurred). Each secret is looked
    /// for as it is and as it appears inside a JSON string (escaped), since observations are
    /// JSON.
    pub fn withhold(&self, text: &str) -> (String, Vec<String>) {
        let mut out = None::<String>;
        let mut keys = Vec::new();
        for (key, secret) in &self.0 {
            let raw = secret.expose();
            let escaped = serde_json::Value::from(raw).to_string();
            let escaped = &escaped[1..escaped.len() - 1];
            let mut forms = vec![escaped];
            if raw != escaped {
                forms.push(raw);
            }
            for form in forms {
                let current = out.as_deref().unwrap_or(text);
                if current.contains(form) {
                    let replaced = current.replace(form, &withheld_marker(key));
                    out = Some(replaced);
                    if !keys.contains(key) {
                        keys.push(key.clone());
                    }
                }
            }
        }
        (out.unwrap_or_else(|| text.to_string()), keys)
    }
}

/// What a component's `wasi:config/store` holds, and its secrets for the scan.
#[derive(Default)]
pub(crate) struct ComponentConfig {
    /// Values and secrets, by config key.
    pub(crate) vars: WasiConfigVariables,
    /// The secrets, for [`Secrets::withhold`].
    pub(crate) secrets: Arc<Secrets>,
}

/// Why a component's config could not be resolved (its component is unavailable).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("its secret {key:?} cannot be read from {from}: {reason}")]
pub struct SecretError {
    /// The config key.
    pub key: String,
    /// Where it was to come from.
    pub from: SecretSource,
    /// What went wrong (never the value).
    pub reason: String,
}

/// Resolves `config` and `secrets` of a policy: reads each secret from its source (`env`
/// looks variables up).
///
/// # Errors
/// [`SecretError`] for a variable that is not set (or not UTF-8), a file that cannot be read
/// or is not UTF-8, or a secret shorter than [`MIN_SECRET_BYTES`] (empty included).
pub(crate) fn resolve(
    config: &BTreeMap<String, String>,
    secrets: &BTreeMap<String, SecretSource>,
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<ComponentConfig, SecretError> {
    let mut vars = WasiConfigVariables::new();
    for (k, v) in config {
        vars.insert(k.clone(), v.clone());
    }
    let mut resolved = Vec::new();
    for (key, source) in secrets {
        let fail = |reason: String| SecretError {
            key: key.clone(),
            from: source.clone(),
            reason,
        };
        let value = match source {
            SecretSource::Env(var) => env(var)
                .ok_or_else(|| fail("it is not set".into()))?
                .into_string()
                .map_err(|_| fail("it is not UTF-8".into()))?,
            SecretSource::File(path) => {
                let bytes = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
                let mut text =
                    String::from_utf8(bytes).map_err(|_| fail("it is not UTF-8".into()))?;
                if text.ends_with("\r\n") {
                    text.truncate(text.len() - 2);
                } else if text.ends_with('\n') {
                    text.truncate(text.len() - 1);
                }
                text
            }
        };
        if value.len() < MIN_SECRET_BYTES {
            return Err(fail(format!(
                "it is {} bytes; a secret must be at least {MIN_SECRET_BYTES} bytes so that it can be withheld from observations (put a shorter value that is not secret in `config`)",
                value.len()
            )));
        }
        vars.insert(key.clone(), value.clone());
        resolved.push((key.clone(), Secret::new(value)));
    }
    Ok(ComponentConfig {
        vars,
        secrets: Arc::new(Secrets::new(resolved)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(pairs: &[(&str, &str)]) -> Secrets {
        Secrets::new(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), Secret::new(v.to_string())))
                .collect(),
        )
    }

    #[test]
    fn debug_hides_the_value() {
        let s = Secret::new("hunter2hunter2".into());
        assert_eq!(format!("{s:?}"), "Secret(***)");
        let all = secrets(&[("token", "hunter2hunter2")]);
        assert_eq!(format!("{all:?}"), r#"Secrets([("token", Secret(***))])"#);
    }

    #[test]
    fn withholds_every_occurrence_raw_and_escaped() {
        let all = secrets(&[("token", "s3cr3t-t0ken"), ("quoted", "a\"b\\c-long")]);
        let (text, keys) =
            all.withhold(r#"{"a":"s3cr3t-t0ken and s3cr3t-t0ken","b":"a\"b\\c-long"}"#);
        assert_eq!(
            text,
            r#"{"a":"[secret withheld: token] and [secret withheld: token]","b":"[secret withheld: quoted]"}"#
        );
        assert_eq!(keys, vec!["token".to_string(), "quoted".to_string()]);
        let (text, keys) = all.withhold("nothing here");
        assert_eq!(text, "nothing here");
        assert!(keys.is_empty());
    }

    #[test]
    fn a_secret_holding_another_is_withheld_whole() {
        let all = secrets(&[("short", "abcdefgh"), ("long", "abcdefgh-ijklmnop")]);
        let (text, keys) = all.withhold("x abcdefgh-ijklmnop y abcdefgh");
        assert_eq!(text, "x [secret withheld: long] y [secret withheld: short]");
        assert_eq!(keys, vec!["long".to_string(), "short".to_string()]);
    }

    #[test]
    fn resolves_env_and_file_and_strips_one_newline() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "file-secret-1\n\n").unwrap();
        let crlf = dir.path().join("crlf");
        std::fs::write(&crlf, "crlf-secret-2\r\n").unwrap();
        let config = BTreeMap::from([("region".to_string(), "eu".to_string())]);
        let sources = BTreeMap::from([
            ("a".to_string(), SecretSource::File(file)),
            ("b".to_string(), SecretSource::File(crlf)),
            ("c".to_string(), SecretSource::Env("TOKEN_VAR".into())),
        ]);
        let env = |v: &str| -> Option<std::ffi::OsString> {
            (v == "TOKEN_VAR").then(|| "env-secret-3".into())
        };
        let resolved = resolve(&config, &sources, &env).unwrap();
        assert_eq!(
            resolved
                .secrets
                .withhold("file-secret-1\n|crlf-secret-2|env-secret-3|eu")
                .0,
            "[secret withheld: a]|[secret withheld: b]|[secret withheld: c]|eu"
        );
        // One newline is removed: the secret of `a` keeps the second, so without it there
        // is nothing to withhold.
        assert_eq!(
            resolved.secrets.withhold("file-secret-1|").0,
            "file-secret-1|"
        );
    }

    #[test]
    fn load_errors_name_the_key_and_the_source() {
        let dir = tempfile::tempdir().unwrap();
        let none = BTreeMap::new();
        let env = |_: &str| -> Option<std::ffi::OsString> { None };
        let missing = BTreeMap::from([("api".to_string(), SecretSource::Env("NOPE".into()))]);
        assert_eq!(
            resolve(&none, &missing, &env).err().unwrap().to_string(),
            "its secret \"api\" cannot be read from environment variable NOPE: it is not set"
        );
        let path = dir.path().join("absent");
        let absent = BTreeMap::from([("api".to_string(), SecretSource::File(path.clone()))]);
        assert_eq!(
            resolve(&none, &absent, &env).err().unwrap().to_string(),
            format!(
                "its secret \"api\" cannot be read from file {}: No such file or directory (os error 2)",
                path.display()
            )
        );
        let short = dir.path().join("short");
        std::fs::write(&short, "1234567\n").unwrap();
        let short = BTreeMap::from([("pin".to_string(), SecretSource::File(short.clone()))]);
        let e = resolve(&none, &short, &env).err().unwrap().to_string();
        assert!(
            e.ends_with(": it is 7 bytes; a secret must be at least 8 bytes so that it can be withheld from observations (put a shorter value that is not secret in `config`)"),
            "{e}"
        );
    }
}
