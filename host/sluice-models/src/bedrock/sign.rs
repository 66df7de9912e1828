//! SigV4 request signing (through `aws-sigv4`).

use std::time::SystemTime;

use super::credentials::AwsCredentials;
use crate::error::BackendError;

/// A SigV4 signer for one set of credentials, region and service.
#[derive(Clone, Debug)]
pub struct SigV4 {
    /// The credentials to sign with.
    pub credentials: AwsCredentials,
    /// The region (`us-east-1`).
    pub region: String,
    /// The signing name (`bedrock`).
    pub service: String,
    /// Also sign (and send) `x-amz-content-sha256`, the body's SHA-256 (S3 needs it; Bedrock
    /// does not).
    pub content_sha256: bool,
}

impl SigV4 {
    /// The headers to add to a request to sign it: `x-amz-date`, `authorization`, and
    /// `x-amz-security-token` (with a session token) and `x-amz-content-sha256` (when
    /// [`SigV4::content_sha256`] is set), as lower-case `(name, value)` pairs.
    ///
    /// `url` is the full URL in the encoded form it is sent in (`https://host/path?query`); the
    /// path is percent-encoded once more for the canonical request, as every AWS service but S3
    /// expects. `headers` are the headers to sign, as sent (include `host`); `body` the exact
    /// bytes sent; `time` the signing time (the signature is valid for 15 minutes around it).
    ///
    /// # Errors
    /// A [`ErrorKind::BadRequest`](crate::ErrorKind::BadRequest) error when the URL or a header cannot be signed.
    pub fn sign(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        time: SystemTime,
    ) -> Result<Vec<(String, String)>, BackendError> {
        use aws_sigv4::http_request::{
            PayloadChecksumKind, SignableBody, SignableRequest, SigningSettings, sign,
        };
        let identity = aws_credential_types::Credentials::new(
            self.credentials.access_key_id.clone(),
            self.credentials.secret_access_key.expose().to_string(),
            self.credentials
                .session_token
                .as_ref()
                .map(|t| t.expose().to_string()),
            None,
            "sluice",
        )
        .into();
        let mut settings = SigningSettings::default();
        if self.content_sha256 {
            settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        }
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(&self.service)
            .time(time)
            .settings(settings)
            .build()
            .map_err(|e| BackendError::bad_request(format!("cannot sign the request: {e}")))?
            .into();
        let request = SignableRequest::new(
            method,
            url,
            headers.iter().copied(),
            SignableBody::Bytes(body),
        )
        .map_err(|e| BackendError::bad_request(format!("cannot sign the request to {url}: {e}")))?;
        let (instructions, _signature) = sign(request, &params)
            .map_err(|e| {
                BackendError::bad_request(format!("cannot sign the request to {url}: {e}"))
            })?
            .into_parts();
        Ok(instructions
            .headers()
            .map(|(name, value)| (name.to_ascii_lowercase(), value.to_string()))
            .collect())
    }
}
