//! The issuer's keys: discovered through RFC 8414 or OpenID metadata (or named), fetched once,
//! fetched again for a key the set does not hold (a rotation) but at most once per refresh
//! interval, concurrent fetches coalesced; an issuer that cannot be reached is the server's
//! failure, not the token's.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures_util::future::join_all;
use serde_json::{Value, json};
use sluice_server::oauth::{OAuthVerifier, Rejection};

use super::{RESOURCE, config, now, verifier};
use sluice_test_support::oauth_mock::MockServer;

async fn good_token(mock: &MockServer, kid: &str) -> String {
    mock.token(json!({
        "kid": kid,
        "claims": { "sub": "alice", "aud": RESOURCE, "exp": now() + 600 },
    }))
    .await
}

/// `token` with its header's `kid` replaced.
fn with_kid(token: &str, kid: &str) -> String {
    let (header, rest) = token.split_once('.').unwrap();
    let mut header: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap();
    header["kid"] = json!(kid);
    format!("{}.{rest}", URL_SAFE_NO_PAD.encode(header.to_string()))
}

#[tokio::test]
async fn a_rotated_key_is_fetched_and_a_truly_unknown_one_refused() {
    let Some(mock) = MockServer::start(false) else {
        return;
    };
    let v = verifier(&mock.issuer).with_refresh_interval(Duration::ZERO);
    assert_eq!(
        v.verify(&good_token(&mock, "rsa-1").await)
            .await
            .unwrap()
            .subject,
        "alice"
    );
    assert_eq!(v.jwks_fetches(), 1);
    mock.add_key("RS256", "rsa-2").await;
    assert_eq!(
        v.verify(&good_token(&mock, "rsa-2").await)
            .await
            .unwrap()
            .subject,
        "alice"
    );
    assert_eq!(v.jwks_fetches(), 2);
    // The old key is still published and held: no fetch.
    assert!(v.verify(&good_token(&mock, "rsa-1").await).await.is_ok());
    assert_eq!(v.jwks_fetches(), 2);
    let unknown = with_kid(&good_token(&mock, "rsa-1").await, "rsa-9");
    let refused = v.verify(&unknown).await.unwrap_err();
    assert_eq!(
        refused,
        Rejection::UnknownKey {
            kid: Some("rsa-9".into()),
            alg: "RS256".into()
        }
    );
    assert_eq!(
        refused.to_string(),
        "the access token is signed with key \"rsa-9\", which is not in the issuer's key set (JWKS), also after fetching it again"
    );
    assert_eq!(v.jwks_fetches(), 3);
    // A kid naming a key of another type.
    let mismatched = with_kid(&good_token(&mock, "rsa-1").await, "ec-1");
    assert_eq!(
        v.verify(&mismatched).await,
        Err(Rejection::KeyMismatch {
            kid: "ec-1".into(),
            alg: "RS256".into()
        })
    );
}

#[tokio::test]
async fn an_unknown_key_fetches_the_set_again_at_most_once_per_interval() {
    let Some(mock) = MockServer::start(false) else {
        return;
    };
    let v = verifier(&mock.issuer);
    assert!(v.verify(&good_token(&mock, "ec-1").await).await.is_ok());
    assert_eq!(v.jwks_fetches(), 1);
    mock.add_key("ES256", "ec-2").await;
    // The last fetch was less than 30 s ago: the new key is not fetched yet.
    for _ in 0..3 {
        assert_eq!(
            v.verify(&good_token(&mock, "ec-2").await).await,
            Err(Rejection::UnknownKey {
                kid: Some("ec-2".into()),
                alg: "ES256".into()
            })
        );
    }
    assert_eq!(v.jwks_fetches(), 1);
}

#[tokio::test]
async fn concurrent_checks_share_one_fetch() {
    let Some(mock) = MockServer::start(false) else {
        return;
    };
    let v = verifier(&mock.issuer).with_refresh_interval(Duration::ZERO);
    let token = good_token(&mock, "ed-1").await;
    let results = join_all((0..16).map(|_| v.verify(&token))).await;
    assert_eq!(
        results.into_iter().filter(Result::is_ok).count(),
        16,
        "every check passes"
    );
    assert_eq!(v.jwks_fetches(), 1);
    mock.add_key("EdDSA", "ed-2").await;
    let rotated = good_token(&mock, "ed-2").await;
    let results = join_all((0..16).map(|_| v.verify(&rotated))).await;
    assert_eq!(results.into_iter().filter(Result::is_ok).count(), 16);
    assert_eq!(v.jwks_fetches(), 2);
}

#[tokio::test]
async fn rfc8414_metadata_comes_first() {
    // Its OpenID document answers 500: only RFC 8414's path leads to the keys.
    let Some(mock) = MockServer::start(true) else {
        return;
    };
    let v = verifier(&mock.issuer);
    v.discover().await.unwrap();
    assert_eq!(
        v.verify(&good_token(&mock, "rsa-1").await)
            .await
            .unwrap()
            .subject,
        "alice"
    );
    assert_eq!(v.jwks_fetches(), 1);
}

#[tokio::test]
async fn metadata_must_name_the_configured_issuer_exactly() {
    let Some(mock) = MockServer::start(false) else {
        return;
    };
    let issuer = format!("{}/", mock.issuer);
    let v = verifier(&issuer);
    assert_eq!(
        v.discover().await,
        Err(Rejection::IssuerUnreachable {
            reason: format!(
                "the metadata at {}/.well-known/openid-configuration names the issuer {:?}, not {issuer:?} (server.oauth.issuer must be the issuer exactly)",
                mock.issuer, mock.issuer
            )
        })
    );
}

#[tokio::test]
async fn a_named_key_set_needs_no_discovery() {
    let Some(mock) = MockServer::start(false) else {
        return;
    };
    // No metadata is served under this issuer: only the named key set can be found.
    let issuer = format!("{}/tenant-a", mock.issuer);
    let mut config = config(&issuer);
    config.jwks_uri = Some(format!("{}/jwks", mock.issuer));
    let v = OAuthVerifier::new(&config, RESOURCE).unwrap();
    let token = mock
        .token(json!({
            "claims": { "iss": issuer, "sub": "carol", "aud": RESOURCE, "exp": now() + 600 },
        }))
        .await;
    assert_eq!(v.verify(&token).await.unwrap().subject, "carol");
    let undiscoverable = verifier(&issuer);
    let refused = undiscoverable.verify(&token).await.unwrap_err();
    assert_eq!(
        refused,
        Rejection::IssuerUnreachable {
            reason: format!(
                "{0}/.well-known/oauth-authorization-server/tenant-a: HTTP 404 Not Found; {0}/tenant-a/.well-known/openid-configuration: HTTP 404 Not Found",
                mock.issuer
            )
        }
    );
    assert!(refused.is_unavailable());
}

#[tokio::test]
async fn an_unreachable_issuer_is_not_asked_again_at_once() {
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let issuer = format!("http://127.0.0.1:{port}");
    let v = verifier(&issuer);
    let Err(Rejection::IssuerUnreachable { reason }) = v.discover().await else {
        panic!("an unreachable issuer is refused");
    };
    assert!(
        reason.starts_with(&format!(
            "{issuer}/.well-known/oauth-authorization-server: error sending request"
        )),
        "{reason}"
    );
    assert!(
        reason.contains(&format!(
            "; {issuer}/.well-known/openid-configuration: error sending request"
        )),
        "{reason}"
    );
    assert_eq!(v.jwks_fetches(), 1);
    // Within the retry delay: the same failure, no new attempt.
    assert_eq!(
        v.discover().await,
        Err(Rejection::IssuerUnreachable { reason })
    );
    assert_eq!(v.jwks_fetches(), 1);
}
