//! Who the bearer token says the caller is (step 3 of the [guard](super)): the single token
//! (`admin`), a `[[server.tokens]]` entry (its name and scopes), or an OAuth access token of
//! `[server.oauth]`'s issuer (`oauth:<sub>` with the scopes its OAuth scopes grant;
//! docs/api.md#oauth). A static token is matched at once; an access token is verified
//! afterwards ([`Guard::verify`]), since that may fetch the issuer's keys.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use sha2::Digest as _;

use super::{Guard, same_secret};
use crate::error::ApiError;
use crate::oauth::{Challenge, OAuthVerifier, Rejection, resource_metadata_url, www_authenticate};
use crate::principal::Principal;

/// The prefix of an OAuth principal's name: `oauth:<sub>`.
pub const OAUTH_PRINCIPAL_PREFIX: &str = "oauth:";

/// The longest `sub` accepted, in bytes.
const MAX_SUBJECT_BYTES: usize = 256;

/// The caller as far as the synchronous checks know.
pub(crate) enum Caller {
    /// A principal: a static token's, or everyone's on a server without tokens.
    Known(Principal),
    /// A bearer token that is none of the static ones, for the OAuth verifier.
    Unverified(String),
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Caller::Known(p) => f.debug_tuple("Known").field(p).finish(),
            // Never the token itself.
            Caller::Unverified(_) => f.write_str("Unverified(***)"),
        }
    }
}

impl Guard {
    /// The verifier of OAuth access tokens, when `[server.oauth]` is set.
    pub(crate) fn oauth(&self) -> Option<&Arc<OAuthVerifier>> {
        self.0.options.oauth.as_ref()
    }

    /// The caller of a request with `headers`; 401 without a token, or with one that is none
    /// of the static tokens when OAuth is off.
    pub(super) fn check_token(&self, headers: &HeaderMap) -> Result<Caller, ApiError> {
        if !self.asks_for_tokens() {
            return Ok(Caller::Known(Principal::admin()));
        }
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme
                    .eq_ignore_ascii_case("bearer")
                    .then(|| token.trim().to_string())
            });
        let Some(token) = given else {
            let how = if self.oauth().is_some() {
                "an access token of the authorization server (its metadata is named in WWW-Authenticate), or the token from SLUICE_SERVER_TOKEN or --token-file"
            } else {
                "the token from SLUICE_SERVER_TOKEN or --token-file"
            };
            return Err(self.unauthorized(
                format!(
                    "a bearer token is required: send `Authorization: Bearer <token>` with {how}"
                ),
                Challenge::NoToken,
            ));
        };
        match self.principal_of(&token) {
            Some(principal) => Ok(Caller::Known(principal)),
            None if self.oauth().is_some() => Ok(Caller::Unverified(token)),
            None => Err(self.unauthorized("the bearer token is wrong", Challenge::NoToken)),
        }
    }

    /// The principal of `caller`: an unverified token is checked by the OAuth verifier.
    ///
    /// # Errors
    /// 401 for a token the verifier refuses (`WWW-Authenticate` with `error="invalid_token"`
    /// and why), 503 when the authorization server cannot be reached.
    pub(crate) async fn verify(&self, caller: Caller) -> Result<Principal, ApiError> {
        let token = match caller {
            Caller::Known(principal) => return Ok(principal),
            Caller::Unverified(token) => token,
        };
        let Some(verifier) = self.oauth() else {
            return Err(self.unauthorized("the bearer token is wrong", Challenge::NoToken));
        };
        match verifier.verify(&token).await {
            Ok(verified) => {
                let subject = &verified.subject;
                if subject.is_empty()
                    || subject.len() > MAX_SUBJECT_BYTES
                    || subject.chars().any(char::is_control)
                {
                    let rejection = Rejection::Malformed {
                        reason: format!(
                            "its subject (sub) must be 1 to {MAX_SUBJECT_BYTES} bytes without control characters"
                        ),
                    };
                    return Err(self
                        .unauthorized(rejection.to_string(), Challenge::InvalidToken(&rejection)));
                }
                Ok(Principal::new(
                    &format!("{OAUTH_PRINCIPAL_PREFIX}{subject}"),
                    &verified.grants,
                ))
            }
            Err(rejection) if rejection.is_unavailable() => Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                rejection.to_string(),
            )),
            Err(rejection) => {
                Err(self.unauthorized(rejection.to_string(), Challenge::InvalidToken(&rejection)))
            }
        }
    }

    /// 401 with `message`; with OAuth on, `WWW-Authenticate` names the resource's metadata
    /// document and `challenge`.
    fn unauthorized(&self, message: impl Into<String>, challenge: Challenge<'_>) -> ApiError {
        let error = ApiError::new(StatusCode::UNAUTHORIZED, message);
        match self.challenge(challenge) {
            Some(value) => error.with_header(header::WWW_AUTHENTICATE, value),
            None => error,
        }
    }

    /// The `WWW-Authenticate` value of `challenge` with OAuth on (`None` when off).
    pub(crate) fn challenge(&self, challenge: Challenge<'_>) -> Option<HeaderValue> {
        let verifier = self.oauth()?;
        let url = resource_metadata_url(verifier.audience())?;
        HeaderValue::from_str(&www_authenticate(&url, challenge)).ok()
    }

    /// The principal whose static token `token` is. Every configured token is compared, each
    /// in time that does not depend on where it differs, so the time taken says nothing about
    /// which one (if any) matched.
    fn principal_of(&self, token: &str) -> Option<Principal> {
        let mut found = None;
        if let Some(single) = self.0.options.token.as_deref()
            && same_secret(token.as_bytes(), single.as_bytes())
        {
            found = Some(Principal::admin());
        }
        if !self.0.options.tokens.is_empty() {
            let hash: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
            for entry in &self.0.options.tokens {
                if same_secret(&hash, &entry.sha256) && found.is_none() {
                    found = Some(Principal::new(&entry.name, &entry.grants));
                }
            }
        }
        found
    }
}
