//! `[server.oauth]`: `sluice serve` as an OAuth 2.1 resource server
//! (docs/configuration.md#serveroauth). An access token issued by `issuer` for `audience`
//! (RFC 8707) is checked against the issuer's keys, discovered from its metadata (RFC 8414,
//! else OpenID discovery), or sent to its introspection endpoint (RFC 7662) when it is not a
//! JWT; its OAuth scopes become Sluice scopes through `scopes`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use sluice_grants::SecretSource;
use sluice_protocol::access::{Grant, scope_rule};

use crate::ConfigError;
use crate::file::Raw;
use crate::keys::SERVER_OAUTH_LEEWAY_SECS;

/// `server.oauth.leeway_secs` when not set: 60 s.
pub const DEFAULT_LEEWAY_SECS: u64 = 60;
/// The largest `server.oauth.leeway_secs`: 300 s.
pub const MAX_LEEWAY_SECS: u64 = 300;

/// What `server.oauth.issuer` (and every other URL of the table) may be, as messages say it.
pub const OAUTH_URL_RULE: &str = "an absolute https:// URL (http:// only for a loopback host: localhost, 127.0.0.0/8 or ::1) without a query or fragment";

/// The `[server.oauth]` table, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthConfig {
    /// `issuer`: the authorization server's issuer identifier, exactly as written (an access
    /// token's `iss` must equal it byte for byte, trailing `/` included); [`OAUTH_URL_RULE`].
    /// Its metadata is fetched from `/.well-known/oauth-authorization-server` (RFC 8414), else
    /// `/.well-known/openid-configuration`.
    pub issuer: String,
    /// `audience`: the value an access token's `aud` must contain (RFC 8707: this resource's
    /// identifier). Default `None`: the server uses its own URL.
    pub audience: Option<String>,
    /// `scopes`: OAuth scope → the Sluice scopes it grants, each granted scope once, in the
    /// order written. `None` (the default): an OAuth scope whose name is a Sluice scope
    /// (`sessions:read`, …, `tools:call:<tool>`) grants that scope, and others grant nothing.
    /// With a table, only its keys grant anything.
    pub scopes: Option<BTreeMap<String, Vec<Grant>>>,
    /// `leeway_secs` (0 to 300; default 60): how far `exp` and `nbf` may be off this host's
    /// clock.
    pub leeway: Duration,
    /// `introspection`: where tokens that are not JWTs are checked (RFC 7662). Default none:
    /// such tokens are refused.
    pub introspection: Option<IntrospectionConfig>,
    /// `jwks_uri`: the issuer's key set (JWKS), instead of the `jwks_uri` of its metadata.
    /// Default none (discovered); [`OAUTH_URL_RULE`].
    pub jwks_uri: Option<String>,
}

/// `[server.oauth.introspection]`: token introspection (RFC 7662).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntrospectionConfig {
    /// `endpoint`: the introspection endpoint; [`OAUTH_URL_RULE`].
    pub endpoint: String,
    /// `client_id`: this resource server's client identifier at the authorization server
    /// (HTTP Basic authentication of each introspection request).
    pub client_id: String,
    /// `client_secret`: `{ env = "VAR" }` or `{ file = "path" }` (relative to the
    /// configuration file), read when the server starts.
    pub client_secret: SecretSource,
}

/// `[server.oauth]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileOAuth {
    issuer: Option<String>,
    audience: Option<String>,
    scopes: Option<BTreeMap<String, Vec<String>>>,
    leeway_secs: Option<Raw>,
    introspection: Option<FileIntrospection>,
    jwks_uri: Option<String>,
}

/// `[server.oauth.introspection]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileIntrospection {
    endpoint: Option<String>,
    client_id: Option<String>,
    client_secret: Option<FileSecret>,
}

/// `{ env = "VAR" }` or `{ file = "path" }` (the shape of a tool's `secrets.KEY`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSecret {
    env: Option<String>,
    file: Option<String>,
}

/// True when `url` follows [`OAUTH_URL_RULE`].
pub fn valid_oauth_url(url: &str) -> bool {
    let Ok(parsed) = url::Url::parse(url) else {
        return false;
    };
    if parsed.query().is_some() || parsed.fragment().is_some() || parsed.cannot_be_a_base() {
        return false;
    }
    match parsed.scheme() {
        "https" => parsed.host().is_some(),
        "http" => match parsed.host() {
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        },
        _ => false,
    }
}

/// Resolves `[server.oauth]` (absent: `None`). `file_label` is the configuration file's path
/// as given; a secret `file` is resolved against its directory.
pub(crate) fn resolve(
    oauth: Option<&FileOAuth>,
    file_label: &str,
) -> Result<Option<OAuthConfig>, ConfigError> {
    let Some(o) = oauth else {
        return Ok(None);
    };
    let bad = |key: &str, value: String, allowed: &str| ConfigError::Value {
        key: format!("server.oauth.{key}"),
        value,
        allowed: allowed.to_string(),
        origin: file_label.to_string(),
    };
    let url = |key: &str, value: &str| {
        if valid_oauth_url(value) {
            Ok(value.to_string())
        } else {
            Err(bad(key, format!("{value:?}"), OAUTH_URL_RULE))
        }
    };
    let issuer = match &o.issuer {
        Some(issuer) => url("issuer", issuer)?,
        None => {
            return Err(bad(
                "issuer",
                "nothing".into(),
                &format!("set when [server.oauth] is: {OAUTH_URL_RULE}"),
            ));
        }
    };
    if let Some(audience) = &o.audience
        && (audience.is_empty() || audience.len() > 2048 || audience.contains(char::is_whitespace))
    {
        return Err(bad(
            "audience",
            format!("{audience:?}"),
            "1 to 2048 characters without whitespace (this resource's identifier, usually its https:// URL)",
        ));
    }
    let scopes = match &o.scopes {
        None => None,
        Some(table) => {
            let mut out = BTreeMap::new();
            for (oauth_scope, sluice_scopes) in table {
                if oauth_scope.is_empty()
                    || !oauth_scope.bytes().all(|b| {
                        b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b)
                    })
                {
                    return Err(bad(
                        "scopes",
                        format!("the key {oauth_scope:?}"),
                        "a table whose keys are OAuth scopes (RFC 6749: printable ASCII but space, `\"` and `\\`)",
                    ));
                }
                let mut grants = Vec::with_capacity(sluice_scopes.len());
                for scope in sluice_scopes {
                    let grant = Grant::parse(scope).map_err(|_| {
                        bad(
                            &format!("scopes.{oauth_scope:?}"),
                            format!("{scope:?}"),
                            &format!("a list of Sluice scopes, each {}", scope_rule()),
                        )
                    })?;
                    if !grants.contains(&grant) {
                        grants.push(grant);
                    }
                }
                out.insert(oauth_scope.clone(), grants);
            }
            Some(out)
        }
    };
    let leeway =
        SERVER_OAUTH_LEEWAY_SECS.file_integer_or_default(o.leeway_secs.as_ref(), file_label)?;
    let jwks_uri = o
        .jwks_uri
        .as_deref()
        .map(|u| url("jwks_uri", u))
        .transpose()?;
    let introspection = match &o.introspection {
        None => None,
        Some(i) => {
            let endpoint = match &i.endpoint {
                Some(e) => url("introspection.endpoint", e)?,
                None => {
                    return Err(bad(
                        "introspection.endpoint",
                        "nothing".into(),
                        &format!("set when [server.oauth.introspection] is: {OAUTH_URL_RULE}"),
                    ));
                }
            };
            let client_id = match &i.client_id {
                Some(id) if !id.is_empty() && !id.contains(char::is_control) => id.clone(),
                other => {
                    return Err(bad(
                        "introspection.client_id",
                        other
                            .as_ref()
                            .map_or("nothing".into(), |id| format!("{id:?}")),
                        "this server's client identifier at the authorization server: a non-empty string without control characters",
                    ));
                }
            };
            let base = Path::new(file_label).parent().unwrap_or(Path::new("."));
            let allowed = "{ env = \"VAR\" } (an environment variable of the operator) or { file = \"path\" } (relative to this file)";
            let key = "introspection.client_secret";
            let client_secret = match i.client_secret.as_ref().map(|s| (&s.env, &s.file)) {
                Some((Some(var), None)) if !var.is_empty() && !var.contains(['=', '\0']) => {
                    SecretSource::Env(var.clone())
                }
                Some((None, Some(file))) if !file.trim().is_empty() => {
                    SecretSource::File(base.join(file))
                }
                Some((Some(var), None)) => return Err(bad(key, format!("env = {var:?}"), allowed)),
                Some((None, Some(file))) => {
                    return Err(bad(key, format!("file = {file:?}"), allowed));
                }
                Some((Some(_), Some(_))) => {
                    return Err(bad(key, "both env and file".into(), allowed));
                }
                Some((None, None)) => return Err(bad(key, "an empty table".into(), allowed)),
                None => return Err(bad(key, "nothing".into(), allowed)),
            };
            Some(IntrospectionConfig {
                endpoint,
                client_id,
                client_secret,
            })
        }
    };
    Ok(Some(OAuthConfig {
        issuer,
        audience: o.audience.clone(),
        scopes,
        leeway: Duration::from_secs(leeway),
        introspection,
        jwks_uri,
    }))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use sluice_protocol::access::Scope;

    use super::*;

    fn oauth(text: &str) -> Result<Option<OAuthConfig>, ConfigError> {
        let file: FileOAuth = toml::from_str(text).unwrap();
        resolve(Some(&file), "conf/sluice.toml")
    }

    fn error(text: &str) -> String {
        oauth(text).unwrap_err().to_string()
    }

    #[test]
    fn absent_is_none_and_defaults_are_as_documented() {
        assert_eq!(resolve(None, "sluice.toml").unwrap(), None);
        assert_eq!(
            oauth("issuer = \"https://as.example/realms/a\"").unwrap(),
            Some(OAuthConfig {
                issuer: "https://as.example/realms/a".into(),
                audience: None,
                scopes: None,
                leeway: Duration::from_secs(60),
                introspection: None,
                jwks_uri: None,
            })
        );
    }

    #[test]
    fn every_key_set() {
        let text = r#"
issuer = "http://127.0.0.1:9000/"
audience = "https://sluice.example/mcp"
leeway_secs = 0
jwks_uri = "http://localhost:9000/jwks"
[scopes]
"mcp:read" = ["sessions:read", "tools:call:read_file", "sessions:read"]
"mcp:admin" = ["admin"]
[introspection]
endpoint = "https://as.example/introspect"
client_id = "sluice"
client_secret = { file = "secrets/introspection" }
"#;
        assert_eq!(
            oauth(text).unwrap(),
            Some(OAuthConfig {
                issuer: "http://127.0.0.1:9000/".into(),
                audience: Some("https://sluice.example/mcp".into()),
                scopes: Some(BTreeMap::from([
                    ("mcp:admin".to_string(), vec![Grant::Scope(Scope::Admin)]),
                    (
                        "mcp:read".to_string(),
                        vec![
                            Grant::Scope(Scope::SessionsRead),
                            Grant::Tool("read_file".into())
                        ]
                    ),
                ])),
                leeway: Duration::ZERO,
                introspection: Some(IntrospectionConfig {
                    endpoint: "https://as.example/introspect".into(),
                    client_id: "sluice".into(),
                    client_secret: SecretSource::File(PathBuf::from("conf/secrets/introspection")),
                }),
                jwks_uri: Some("http://localhost:9000/jwks".into()),
            })
        );
    }

    #[test]
    fn urls_are_https_or_loopback_http() {
        for ok in [
            "https://as.example",
            "https://as.example/realms/x/",
            "http://localhost:8080",
            "http://127.0.0.5",
            "http://[::1]:1/",
        ] {
            assert!(valid_oauth_url(ok), "{ok}");
        }
        for bad in [
            "",
            "as.example",
            "http://as.example",
            "http://10.0.0.1",
            "ftp://as.example",
            "https://as.example/?realm=a",
            "https://as.example/#x",
            "mailto:a@as.example",
        ] {
            assert!(!valid_oauth_url(bad), "{bad}");
        }
        assert_eq!(
            error("issuer = \"http://as.example\""),
            format!(
                "server.oauth.issuer must be {OAUTH_URL_RULE}; got \"http://as.example\" (from conf/sluice.toml)"
            )
        );
        assert_eq!(
            error("audience = \"x\""),
            format!(
                "server.oauth.issuer must be set when [server.oauth] is: {OAUTH_URL_RULE}; got nothing (from conf/sluice.toml)"
            )
        );
        assert_eq!(
            error("issuer = \"https://a.example\"\njwks_uri = \"https://a.example/jwks?x=1\""),
            format!(
                "server.oauth.jwks_uri must be {OAUTH_URL_RULE}; got \"https://a.example/jwks?x=1\" (from conf/sluice.toml)"
            )
        );
    }

    #[test]
    fn a_scope_mapping_names_sluice_scopes_only() {
        assert_eq!(
            error("issuer = \"https://a.example\"\n[scopes]\n\"mcp\" = [\"root\"]"),
            format!(
                "server.oauth.scopes.\"mcp\" must be a list of Sluice scopes, each {}; got \"root\" (from conf/sluice.toml)",
                scope_rule()
            )
        );
        assert_eq!(
            error("issuer = \"https://a.example\"\n[scopes]\n\"a b\" = [\"admin\"]"),
            "server.oauth.scopes must be a table whose keys are OAuth scopes (RFC 6749: printable ASCII but space, `\"` and `\\`); got the key \"a b\" (from conf/sluice.toml)"
        );
    }

    #[test]
    fn leeway_is_bounded() {
        assert_eq!(
            error("issuer = \"https://a.example\"\nleeway_secs = 301"),
            "server.oauth.leeway_secs must be an integer from 0 to 300 (seconds); got 301 (from conf/sluice.toml)"
        );
        assert_eq!(
            error("issuer = \"https://a.example\"\nleeway_secs = \"5\""),
            "server.oauth.leeway_secs must be an integer from 0 to 300 (seconds); got \"5\" (from conf/sluice.toml)"
        );
    }

    #[test]
    fn introspection_needs_an_endpoint_a_client_and_one_secret_source() {
        let with = |table: &str| {
            error(&format!(
                "issuer = \"https://a.example\"\n[introspection]\n{table}"
            ))
        };
        assert_eq!(
            with("client_id = \"s\"\nclient_secret = { env = \"S\" }"),
            format!(
                "server.oauth.introspection.endpoint must be set when [server.oauth.introspection] is: {OAUTH_URL_RULE}; got nothing (from conf/sluice.toml)"
            )
        );
        assert_eq!(
            with(
                "endpoint = \"https://a.example/i\"\nclient_id = \"\"\nclient_secret = { env = \"S\" }"
            ),
            "server.oauth.introspection.client_id must be this server's client identifier at the authorization server: a non-empty string without control characters; got \"\" (from conf/sluice.toml)"
        );
        assert_eq!(
            with(
                "endpoint = \"https://a.example/i\"\nclient_id = \"s\"\nclient_secret = { env = \"S\", file = \"f\" }"
            ),
            "server.oauth.introspection.client_secret must be { env = \"VAR\" } (an environment variable of the operator) or { file = \"path\" } (relative to this file); got both env and file (from conf/sluice.toml)"
        );
        let ok = oauth("issuer = \"https://a.example\"\n[introspection]\nendpoint = \"https://a.example/i\"\nclient_id = \"s\"\nclient_secret = { env = \"SLUICE_INTROSPECTION_SECRET\" }")
            .unwrap()
            .unwrap();
        assert_eq!(
            ok.introspection.unwrap().client_secret,
            SecretSource::Env("SLUICE_INTROSPECTION_SECRET".into())
        );
    }
}
