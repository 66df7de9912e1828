//! JWT access tokens: accepted with each algorithm the server takes, refused for every claim
//! that is wrong (naming what was expected), for a forged or altered signature, and for
//! `none` and HMAC tokens whatever they claim.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sluice_protocol::access::{Grant, Scope};
use sluice_server::oauth::{Rejection, Verified};

use super::{RESOURCE, at, mapped_verifier, now, verifier};
use sluice_test_support::oauth_mock::MockServer;

/// The claims of a good token for `sub`, expiring at `exp`, with `extra` merged in.
fn claims(sub: &str, exp: u64, extra: Value) -> Value {
    let mut claims = json!({ "sub": sub, "aud": RESOURCE, "exp": exp });
    for (k, v) in extra.as_object().unwrap() {
        claims[k] = v.clone();
    }
    claims
}

#[tokio::test]
async fn a_token_of_each_algorithm_is_verified_with_its_subject_and_scopes() {
    let Some(mock) = MockServer::start(false) else {
        return;
    };
    let v = verifier(&mock.issuer);
    let exp = now() + 600;
    for kid in ["rsa-1", "ec-1", "ed-1"] {
        let token = mock
            .token(json!({
                "kid": kid,
                "claims": claims("alice", exp, json!({
                    "scope": "openid sessions:read tools:call:read_file sessions:read",
                    "client_id": "claude-code",
                })),
            }))
            .await;
        assert_eq!(
            v.verify(&token).await,
            Ok(Verified {
                subject: "alice".into(),
                client_id: Some("claude-code".into()),
                grants: vec![
                    Grant::Scope(Scope::SessionsRead),
                    Grant::Tool("read_file".into())
                ],
                oauth_scopes: [
                    "openid",
                    "sessions:read",
                    "tools:call:read_file",
                    "sessions:read"
                ]
                .map(String::from)
                .to_vec(),
                expires_at: Some(at(exp)),
            }),
            "{kid}"
        );
    }
    // One fetch of the key set served all three keys.
    assert_eq!(v.jwks_fetches(), 1);
}

#[tokio::test]
async fn scopes_are_mapped_and_an_audience_list_needs_to_contain_the_resource() {
    let Some(mock) = MockServer::start(false) else {
        return;
    };
    let v = mapped_verifier(
        &mock.issuer,
        &[
            ("mcp:tools", &["tools:call"]),
            ("mcp:sessions", &["sessions:read", "sessions:write"]),
        ],
    );
    let exp = now() + 600;
    let token = mock
        .token(json!({ "claims": claims("bob", exp, json!({
            "aud": ["https://other.test", RESOURCE],
            "scope": null,
            "scp": ["mcp:sessions", "sessions:read", "mcp:tools"],
            "azp": "vscode",
        })) }))
        .await;
    assert_eq!(
        v.verify(&token).await,
        Ok(Verified {
            subject: "bob".into(),
            client_id: Some("vscode".into()),
            grants: vec![
                Grant::Scope(Scope::SessionsRead),
                Grant::Scope(Scope::SessionsWrite),
                Grant::Scope(Scope::ToolsCall),
            ],
            oauth_scopes: ["mcp:sessions", "sessions:read", "mcp:tools"]
                .map(String::from)
                .to_vec(),
            expires_at: Some(at(exp)),
        })
    );
}

#[tokio::test]
async fn expired_and_early_tokens_are_refused_beyond_the_leeway() {
    let Some(mock) = MockServer::start(false) else {
        return;
    };
    let v = verifier(&mock.issuer);
    let expired_at = now() - 120;
    let token = mock
        .token(json!({ "claims": claims("alice", expired_at, json!({})) }))
        .await;
    assert_eq!(
        v.verify(&token).await,
        Err(Rejection::Expired {
            expired_at,
            leeway_secs: 60
        })
    );
    // Within the leeway (60 s): accepted.
    let recent = now() - 5;
    let token = mock
        .token(json!({ "claims": claims("alice", recent, json!({})) }))
        .await;
    assert_eq!(
        v.verify(&token).await.map(|v| v.expires_at),
        Ok(Some(at(recent)))
    );
    let not_before = now() + 600;
    let token = mock
        .token(json!({ "claims": claims("alice", now() + 1200, json!({ "nbf": not_before })) }))
        .await;
    let refused = v.verify(&token).await.unwrap_err();
    assert_eq!(
        refused,
        Rejection::NotYetValid {
            not_before,
            leeway_secs: 60
        }
    );
    assert_eq!(
        refused.to_string(),
        format!(
            "the access token is not valid before {not_before} (Unix time), more than 60 s from now"
        )
    );
}

#[tokio::test]
async fn a_token_for_another_audience_or_of_another_issuer_is_refused() {
    let Some(mock) = MockServer::start(false) else {
        return;
    };
    let v = verifier(&mock.issuer);
    let exp = now() + 600;
    let token = mock
        .token(
            json!({ "claims": claims("alice", exp, json!({ "aud": "https://other.test/mcp" })) }),
        )
        .await;
    let refused = v.verify(&token).await.unwrap_err();
    assert_eq!(
        refused,
        Rejection::WrongAudience {
            expected: RESOURCE.into(),
            got: vec!["https://other.test/mcp".into()]
        }
    );
    assert_eq!(
        refused.to_string(),
        "the access token is for [\"https://other.test/mcp\"] (aud), not for this resource: request one with resource=https://sluice.test/mcp (RFC 8707)"
    );
    let token = mock
        .token(json!({ "claims": claims("alice", exp, json!({ "aud": null })) }))
        .await;
    assert_eq!(
        v.verify(&token).await,
        Err(Rejection::MissingClaim { claim: "aud" })
    );
    // Signed by the issuer's own key, but naming another issuer.
    let token = mock
        .token(json!({ "claims": claims("alice", exp, json!({ "iss": "https://evil.test" })) }))
        .await;
    let refused = v.verify(&token).await.unwrap_err();
    assert_eq!(
        refused,
        Rejection::WrongIssuer {
            expected: mock.issuer.clone(),
            got: "https://evil.test".into()
        }
    );
    assert_eq!(
        refused.to_string(),
        format!(
            "the access token was issued by \"https://evil.test\"; this server accepts tokens of {:?}",
            mock.issuer
        )
    );
    let token = mock
        .token(json!({ "claims": claims("alice", exp, json!({ "sub": null })) }))
        .await;
    assert_eq!(
        v.verify(&token).await,
        Err(Rejection::MissingClaim { claim: "sub" })
    );
}

#[tokio::test]
async fn a_forged_or_altered_signature_is_refused() {
    let Some(mock) = MockServer::start(false) else {
        return;
    };
    let v = verifier(&mock.issuer);
    let exp = now() + 600;
    for kid in ["rsa-1", "ec-1", "ed-1"] {
        // A key the issuer does not publish, with the kid of one it does.
        let forged = mock
            .token(
                json!({ "kid": kid, "foreign": true, "claims": claims("alice", exp, json!({})) }),
            )
            .await;
        assert_eq!(
            v.verify(&forged).await,
            Err(Rejection::BadSignature {
                kid: Some(kid.into())
            }),
            "{kid}"
        );
    }
    // A good token whose payload is swapped for one naming another subject.
    let good = mock
        .token(json!({ "claims": claims("alice", exp, json!({})) }))
        .await;
    let parts: Vec<&str> = good.split('.').collect();
    let mut payload: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    payload["sub"] = json!("admin");
    let altered = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(payload.to_string()),
        parts[2]
    );
    let refused = v.verify(&altered).await.unwrap_err();
    assert_eq!(
        refused,
        Rejection::BadSignature {
            kid: Some("rsa-1".into())
        }
    );
    assert_eq!(
        refused.to_string(),
        "the access token's signature does not verify with the issuer's key \"rsa-1\""
    );
    assert_eq!(v.verify(&good).await.unwrap().subject, "alice");
}

#[tokio::test]
async fn unsigned_and_hmac_tokens_are_refused_before_any_key_is_fetched() {
    let Some(mock) = MockServer::start(false) else {
        return;
    };
    let v = verifier(&mock.issuer);
    let exp = now() + 600;
    for alg in ["none", "HS256"] {
        let token = mock
            .token(json!({ "alg": alg, "claims": claims("alice", exp, json!({})) }))
            .await;
        let refused = v.verify(&token).await.unwrap_err();
        assert_eq!(refused, Rejection::UnsupportedAlgorithm { alg: alg.into() });
        assert_eq!(
            refused.to_string(),
            format!(
                "the access token is signed with {alg:?}; this server accepts RS256, ES256 and EdDSA"
            )
        );
    }
    assert_eq!(v.jwks_fetches(), 0);
    assert_eq!(v.verify("not-a-jwt").await, Err(Rejection::Opaque));
}
