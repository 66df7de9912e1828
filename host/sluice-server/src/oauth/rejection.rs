//! Why an access token is refused: [`Rejection`], whose messages go to the client as a 401's
//! `error_description` (RFC 6750 §3), so they say what was wrong with the token and never
//! hold the token itself.

/// Why [`OAuthVerifier::verify`](super::OAuthVerifier::verify) refused a token. Every variant
/// but [`Rejection::IssuerUnreachable`] is the token's fault: answer 401 with
/// `error="invalid_token"`; that one is the server's (its authorization server cannot be
/// reached): answer 503 ([`Rejection::is_unavailable`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rejection {
    /// Neither a JWT of three base64url parts nor, with introspection configured, a token
    /// the authorization server answered for.
    #[error("the access token is malformed: {reason}")]
    Malformed {
        /// What is wrong, in the JWT library's or our words.
        reason: String,
    },
    /// Not a JWT, and no introspection endpoint is configured to check opaque tokens.
    #[error(
        "the access token is not a JWT, and this server checks opaque tokens only through token introspection, which is not configured (server.oauth.introspection)"
    )]
    Opaque,
    /// Its `alg` is none of RS256, ES256 and EdDSA (`none` and the HMAC ones included).
    #[error("the access token is signed with {alg:?}; this server accepts RS256, ES256 and EdDSA")]
    UnsupportedAlgorithm {
        /// The header's `alg`, as written.
        alg: String,
    },
    /// No key of the issuer's key set has its `kid`, also after fetching the set again (at
    /// most once per refresh interval), or, without a `kid`, none fits its `alg`.
    #[error("{}", unknown_key(.kid.as_deref(), .alg))]
    UnknownKey {
        /// The header's `kid`, if any.
        kid: Option<String>,
        /// The header's `alg`.
        alg: String,
    },
    /// Without a `kid`, several keys of the issuer fit its `alg`.
    #[error(
        "the access token names no key (kid), and the issuer has {count} keys for {alg}: a token must name its key"
    )]
    AmbiguousKey {
        /// How many keys fit.
        count: usize,
        /// The header's `alg`.
        alg: String,
    },
    /// The key its `kid` names is of another type or algorithm than its `alg`.
    #[error("the access token's key {kid:?} is not a key for {alg}")]
    KeyMismatch {
        /// The header's `kid`.
        kid: String,
        /// The header's `alg`.
        alg: String,
    },
    /// The signature does not verify with the issuer's key (a forged or altered token).
    #[error("the access token's signature does not verify with the issuer's key{}", kid_suffix(.kid.as_deref()))]
    BadSignature {
        /// The header's `kid`, if any.
        kid: Option<String>,
    },
    /// `iss` is not the configured issuer.
    #[error("the access token was issued by {got:?}; this server accepts tokens of {expected:?}")]
    WrongIssuer {
        /// `server.oauth.issuer`.
        expected: String,
        /// The token's `iss`.
        got: String,
    },
    /// `aud` does not contain this resource (RFC 8707).
    #[error(
        "the access token is for {got:?} (aud), not for this resource: request one with resource={expected} (RFC 8707)"
    )]
    WrongAudience {
        /// This resource's identifier (`server.oauth.audience`, default the server's URL).
        expected: String,
        /// The token's `aud`, each value.
        got: Vec<String>,
    },
    /// A claim this server needs is missing (`iss`, `aud`, `exp`, `sub`).
    #[error("the access token has no {claim} claim")]
    MissingClaim {
        /// The claim's name.
        claim: &'static str,
    },
    /// `exp` is past, by more than the leeway.
    #[error("the access token expired at {expired_at} (Unix time), more than {leeway_secs} s ago")]
    Expired {
        /// Its `exp`, in seconds since the Unix epoch.
        expired_at: u64,
        /// `server.oauth.leeway_secs`.
        leeway_secs: u64,
    },
    /// `nbf` is ahead, by more than the leeway.
    #[error(
        "the access token is not valid before {not_before} (Unix time), more than {leeway_secs} s from now"
    )]
    NotYetValid {
        /// Its `nbf`, in seconds since the Unix epoch.
        not_before: u64,
        /// `server.oauth.leeway_secs`.
        leeway_secs: u64,
    },
    /// The introspection endpoint answered `"active": false` (revoked, expired or unknown).
    #[error(
        "the authorization server says the access token is not active (expired, revoked or unknown)"
    )]
    Inactive,
    /// The issuer's metadata, its key set or its introspection endpoint cannot be fetched:
    /// a server-side failure (answer 503).
    #[error("the authorization server cannot be reached to check the access token: {reason}")]
    IssuerUnreachable {
        /// What failed: the URL and why.
        reason: String,
    },
}

impl Rejection {
    /// True when the failure is this server's (its authorization server is unreachable or
    /// answered nonsense), not the token's: answer 503 rather than 401.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Rejection::IssuerUnreachable { .. })
    }
}

fn unknown_key(kid: Option<&str>, alg: &str) -> String {
    match kid {
        Some(kid) => format!(
            "the access token is signed with key {kid:?}, which is not in the issuer's key set (JWKS), also after fetching it again"
        ),
        None => format!(
            "the access token names no key (kid), and no key of the issuer's key set (JWKS) is one for {alg}"
        ),
    }
}

fn kid_suffix(kid: Option<&str>) -> String {
    kid.map(|k| format!(" {k:?}")).unwrap_or_default()
}
