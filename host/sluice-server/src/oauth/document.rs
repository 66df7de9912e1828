//! The JSON documents this server fetches from an OAuth issuer (its metadata, its key set,
//! an introspection answer), each read to at most [`MAX_DOCUMENT_BYTES`], and why one could
//! not be had ([`DocumentError`], whose text is what a refused token's `IssuerUnreachable`
//! and the log say).

use serde::de::DeserializeOwned;

/// The most read of a metadata document, key set or introspection answer, in bytes.
pub(super) const MAX_DOCUMENT_BYTES: usize = 1 << 20;

/// Why an issuer's document could not be had, or does not serve.
#[derive(Debug, thiserror::Error)]
pub(super) enum DocumentError {
    /// `server.oauth.issuer` is not a URL.
    #[error("the issuer {issuer:?}: {source}")]
    Issuer {
        issuer: String,
        source: url::ParseError,
    },
    /// The request failed (no answer, or a broken body).
    #[error("{url}: {}", error_chain(source))]
    Request { url: String, source: reqwest::Error },
    /// The answer's status is not 200.
    #[error("{url}: HTTP {status}")]
    Status {
        url: String,
        status: reqwest::StatusCode,
    },
    /// The answer is longer than [`MAX_DOCUMENT_BYTES`].
    #[error("{url}: the answer is over {MAX_DOCUMENT_BYTES} bytes")]
    TooLarge { url: String },
    /// The answer is not the JSON expected.
    #[error("{url}: not the JSON expected: {source}")]
    Json {
        url: String,
        source: serde_json::Error,
    },
    /// The metadata names another issuer.
    #[error(
        "the metadata at {url} names the issuer {named:?}, not {issuer:?} (server.oauth.issuer must be the issuer exactly)"
    )]
    OtherIssuer {
        url: String,
        named: String,
        issuer: String,
    },
    /// The metadata's `jwks_uri` is not a URL this server fetches.
    #[error(
        "the metadata at {url} names the key set {uri:?}, which is not {}",
        sluice_config::OAUTH_URL_RULE
    )]
    KeySetUrl { url: String, uri: String },
    /// The metadata has no `jwks_uri`.
    #[error("the metadata at {url} names no jwks_uri (set server.oauth.jwks_uri)")]
    NoKeySet { url: String },
    /// No metadata URL answered: why each, in the order tried.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Unanswered(Vec<DocumentError>),
}

/// GETs `url` and reads its JSON body (at most [`MAX_DOCUMENT_BYTES`]).
pub(super) async fn get_json<T: DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
) -> Result<T, DocumentError> {
    let response = http
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|source| DocumentError::Request {
            url: url.to_string(),
            source,
        })?;
    read_json(url, response).await
}

/// The JSON body of `response` (from `url`), when its status is 200.
pub(super) async fn read_json<T: DeserializeOwned>(
    url: &str,
    mut response: reqwest::Response,
) -> Result<T, DocumentError> {
    let status = response.status();
    if status != reqwest::StatusCode::OK {
        return Err(DocumentError::Status {
            url: url.to_string(),
            status,
        });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|source| DocumentError::Request {
            url: url.to_string(),
            source,
        })?
    {
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(DocumentError::TooLarge {
                url: url.to_string(),
            });
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|source| DocumentError::Json {
        url: url.to_string(),
        source,
    })
}

/// `e` and its sources, joined by `: ` (reqwest's own message says little).
pub(super) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
