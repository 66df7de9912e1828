//! Reading from a registry over HTTP, bounded: every request has a deadline
//! ([`Limits::timeout`], its body included), every body is read up to a bound and the
//! connection dropped past it, and the token of a `Bearer` challenge (the registry token
//! flow) is fetched the same way. An error answer is read up to [`MAX_ERROR_BODY_BYTES`]
//! and shown [`quoted`].
//!
//! `oci-client` pushes (see `remote`), but its pulls read whole bodies into memory with no
//! bound and no overall deadline, so pulls are done here.

use std::sync::Mutex;

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, WWW_AUTHENTICATE};

use crate::auth::Credentials;
use crate::limits::{Limits, MAX_ERROR_BODY_BYTES, MAX_TOKEN_BYTES, quoted};

/// How long connecting to a registry may take (within [`Limits::timeout`]).
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Why a read from a registry failed (the caller names the reference and what was read).
#[derive(Debug)]
pub(crate) enum Failure {
    /// The body is longer than `limit` bytes (by its `Content-Length`, or as read).
    TooLarge {
        /// The bound.
        limit: u64,
    },
    /// The request, its body included, did not complete within [`Limits::timeout`].
    Deadline,
    /// The registry answered 404.
    NotFound {
        /// The start of its body, [`quoted`].
        body: String,
    },
    /// The registry (or its token service) answered another error status, or the
    /// connection failed.
    Other(String),
    /// The sink could not take the bytes (writing them to the cache failed).
    Sink(std::io::Error),
}

impl From<reqwest::Error> for Failure {
    fn from(e: reqwest::Error) -> Self {
        // reqwest's message names the URL (never credentials: they go in headers).
        let mut message = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        Failure::Other(message)
    }
}

/// A reader of one repository of one registry.
pub(crate) struct Http {
    client: reqwest::Client,
    /// `http://REGISTRY` or `https://REGISTRY` (the registry as the client resolves it:
    /// `docker.io` is `index.docker.io`).
    base: String,
    repository: String,
    credentials: Credentials,
    limits: Limits,
    /// How requests are authorized, once a challenge said.
    authorization: Mutex<Authorization>,
}

#[derive(Clone, Debug)]
enum Authorization {
    None,
    Basic,
    Bearer(String),
}

impl Http {
    /// A reader of `repository` at `base` (`http://HOST:PORT`).
    pub(crate) fn new(
        base: String,
        repository: &str,
        credentials: &Credentials,
        limits: Limits,
    ) -> Http {
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("sluice/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        Http {
            client,
            base,
            repository: repository.to_string(),
            credentials: credentials.clone(),
            limits,
            authorization: Mutex::new(Authorization::None),
        }
    }

    /// The limits this reader applies.
    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// `GET /v2/<repository>/<path>` (`manifests/<tag>`, `blobs/<digest>`), accepting
    /// `accept`: its body, at most `limit` bytes, handed to `sink` chunk by chunk; the
    /// whole request within [`Limits::timeout`].
    pub(crate) async fn get(
        &self,
        path: &str,
        accept: &str,
        limit: u64,
        sink: &mut (dyn FnMut(&[u8]) -> std::io::Result<()> + Send),
    ) -> Result<(), Failure> {
        let url = format!("{}/v2/{}/{path}", self.base, self.repository);
        let work = async {
            let response = self.send(&url, accept).await?;
            let status = response.status();
            if !status.is_success() {
                let body = read_error_body(response).await;
                return Err(if status == StatusCode::NOT_FOUND {
                    Failure::NotFound { body }
                } else {
                    Failure::Other(format!("{url} answered {status}: {body}"))
                });
            }
            read_bounded(response, limit, sink).await
        };
        tokio::time::timeout(self.limits.timeout, work)
            .await
            .unwrap_or(Err(Failure::Deadline))
    }

    /// [`Http::get`] into memory.
    pub(crate) async fn get_bytes(
        &self,
        path: &str,
        accept: &str,
        limit: u64,
    ) -> Result<Vec<u8>, Failure> {
        let mut bytes = Vec::new();
        self.get(path, accept, limit, &mut |chunk| {
            bytes.extend_from_slice(chunk);
            Ok(())
        })
        .await?;
        Ok(bytes)
    }

    fn request(&self, url: &str, accept: &str) -> reqwest::RequestBuilder {
        let request = self.client.get(url).header(ACCEPT, accept);
        let authorization = self
            .authorization
            .lock()
            .map(|a| a.clone())
            .unwrap_or(Authorization::None);
        match (authorization, &self.credentials) {
            (Authorization::Bearer(token), _) => request.bearer_auth(token),
            (
                Authorization::Basic,
                Credentials::Basic {
                    username, password, ..
                },
            ) => request.basic_auth(username, Some(password)),
            _ => request,
        }
    }

    /// Sends the request; on a `401` with a challenge, answers it (a token for `Bearer`,
    /// the credentials for `Basic`) and sends it once more.
    async fn send(&self, url: &str, accept: &str) -> Result<reqwest::Response, Failure> {
        let response = self.request(url, accept).send().await?;
        if response.status() != StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let authorization = self.answer(&challenge).await?;
        let Some(authorization) = authorization else {
            let body = read_error_body(response).await;
            return Err(Failure::Other(format!(
                "{url} answered 401 Unauthorized (challenge {}): {body}",
                quoted(challenge.as_bytes())
            )));
        };
        if let Ok(mut a) = self.authorization.lock() {
            *a = authorization;
        }
        Ok(self.request(url, accept).send().await?)
    }

    /// How to answer `challenge`: a token from the realm of a `Bearer` challenge, the
    /// credentials for a `Basic` one (`None` without credentials, or for other schemes).
    async fn answer(&self, challenge: &str) -> Result<Option<Authorization>, Failure> {
        let Ok(challenges) = http_auth::parse_challenges(challenge) else {
            return Ok(None);
        };
        for c in &challenges {
            if c.scheme.eq_ignore_ascii_case("bearer") {
                let param = |name: &str| {
                    c.params
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(name))
                        .map(|(_, v)| v.to_unescaped())
                };
                let Some(realm) = param("realm") else {
                    continue;
                };
                let scope = format!("repository:{}:pull", self.repository);
                let mut query = vec![("scope", scope)];
                if let Some(service) = param("service") {
                    query.push(("service", service));
                }
                return self.token(&realm, &query).await.map(Some);
            }
            if c.scheme.eq_ignore_ascii_case("basic")
                && matches!(self.credentials, Credentials::Basic { .. })
            {
                return Ok(Some(Authorization::Basic));
            }
        }
        Ok(None)
    }

    /// A token from the token service at `realm` (the registry token flow), with the
    /// credentials when there are any: `{"token": …}` or `{"access_token": …}`, at most
    /// [`MAX_TOKEN_BYTES`].
    async fn token(&self, realm: &str, query: &[(&str, String)]) -> Result<Authorization, Failure> {
        let mut request = self.client.get(realm).query(query);
        if let Credentials::Basic {
            username, password, ..
        } = &self.credentials
        {
            request = request.basic_auth(username, Some(password));
        }
        let response = request.send().await?;
        let status = response.status();
        if !status.is_success() {
            let body = read_error_body(response).await;
            return Err(Failure::Other(format!(
                "the token service {} answered {status}: {body}",
                quoted(realm.as_bytes())
            )));
        }
        let mut body = Vec::new();
        read_bounded(response, MAX_TOKEN_BYTES, &mut |chunk| {
            body.extend_from_slice(chunk);
            Ok(())
        })
        .await?;
        #[derive(serde::Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let token: Token = serde_json::from_slice(&body).map_err(|e| {
            Failure::Other(format!(
                "the token service {} answered what is not a token ({e}): {}",
                quoted(realm.as_bytes()),
                quoted(&body)
            ))
        })?;
        token
            .token
            .or(token.access_token)
            .map(Authorization::Bearer)
            .ok_or_else(|| {
                Failure::Other(format!(
                    "the token service {} answered no token",
                    quoted(realm.as_bytes())
                ))
            })
    }
}

/// The body of `response`, at most `limit` bytes, handed to `sink`: refused by its
/// `Content-Length` before a byte is read when that is over `limit`, else as soon as the
/// bytes read pass it (the connection is dropped, the rest unread).
async fn read_bounded(
    mut response: reqwest::Response,
    limit: u64,
    sink: &mut (dyn FnMut(&[u8]) -> std::io::Result<()> + Send),
) -> Result<(), Failure> {
    if response.content_length().is_some_and(|n| n > limit) {
        return Err(Failure::TooLarge { limit });
    }
    let mut read: u64 = 0;
    while let Some(chunk) = response.chunk().await? {
        read += chunk.len() as u64;
        if read > limit {
            return Err(Failure::TooLarge { limit });
        }
        sink(&chunk).map_err(Failure::Sink)?;
    }
    Ok(())
}

/// The start of an error answer's body ([`MAX_ERROR_BODY_BYTES`] at most), [`quoted`];
/// `(no body)` when empty.
async fn read_error_body(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while (body.len() as u64) < MAX_ERROR_BODY_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY_BYTES as usize);
    if body.is_empty() {
        "(no body)".into()
    } else {
        quoted(&body)
    }
}
