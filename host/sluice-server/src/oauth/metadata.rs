//! What a client reads to find its way to a token: the protected-resource metadata document
//! (RFC 9728, `GET /.well-known/oauth-protected-resource`) and the `WWW-Authenticate`
//! challenge of a 401 or 403 (RFC 6750 §3, with RFC 9728 §5.1's `resource_metadata`).

use serde_json::{Value, json};

use super::{OAuthVerifier, Rejection};

/// Where the protected-resource metadata is served, for a resource without a path (RFC 9728
/// §3); a resource `https://host/mcp` has it under `…/oauth-protected-resource/mcp`.
pub const PROTECTED_RESOURCE_PATH: &str = "/.well-known/oauth-protected-resource";

/// The URL of the metadata document of `resource` (RFC 9728 §3.1: the well-known segment
/// inserted between the host and the resource's path, a trailing `/` dropped):
/// `https://h/mcp` → `https://h/.well-known/oauth-protected-resource/mcp`. `None` when
/// `resource` is not an absolute http(s) URL.
pub fn resource_metadata_url(resource: &str) -> Option<String> {
    let url = url::Url::parse(resource).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return None;
    }
    let path = url.path().trim_end_matches('/');
    Some(format!(
        "{}{PROTECTED_RESOURCE_PATH}{path}",
        url.origin().ascii_serialization()
    ))
}

/// The protected-resource metadata document (RFC 9728 §2) of `resource`, protected by the
/// authorization servers `authorization_servers` (issuer identifiers), with the scopes a
/// client may ask for; tokens are accepted in the `Authorization` header only.
pub fn protected_resource_metadata(
    resource: &str,
    authorization_servers: &[&str],
    scopes_supported: &[String],
) -> Value {
    json!({
        "resource": resource,
        "authorization_servers": authorization_servers,
        "scopes_supported": scopes_supported,
        "bearer_methods_supported": ["header"],
    })
}

impl OAuthVerifier {
    /// This resource's metadata document ([`protected_resource_metadata`] of its audience,
    /// its issuer and [`OAuthVerifier::scopes_supported`]).
    pub fn resource_metadata(&self) -> Value {
        protected_resource_metadata(self.audience(), &[self.issuer()], &self.scopes_supported())
    }
}

/// Why a request was refused, for [`www_authenticate`].
#[derive(Clone, Copy, Debug)]
pub enum Challenge<'a> {
    /// It carried no token: no error code (RFC 6750 §3.1), only where to find the metadata.
    NoToken,
    /// Its token was refused (401, `error="invalid_token"`).
    InvalidToken(&'a Rejection),
    /// Its token lacks a scope (403, `error="insufficient_scope"`): `scopes` are the OAuth
    /// scopes that would grant it ([`OAuthVerifier::oauth_scopes_granting`]), `description`
    /// says what was refused.
    InsufficientScope {
        /// The OAuth scopes to ask for.
        scopes: &'a [String],
        /// What the request needed, for `error_description`.
        description: &'a str,
    },
}

/// The `WWW-Authenticate` value for `challenge`, pointing at the metadata document at
/// `resource_metadata_url`: `Bearer resource_metadata="…"`, then `error="invalid_token",
/// error_description="…"` or `error="insufficient_scope", scope="…", error_description="…"`.
/// Characters a quoted value may not hold (`"`, `\`, anything but printable ASCII) are
/// replaced (`"` by `'`, others by `?`).
pub fn www_authenticate(resource_metadata_url: &str, challenge: Challenge<'_>) -> String {
    let mut out = format!(
        "Bearer resource_metadata=\"{}\"",
        quotable(resource_metadata_url)
    );
    match challenge {
        Challenge::NoToken => {}
        Challenge::InvalidToken(rejection) => {
            out.push_str(&format!(
                ", error=\"invalid_token\", error_description=\"{}\"",
                quotable(&rejection.to_string())
            ));
        }
        Challenge::InsufficientScope {
            scopes,
            description,
        } => {
            out.push_str(&format!(
                ", error=\"insufficient_scope\", scope=\"{}\", error_description=\"{}\"",
                quotable(&scopes.join(" ")),
                quotable(description)
            ));
        }
    }
    out
}

/// `text` with what RFC 6750 §3 does not allow in a quoted value replaced.
fn quotable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' => '\'',
            '\\' => '/',
            ' '..='~' => c,
            _ => '?',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_inserts_the_well_known_segment() {
        assert_eq!(
            resource_metadata_url("https://sluice.example/mcp").as_deref(),
            Some("https://sluice.example/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            resource_metadata_url("http://127.0.0.1:8080/").as_deref(),
            Some("http://127.0.0.1:8080/.well-known/oauth-protected-resource")
        );
        assert_eq!(resource_metadata_url("urn:sluice"), None);
    }

    #[test]
    fn challenges() {
        let url = "https://s.example/.well-known/oauth-protected-resource";
        assert_eq!(
            www_authenticate(url, Challenge::NoToken),
            "Bearer resource_metadata=\"https://s.example/.well-known/oauth-protected-resource\""
        );
        let rejection = Rejection::WrongIssuer {
            expected: "https://a.example".into(),
            got: "https://é.example".into(),
        };
        assert_eq!(
            www_authenticate(url, Challenge::InvalidToken(&rejection)),
            "Bearer resource_metadata=\"https://s.example/.well-known/oauth-protected-resource\", error=\"invalid_token\", error_description=\"the access token was issued by 'https://?.example'; this server accepts tokens of 'https://a.example'\""
        );
        assert_eq!(
            www_authenticate(
                url,
                Challenge::InsufficientScope {
                    scopes: &["mcp:tools".to_string(), "ops".to_string()],
                    description: "calling tools needs the scope tools:call",
                }
            ),
            "Bearer resource_metadata=\"https://s.example/.well-known/oauth-protected-resource\", error=\"insufficient_scope\", scope=\"mcp:tools ops\", error_description=\"calling tools needs the scope tools:call\""
        );
    }
}
