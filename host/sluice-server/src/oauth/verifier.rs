//! [`OAuthVerifier`]: an OAuth access token checked as an OAuth 2.1 resource server does
//! (docs/configuration.md#serveroauth): a JWT's signature against the issuer's keys
//! (RS256, ES256 or EdDSA; never `none` nor an HMAC), then its `iss`, `aud` (RFC 8707), `exp`
//! and `nbf` (with the leeway) and `sub`; a token that is not a JWT through introspection
//! (RFC 7662) when configured. Its OAuth scopes become Sluice scopes through
//! `server.oauth.scopes`.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;
use sluice_config::OAuthConfig;
use sluice_grants::SecretSource;
use sluice_protocol::access::{Grant, Scope};

use super::Rejection;
use super::claims::Claims;
use super::introspection::Introspector;
use super::keys::{KeyCache, KeySet};

/// The `alg`s a JWT access token may be signed with.
pub const ACCEPTED_ALGORITHMS: [&str; 3] = ["RS256", "ES256", "EdDSA"];

/// The least time between two fetches of the issuer's key set for tokens naming a key it
/// does not hold (a token with a made-up `kid` cannot make this server hammer the issuer).
pub const JWKS_REFRESH_INTERVAL: Duration = Duration::from_secs(30);

/// How long a fetch from the authorization server may take, connecting included.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// A token the verifier accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// `sub`: whom the token stands for (the principal is `oauth:<subject>`).
    pub subject: String,
    /// `client_id` (RFC 9068), else `azp`: the client the token was issued to, if named.
    pub client_id: Option<String>,
    /// The Sluice scopes its OAuth scopes grant through `server.oauth.scopes`, each once, in
    /// the order of the token's scopes.
    pub grants: Vec<Grant>,
    /// The token's OAuth scopes as it lists them (`scope`, space-separated, else `scp`).
    pub oauth_scopes: Vec<String>,
    /// `exp`: when it expires. Always set for a JWT; an introspection answer may omit it.
    pub expires_at: Option<SystemTime>,
}

/// Why an [`OAuthVerifier`] cannot be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The introspection client secret cannot be read.
    #[error(
        "server.oauth.introspection.client_secret cannot be read from {from}: {reason}; set it to {{ env = \"VAR\" }} or {{ file = \"path\" }} naming the secret"
    )]
    Secret {
        /// `environment variable VAR` or `file PATH`.
        from: String,
        /// Why.
        reason: String,
    },
    /// The HTTP client cannot be built (its TLS roots).
    #[error("the OAuth verifier's HTTP client cannot be built: {0}")]
    Http(String),
}

/// Checks OAuth access tokens for one resource (see the module docs). Share it (`Arc`):
/// it caches the issuer's keys.
pub struct OAuthVerifier {
    issuer: String,
    audience: String,
    scopes: Option<BTreeMap<String, Vec<Grant>>>,
    leeway_secs: u64,
    http: reqwest::Client,
    keys: KeyCache,
    introspection: Option<Introspector>,
}

impl std::fmt::Debug for OAuthVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthVerifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

/// The fields of a JWS header read before the signature is checked.
#[derive(Deserialize)]
struct JwsHeader {
    alg: String,
    kid: Option<String>,
}

impl OAuthVerifier {
    /// A verifier of the tokens `config` describes, for the resource `config.audience`, else
    /// `default_audience` (the server's own URL). Reads the introspection client secret now;
    /// fetches nothing until the first token (or [`OAuthVerifier::discover`]).
    ///
    /// # Errors
    /// [`SetupError`] when the client secret cannot be read or the HTTP client not built.
    pub fn new(config: &OAuthConfig, default_audience: &str) -> Result<OAuthVerifier, SetupError> {
        // The RustCrypto provider is jsonwebtoken's default with only its feature on; this
        // makes sure of it (an error means one is installed already).
        let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(FETCH_TIMEOUT)
            .user_agent(concat!("sluice/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| SetupError::Http(super::document::error_chain(&e)))?;
        let introspection = match &config.introspection {
            None => None,
            Some(i) => Some(Introspector {
                endpoint: i.endpoint.clone(),
                client_id: i.client_id.clone(),
                client_secret: read_secret(&i.client_secret)?,
            }),
        };
        Ok(OAuthVerifier {
            issuer: config.issuer.clone(),
            audience: config
                .audience
                .clone()
                .unwrap_or_else(|| default_audience.to_string()),
            scopes: config.scopes.clone(),
            leeway_secs: config.leeway.as_secs(),
            keys: KeyCache::new(
                http.clone(),
                config.issuer.clone(),
                config.jwks_uri.clone(),
                JWKS_REFRESH_INTERVAL,
            ),
            http,
            introspection,
        })
    }

    /// The same verifier, fetching the key set again for an unknown key at most once per
    /// `interval` instead of [`JWKS_REFRESH_INTERVAL`] (tests use zero).
    pub fn with_refresh_interval(mut self, interval: Duration) -> OAuthVerifier {
        self.keys.set_refresh_interval(interval);
        self
    }

    /// `server.oauth.issuer`, exactly.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The resource identifier a token's `aud` must contain.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// How many times the issuer's key set was fetched, successfully or not (for logs and
    /// tests).
    pub fn jwks_fetches(&self) -> u64 {
        self.keys.fetches()
    }

    /// Discovers the issuer's metadata and fetches its key set now, unless already held (a
    /// server may call this at start to report a misconfigured issuer early).
    ///
    /// # Errors
    /// [`Rejection::IssuerUnreachable`] naming what failed.
    pub async fn discover(&self) -> Result<(), Rejection> {
        self.keys.load().await.map(|_: std::sync::Arc<KeySet>| ())
    }

    /// Checks `token` (the bearer token, without `Bearer `).
    ///
    /// # Errors
    /// [`Rejection`] saying why it is refused; see its variants.
    pub async fn verify(&self, token: &str) -> Result<Verified, Rejection> {
        match jws_header(token) {
            Some(header) => self.verify_jwt(token, header).await,
            None => match &self.introspection {
                Some(introspector) => {
                    let claims = introspector.claims(&self.http, token).await?;
                    self.accept(claims, false)
                }
                None => Err(Rejection::Opaque),
            },
        }
    }

    async fn verify_jwt(&self, token: &str, header: JwsHeader) -> Result<Verified, Rejection> {
        let alg = match header.alg.as_str() {
            "RS256" => Algorithm::RS256,
            "ES256" => Algorithm::ES256,
            "EdDSA" => Algorithm::EdDSA,
            other => {
                return Err(Rejection::UnsupportedAlgorithm {
                    alg: other.to_string(),
                });
            }
        };
        let key = self
            .keys
            .key_for(alg, &header.alg, header.kid.as_deref())
            .await?;
        // The library checks the header and the signature; the claims are checked below, so
        // that a refusal can say what was expected and what the token holds.
        let mut validation = Validation::new(alg);
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.required_spec_claims = HashSet::new();
        validation.leeway = 0;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation).map_err(|e| match e
            .kind()
        {
            ErrorKind::InvalidSignature => Rejection::BadSignature {
                kid: header.kid.clone(),
            },
            ErrorKind::InvalidAlgorithm
            | ErrorKind::InvalidRsaKey(_)
            | ErrorKind::InvalidEcdsaKey
            | ErrorKind::InvalidEddsaKey
            | ErrorKind::InvalidKeyFormat => Rejection::KeyMismatch {
                kid: header.kid.clone().unwrap_or_default(),
                alg: header.alg.clone(),
            },
            _ => Rejection::Malformed {
                reason: e.to_string(),
            },
        })?;
        self.accept(data.claims, true)
    }

    /// Checks verified claims: a JWT's must hold `iss`, `aud` and `exp`; an introspection
    /// answer's are checked when present. Both need `sub`.
    fn accept(&self, claims: Claims, jwt: bool) -> Result<Verified, Rejection> {
        let missing = |claim: &'static str| Rejection::MissingClaim { claim };
        match claims.iss {
            Some(iss) if iss == self.issuer => {}
            Some(got) => {
                return Err(Rejection::WrongIssuer {
                    expected: self.issuer.clone(),
                    got,
                });
            }
            None if jwt => return Err(missing("iss")),
            None => {}
        }
        match claims.aud.map(|a| a.values(false)) {
            Some(aud) if aud.contains(&self.audience) => {}
            Some(got) => {
                return Err(Rejection::WrongAudience {
                    expected: self.audience.clone(),
                    got,
                });
            }
            None if jwt => return Err(missing("aud")),
            None => {}
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let seconds = |t: f64| {
            if t.is_finite() && t > 0.0 {
                t as u64
            } else {
                0
            }
        };
        let expires_at = match claims.exp.map(seconds) {
            Some(exp) if now > exp.saturating_add(self.leeway_secs) => {
                return Err(Rejection::Expired {
                    expired_at: exp,
                    leeway_secs: self.leeway_secs,
                });
            }
            Some(exp) => Some(UNIX_EPOCH + Duration::from_secs(exp)),
            None if jwt => return Err(missing("exp")),
            None => None,
        };
        if let Some(nbf) = claims.nbf.map(seconds)
            && nbf > now.saturating_add(self.leeway_secs)
        {
            return Err(Rejection::NotYetValid {
                not_before: nbf,
                leeway_secs: self.leeway_secs,
            });
        }
        let subject = claims
            .sub
            .filter(|s| !s.is_empty())
            .ok_or_else(|| missing("sub"))?;
        let oauth_scopes = claims
            .scope
            .or(claims.scp)
            .map(|s| s.values(true))
            .unwrap_or_default();
        Ok(Verified {
            subject,
            client_id: claims.client_id.or(claims.azp),
            grants: self.grants(&oauth_scopes),
            oauth_scopes,
            expires_at,
        })
    }

    /// The Sluice scopes `oauth_scopes` grant, each once.
    pub fn grants(&self, oauth_scopes: &[String]) -> Vec<Grant> {
        let mut out: Vec<Grant> = Vec::new();
        for scope in oauth_scopes {
            let granted: Vec<Grant> = match &self.scopes {
                Some(map) => map.get(scope).cloned().unwrap_or_default(),
                None => Grant::parse(scope).into_iter().collect(),
            };
            for grant in granted {
                if !out.contains(&grant) {
                    out.push(grant);
                }
            }
        }
        out
    }

    /// The OAuth scopes a client may ask for (RFC 9728 `scopes_supported`): the keys of
    /// `server.oauth.scopes`, else every Sluice scope's name.
    pub fn scopes_supported(&self) -> Vec<String> {
        match &self.scopes {
            Some(map) => map.keys().cloned().collect(),
            None => Scope::ALL.iter().map(|s| s.as_str().to_string()).collect(),
        }
    }

    /// The OAuth scopes that grant `needed` (for a 403's `scope`): those mapped to it (or,
    /// for `tools:call:<tool>`, to `tools:call`), else those mapped to `admin`. Without
    /// `server.oauth.scopes`, its own name.
    pub fn oauth_scopes_granting(&self, needed: &Grant) -> Vec<String> {
        let Some(map) = &self.scopes else {
            return vec![needed.to_string()];
        };
        let granting = |wanted: &dyn Fn(&Grant) -> bool| -> Vec<String> {
            map.iter()
                .filter(|(_, grants)| grants.iter().any(wanted))
                .map(|(scope, _)| scope.clone())
                .collect()
        };
        let direct = granting(&|g| {
            g == needed
                || (matches!(needed, Grant::Tool(_)) && *g == Grant::Scope(Scope::ToolsCall))
        });
        if direct.is_empty() {
            granting(&|g| *g == Grant::Scope(Scope::Admin))
        } else {
            direct
        }
    }
}

/// The header of `token` when it is a JWS in compact form (three base64url parts, the first
/// a JSON object with an `alg`); `None` for anything else (an opaque token).
fn jws_header(token: &str) -> Option<JwsHeader> {
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let bytes = URL_SAFE_NO_PAD.decode(header).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The value of `secret` ([`SecretSource::read`] over the process's environment).
fn read_secret(secret: &SecretSource) -> Result<String, SetupError> {
    secret
        .read(&|var| std::env::var_os(var))
        .map_err(|e| SetupError::Secret {
            from: secret.to_string(),
            reason: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::super::claims::OneOrMany;
    use super::*;

    fn verifier(scopes: Option<BTreeMap<String, Vec<Grant>>>) -> OAuthVerifier {
        let config = OAuthConfig {
            issuer: "https://as.example".into(),
            audience: None,
            scopes,
            leeway: Duration::from_secs(60),
            introspection: None,
            jwks_uri: None,
        };
        OAuthVerifier::new(&config, "https://sluice.example/mcp").unwrap()
    }

    #[test]
    fn only_a_jws_with_an_alg_has_a_header() {
        let b64 = |s: &str| URL_SAFE_NO_PAD.encode(s);
        let jwt = format!("{}.{}.sig", b64(r#"{"alg":"none","kid":"k"}"#), b64("{}"));
        let header = jws_header(&jwt).unwrap();
        assert_eq!(
            (header.alg.as_str(), header.kid.as_deref()),
            ("none", Some("k"))
        );
        for opaque in [
            "2YotnFZFEjr1zCsicMWpAA",
            "a.b.c",
            &format!("{}.x", b64(r#"{"alg":"RS256"}"#)),
            &format!("{}.x.y.z", b64(r#"{"alg":"RS256"}"#)),
            &format!("{}.x.y", b64(r#"{"typ":"JWT"}"#)),
        ] {
            assert!(jws_header(opaque).is_none(), "{opaque}");
        }
    }

    #[test]
    fn identity_mapping_grants_sluice_scope_names_only() {
        let v = verifier(None);
        let scopes: Vec<String> = [
            "openid",
            "sessions:read",
            "tools:call:grep_files",
            "sessions:read",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            v.grants(&scopes),
            [
                Grant::Scope(Scope::SessionsRead),
                Grant::Tool("grep_files".into())
            ]
        );
        assert_eq!(
            v.scopes_supported(),
            [
                "sessions:read",
                "sessions:write",
                "approvals",
                "config",
                "tools:call",
                "metrics",
                "admin"
            ]
        );
        assert_eq!(
            v.oauth_scopes_granting(&Grant::Scope(Scope::Approvals)),
            ["approvals"]
        );
        assert_eq!(v.audience(), "https://sluice.example/mcp");
    }

    #[test]
    fn a_mapping_grants_only_through_its_keys() {
        let v = verifier(Some(BTreeMap::from([
            (
                "mcp".to_string(),
                vec![
                    Grant::Scope(Scope::ToolsCall),
                    Grant::Scope(Scope::SessionsRead),
                ],
            ),
            ("ops".to_string(), vec![Grant::Scope(Scope::Admin)]),
        ])));
        let scopes: Vec<String> = ["sessions:write", "mcp"].map(String::from).to_vec();
        assert_eq!(
            v.grants(&scopes),
            [
                Grant::Scope(Scope::ToolsCall),
                Grant::Scope(Scope::SessionsRead)
            ]
        );
        assert_eq!(v.scopes_supported(), ["mcp", "ops"]);
        assert_eq!(
            v.oauth_scopes_granting(&Grant::Tool("read_file".into())),
            ["mcp"]
        );
        assert_eq!(
            v.oauth_scopes_granting(&Grant::Scope(Scope::Config)),
            ["ops"]
        );
    }

    #[test]
    fn scopes_are_read_from_scope_or_scp_in_either_form() {
        let v = verifier(None);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as f64;
        let claims = |scope: Option<OneOrMany>, scp: Option<OneOrMany>| Claims {
            iss: Some("https://as.example".into()),
            sub: Some("alice".into()),
            aud: Some(OneOrMany::Many(vec![
                "other".into(),
                "https://sluice.example/mcp".into(),
            ])),
            exp: Some(now + 60.0),
            scope,
            scp,
            ..Claims::default()
        };
        let scopes = |c: Claims| v.accept(c, true).unwrap().oauth_scopes;
        assert_eq!(
            scopes(claims(Some(OneOrMany::One("a  b".into())), None)),
            ["a", "b"]
        );
        assert_eq!(
            scopes(claims(None, Some(OneOrMany::Many(vec!["c".into()])))),
            ["c"]
        );
        assert_eq!(
            scopes(claims(None, Some(OneOrMany::One("d e".into())))),
            ["d", "e"]
        );
        assert_eq!(scopes(claims(None, None)), Vec::<String>::new());
    }
}
