//! `wasi:config/store` for components: the plain values and the secrets a policy grants,
//! resolved when the component loads ([`resolve_policy`]), with the component's secrets for
//! the scan and its `http_credentials` for the `wasi:http` hooks.
//!
//! The store is `wasi:config/store@0.2.0-rc.1` as wasmtime-wasi-config 48 implements it;
//! a component granted nothing sees an empty store.

use std::collections::BTreeMap;
use std::sync::Arc;

use wasmtime_wasi_config::WasiConfigVariables;

use crate::host::http::Credentials;
use crate::policy::ToolPolicy;
use crate::secrets::{Secret, SecretError, SecretSource, Secrets, read};

/// What a component's `wasi:config/store` holds, and its secrets for the scan.
#[derive(Default)]
pub(crate) struct ComponentConfig {
    /// Values and secrets, by config key.
    pub(crate) vars: WasiConfigVariables,
    /// The secrets, for [`Secrets::withhold`]: those of `[secrets]` and of
    /// `http_credentials`.
    pub(crate) secrets: Arc<Secrets>,
    /// The resolved `http_credentials`, for the `wasi:http` hooks only.
    pub(crate) credentials: Arc<Credentials>,
}

/// Resolves `config` and `secrets` of a policy: reads each secret from its source (`env`
/// looks variables up).
///
/// # Errors
/// [`SecretError`] for a variable that is not set (or not UTF-8), a file that cannot be read,
/// is not a regular file, is larger than 64 KiB or is not UTF-8, or a secret shorter than
/// [`MIN_SECRET_BYTES`](crate::secrets::MIN_SECRET_BYTES) (empty included).
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
        let value = read(key, source, env)?;
        vars.insert(key.clone(), value.expose().to_string());
        resolved.push((key.clone(), value));
    }
    Ok(ComponentConfig {
        vars,
        secrets: Arc::new(Secrets::new(resolved)),
        credentials: Arc::default(),
    })
}

/// [`resolve`] for `policy`: its `config` and `secrets`, and the secrets of its
/// `http_credentials` (each withheld as `http_credentials.ENTRY`, into no store).
///
/// # Errors
/// [`SecretError`] as [`resolve`] says, for a credential's secret too, and for one that
/// cannot go in an HTTP header value.
pub(crate) fn resolve_policy(
    policy: &ToolPolicy,
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<ComponentConfig, SecretError> {
    let mut config = resolve(&policy.config, &policy.secrets, env)?;
    if policy.http.credentials.is_empty() {
        return Ok(config);
    }
    let mut all: Vec<(String, Secret)> = config.secrets.iter().cloned().collect();
    let credentials = Credentials::resolve(&policy.http.credentials, |key, source| {
        let value = read(key, source, env)?;
        all.push((key.to_string(), value.clone()));
        Ok(value)
    })?;
    config.secrets = Arc::new(Secrets::new(all));
    config.credentials = Arc::new(credentials);
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_credential_is_withheld_and_in_no_store() {
        use crate::policy::{HttpAllow, HttpCredential, HttpHost};
        let mut policy = ToolPolicy {
            config: BTreeMap::from([("region".to_string(), "eu".to_string())]),
            ..ToolPolicy::default()
        };
        policy.http.credentials = vec![HttpCredential {
            entry: HttpAllow {
                host: HttpHost::Name("api.example.com".into()),
                port: None,
            },
            header: "authorization".into(),
            value: "Bearer {secret}".into(),
            secret: SecretSource::Env("API_TOKEN".into()),
        }];
        let env = |v: &str| -> Option<std::ffi::OsString> {
            (v == "API_TOKEN").then(|| "cred-secret-4".into())
        };
        let resolved = resolve_policy(&policy, &env).unwrap();
        assert_eq!(
            resolved.secrets.withhold("x cred-secret-4 y").0,
            "x [secret withheld: http_credentials.api.example.com] y"
        );
        // What the hooks hold shows no value (the store's keys are checked end to end, in
        // tests/all/http_credentials.rs).
        assert!(!format!("{:?}", resolved.credentials).contains("cred-secret"));
        // Not set, or too short: the component is unavailable, naming the credential.
        let none = |_: &str| -> Option<std::ffi::OsString> { None };
        assert_eq!(
            resolve_policy(&policy, &none).err().unwrap().to_string(),
            "its secret \"http_credentials.api.example.com\" cannot be read from environment variable API_TOKEN: it is not set"
        );
        let short = |_: &str| -> Option<std::ffi::OsString> { Some("1234567".into()) };
        let e = resolve_policy(&policy, &short).err().unwrap().to_string();
        assert!(
            e.starts_with("its secret \"http_credentials.api.example.com\" cannot be read from environment variable API_TOKEN: it is 7 bytes; a secret must be at least 8 bytes"),
            "{e}"
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
        // A FIFO would hang a plain read for ever; it is refused without blocking.
        let fifo = dir.path().join("fifo");
        sluice_operator_files::make_fifo(&fifo).unwrap();
        let sources = BTreeMap::from([("api".to_string(), SecretSource::File(fifo.clone()))]);
        assert_eq!(
            resolve(&none, &sources, &env).err().unwrap().to_string(),
            format!(
                "its secret \"api\" cannot be read from file {}: not a regular file (it is a FIFO); name a regular file",
                fifo.display()
            )
        );
        let big = dir.path().join("big");
        std::fs::write(&big, "k".repeat(64 * 1024 + 1)).unwrap();
        let sources = BTreeMap::from([("api".to_string(), SecretSource::File(big.clone()))]);
        assert_eq!(
            resolve(&none, &sources, &env).err().unwrap().to_string(),
            format!(
                "its secret \"api\" cannot be read from file {}: it is larger than 65536 bytes, the most read from such a file",
                big.display()
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
