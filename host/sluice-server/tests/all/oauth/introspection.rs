//! Opaque access tokens through the authorization server's introspection endpoint (RFC
//! 7662), with this server's client credentials; and the metadata document (RFC 9728) and
//! challenges a client reads.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;
use sluice_config::IntrospectionConfig;
use sluice_grants::SecretSource;
use sluice_protocol::access::{Grant, Scope};
use sluice_server::oauth::{
    Challenge, OAuthVerifier, Rejection, Verified, resource_metadata_url, www_authenticate,
};

use super::{RESOURCE, at, config, mapped_verifier, now};
use sluice_test_support::oauth_mock::MockServer;

#[tokio::test]
async fn an_opaque_token_is_introspected_with_the_client_credentials() {
    let Some(mock) = MockServer::start(false) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("introspection-secret");
    std::fs::write(&secret, "s3cret:/+\n").unwrap();
    let mut config = config(&mock.issuer);
    config.introspection = Some(IntrospectionConfig {
        endpoint: format!("{}/introspect", mock.issuer),
        client_id: "sluice rs".into(),
        client_secret: SecretSource::File(secret),
    });
    let v = OAuthVerifier::new(&config, RESOURCE).unwrap();
    let exp = now() + 300;
    mock.set_introspection(json!({
        "active": true,
        "iss": mock.issuer,
        "sub": "svc-backup",
        "aud": RESOURCE,
        "exp": exp,
        "scope": "sessions:read approvals",
        "client_id": "backup-job",
        "token_type": "Bearer",
    }))
    .await;
    assert_eq!(
        v.verify("2YotnFZFEjr1zCsicMWpAA").await,
        Ok(Verified {
            subject: "svc-backup".into(),
            client_id: Some("backup-job".into()),
            grants: vec![
                Grant::Scope(Scope::SessionsRead),
                Grant::Scope(Scope::Approvals)
            ],
            oauth_scopes: vec!["sessions:read".into(), "approvals".into()],
            expires_at: Some(at(exp)),
        })
    );
    // RFC 6749 §2.3.1: each part form-encoded, then Basic.
    assert_eq!(
        mock.last_introspection().await,
        json!({
            "authorization": format!("Basic {}", STANDARD.encode("sluice+rs:s3cret%3A%2F%2B")),
            "count": 1,
        })
    );
    mock.set_introspection(json!({ "active": false })).await;
    assert_eq!(
        v.verify("2YotnFZFEjr1zCsicMWpAA").await,
        Err(Rejection::Inactive)
    );
    // Active, but for another resource.
    mock.set_introspection(json!({ "active": true, "sub": "x", "aud": ["https://other.test"] }))
        .await;
    assert_eq!(
        v.verify("2YotnFZFEjr1zCsicMWpAA").await,
        Err(Rejection::WrongAudience {
            expected: RESOURCE.into(),
            got: vec!["https://other.test".into()]
        })
    );
    assert_eq!(mock.last_introspection().await["count"], 3);
    // JWTs are still checked locally.
    assert_eq!(v.jwks_fetches(), 0);
}

#[test]
fn the_metadata_document_and_its_challenges() {
    let v = mapped_verifier(
        "https://as.test/realms/sluice",
        &[("mcp:tools", &["tools:call"]), ("sluice:admin", &["admin"])],
    );
    assert_eq!(
        v.resource_metadata(),
        json!({
            "resource": "https://sluice.test/mcp",
            "authorization_servers": ["https://as.test/realms/sluice"],
            "scopes_supported": ["mcp:tools", "sluice:admin"],
            "bearer_methods_supported": ["header"],
        })
    );
    assert_eq!(
        serde_json::to_string(&v.resource_metadata()).unwrap(),
        r#"{"resource":"https://sluice.test/mcp","authorization_servers":["https://as.test/realms/sluice"],"scopes_supported":["mcp:tools","sluice:admin"],"bearer_methods_supported":["header"]}"#
    );
    let identity = OAuthVerifier::new(&config("https://as.test"), "http://127.0.0.1:8080").unwrap();
    assert_eq!(
        identity.resource_metadata(),
        json!({
            "resource": "http://127.0.0.1:8080",
            "authorization_servers": ["https://as.test"],
            "scopes_supported": [
                "sessions:read", "sessions:write", "approvals", "config", "tools:call", "metrics", "admin"
            ],
            "bearer_methods_supported": ["header"],
        })
    );
    let metadata = resource_metadata_url(v.audience()).unwrap();
    assert_eq!(
        metadata,
        "https://sluice.test/.well-known/oauth-protected-resource/mcp"
    );
    assert_eq!(
        www_authenticate(
            &metadata,
            Challenge::InvalidToken(&Rejection::Expired {
                expired_at: 1_700_000_000,
                leeway_secs: 60
            })
        ),
        "Bearer resource_metadata=\"https://sluice.test/.well-known/oauth-protected-resource/mcp\", error=\"invalid_token\", error_description=\"the access token expired at 1700000000 (Unix time), more than 60 s ago\""
    );
    let scopes = v.oauth_scopes_granting(&Grant::Tool("read_file".into()));
    assert_eq!(
        www_authenticate(
            &metadata,
            Challenge::InsufficientScope {
                scopes: &scopes,
                description: "calling read_file needs the scope tools:call or tools:call:read_file",
            }
        ),
        "Bearer resource_metadata=\"https://sluice.test/.well-known/oauth-protected-resource/mcp\", error=\"insufficient_scope\", scope=\"mcp:tools\", error_description=\"calling read_file needs the scope tools:call or tools:call:read_file\""
    );
}
