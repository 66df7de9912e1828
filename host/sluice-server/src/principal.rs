//! Who made a request, and what each route needs (docs/api.md#principals-and-scopes).
//!
//! The [`Guard`](crate::guard::Guard) turns a request's bearer token into a [`Principal`]
//! (the single token of `SLUICE_SERVER_TOKEN` is [`ADMIN_PRINCIPAL`] with every scope; a
//! `[[server.tokens]]` entry is its name with its scopes; a server without tokens serves
//! everyone as `admin`), checks the scope the route needs ([`required_scope`], from
//! [`crate::ROUTES`]) and puts the principal in the request's extensions for the handlers.

use std::collections::BTreeSet;

use axum::http::{HeaderValue, Method, StatusCode, header};
pub use sluice_config::ADMIN_PRINCIPAL;
use sluice_protocol::access::{Grant, Scope};

use crate::error::ApiError;

/// Who made a request: a name and what it may do. Cheap to clone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    name: String,
    scopes: BTreeSet<Scope>,
    tools: BTreeSet<String>,
}

impl Principal {
    /// [`ADMIN_PRINCIPAL`] with every scope: the single token's holder, and everyone on a
    /// server without tokens.
    pub fn admin() -> Principal {
        Principal::new(ADMIN_PRINCIPAL, &[Grant::Scope(Scope::Admin)])
    }

    /// `name` with `grants`.
    pub fn new(name: &str, grants: &[Grant]) -> Principal {
        let mut scopes = BTreeSet::new();
        let mut tools = BTreeSet::new();
        for grant in grants {
            match grant {
                Grant::Scope(s) => {
                    scopes.insert(*s);
                }
                Grant::Tool(t) => {
                    tools.insert(t.clone());
                }
            }
        }
        Principal {
            name: name.to_string(),
            scopes,
            tools,
        }
    }

    /// Its name: the owner of the sessions it creates and the actor the audit records.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it has `admin`: every scope, and every principal's sessions.
    pub fn is_admin(&self) -> bool {
        self.scopes.contains(&Scope::Admin)
    }

    /// Whether it may do what `scope` allows. `tools:call` is also satisfied by a grant of
    /// one tool (`tools:call:<tool>`): such a principal reaches `/mcp` and sees that tool.
    pub fn allows(&self, scope: Scope) -> bool {
        self.is_admin()
            || self.scopes.contains(&scope)
            || (scope == Scope::ToolsCall && !self.tools.is_empty())
    }

    /// Whether it may call tool `name` over MCP.
    pub fn may_call(&self, tool: &str) -> bool {
        self.is_admin() || self.scopes.contains(&Scope::ToolsCall) || self.tools.contains(tool)
    }

    /// The tools it may use over MCP when it may not use them all (`None`: every tool).
    pub fn tool_grant(&self) -> Option<sluice_mcp::ToolGrant> {
        (!self.is_admin() && !self.scopes.contains(&Scope::ToolsCall))
            .then(|| sluice_mcp::ToolGrant::only(&self.name, self.tools.iter().cloned()))
    }

    /// Whether it may read and act on a session that `owner` created.
    pub fn owns(&self, owner: &str) -> bool {
        self.is_admin() || self.name == owner
    }

    /// What it holds, as scope strings, for messages: `["sessions:read", "tools:call:x"]`.
    pub fn grants(&self) -> Vec<String> {
        self.scopes
            .iter()
            .map(|s| s.as_str().to_string())
            .chain(
                self.tools
                    .iter()
                    .map(|t| Grant::Tool(t.clone()).to_string()),
            )
            .collect()
    }
}

/// The scope a request for `method` `path` (a route's pattern, `/sessions/{id}`) needs:
/// the route's in [`crate::ROUTES`], `tools:call` for `/mcp` (any method), `metrics` for
/// `/metrics`; `None` for the rest (the console's assets, unknown paths).
pub fn required_scope(method: &Method, path: &str) -> Option<Scope> {
    if let Some(route) = crate::ROUTES
        .iter()
        .find(|r| r.path == path && r.method == method.as_str())
    {
        return route.scope;
    }
    match path {
        "/mcp" => Some(Scope::ToolsCall),
        "/metrics" => Some(Scope::Metrics),
        _ => None,
    }
}

/// 403: `principal` lacks `scope` for `method` `path`, with
/// `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"` (RFC 6750 section 3.1).
pub(crate) fn insufficient_scope(
    principal: &Principal,
    scope: Scope,
    method: &Method,
    path: &str,
) -> ApiError {
    let held = principal.grants();
    let held_text = if held.is_empty() {
        "none".to_string()
    } else {
        held.join(", ")
    };
    ApiError::new(
        StatusCode::FORBIDDEN,
        format!(
            "{method} {path} needs scope {scope}; {:?} has {held_text}. Give the token the scope in its [[server.tokens]] entry (or the access token, from the authorization server)",
            principal.name()
        ),
    )
    .with("scope", scope.as_str())
    .with("principal", principal.name())
    .with_header(
        header::WWW_AUTHENTICATE,
        // A scope's name is visible ASCII, so this is always a header value.
        HeaderValue::from_str(&format!(
            "Bearer error=\"insufficient_scope\", scope=\"{scope}\""
        ))
        .unwrap_or(HeaderValue::from_static("Bearer error=\"insufficient_scope\"")),
    )
}

/// The prefix of a token `sluice token create` makes, so that secret scanners can find one.
pub const TOKEN_PREFIX: &str = "sluice_";

/// A new token for a `[[server.tokens]]` entry ([`mint_token`]).
pub struct MintedToken {
    /// The token: [`TOKEN_PREFIX`] and 43 base64url characters (32 random bytes). Shown once;
    /// the server keeps only its hash.
    pub token: String,
    /// The entry to add to sluice.toml: `[[server.tokens]]` with `name`, `scopes` and
    /// `sha256`, as TOML text ending in a newline.
    pub entry: String,
}

impl std::fmt::Debug for MintedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MintedToken")
            .field("entry", &self.entry)
            .finish_non_exhaustive()
    }
}

/// Why a token cannot be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MintError {
    /// The name breaks [`sluice_config::TOKEN_NAME_RULE`].
    #[error("token name {0:?} is not allowed: a name is {rule}", rule = sluice_config::TOKEN_NAME_RULE)]
    Name(String),
    /// No scope was given.
    #[error(
        "a token needs at least one scope (--scopes a,b): a scope is {}",
        sluice_protocol::access::scope_rule()
    )]
    NoScopes,
    /// A scope that is none of the scopes.
    #[error(transparent)]
    Scope(#[from] sluice_protocol::access::UnknownScope),
    /// The operating system gave no random bytes.
    #[error("failed to read random bytes for the token: {0}")]
    Random(String),
}

/// A new token for principal `name` with `scopes` (each a scope string): 32 random bytes from
/// the operating system, and the `[[server.tokens]]` entry holding their hash.
///
/// # Errors
/// [`MintError`] for a bad name, no or unknown scopes, or no randomness.
pub fn mint_token(name: &str, scopes: &[String]) -> Result<MintedToken, MintError> {
    use base64::Engine as _;
    use sha2::Digest as _;
    if !sluice_config::valid_token_name(name) {
        return Err(MintError::Name(name.to_string()));
    }
    if scopes.is_empty() {
        return Err(MintError::NoScopes);
    }
    let mut grants: Vec<String> = Vec::new();
    for scope in scopes {
        let grant = Grant::parse(scope)?.to_string();
        if !grants.contains(&grant) {
            grants.push(grant);
        }
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| MintError::Random(e.to_string()))?;
    let token = format!(
        "{TOKEN_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    );
    let hash = sha2::Sha256::digest(token.as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    let quoted: Vec<String> = grants.iter().map(|g| format!("{g:?}")).collect();
    let entry = format!(
        "[[server.tokens]]\nname = {name:?}\nscopes = [{}]\nsha256 = \"{hex}\"\n",
        quoted.join(", ")
    );
    Ok(MintedToken { token, entry })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_allows_everything_and_owns_every_session() {
        let admin = Principal::admin();
        assert_eq!(admin.name(), "admin");
        for scope in Scope::ALL {
            assert!(admin.allows(scope), "{scope}");
        }
        assert!(admin.may_call("anything"));
        assert!(admin.owns("someone-else"));
        assert_eq!(admin.grants(), ["admin"]);
    }

    #[test]
    fn a_named_principal_has_what_it_was_granted() {
        let p = Principal::new(
            "ci-bot",
            &[
                Grant::Scope(Scope::SessionsRead),
                Grant::Tool("read_file".into()),
            ],
        );
        assert!(p.allows(Scope::SessionsRead));
        assert!(!p.allows(Scope::SessionsWrite));
        assert!(!p.allows(Scope::Config));
        assert!(p.allows(Scope::ToolsCall), "one tool reaches /mcp");
        assert!(p.may_call("read_file"));
        assert!(!p.may_call("grep_files"));
        assert!(p.owns("ci-bot"));
        assert!(!p.owns("other"));
        assert_eq!(p.grants(), ["sessions:read", "tools:call:read_file"]);
    }

    #[test]
    fn every_route_names_its_scope() {
        let get = Method::GET;
        let post = Method::POST;
        assert_eq!(required_scope(&get, "/healthz"), None);
        assert_eq!(required_scope(&get, "/sessions"), Some(Scope::SessionsRead));
        assert_eq!(
            required_scope(&post, "/sessions"),
            Some(Scope::SessionsWrite)
        );
        assert_eq!(
            required_scope(&post, "/sessions/{id}/approvals/{call_id}"),
            Some(Scope::Approvals)
        );
        assert_eq!(
            required_scope(&Method::PUT, "/agent/config"),
            Some(Scope::Config)
        );
        assert_eq!(
            required_scope(&Method::DELETE, "/mcp"),
            Some(Scope::ToolsCall)
        );
        assert_eq!(required_scope(&get, "/metrics"), Some(Scope::Metrics));
        assert_eq!(required_scope(&get, "/console/x/app.js"), None);
    }

    #[test]
    fn a_minted_token_hashes_to_its_entry_and_the_entry_parses() {
        use sha2::Digest as _;
        let minted = mint_token(
            "ci-bot",
            &[
                "sessions:read".into(),
                "tools:call:read_file".into(),
                "sessions:read".into(),
            ],
        )
        .unwrap();
        assert!(minted.token.starts_with("sluice_"));
        assert_eq!(minted.token.len(), "sluice_".len() + 43);
        let hex: String = sha2::Sha256::digest(minted.token.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            minted.entry,
            format!(
                "[[server.tokens]]\nname = \"ci-bot\"\nscopes = [\"sessions:read\", \"tools:call:read_file\"]\nsha256 = \"{hex}\"\n"
            )
        );
        assert!(!format!("{minted:?}").contains(&minted.token));
        let again = mint_token("ci-bot", &["admin".into()]).unwrap();
        assert_ne!(again.token, minted.token);
        assert_eq!(
            mint_token("admin", &["admin".into()])
                .unwrap_err()
                .to_string(),
            format!(
                "token name \"admin\" is not allowed: a name is {}",
                sluice_config::TOKEN_NAME_RULE
            )
        );
        assert!(matches!(mint_token("a", &[]), Err(MintError::NoScopes)));
        assert!(matches!(
            mint_token("a", &["root".into()]),
            Err(MintError::Scope(_))
        ));
    }
}
