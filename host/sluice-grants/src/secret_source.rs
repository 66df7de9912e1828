//! Where a secret is read from, as a policy names it (`[secrets]`, `http_credentials`'
//! `secret`, and `server.oauth.introspection.client_secret` in `sluice.toml`).

use std::ffi::OsString;
use std::path::PathBuf;

use sluice_operator_files::{MAX_SECRET_FILE_BYTES, RegularFileError, read_regular};

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

/// Why a secret could not be read; the text is the reason after `cannot be read from …: `.
#[derive(Debug, thiserror::Error)]
pub enum SecretReadError {
    /// The environment variable is not set.
    #[error("it is not set")]
    NotSet,
    /// The value (variable or file) is not UTF-8.
    #[error("it is not UTF-8")]
    NotUtf8,
    /// The file is missing, not a regular file, over 64 KiB or unreadable.
    #[error(transparent)]
    File(#[from] RegularFileError),
}

impl SecretSource {
    /// The secret's value: the variable as `env` gives it, or the file's contents with one
    /// trailing `\n` (or `\r\n`) removed. The file is opened without blocking and refused
    /// unless a regular file of at most [`MAX_SECRET_FILE_BYTES`] (a FIFO or a device named
    /// here cannot hang the read).
    ///
    /// # Errors
    /// [`SecretReadError`] naming what is wrong with the variable or the file.
    pub fn read(&self, env: &dyn Fn(&str) -> Option<OsString>) -> Result<String, SecretReadError> {
        match self {
            SecretSource::Env(var) => env(var)
                .ok_or(SecretReadError::NotSet)?
                .into_string()
                .map_err(|_| SecretReadError::NotUtf8),
            SecretSource::File(path) => {
                let bytes = read_regular(path, MAX_SECRET_FILE_BYTES)?;
                let mut text = String::from_utf8(bytes).map_err(|_| SecretReadError::NotUtf8)?;
                if text.ends_with("\r\n") {
                    text.truncate(text.len() - 2);
                } else if text.ends_with('\n') {
                    text.truncate(text.len() - 1);
                }
                Ok(text)
            }
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

    #[test]
    fn a_read_takes_the_variable_whole_and_one_newline_off_a_file() {
        let env = |var: &str| (var == "SET").then(|| OsString::from("abc\n"));
        assert_eq!(SecretSource::Env("SET".into()).read(&env).unwrap(), "abc\n");
        let unset = SecretSource::Env("UNSET".into()).read(&env).unwrap_err();
        assert_eq!(unset.to_string(), "it is not set");

        let dir = std::env::temp_dir().join(format!("sluice-grants-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (contents, value) in [("s3cret\r\n", "s3cret"), ("s3cret\n\n", "s3cret\n")] {
            let path = dir.join("secret.txt");
            std::fs::write(&path, contents).unwrap();
            assert_eq!(SecretSource::File(path).read(&env).unwrap(), value);
        }
        std::fs::write(dir.join("latin1.txt"), b"\xe9t\xe9").unwrap();
        let e = SecretSource::File(dir.join("latin1.txt"))
            .read(&env)
            .unwrap_err();
        assert_eq!(e.to_string(), "it is not UTF-8");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
