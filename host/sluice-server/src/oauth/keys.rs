//! The issuer's signing keys: its metadata discovered (RFC 8414
//! `/.well-known/oauth-authorization-server`, else OpenID's
//! `/.well-known/openid-configuration`), its key set (JWKS) fetched once and again when a
//! token names a key it does not hold, at most once per refresh interval, with concurrent
//! refreshes coalesced into one fetch.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;
use tokio::sync::{Mutex, OnceCell};

use super::Rejection;
use super::document::{DocumentError, get_json};

/// How long after a failed fetch of the metadata or keys the next one may start (unless the
/// refresh interval is shorter): an unreachable issuer is not asked on every request.
pub(super) const FAILED_FETCH_RETRY: Duration = Duration::from_secs(5);

/// How old the key set may grow before the next token's check fetches it again (keys the
/// issuer withdrew stop being accepted within this long).
pub(super) const JWKS_MAX_AGE: Duration = Duration::from_secs(3600);

/// The kind of public key an algorithm verifies with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeyKind {
    /// RSA (RS256).
    Rsa,
    /// EC on P-256 (ES256).
    P256,
    /// OKP on Ed25519 (EdDSA).
    Ed25519,
}

/// The kind of key `alg` needs.
fn kind_for(alg: Algorithm) -> Option<KeyKind> {
    match alg {
        Algorithm::RS256 => Some(KeyKind::Rsa),
        Algorithm::ES256 => Some(KeyKind::P256),
        Algorithm::EdDSA => Some(KeyKind::Ed25519),
        _ => None,
    }
}

/// One signing key of the issuer.
struct Key {
    kid: Option<String>,
    /// The JWK's `alg`, when it names one.
    alg: Option<String>,
    kind: KeyKind,
    decoding: DecodingKey,
}

/// The issuer's usable signing keys, as of one fetch.
pub(super) struct KeySet {
    keys: Vec<Key>,
    /// 1 for the first fetch, one more for each later one.
    generation: u64,
    fetched: Instant,
}

/// What a key set holds for a token's header.
enum Selected {
    Found(DecodingKey),
    Missing,
    Refused(Rejection),
}

impl KeySet {
    /// Reads a JWKS document; keys that are not RSA, P-256 or Ed25519 signing keys (or that
    /// do not parse) are left out.
    fn parse(doc: JwksDocument, generation: u64) -> KeySet {
        let keys = doc
            .keys
            .into_iter()
            .filter_map(|value| {
                let kid = value
                    .get("kid")
                    .and_then(|k| k.as_str())
                    .map(str::to_string);
                let alg = value
                    .get("alg")
                    .and_then(|k| k.as_str())
                    .map(str::to_string);
                let jwk: Jwk = serde_json::from_value(value).ok()?;
                if matches!(
                    jwk.common.public_key_use,
                    Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
                ) {
                    return None;
                }
                let kind = match &jwk.algorithm {
                    AlgorithmParameters::RSA(_) => KeyKind::Rsa,
                    AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => {
                        KeyKind::P256
                    }
                    AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => {
                        KeyKind::Ed25519
                    }
                    _ => return None,
                };
                let decoding = DecodingKey::from_jwk(&jwk).ok()?;
                Some(Key {
                    kid,
                    alg,
                    kind,
                    decoding,
                })
            })
            .collect();
        KeySet {
            keys,
            generation,
            fetched: Instant::now(),
        }
    }

    /// The key for a token signed with `alg` naming `kid`.
    fn select(&self, alg: Algorithm, alg_name: &str, kid: Option<&str>) -> Selected {
        let Some(kind) = kind_for(alg) else {
            return Selected::Refused(Rejection::UnsupportedAlgorithm {
                alg: alg_name.to_string(),
            });
        };
        let fits = |k: &&Key| k.kind == kind && k.alg.as_deref().is_none_or(|a| a == alg_name);
        match kid {
            Some(kid) => {
                let mut named = self.keys.iter().filter(|k| k.kid.as_deref() == Some(kid));
                let mut named_fitting = named.clone().filter(fits);
                match (named_fitting.next(), named.next()) {
                    (Some(key), _) => Selected::Found(key.decoding.clone()),
                    (None, Some(_)) => Selected::Refused(Rejection::KeyMismatch {
                        kid: kid.to_string(),
                        alg: alg_name.to_string(),
                    }),
                    (None, None) => Selected::Missing,
                }
            }
            None => {
                let fitting: Vec<&Key> = self.keys.iter().filter(fits).collect();
                match fitting.as_slice() {
                    [key] => Selected::Found(key.decoding.clone()),
                    [] => Selected::Missing,
                    several => Selected::Refused(Rejection::AmbiguousKey {
                        count: several.len(),
                        alg: alg_name.to_string(),
                    }),
                }
            }
        }
    }
}

/// A JWKS document (RFC 7517 §5), its keys left as JSON until each is read.
#[derive(Deserialize)]
struct JwksDocument {
    keys: Vec<serde_json::Value>,
}

/// The fields of the issuer's metadata this server uses.
#[derive(Deserialize)]
struct IssuerMetadata {
    issuer: Option<String>,
    jwks_uri: Option<String>,
}

/// The last fetch started, and how it ended.
#[derive(Default)]
struct LastFetch {
    at: Option<Instant>,
    /// Why it failed, if it did.
    error: Option<String>,
}

/// The issuer's keys, fetched on demand (see the module docs).
pub(super) struct KeyCache {
    http: reqwest::Client,
    issuer: String,
    /// `server.oauth.jwks_uri`, else discovered once.
    jwks_uri: OnceCell<String>,
    current: RwLock<Option<Arc<KeySet>>>,
    last_fetch: Mutex<LastFetch>,
    refresh_interval: Duration,
    fetches: AtomicU64,
}

impl KeyCache {
    /// A cache of `issuer`'s keys, from `jwks_uri` when given (else discovered), fetched
    /// again for an unknown key at most once per `refresh_interval`.
    pub(super) fn new(
        http: reqwest::Client,
        issuer: String,
        jwks_uri: Option<String>,
        refresh_interval: Duration,
    ) -> KeyCache {
        KeyCache {
            http,
            issuer,
            jwks_uri: jwks_uri.map_or_else(OnceCell::new, |u| OnceCell::new_with(Some(u))),
            current: RwLock::new(None),
            last_fetch: Mutex::new(LastFetch::default()),
            refresh_interval,
            fetches: AtomicU64::new(0),
        }
    }

    /// Sets the refresh interval.
    pub(super) fn set_refresh_interval(&mut self, interval: Duration) {
        self.refresh_interval = interval;
    }

    /// How many times the key set was fetched (successfully or not).
    pub(super) fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    fn snapshot(&self) -> Option<Arc<KeySet>> {
        self.current.read().map_or(None, |s| s.clone())
    }

    /// The key set, fetched now unless one is held (or being fetched by another caller).
    pub(super) async fn load(&self) -> Result<Arc<KeySet>, Rejection> {
        match self.snapshot() {
            Some(set) => Ok(set),
            None => self.refresh(None).await,
        }
    }

    /// The key to verify a token signed with `alg` (named `alg_name` in its header) and
    /// naming `kid`.
    ///
    /// # Errors
    /// [`Rejection::UnknownKey`] when the set holds no such key, also after fetching it
    /// again (if the last fetch is older than the refresh interval);
    /// [`Rejection::KeyMismatch`], [`Rejection::AmbiguousKey`];
    /// [`Rejection::IssuerUnreachable`] when the set cannot be fetched.
    pub(super) async fn key_for(
        &self,
        alg: Algorithm,
        alg_name: &str,
        kid: Option<&str>,
    ) -> Result<DecodingKey, Rejection> {
        let held = self.snapshot();
        if let Some(set) = &held {
            let stale = set.fetched.elapsed() > JWKS_MAX_AGE;
            match set.select(alg, alg_name, kid) {
                Selected::Found(key) if !stale => return Ok(key),
                Selected::Refused(rejection) if !stale => return Err(rejection),
                Selected::Found(key) => {
                    // Stale: fetch again, but a failure keeps the keys held.
                    return match self.refresh(Some(set.generation)).await {
                        Ok(fresh) => found(fresh.select(alg, alg_name, kid), alg_name, kid),
                        Err(_) => Ok(key),
                    };
                }
                Selected::Refused(_) | Selected::Missing => {}
            }
        }
        let set = self.refresh(held.map(|s| s.generation)).await?;
        found(set.select(alg, alg_name, kid), alg_name, kid)
    }

    /// Fetches the key set unless another caller fetched a newer one than `seen` meanwhile,
    /// or the last fetch started less than the refresh interval ago (then the set held).
    async fn refresh(&self, seen: Option<u64>) -> Result<Arc<KeySet>, Rejection> {
        let mut last = self.last_fetch.lock().await;
        let held = self.snapshot();
        if let Some(set) = &held
            && Some(set.generation) != seen
        {
            return Ok(set.clone());
        }
        if let Some(at) = last.at {
            let wait = match &last.error {
                Some(_) => self.refresh_interval.min(FAILED_FETCH_RETRY),
                None => self.refresh_interval,
            };
            if at.elapsed() < wait {
                return match (held, &last.error) {
                    (Some(set), None) => Ok(set),
                    (_, Some(reason)) => Err(Rejection::IssuerUnreachable {
                        reason: reason.clone(),
                    }),
                    (None, None) => Err(Rejection::IssuerUnreachable {
                        reason: "the issuer's key set has not been fetched yet".into(),
                    }),
                };
            }
        }
        last.at = Some(Instant::now());
        self.fetches.fetch_add(1, Ordering::Relaxed);
        match self.fetch(held.map_or(1, |s| s.generation + 1)).await {
            Ok(set) => {
                last.error = None;
                let set = Arc::new(set);
                if let Ok(mut current) = self.current.write() {
                    *current = Some(set.clone());
                }
                Ok(set)
            }
            Err(error) => {
                let reason = error.to_string();
                tracing::warn!(issuer = %self.issuer, %reason, "the OAuth issuer's keys cannot be fetched");
                last.error = Some(reason.clone());
                Err(Rejection::IssuerUnreachable { reason })
            }
        }
    }

    async fn fetch(&self, generation: u64) -> Result<KeySet, DocumentError> {
        let uri = self
            .jwks_uri
            .get_or_try_init(|| discover_jwks_uri(&self.http, &self.issuer))
            .await?;
        let doc: JwksDocument = get_json(&self.http, uri).await?;
        let set = KeySet::parse(doc, generation);
        tracing::info!(
            issuer = %self.issuer,
            jwks_uri = %uri,
            keys = set.keys.len(),
            "fetched the OAuth issuer's signing keys"
        );
        Ok(set)
    }
}

/// The result of a selection after the key set was fetched again: a missing key is unknown.
fn found(selected: Selected, alg_name: &str, kid: Option<&str>) -> Result<DecodingKey, Rejection> {
    match selected {
        Selected::Found(key) => Ok(key),
        Selected::Refused(rejection) => Err(rejection),
        Selected::Missing => Err(Rejection::UnknownKey {
            kid: kid.map(str::to_string),
            alg: alg_name.to_string(),
        }),
    }
}

/// The metadata URLs of `issuer`, in the order tried: RFC 8414's (the well-known segment
/// inserted before the issuer's path), then OpenID Connect Discovery's (appended to it).
pub(super) fn metadata_urls(issuer: &str) -> Result<[String; 2], DocumentError> {
    let url = url::Url::parse(issuer).map_err(|source| DocumentError::Issuer {
        issuer: issuer.to_string(),
        source,
    })?;
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    Ok([
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ])
}

/// The `jwks_uri` of `issuer`'s metadata, from the first of [`metadata_urls`] that answers
/// with metadata naming this issuer (RFC 8414 §3.3).
async fn discover_jwks_uri(http: &reqwest::Client, issuer: &str) -> Result<String, DocumentError> {
    let mut failures = Vec::new();
    for url in metadata_urls(issuer)? {
        let meta: IssuerMetadata = match get_json(http, &url).await {
            Ok(meta) => meta,
            Err(reason) => {
                failures.push(reason);
                continue;
            }
        };
        if meta.issuer.as_deref() != Some(issuer) {
            return Err(DocumentError::OtherIssuer {
                url,
                named: meta.issuer.unwrap_or_default(),
                issuer: issuer.to_string(),
            });
        }
        return match meta.jwks_uri {
            Some(uri) if sluice_config::valid_oauth_url(&uri) => Ok(uri),
            Some(uri) => Err(DocumentError::KeySetUrl { url, uri }),
            None => Err(DocumentError::NoKeySet { url }),
        };
    }
    Err(DocumentError::Unanswered(failures))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn set(keys: serde_json::Value) -> KeySet {
        KeySet::parse(serde_json::from_value(json!({ "keys": keys })).unwrap(), 1)
    }

    fn found(selected: Selected) -> bool {
        matches!(selected, Selected::Found(_))
    }

    #[test]
    fn keys_are_chosen_by_kid_type_and_alg() {
        let rsa = |kid: &str| json!({ "kty": "RSA", "kid": kid, "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw", "e": "AQAB" });
        let ed = json!({ "kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" });
        let keys = set(json!([
            rsa("a"),
            rsa("b"),
            ed,
            // Left out: an encryption key, a curve not accepted, a symmetric key.
            { "kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB" },
            { "kty": "EC", "kid": "p384", "crv": "P-384", "x": "AA", "y": "AA" },
            { "kty": "oct", "kid": "hmac", "k": "c2VjcmV0" },
        ]));
        assert_eq!(keys.keys.len(), 3);
        assert!(found(keys.select(Algorithm::RS256, "RS256", Some("b"))));
        assert!(found(keys.select(Algorithm::EdDSA, "EdDSA", Some("ed"))));
        assert!(found(keys.select(Algorithm::EdDSA, "EdDSA", None)));
        assert!(matches!(
            keys.select(Algorithm::RS256, "RS256", Some("hmac")),
            Selected::Missing
        ));
        assert!(matches!(
            keys.select(Algorithm::ES256, "ES256", Some("ed")),
            Selected::Refused(Rejection::KeyMismatch { .. })
        ));
        assert!(matches!(
            keys.select(Algorithm::RS256, "RS256", None),
            Selected::Refused(Rejection::AmbiguousKey { count: 2, .. })
        ));
        assert!(matches!(
            keys.select(Algorithm::HS256, "HS256", Some("hmac")),
            Selected::Refused(Rejection::UnsupportedAlgorithm { .. })
        ));
        // A key whose own alg is another one's does not verify this one.
        let pinned =
            set(json!([{ "kty": "RSA", "kid": "a", "alg": "PS256", "n": "AQAB", "e": "AQAB" }]));
        assert!(matches!(
            pinned.select(Algorithm::RS256, "RS256", Some("a")),
            Selected::Refused(Rejection::KeyMismatch { .. })
        ));
    }

    #[test]
    fn metadata_urls_insert_or_append_the_well_known_segment() {
        assert_eq!(
            metadata_urls("https://as.example").unwrap(),
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            metadata_urls("https://as.example:8443/realms/a/").unwrap(),
            [
                "https://as.example:8443/.well-known/oauth-authorization-server/realms/a",
                "https://as.example:8443/realms/a/.well-known/openid-configuration"
            ]
        );
    }
}
