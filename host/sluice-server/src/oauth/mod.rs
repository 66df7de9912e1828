//! OAuth: the resource server's verifier of access tokens, and the OAuth paths answered
//! while OAuth is not configured.
//!
//! **With `[server.oauth]`** (docs/configuration.md#serveroauth), [`OAuthVerifier`] checks
//! access tokens of the configured issuer: [`OAuthVerifier::verify`] gives the [`Verified`]
//! subject and Sluice scopes or a [`Rejection`]; [`OAuthVerifier::resource_metadata`] is the
//! RFC 9728 document of `GET /.well-known/oauth-protected-resource`; [`www_authenticate`] the
//! challenge of a 401 or 403.
//!
//! **Without it**, a client authenticates with the bearer token
//! (`Authorization: Bearer <token>`). MCP clients that meet a 401 look for OAuth metadata
//! (RFC 9728, RFC 8414, OpenID discovery) and may then try dynamic client registration
//! (RFC 7591); Claude Code, told 401 at those paths too, reports "Dynamic Client
//! Registration rejected (HTTP 401)" and buries the server's own message. So the
//! [`Guard`](crate::guard::Guard) answers these paths 404 (with the `Host` check before
//! it, the token not asked for), saying how to authenticate instead: there is nothing at
//! them to protect.

mod claims;
mod document;
mod introspection;
mod keys;
mod metadata;
mod rejection;
mod route;
mod verifier;

pub use metadata::{
    Challenge, PROTECTED_RESOURCE_PATH, protected_resource_metadata, resource_metadata_url,
    www_authenticate,
};
pub use rejection::Rejection;
pub(crate) use route::not_served as refused_path;
pub use route::{is_metadata_request, router};
pub use verifier::{
    ACCEPTED_ALGORITHMS, FETCH_TIMEOUT, JWKS_REFRESH_INTERVAL, OAuthVerifier, SetupError, Verified,
};

use axum::http::StatusCode;

use crate::error::ApiError;

/// The OAuth discovery documents, each also under a path suffix (RFC 9728's and RFC 8414's
/// `/.well-known/oauth-protected-resource/mcp`).
pub const OAUTH_DISCOVERY_PATHS: &[&str] = &[
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
];

/// The endpoints a client falls back to without metadata (registration, authorization,
/// token), exactly.
pub const OAUTH_ENDPOINT_PATHS: &[&str] = &["/register", "/authorize", "/token"];

/// True when `path` is one of [`OAUTH_DISCOVERY_PATHS`] (or under one) or one of
/// [`OAUTH_ENDPOINT_PATHS`].
pub fn is_oauth_path(path: &str) -> bool {
    OAUTH_DISCOVERY_PATHS.iter().any(|p| {
        path.strip_prefix(p)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }) || OAUTH_ENDPOINT_PATHS.contains(&path)
}

/// 404 for the OAuth path `path`.
pub(crate) fn not_served(path: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!(
            "{path} is not served: Sluice serves no OAuth. Authenticate with the bearer token instead: send `Authorization: Bearer <token>` with the token from SLUICE_SERVER_TOKEN or --token-file (an MCP client takes it as a header in its server configuration)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_discovery_paths_and_their_suffixed_forms() {
        for path in [
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server",
            "/.well-known/oauth-authorization-server/mcp",
            "/.well-known/openid-configuration",
            "/register",
            "/authorize",
            "/token",
        ] {
            assert!(is_oauth_path(path), "{path}");
        }
        for path in [
            "/mcp",
            "/healthz",
            "/sessions",
            "/.well-known/oauth-protected-resourcex",
            "/register/x",
            "/",
        ] {
            assert!(!is_oauth_path(path), "{path}");
        }
    }
}
