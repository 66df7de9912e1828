//! The authorization server of the OAuth tests (sluice-server's verifier, host/sluice's MCP
//! sign-in): npm `oauth2-mock-server` driven by this crate's `oauth_mock_server.mjs` (its
//! usage is in its header), a child process on 127.0.0.1 killed when the [`MockServer`] drops.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};

use serde_json::{Value, json};

use crate::mcp_clients::{clients_dir, installed};

/// A running mock authorization server.
pub struct MockServer {
    child: Child,
    /// Held open: the script stops when its standard input closes.
    _stdin: ChildStdin,
    /// Its issuer identifier, `http://127.0.0.1:PORT`.
    pub issuer: String,
    http: reqwest::Client,
}

impl Drop for MockServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl MockServer {
    /// Starts one (`rfc8414`: its metadata at RFC 8414's path, OpenID's answering 500), or
    /// `None` after saying why not when Node or the package is not installed (a failure
    /// under `CI=true`).
    pub fn start(rfc8414: bool) -> Option<MockServer> {
        Self::start_with(rfc8414, false)
    }

    /// [`MockServer::start`], and with `authorization_code` (`--authorization-code`) the
    /// access token of an authorization-code grant is for the resource the client asked for
    /// (`aud` = its `resource`, `scope` = the scope sent to /authorize, `sub` = `johndoe`),
    /// each grant recorded for [`MockServer::grants`].
    pub fn start_with(rfc8414: bool, authorization_code: bool) -> Option<MockServer> {
        let node = clients_dir().join("node/bin/node");
        let modules = clients_dir().join("oauth/node_modules");
        installed(node.clone(), "Node")?;
        installed(modules.join("oauth2-mock-server"), "npm oauth2-mock-server")?;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("oauth_mock_server.mjs");
        let mut command = Command::new(node);
        command.arg(script).arg(&modules);
        if rfc8414 {
            command.arg("--rfc8414");
        }
        if authorization_code {
            command.arg("--authorization-code");
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node starts");
        let stdin = child.stdin.take().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let started: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
            panic!("oauth_mock_server.mjs printed {line:?}, not its issuer: {e}")
        });
        Some(MockServer {
            child,
            _stdin: stdin,
            issuer: started["issuer"].as_str().unwrap().to_string(),
            http: reqwest::Client::new(),
        })
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let response = self
            .http
            .post(format!("{}{path}", self.issuer))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        response.json().await.unwrap()
    }

    /// A token minted as `POST /test/token` describes (`kid`, `claims`, `expires_in`,
    /// `foreign`, `alg`).
    pub async fn token(&self, request: Value) -> String {
        self.post("/test/token", request).await["token"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Adds a signing key (a rotation): it is published in the key set from now on.
    pub async fn add_key(&self, alg: &str, kid: &str) {
        self.post("/test/keys", json!({ "alg": alg, "kid": kid }))
            .await;
    }

    /// Makes every later introspection answer `answer`.
    pub async fn set_introspection(&self, answer: Value) {
        self.post("/test/introspection", answer).await;
    }

    /// The authorization-code grants completed (`--authorization-code`), oldest first: each
    /// `{"authorize": the /authorize query's response_type, client_id, redirect_uri,
    /// resource, scope, code_challenge_method; "token": the /token form's grant_type,
    /// client_id, redirect_uri, resource and "pkce" (a code_verifier matched the challenge);
    /// "claims": the access token's sub, aud, scope}` (a parameter not sent is null).
    pub async fn grants(&self) -> Value {
        self.http
            .get(format!("{}/test/grants", self.issuer))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// The last introspection request's `Authorization` header, and how many there were.
    pub async fn last_introspection(&self) -> Value {
        self.http
            .get(format!("{}/test/introspection", self.issuer))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}
