//! Token introspection (RFC 7662) for access tokens that are not JWTs: the token is POSTed
//! to the authorization server's introspection endpoint, with this server's client
//! credentials (HTTP Basic, RFC 6749 §2.3.1), and its answer's claims are checked as a JWT's
//! are. Answers are not cached: a revoked token is refused at its next request.

use serde::Deserialize;

use super::Rejection;
use super::claims::Claims;
use super::document::{error_chain, read_json};

/// An introspection endpoint and the credentials to call it.
pub(super) struct Introspector {
    pub(super) endpoint: String,
    pub(super) client_id: String,
    /// The client secret. Never logged: this type has no `Debug`.
    pub(super) client_secret: String,
}

/// An introspection answer (RFC 7662 §2.2).
#[derive(Deserialize)]
struct Answer {
    active: bool,
    #[serde(flatten)]
    claims: Claims,
}

impl Introspector {
    /// The claims of `token` as the authorization server states them.
    ///
    /// # Errors
    /// [`Rejection::Inactive`] when it answers `"active": false`;
    /// [`Rejection::IssuerUnreachable`] when it cannot be asked or answers other than 200
    /// with JSON.
    pub(super) async fn claims(
        &self,
        http: &reqwest::Client,
        token: &str,
    ) -> Result<Claims, Rejection> {
        let unreachable = |reason: String| Rejection::IssuerUnreachable { reason };
        let encode =
            |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        let response = http
            .post(&self.endpoint)
            .basic_auth(encode(&self.client_id), Some(encode(&self.client_secret)))
            .header(reqwest::header::ACCEPT, "application/json")
            .form(&[("token", token), ("token_type_hint", "access_token")])
            .send()
            .await
            .map_err(|e| unreachable(format!("{}: {}", self.endpoint, error_chain(&e))))?;
        let answer: Answer = read_json(&self.endpoint, response)
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        if !answer.active {
            return Err(Rejection::Inactive);
        }
        Ok(answer.claims)
    }
}
