//! Where a secret is read from, as a policy names it (`[secrets]`, `http_credentials`'
//! `secret`, and `server.oauth.introspection.client_secret` in `sluice.toml`).

use std::path::PathBuf;

/// Where a secret is read from when its component loads (never when the configuration is
/// read): `{ env = "VAR" }` or `{ file = "path" }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretSource {
    /// `{ env = "VAR" }`: the operator's environment variable `VAR`, as it is.
    Env(String),
    /// `{ file = "path" }`: the file's contents (UTF-8), read at load, with one trailing
    /// `\n` (or `\r\n`) removed; the path is resolved against the directory of the file that
    /// names it. It must be a regular file of at most 64 KiB
    /// (`sluice_operator_files::MAX_SECRET_FILE_BYTES`); a FIFO, a device or a directory is
    /// refused without being read.
    File(PathBuf),
}

/// `environment variable VAR` or `file PATH`, for messages.
impl std::fmt::Display for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretSource::Env(var) => write!(f, "environment variable {var}"),
            SecretSource::File(path) => write!(f, "file {}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_shown_by_its_kind_and_name() {
        assert_eq!(
            SecretSource::Env("API_TOKEN".into()).to_string(),
            "environment variable API_TOKEN"
        );
        assert_eq!(
            SecretSource::File("/etc/sluice/key.txt".into()).to_string(),
            "file /etc/sluice/key.txt"
        );
    }
}
