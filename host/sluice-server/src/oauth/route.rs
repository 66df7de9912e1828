//! The OAuth paths as the server answers them: with `[server.oauth]`, the protected-resource
//! metadata document (RFC 9728) at `GET /.well-known/oauth-protected-resource` (and under a
//! path suffix, `…/mcp`), served without a token; every other OAuth path answers 404 naming
//! where to go instead.

use std::sync::Arc;

use axum::Router;
use axum::http::{Method, StatusCode};
use axum::routing::get;

use super::{OAuthVerifier, PROTECTED_RESOURCE_PATH, is_oauth_path};
use crate::error::ApiError;

/// True for a `GET` or `HEAD` of the metadata document (or its suffixed forms).
pub fn is_metadata_request(method: &Method, path: &str) -> bool {
    (method == Method::GET || method == Method::HEAD)
        && path
            .strip_prefix(PROTECTED_RESOURCE_PATH)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The router of the metadata document of `verifier`'s resource.
pub fn router(verifier: Arc<OAuthVerifier>) -> Router {
    let document = axum::Json(verifier.resource_metadata());
    let answer = move || std::future::ready(document.clone());
    Router::new()
        .route(PROTECTED_RESOURCE_PATH, get(answer.clone()))
        .route(
            &format!("{PROTECTED_RESOURCE_PATH}/{{*resource}}"),
            get(answer),
        )
}

/// 404 for the OAuth path `path` ([`is_oauth_path`]): without OAuth, how to authenticate
/// with the bearer token; with it (`issuer` set), where the authorization server is.
pub(crate) fn not_served(path: &str, issuer: Option<&str>) -> ApiError {
    debug_assert!(is_oauth_path(path));
    match issuer {
        None => super::not_served(path),
        Some(issuer) => ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "{path} is not served here: this server is an OAuth resource server; its authorization server is {issuer} (the metadata at {PROTECTED_RESOURCE_PATH} names it)"
            ),
        ),
    }
}
