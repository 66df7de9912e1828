//! The OAuth resource server's verifier against a real authorization server (npm
//! `oauth2-mock-server` on 127.0.0.1, `sluice_test_support::oauth_mock`): tokens signed with
//! its published keys, with other keys, with none; expired, early, for another audience or
//! issuer; its keys rotated; tokens that are not JWTs, through its introspection endpoint; the
//! metadata document a client reads first.

mod introspection; // Opaque tokens: RFC 7662 answers, client authentication, inactive tokens.
mod keys; // Discovery, the key set's cache, rotation, refresh limits, coalesced fetches.
mod tokens; // JWTs: each algorithm, every claim check, forged and unsigned tokens.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_config::OAuthConfig;
use sluice_protocol::access::Grant;
use sluice_server::oauth::OAuthVerifier;

/// The resource the tests' tokens are for.
pub(crate) const RESOURCE: &str = "https://sluice.test/mcp";

/// The configuration for `issuer`, the defaults otherwise.
pub(crate) fn config(issuer: &str) -> OAuthConfig {
    OAuthConfig {
        issuer: issuer.to_string(),
        audience: None,
        scopes: None,
        leeway: Duration::from_secs(60),
        introspection: None,
        jwks_uri: None,
    }
}

/// A verifier for `issuer` and [`RESOURCE`], refreshing keys at most every 30 s.
pub(crate) fn verifier(issuer: &str) -> OAuthVerifier {
    OAuthVerifier::new(&config(issuer), RESOURCE).unwrap()
}

/// A verifier for `issuer` with this scope mapping.
pub(crate) fn mapped_verifier(issuer: &str, scopes: &[(&str, &[&str])]) -> OAuthVerifier {
    let mut config = config(issuer);
    config.scopes = Some(
        scopes
            .iter()
            .map(|(oauth, sluice)| {
                (
                    oauth.to_string(),
                    sluice.iter().map(|s| Grant::parse(s).unwrap()).collect(),
                )
            })
            .collect::<BTreeMap<_, _>>(),
    );
    OAuthVerifier::new(&config, RESOURCE).unwrap()
}

/// Now, in whole seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The time `secs` seconds after the Unix epoch.
pub(crate) fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}
