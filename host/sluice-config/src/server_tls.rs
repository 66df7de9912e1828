//! `[server.tls]`: the certificate and private key `sluice serve`, `sluice mcp --listen` and
//! the `telemetry.metrics_listen` listener serve HTTPS with (docs/configuration.md#servertls).
//! Only the paths are resolved here; `sluice_server::tls` reads the files (PEM), checks that
//! the key matches the certificate, and reloads them when they change.
//!
//! ```toml
//! [server.tls]
//! cert_file = "tls/server.crt"   # relative to this file
//! key_file = "tls/server.key"
//! ```
//!
//! `--tls-cert FILE --tls-key FILE` (`sluice serve`, `sluice mcp`) replace the table; their
//! paths are relative to the current directory.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::ConfigError;

/// The flag that sets `server.tls.cert_file`.
pub const FLAG_TLS_CERT: &str = "--tls-cert";

/// The flag that sets `server.tls.key_file`.
pub const FLAG_TLS_KEY: &str = "--tls-key";

/// What `[server.tls]` must hold, as messages say it.
pub const TLS_FILES_RULE: &str = "both cert_file (the certificate chain, PEM, the server's certificate first) and key_file (its private key, PEM: PKCS#8, PKCS#1 or SEC1), or neither";

/// `[server.tls]`, resolved: the files HTTPS is served with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// `server.tls.cert_file` (`--tls-cert`): the certificate chain in PEM, the server's own
    /// certificate first, then the intermediates. Relative paths in the file are relative to
    /// the file's directory.
    pub cert_file: PathBuf,
    /// `server.tls.key_file` (`--tls-key`): the private key of the first certificate in PEM
    /// (`PRIVATE KEY`, `RSA PRIVATE KEY` or `EC PRIVATE KEY`). It is a secret: no tool may
    /// read it (docs/keys.md#secret-files).
    pub key_file: PathBuf,
}

/// `[server.tls]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileTls {
    cert_file: Option<String>,
    key_file: Option<String>,
}

/// The files HTTPS is served with: the flags `cert`/`key` (`--tls-cert`, `--tls-key`) when
/// either is given, else the file's `[server.tls]` (paths relative to `base`, the file's
/// directory); `None` when neither sets them.
///
/// # Errors
/// [`ConfigError::Value`] for `server.tls` when only one of the two is given (by the flags or
/// the file), or a path is empty.
pub(crate) fn resolve(
    cert: Option<&Path>,
    key: Option<&Path>,
    file: Option<&FileTls>,
    base: &Path,
    file_label: &str,
) -> Result<Option<TlsFiles>, ConfigError> {
    let incomplete = |value: String, origin: String| ConfigError::Value {
        key: "server.tls".into(),
        value,
        allowed: TLS_FILES_RULE.into(),
        origin,
    };
    if cert.is_some() || key.is_some() {
        let origin = format!("{FLAG_TLS_CERT} and {FLAG_TLS_KEY}");
        return match (cert, key) {
            (Some(cert), Some(key)) if !empty(cert) && !empty(key) => Ok(Some(TlsFiles {
                cert_file: cert.to_path_buf(),
                key_file: key.to_path_buf(),
            })),
            (Some(_), Some(_)) => Err(incomplete("an empty path".into(), origin)),
            (Some(_), None) => Err(incomplete(
                format!("{FLAG_TLS_CERT} without {FLAG_TLS_KEY}"),
                origin,
            )),
            (None, _) => Err(incomplete(
                format!("{FLAG_TLS_KEY} without {FLAG_TLS_CERT}"),
                origin,
            )),
        };
    }
    let Some(file) = file else { return Ok(None) };
    let origin = file_label.to_string();
    match (&file.cert_file, &file.key_file) {
        (None, None) => Ok(None),
        (Some(cert), Some(key)) if !cert.is_empty() && !key.is_empty() => Ok(Some(TlsFiles {
            cert_file: base.join(cert),
            key_file: base.join(key),
        })),
        (Some(_), Some(_)) => Err(incomplete("an empty path".into(), origin)),
        (Some(_), None) => Err(incomplete("cert_file without key_file".into(), origin)),
        (None, Some(_)) => Err(incomplete("key_file without cert_file".into(), origin)),
    }
}

fn empty(path: &Path) -> bool {
    path.as_os_str().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> FileTls {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn file_paths_are_relative_to_the_file_and_flags_replace_them() {
        let base = Path::new("/etc/sluice");
        let file = table("cert_file = \"tls/a.crt\"\nkey_file = \"/keys/a.key\"\n");
        assert_eq!(
            resolve(None, None, Some(&file), base, "sluice.toml").unwrap(),
            Some(TlsFiles {
                cert_file: "/etc/sluice/tls/a.crt".into(),
                key_file: "/keys/a.key".into(),
            })
        );
        assert_eq!(
            resolve(
                Some(Path::new("b.crt")),
                Some(Path::new("b.key")),
                Some(&file),
                base,
                "sluice.toml"
            )
            .unwrap(),
            Some(TlsFiles {
                cert_file: "b.crt".into(),
                key_file: "b.key".into(),
            })
        );
        assert_eq!(
            resolve(None, None, Some(&table("")), base, "sluice.toml").unwrap(),
            None
        );
        assert_eq!(
            resolve(None, None, None, base, "sluice.toml").unwrap(),
            None
        );
    }

    #[test]
    fn the_key_is_a_secret_file_of_the_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sluice.toml");
        std::fs::write(
            &file,
            "[server.tls]\ncert_file = \"tls/a.crt\"\nkey_file = \"tls/a.key\"\n",
        )
        .unwrap();
        let overrides = crate::Overrides {
            roots: vec![dir.path().display().to_string()],
            ..crate::Overrides::default()
        };
        let config = crate::Config::resolve(Some(&file), &|_| None, &overrides).unwrap();
        let tls = config.server.tls.clone().unwrap();
        assert_eq!(tls.cert_file, dir.path().join("tls/a.crt"));
        assert_eq!(tls.key_file, dir.path().join("tls/a.key"));
        assert_eq!(config.secret_files(), [dir.path().join("tls/a.key")]);
    }

    #[test]
    fn one_without_the_other_is_refused() {
        let base = Path::new(".");
        let e = resolve(
            None,
            None,
            Some(&table("cert_file = \"a.crt\"")),
            base,
            "sluice.toml",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "server.tls must be {TLS_FILES_RULE}; got cert_file without key_file (from sluice.toml)"
            )
        );
        let e = resolve(None, Some(Path::new("a.key")), None, base, "sluice.toml").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "server.tls must be {TLS_FILES_RULE}; got --tls-key without --tls-cert (from --tls-cert and --tls-key)"
            )
        );
        let e = resolve(
            None,
            None,
            Some(&table("cert_file = \"\"\nkey_file = \"k\"")),
            base,
            "sluice.toml",
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .ends_with("got an empty path (from sluice.toml)")
        );
        assert!(toml::from_str::<FileTls>("cert = \"a\"").is_err());
    }
}
