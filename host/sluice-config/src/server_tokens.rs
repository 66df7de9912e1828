//! `[[server.tokens]]`: the bearer tokens of named principals, each with its scopes
//! (docs/api.md#principals-and-scopes). The file holds each token's SHA-256, never the token:
//! `sluice token create NAME --scopes …` prints a new token once, with the table to paste.

use serde::Deserialize;
use sluice_protocol::access::{Grant, scope_rule};

use crate::ConfigError;

/// What a token's name may be.
pub const TOKEN_NAME_RULE: &str =
    "1 to 64 characters of A-Z, a-z, 0-9, `_` and `-`, and not `admin` (the single token's)";

/// The principal name of the single token (`SLUICE_SERVER_TOKEN`, `--token-file`), which has
/// every scope.
pub const ADMIN_PRINCIPAL: &str = "admin";

/// True when `name` follows [`TOKEN_NAME_RULE`].
pub fn valid_token_name(name: &str) -> bool {
    name != ADMIN_PRINCIPAL
        && (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// One `[[server.tokens]]` entry, checked.
#[derive(Clone, PartialEq, Eq)]
pub struct ServerToken {
    /// `name`: the principal's name ([`TOKEN_NAME_RULE`]): the owner of the sessions it
    /// creates, and the actor the audit records.
    pub name: String,
    /// `scopes`: what it grants, in the order given, without repeats.
    pub grants: Vec<Grant>,
    /// `sha256`: the SHA-256 of the token's bytes (64 hex digits in the file).
    pub sha256: [u8; 32],
}

impl std::fmt::Debug for ServerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerToken")
            .field("name", &self.name)
            .field("grants", &self.grants)
            .finish_non_exhaustive()
    }
}

/// An entry of `[[server.tokens]]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileToken {
    name: String,
    scopes: Vec<String>,
    sha256: String,
}

/// Checks every entry: names ([`TOKEN_NAME_RULE`], each once), scopes (each a scope), hashes
/// (64 hex digits, each once).
pub(crate) fn resolve(
    tokens: &[FileToken],
    file_label: &str,
) -> Result<Vec<ServerToken>, ConfigError> {
    let bad = |key: &str, value: String, allowed: &str| ConfigError::Value {
        key: format!("server.tokens.{key}"),
        value,
        allowed: allowed.to_string(),
        origin: file_label.to_string(),
    };
    let mut out: Vec<ServerToken> = Vec::with_capacity(tokens.len());
    for token in tokens {
        if !valid_token_name(&token.name) {
            return Err(bad("name", format!("{:?}", token.name), TOKEN_NAME_RULE));
        }
        if out.iter().any(|t| t.name == token.name) {
            return Err(bad(
                "name",
                format!("{:?}", token.name),
                "a name no other token has",
            ));
        }
        if token.scopes.is_empty() {
            return Err(bad(
                "scopes",
                format!("[] (token {:?})", token.name),
                &format!("a list of at least one scope, each {}", scope_rule()),
            ));
        }
        let mut grants = Vec::with_capacity(token.scopes.len());
        for scope in &token.scopes {
            let grant = Grant::parse(scope).map_err(|_| {
                bad(
                    "scopes",
                    format!("{scope:?} (token {:?})", token.name),
                    &format!("each scope {}", scope_rule()),
                )
            })?;
            if !grants.contains(&grant) {
                grants.push(grant);
            }
        }
        let sha256 = parse_sha256(&token.sha256).ok_or_else(|| {
            bad(
                "sha256",
                format!("{:?} (token {:?})", token.sha256, token.name),
                "the token's SHA-256 as 64 hex digits (`sluice token create` prints it)",
            )
        })?;
        if let Some(other) = out.iter().find(|t| t.sha256 == sha256) {
            return Err(bad(
                "sha256",
                format!(
                    "the hash of token {:?} (token {:?})",
                    other.name, token.name
                ),
                "a hash no other token has: each token is a different secret",
            ));
        }
        out.push(ServerToken {
            name: token.name.clone(),
            grants,
            sha256,
        });
    }
    Ok(out)
}

/// The 32 bytes written as 64 hex digits (either case), if `text` is that.
fn parse_sha256(text: &str) -> Option<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks(2).enumerate() {
        let digit = |b: u8| (b as char).to_digit(16);
        out[i] = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_protocol::access::Scope;

    #[derive(Deserialize)]
    struct Doc {
        tokens: Vec<FileToken>,
    }

    fn resolve_text(text: &str) -> Result<Vec<ServerToken>, ConfigError> {
        let doc: Doc = toml::from_str(text).unwrap();
        resolve(&doc.tokens, "sluice.toml")
    }

    const HASH: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    #[test]
    fn entries_resolve_to_names_grants_and_hashes() {
        let tokens = resolve_text(&format!(
            "[[tokens]]\nname = \"ci-bot\"\nscopes = [\"sessions:read\", \"tools:call:read_file\", \"sessions:read\"]\nsha256 = \"{}\"\n",
            HASH.to_uppercase()
        ))
        .unwrap();
        assert_eq!(tokens.len(), 1);
        assert_eq!(tokens[0].name, "ci-bot");
        assert_eq!(
            tokens[0].grants,
            [
                Grant::Scope(Scope::SessionsRead),
                Grant::Tool("read_file".into())
            ]
        );
        assert_eq!(tokens[0].sha256[..4], [0x9f, 0x86, 0xd0, 0x81]);
        assert_eq!(
            format!("{:?}", tokens[0]),
            "ServerToken { name: \"ci-bot\", grants: [Scope(SessionsRead), Tool(\"read_file\")], .. }"
        );
    }

    #[test]
    fn bad_entries_name_the_key_the_value_and_what_is_allowed() {
        let one = |name: &str, scopes: &str, hash: &str| {
            resolve_text(&format!(
                "[[tokens]]\nname = \"{name}\"\nscopes = {scopes}\nsha256 = \"{hash}\"\n"
            ))
            .unwrap_err()
            .to_string()
        };
        assert_eq!(
            one("admin", "[\"admin\"]", HASH),
            format!(
                "server.tokens.name must be {TOKEN_NAME_RULE}; got \"admin\" (from sluice.toml)"
            )
        );
        assert_eq!(
            one("a", "[\"root\"]", HASH),
            format!(
                "server.tokens.scopes must be each scope {}; got \"root\" (token \"a\") (from sluice.toml)",
                scope_rule()
            )
        );
        assert!(
            one("a", "[]", HASH)
                .starts_with("server.tokens.scopes must be a list of at least one scope")
        );
        assert_eq!(
            one("a", "[\"admin\"]", "abc"),
            "server.tokens.sha256 must be the token's SHA-256 as 64 hex digits (`sluice token create` prints it); got \"abc\" (token \"a\") (from sluice.toml)"
        );
        let twice = resolve_text(&format!(
            "[[tokens]]\nname = \"a\"\nscopes = [\"admin\"]\nsha256 = \"{HASH}\"\n[[tokens]]\nname = \"b\"\nscopes = [\"admin\"]\nsha256 = \"{HASH}\"\n"
        ))
        .unwrap_err();
        assert_eq!(
            twice.to_string(),
            "server.tokens.sha256 must be a hash no other token has: each token is a different secret; got the hash of token \"a\" (token \"b\") (from sluice.toml)"
        );
    }
}
