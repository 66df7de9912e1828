//! `sluice mcp --listen` as an OAuth 2.1 resource server (docs/api.md#oauth), against a real
//! authorization server (npm `oauth2-mock-server`): the metadata document, the 401's
//! challenge, a token refused (expired), a scope missing (403 naming it), and the official
//! Python MCP SDK with a bearer access token over Streamable HTTP; then the SDK signing in
//! by itself: metadata discovery and the authorization-code grant with PKCE and `resource`.

use serde_json::{Value, json};

use super::http::{Listening, listen};
use super::mcp_clients;
use sluice_test_support::oauth_mock::MockServer;

/// A free port on 127.0.0.1 (bound and let go): the resource's URL must name it up front.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `sluice mcp --listen` on a free port as the resource server of an issuer.
struct ResourceServer {
    server: Listening,
    port: u16,
    /// `http://127.0.0.1:PORT/mcp`: the audience its tokens must name.
    resource: String,
    /// The directory of its sluice.toml, kept while it serves.
    _config: tempfile::TempDir,
}

/// Starts the resource server of `issuer`.
async fn resource_server(issuer: &MockServer) -> ResourceServer {
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sluice.toml");
    std::fs::write(
        &config,
        format!(
            "[server.oauth]\nissuer = \"{}\"\naudience = \"{resource}\"\n",
            issuer.issuer
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let listen_on = format!("127.0.0.1:{port}");
    let server = listen(&["--config", &config, "mcp", "--listen", &listen_on], &[]).await;
    ResourceServer {
        server,
        port,
        resource,
        _config: dir,
    }
}

/// Claims of a token for `sub` at `resource` with OAuth scopes `scope`.
fn claims(sub: &str, resource: &str, scope: &str, expires_in: i64) -> Value {
    json!({"claims": {"sub": sub, "aud": resource, "scope": scope}, "expires_in": expires_in})
}

#[tokio::test]
async fn an_mcp_client_signs_in_with_an_access_token_of_the_authorization_server() {
    let Some(issuer) = MockServer::start(false) else {
        return;
    };
    let ResourceServer {
        server,
        port,
        resource,
        _config,
    } = resource_server(&issuer).await;
    let http = reqwest::Client::new();

    // The metadata document (RFC 9728), at the path of the resource, without a token.
    let metadata_url = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
    let metadata: Value = http
        .get(&metadata_url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["resource"], resource.as_str());
    assert_eq!(metadata["authorization_servers"], json!([issuer.issuer]));
    assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
    assert!(
        metadata["scopes_supported"]
            .as_array()
            .unwrap()
            .contains(&json!("tools:call")),
        "{metadata}"
    );

    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let post = |token: Option<String>| {
        let mut r = http
            .post(format!("{}/mcp", server.url))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .json(&list);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        r.send()
    };
    // No token: 401 naming the metadata document.
    let r = post(None).await.unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(
        r.headers()["www-authenticate"].to_str().unwrap(),
        format!("Bearer resource_metadata=\"{metadata_url}\"")
    );
    // An expired token: 401 invalid_token.
    let expired = issuer
        .token(claims("alice", &resource, "tools:call", -3600))
        .await;
    let r = post(Some(expired)).await.unwrap();
    assert_eq!(r.status(), 401);
    let challenge = r.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    // A token for another resource (RFC 8707): 401.
    let elsewhere = issuer
        .token(claims(
            "alice",
            "https://elsewhere.example/mcp",
            "tools:call",
            600,
        ))
        .await;
    assert_eq!(post(Some(elsewhere)).await.unwrap().status(), 401);
    // A scope missing: 403 naming it, with the OAuth scope to ask for.
    let reader = issuer
        .token(claims("alice", &resource, "sessions:read", 600))
        .await;
    let r = post(Some(reader)).await.unwrap();
    assert_eq!(r.status(), 403);
    let challenge = r.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        challenge.contains("error=\"insufficient_scope\"")
            && challenge.contains("scope=\"tools:call\""),
        "{challenge}"
    );
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        (&body["scope"], &body["principal"]),
        (&json!("tools:call"), &json!("oauth:alice"))
    );

    // The official Python SDK, signed in with a valid access token.
    let Some(python) = mcp_clients::python() else {
        return;
    };
    let token = issuer
        .token(claims("alice", &resource, "tools:call", 600))
        .await;
    let calls = json!([{"name": "read_file", "arguments": {"path": "f.txt"}}]).to_string();
    let out = tokio::process::Command::new(python)
        .arg(crate::mcp::python_client_script())
        .args(["http", "initialize", &format!("{}/mcp", server.url), &calls])
        .env("MCP_BEARER_TOKEN", &token)
        .output()
        .await
        .unwrap();
    let out = mcp_clients::answer(&out);
    assert_eq!(
        out["tools"],
        json!([
            "read_file",
            "tail_file",
            "grep_files",
            "list_dir",
            "run_script"
        ])
    );
    assert_eq!(out["calls"][0]["isError"], false, "{out}");
    assert_eq!(
        out["calls"][0]["content"][0]["text"],
        "{\"ok\":true,\"result\":{\"path\":\"f.txt\",\"size\":8,\"offset\":0,\"startLine\":1,\"endLine\":2,\"totalLines\":2,\"contentBytes\":8,\"content\":\"one\\ntwo\\n\"}}"
    );
}

/// The SDK's own OAuth support (`OAuthClientProvider`, python_client.py's `http-oauth`):
/// Sluice's 401 names the RFC 9728 document, which names the issuer; the SDK reads the
/// issuer's metadata (RFC 8414 first, then OpenID), sends the user agent to /authorize with
/// PKCE (S256), the `resource` (RFC 8707) and the scopes the document offers, exchanges the
/// code at /token, and retries with the access token the mock issued for that resource.
#[tokio::test]
async fn the_python_sdk_signs_in_through_the_authorization_server_by_itself() {
    let Some(issuer) = MockServer::start_with(false, true) else {
        return;
    };
    let Some(python) = mcp_clients::python() else {
        return;
    };
    let ResourceServer {
        server,
        port,
        resource,
        _config,
    } = resource_server(&issuer).await;
    let endpoint = format!("{}/mcp", server.url);
    assert_eq!(endpoint, resource);

    let calls = json!([{"name": "read_file", "arguments": {"path": "f.txt"}}]).to_string();
    let out = tokio::process::Command::new(python)
        .arg(crate::mcp::python_client_script())
        .args(["http-oauth", "initialize", &endpoint, &calls])
        .output()
        .await
        .unwrap();
    let out = mcp_clients::answer(&out);
    // The SDK asks for every scope the metadata document offers (no `scope` in the 401).
    let metadata: Value = reqwest::get(format!(
        "http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let offered: Vec<&str> = metadata["scopes_supported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(offered.contains(&"tools:call"), "{metadata}");
    let scopes = offered.join(" ");
    let at = &issuer.issuer;
    assert_eq!(
        out["oauth"]["requests"],
        json!([
            format!("POST {resource} 401"),
            format!("GET http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp 200"),
            format!("GET {at}/.well-known/oauth-authorization-server 404"),
            format!("GET {at}/.well-known/openid-configuration 200"),
            format!("GET {at}/authorize 302"),
            format!("POST {at}/token 200"),
            format!("POST {resource} 200"),
        ]),
        "{out}"
    );
    assert_eq!(
        out["oauth"]["authorize"],
        json!({
            "response_type": "code",
            "client_id": "sluice-test-client",
            "redirect_uri": "http://127.0.0.1/callback",
            "code_challenge_method": "S256",
            "resource": resource,
            "scope": scopes,
        })
    );
    assert_eq!(
        out["oauth"]["token"],
        json!({"token_type": "Bearer", "scope": scopes})
    );
    assert_eq!(
        out["oauth"]["claims"],
        json!({"iss": at, "sub": "johndoe", "aud": resource, "scope": scopes})
    );
    // What the authorization server saw: one grant, PKCE verified, for this resource.
    assert_eq!(
        issuer.grants().await,
        json!([{
            "authorize": {
                "response_type": "code",
                "client_id": "sluice-test-client",
                "redirect_uri": "http://127.0.0.1/callback",
                "resource": resource,
                "scope": scopes,
                "code_challenge_method": "S256",
            },
            "token": {
                "grant_type": "authorization_code",
                "client_id": "sluice-test-client",
                "redirect_uri": "http://127.0.0.1/callback",
                "resource": resource,
                "pkce": true,
            },
            "claims": {"sub": "johndoe", "aud": resource, "scope": scopes},
        }])
    );
    assert_eq!(
        out["tools"],
        json!([
            "read_file",
            "tail_file",
            "grep_files",
            "list_dir",
            "run_script"
        ])
    );
    assert_eq!(out["calls"][0]["isError"], false, "{out}");
    assert_eq!(
        out["calls"][0]["content"][0]["text"],
        "{\"ok\":true,\"result\":{\"path\":\"f.txt\",\"size\":8,\"offset\":0,\"startLine\":1,\"endLine\":2,\"totalLines\":2,\"contentBytes\":8,\"content\":\"one\\ntwo\\n\"}}"
    );
}
