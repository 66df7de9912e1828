//! AWS credentials for SigV4: from the environment, else from a shared credentials file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::config::Secret;
use crate::error::BackendError;

/// The environment variable AWS's tools read a Bedrock API key from.
pub const BEARER_TOKEN_ENV: &str = "AWS_BEARER_TOKEN_BEDROCK";

/// AWS credentials for SigV4 (`Debug` shows the access key id only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwsCredentials {
    /// The access key id (`AKIA…`, `ASIA…`).
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: Secret,
    /// The session token of temporary credentials.
    pub session_token: Option<Secret>,
}

impl AwsCredentials {
    /// Credentials from their parts.
    pub fn new(
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
        session_token: Option<String>,
    ) -> AwsCredentials {
        AwsCredentials {
            access_key_id: access_key_id.into(),
            secret_access_key: Secret::new(secret_access_key),
            session_token: session_token.map(Secret::new),
        }
    }

    /// Credentials from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`
    /// as `env` reports them, else from the profile `AWS_PROFILE` names (default `default`)
    /// in `AWS_SHARED_CREDENTIALS_FILE`, else in `{home}/.aws/credentials`. Empty values count
    /// as unset.
    ///
    /// # Errors
    /// A [`ErrorKind::BadRequest`](crate::ErrorKind::BadRequest) error naming the variables, profile and file to set up when
    /// none of them holds both an access key id and a secret key.
    pub fn resolve(
        env: &dyn Fn(&str) -> Option<String>,
        home: Option<&Path>,
    ) -> Result<AwsCredentials, BackendError> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let (Some(id), Some(secret)) = (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
            return Ok(AwsCredentials::new(id, secret, var("AWS_SESSION_TOKEN")));
        }
        let profile = var("AWS_PROFILE").unwrap_or_else(|| "default".to_string());
        let file = var("AWS_SHARED_CREDENTIALS_FILE")
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".aws").join("credentials")));
        let mut why = match &file {
            Some(path) => format!("{} has no usable [{profile}] profile", path.display()),
            None => "no home directory to find ~/.aws/credentials in".to_string(),
        };
        if let Some(path) = &file {
            // Opened without blocking and read only when regular: a FIFO here would hang
            // the start (at most 64 KiB, as for every secret file).
            match sluice_operator_files::read_text(
                path,
                sluice_operator_files::MAX_SECRET_FILE_BYTES,
            ) {
                Ok(text) => {
                    if let Some(credentials) = profile_credentials(&text, &profile) {
                        return Ok(credentials);
                    }
                }
                Err(e) => why = format!("cannot read {}: {e}", path.display()),
            }
        }
        Err(BackendError::bad_request(format!(
            "Bedrock needs credentials: set {BEARER_TOKEN_ENV} (a Bedrock API key), or \
             AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (plus AWS_SESSION_TOKEN for temporary \
             credentials), or aws_access_key_id and aws_secret_access_key in the [{profile}] \
             profile of ~/.aws/credentials (AWS_PROFILE picks the profile, \
             AWS_SHARED_CREDENTIALS_FILE the file); {why}"
        )))
    }
}

/// The credentials of `profile` in the INI text of an AWS credentials file: `[name]` sections
/// of `key = value` lines (`#` and `;` start comment lines). `None` when the profile is absent
/// or lacks an access key id or secret key.
fn profile_credentials(text: &str, profile: &str) -> Option<AwsCredentials> {
    let mut in_profile = false;
    let mut keys: HashMap<String, String> = HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let section = section.trim();
            let section = section.strip_prefix("profile ").unwrap_or(section).trim();
            in_profile = section == profile;
            continue;
        }
        if in_profile && let Some((key, value)) = line.split_once('=') {
            keys.insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    let get = |key: &str| keys.get(key).filter(|v| !v.is_empty()).cloned();
    Some(AwsCredentials::new(
        get("aws_access_key_id")?,
        get("aws_secret_access_key")?,
        get("aws_session_token").or_else(|| get("aws_security_token")),
    ))
}
