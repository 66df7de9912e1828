//! `http_credentials` of a tool policy (docs/configuration.md#credentials-the-tool-never-holds):
//! a header the host adds to the tool's requests to one host of its `http` allowlist, with a
//! secret the tool never holds.
//!
//! ```toml
//! [tools.weather]
//! component = "weather.wasm"
//! http = ["api.example.com"]
//!
//! [tools.weather.http_credentials."api.example.com"]
//! header = "Authorization"
//! value = "Bearer {secret}"
//! secret = { env = "WEATHER_TOKEN" }
//! ```
//!
//! In a tools-directory policy the table is `[http_credentials."api.example.com"]`. Like
//! `secrets`, a credential's secret is only located here: it is read when the component
//! loads (`sluice_runtime::secrets`), so one that cannot be read makes its component
//! unavailable rather than stopping the start.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use sluice_grants::{HttpAllow, HttpCredential, HttpHost, SecretSource};

use crate::ConfigError;
use crate::http_entry::parse_entry;
use crate::secrets::{SecretFile, secret_source};

/// Where the secret goes in [`HttpCredential::value`]: exactly once.
pub const SECRET_PLACEHOLDER: &str = "{secret}";

/// The headers the host sets or owns on every request (lowercase), which no credential may
/// name: the message framing and connection headers, the proxy headers, and
/// `accept-encoding` (the host sets it to `identity` on a request carrying a credential, so
/// that the response can be scanned for it).
pub const HOST_OWNED_HEADERS: [&str; 13] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
    "http2-settings",
    "accept-encoding",
];

/// What `header` may be.
pub const HEADER_RULE: &str = "an HTTP header name (1 to 64 of the token characters A-Z a-z 0-9 ! # $ % & ' * + - . ^ _ ` | ~) that the host does not set itself (not Host, Content-Length, Transfer-Encoding, Connection, Keep-Alive, Proxy-Connection, Proxy-Authorization, Proxy-Authenticate, TE, Trailer, Upgrade, HTTP2-Settings or Accept-Encoding)";

/// What `value` may be.
pub const VALUE_RULE: &str = "the header's value with {secret} exactly once where the secret goes (\"Bearer {secret}\"), otherwise printable ASCII characters, spaces and tabs";

/// `[http_credentials."HOST"]` as written: `{ header, value, secret }`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CredentialFile {
    header: String,
    value: String,
    secret: SecretFile,
}

/// The checked `http_credentials` of a policy whose allowlist is `allow` and which gives
/// the tool `given` (the names of its `env` list and its `secrets`), secret files resolved
/// against `base`, in key order; `value_error(field, value, allowed)` makes the error
/// naming the key. A credential's secret may not be one the tool is given too.
pub(crate) fn credentials(
    raw: &BTreeMap<String, CredentialFile>,
    allow: &[HttpAllow],
    (env, secrets): (&[String], &BTreeMap<String, SecretSource>),
    base: &Path,
    value_error: &dyn Fn(&str, String, &str) -> ConfigError,
) -> Result<Vec<HttpCredential>, ConfigError> {
    let listed = if allow.is_empty() {
        "it lists none".to_string()
    } else {
        let list: Vec<String> = allow.iter().map(HttpAllow::as_written).collect();
        format!("it lists {}", list.join(", "))
    };
    let mut out: Vec<(&str, HttpCredential)> = Vec::new();
    for (key, c) in raw {
        let key_error = |why: &str| {
            value_error(
                "http_credentials",
                format!("the key {key:?}"),
                &format!(
                    "a table keyed by entries of this policy's http list that name one host ({listed}){why}"
                ),
            )
        };
        let entry = parse_entry(key).map_err(|why| key_error(&format!("; {why}")))?;
        if matches!(entry.host, HttpHost::Subdomains(_)) {
            return Err(key_error(
                "; a wildcard `*.DOMAIN` covers many hosts and a credential goes to one: list that host in http and key the credential by it",
            ));
        }
        if !allow.contains(&entry) {
            return Err(key_error(""));
        }
        if let Some((first, _)) = out.iter().find(|(_, o)| o.entry == entry) {
            return Err(value_error(
                "http_credentials",
                format!("{first:?} and {key:?}"),
                "a table with one key per entry of http (these two name the same one)",
            ));
        }
        let field = |name: &str| format!("http_credentials.{key:?}.{name}");
        let header = c.header.to_ascii_lowercase();
        if !valid_header_name(&header) || HOST_OWNED_HEADERS.contains(&header.as_str()) {
            return Err(value_error(
                &field("header"),
                format!("{:?}", c.header),
                HEADER_RULE,
            ));
        }
        if c.value.matches(SECRET_PLACEHOLDER).count() != 1
            || !c
                .value
                .bytes()
                .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
        {
            return Err(value_error(
                &field("value"),
                format!("{:?}", c.value),
                VALUE_RULE,
            ));
        }
        let secret = secret_source(&c.secret, &field("secret"), base, value_error)?;
        let also = match &secret {
            SecretSource::Env(var) if env.contains(var) => Some(format!("env lists {var}")),
            _ => secrets
                .iter()
                .find(|(_, s)| **s == secret)
                .map(|(k, _)| format!("secrets.{k} reads it too")),
        };
        if let Some(also) = also {
            return Err(value_error(
                &field("secret"),
                format!("{} ({also})", shown(&secret)),
                "a source the tool is not also given (in env or secrets), or the tool would hold the secret: remove it there",
            ));
        }
        out.push((
            key,
            HttpCredential {
                entry,
                header,
                value: c.value.clone(),
                secret,
            },
        ));
    }
    Ok(out.into_iter().map(|(_, c)| c).collect())
}

/// `s` as a policy writes it: `env = "VAR"` or `file = "path"` (the path resolved).
fn shown(s: &SecretSource) -> String {
    match s {
        SecretSource::Env(var) => format!("env = {var:?}"),
        SecretSource::File(path) => format!("file = {:?}", path.display().to_string()),
    }
}

/// True when `name` is an HTTP field name (RFC 9110's `token`) of 1 to 64 bytes.
fn valid_header_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(toml_text: &str, http: &[&str]) -> Result<Vec<HttpCredential>, String> {
        let raw: BTreeMap<String, CredentialFile> = toml::from_str(toml_text).unwrap();
        let allow: Vec<HttpAllow> = http.iter().map(|e| parse_entry(e).unwrap()).collect();
        let value_error = |field: &str, value: String, allowed: &str| ConfigError::Value {
            key: format!("tools.t.{field}"),
            value,
            allowed: allowed.to_string(),
            origin: "test".into(),
        };
        let given = (&["SHARED".to_string()][..], &BTreeMap::new());
        credentials(&raw, &allow, given, Path::new("/etc/sluice"), &value_error)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_credential_keyed_by_an_entry_is_read_with_its_header_lowercase() {
        let got = check(
            "[\"API.example.com\"]\nheader = \"X-Api-Key\"\nvalue = \"{secret}\"\nsecret = { file = \"key.txt\" }\n",
            &["api.example.com", "127.0.0.1:8080"],
        )
        .unwrap();
        assert_eq!(
            got,
            [HttpCredential {
                entry: parse_entry("api.example.com").unwrap(),
                header: "x-api-key".into(),
                value: "{secret}".into(),
                secret: SecretSource::File("/etc/sluice/key.txt".into()),
            }]
        );
    }

    #[test]
    fn a_key_naming_the_same_entry_twice_is_refused() {
        let one =
            "header = \"Authorization\"\nvalue = \"Bearer {secret}\"\nsecret = { env = \"T\" }\n";
        let got = check(
            &format!("[\"api.example.com\"]\n{one}[\"API.example.com.\"]\n{one}"),
            &["api.example.com"],
        );
        assert_eq!(
            got.unwrap_err(),
            "tools.t.http_credentials must be a table with one key per entry of http (these two name the same one); got \"API.example.com.\" and \"api.example.com\" (from test)"
        );
    }

    #[test]
    fn a_secret_the_tool_is_given_in_env_is_refused() {
        let got = check(
            "[\"api.example.com\"]\nheader = \"Authorization\"\nvalue = \"Bearer {secret}\"\nsecret = { env = \"SHARED\" }\n",
            &["api.example.com"],
        );
        assert_eq!(
            got.unwrap_err(),
            "tools.t.http_credentials.\"api.example.com\".secret must be a source the tool is not also given (in env or secrets), or the tool would hold the secret: remove it there; got env = \"SHARED\" (env lists SHARED) (from test)"
        );
    }

    #[test]
    fn header_names_are_tokens_the_host_does_not_own() {
        assert!(valid_header_name("x-api-key"));
        assert!(valid_header_name("authorization"));
        assert!(!valid_header_name("x api key"));
        assert!(!valid_header_name("x-key:"));
        assert!(!valid_header_name(""));
        assert!(!valid_header_name(&"a".repeat(65)));
        for owned in HOST_OWNED_HEADERS {
            let got = check(
                &format!(
                    "[\"api.example.com\"]\nheader = {owned:?}\nvalue = \"{{secret}}\"\nsecret = {{ env = \"T\" }}\n"
                ),
                &["api.example.com"],
            );
            assert!(got.is_err(), "{owned}");
        }
    }
}
