//! Sluice as a service: the operator API over HTTP, on axum, with the same store and agent
//! loop as the CLI. Its configuration rules are docs/configuration.md#run-time-keys.
//!
//! - [`Server`]: checks its [`ServeOptions`] ([`Server::new`]: a non-loopback address needs a
//!   bearer token), binds ([`Server::bind`]) and serves until told to stop
//!   ([`Bound::serve`]), then cancels the runs in progress and waits for them to end.
//! - [`guard`]: what every request passes first: its `Host` (403 unless the listening
//!   address, a loopback name on a loopback listener, or an allowed name), the bearer token
//!   (401), its `Origin` (403 for a cross-origin request to a server without a token), its
//!   declared length (413) and `Content-Type: application/json` on bodies (415). Any other
//!   router served beside the API goes behind the same [`guard::Guard`]
//!   ([`Server::guard`]).
//! - [`Services`]: the store, the model, the tools and the starting run-time settings;
//!   `sluice_wiring::services` builds them from a resolved `sluice_config::Config`, as the
//!   CLI does.
//! - [`ROUTES`]: every route; `/openapi.json` describes them all.
//!
//! Design: the handlers share the store, the model, the tools, the run-time settings (behind
//! a lock; `PUT /agent/config` checks every key with `sluice_config::runtime_value`, then
//! applies all at once, to runs that start afterwards) and the latest run of every session.
//! A run is a task of its own: posting a prompt starts it and answers at once (202 with the
//! run id) or, with `?wait=true`, when it ends. Each run logs its events (the loop's
//! [`sluice_agent::RunEvent`]s in camelCase, framed by `started` and `finished`) so an event
//! stream replays a run from its start however late it subscribes. One run per session: a
//! second prompt while one runs answers 409.
//!
//! ```no_run
//! use std::sync::Arc;
//! use sluice_server::{ServeOptions, Server, Services};
//!
//! # async fn serve(services: Services) -> Result<(), sluice_server::ServerError> {
//! let options = ServeOptions {
//!     listen: "127.0.0.1:8080".parse().expect("an address"),
//!     ..ServeOptions::default()
//! };
//! let bound = Server::new(services, options)?.bind().await?;
//! eprintln!("listening on http://{}", bound.local_addr());
//! bound.serve(async { let _ = tokio::signal::ctrl_c().await; }).await
//! # }
//! ```

mod api;
mod console;
mod error;
mod events;
pub mod guard;
mod health;
pub mod listen;
mod listing;
pub mod mcp;
pub mod metrics;
pub mod oauth;
mod openapi;
pub mod principal;
pub mod reload;
mod request;
mod runs;
mod spans;
mod state;
mod tenancy;
pub mod tls;
mod wait;

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use sluice_protocol::access::Scope;

use crate::guard::{Guard, GuardOptions};
use crate::state::AppState;

/// Where `sluice serve` listens by default.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// The largest request body by default, in bytes (1 MiB); larger bodies answer 413.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;

/// The environment variable holding the bearer token.
pub const ENV_TOKEN: &str = "SLUICE_SERVER_TOKEN";

/// One route: its method, its path (axum's pattern) and the scope a principal needs for it
/// (`None`: any principal the guard lets in; docs/api.md#principals-and-scopes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// `GET`, `POST` or `PUT`.
    pub method: &'static str,
    /// The path, with `{id}`-style parameters.
    pub path: &'static str,
    /// The scope it needs.
    pub scope: Option<Scope>,
}

const fn route(method: &'static str, path: &'static str, scope: Option<Scope>) -> Route {
    Route {
        method,
        path,
        scope,
    }
}

/// Every route of the operator API: what `/openapi.json` documents and what the guard checks
/// scopes against ([`principal::required_scope`]).
pub const ROUTES: &[Route] = &[
    route("GET", "/healthz", None),
    route("GET", "/openapi.json", None),
    route("POST", "/sessions", Some(Scope::SessionsWrite)),
    route("GET", "/sessions", Some(Scope::SessionsRead)),
    route("GET", "/sessions/{id}", Some(Scope::SessionsRead)),
    route("POST", "/sessions/{id}/prompts", Some(Scope::SessionsWrite)),
    route("POST", "/sessions/{id}/resume", Some(Scope::SessionsWrite)),
    route("GET", "/sessions/{id}/events", Some(Scope::SessionsRead)),
    route("POST", "/sessions/{id}/cancel", Some(Scope::SessionsWrite)),
    route("GET", "/sessions/{id}/approvals", Some(Scope::SessionsRead)),
    route(
        "POST",
        "/sessions/{id}/approvals/{call_id}",
        Some(Scope::Approvals),
    ),
    route("GET", "/sessions/{id}/audit", Some(Scope::SessionsRead)),
    route("GET", "/tools", None),
    route("GET", "/agent/config", Some(Scope::Config)),
    route("PUT", "/agent/config", Some(Scope::Config)),
    route("GET", "/agent/config/changes", Some(Scope::Config)),
    route("GET", "/models", None),
];

/// The routes [`Server::with_mcp`] adds (documented by `/openapi.json`; `/mcp` takes `GET` and
/// `DELETE` too, with the same scope).
pub const MCP_ROUTES: &[Route] = &[route("POST", "/mcp", Some(Scope::ToolsCall))];

/// The OpenAPI 3.1 document served at `/openapi.json`: [`ROUTES`], and with `mcp` also
/// [`MCP_ROUTES`].
pub fn openapi_document(mcp: bool) -> serde_json::Value {
    openapi::document(mcp)
}

pub use sluice_wiring::Services;

/// How the server listens.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The address (default [`DEFAULT_LISTEN`]). Port 0 picks a free port.
    pub listen: SocketAddr,
    /// The single bearer token (principal `admin`; `SLUICE_SERVER_TOKEN`, `--token-file`).
    /// Beyond a loopback address this or `tokens` is required; on loopback either is optional
    /// (but enforced when set).
    pub token: Option<String>,
    /// `[[server.tokens]]`: named principals with scopes (docs/api.md#principals-and-scopes).
    /// Default none.
    pub tokens: Vec<sluice_config::ServerToken>,
    /// `[server.oauth]`: accept OAuth access tokens checked by this verifier
    /// (docs/api.md#oauth); its metadata document is served at
    /// `/.well-known/oauth-protected-resource`. Default `None`.
    pub oauth: Option<std::sync::Arc<oauth::OAuthVerifier>>,
    /// The largest request body, in bytes (default [`DEFAULT_MAX_BODY_BYTES`]).
    pub max_body_bytes: usize,
    /// Host names (or IP literals) the server answers to besides its listening address and,
    /// on loopback, `localhost` (see [`guard`]); `server.allowed_hosts`, `--allowed-host`.
    /// Default none.
    pub allowed_hosts: Vec<String>,
    /// The limits on connections and event streams (`[server]` of sluice.toml; see
    /// [`listen`]). Default [`ServerLimits::default`].
    pub limits: ServerLimits,
    /// Serves `GET /metrics` behind the guard, with this text (`telemetry.metrics`; see
    /// [`metrics`]). Default `None`: no such route.
    pub metrics: Option<metrics::Render>,
    /// Serve HTTPS with this certificate and key (`[server.tls]`, `--tls-cert`,
    /// `--tls-key`; see [`tls`]), reloaded when their files change. Default `None`: plain
    /// HTTP.
    pub tls: Option<tls::ServerTls>,
}

pub use sluice_config::ServerLimits;

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            token: None,
            tokens: Vec::new(),
            oauth: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            allowed_hosts: Vec::new(),
            limits: ServerLimits::default(),
            metrics: None,
            tls: None,
        }
    }
}

impl ServeOptions {
    /// The guard these options describe.
    pub fn guard(&self) -> Guard {
        Guard::new(GuardOptions {
            listen: self.listen,
            allowed_hosts: self.allowed_hosts.clone(),
            token: self.token.clone(),
            tokens: self.tokens.clone(),
            oauth: self.oauth.clone(),
            max_body_bytes: self.max_body_bytes,
        })
    }
}

/// Why the server cannot start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// A non-loopback address without a token.
    #[error(
        "refusing to listen on {listen} without a bearer token: it is not a loopback address, so every request must be authenticated; set {ENV_TOKEN} or --token-file FILE, or add [[server.tokens]] or [server.oauth] to sluice.toml (or listen on 127.0.0.1)"
    )]
    TokenRequired {
        /// The address.
        listen: SocketAddr,
    },
    /// The token is empty or has characters a header cannot carry.
    #[error(
        "the bearer token {origin} must be 1 to 4096 visible ASCII characters (no spaces or control characters)"
    )]
    BadToken {
        /// Where it came from (the variable or the file).
        origin: String,
    },
    /// The token file cannot be read.
    #[error("failed to read the token file {path}: {reason}")]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// Why, in the operating system's words.
        reason: String,
    },
    /// The body limit is zero.
    #[error("max_body_bytes must be at least 1; got 0")]
    BodyLimit,
    /// An allowed host that is not a host name or IP literal.
    #[error("allowed host {host:?} is not allowed: {rule}")]
    AllowedHost {
        /// The host as given.
        host: String,
        /// What an allowed host may be.
        rule: &'static str,
    },
    /// The address cannot be bound.
    #[error("failed to listen on {listen}: {reason}")]
    Bind {
        /// The address.
        listen: SocketAddr,
        /// Why, in the operating system's words.
        reason: String,
    },
    /// Serving failed.
    #[error("the server failed: {0}")]
    Serve(String),
    /// `[server.oauth]` cannot be set up (its client secret, its HTTP client).
    #[error(transparent)]
    OAuth(#[from] oauth::SetupError),
}

/// The bearer token: the first line of `file` when given (trimmed), else the variable
/// [`ENV_TOKEN`] read through `env` (empty counts as unset); `None` when neither is set.
///
/// # Errors
/// [`ServerError::TokenFile`] when the file cannot be read (it must be a regular file of at
/// most 64 KiB, opened without blocking); [`ServerError::BadToken`] when
/// the token is empty (a file) or not 1 to 4096 visible ASCII characters.
pub fn token_from(
    file: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, ServerError> {
    let (token, origin) = match file {
        Some(path) => {
            use sluice_operator_files::{MAX_SECRET_FILE_BYTES, read_text};
            let text =
                read_text(path, MAX_SECRET_FILE_BYTES).map_err(|e| ServerError::TokenFile {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                })?;
            (
                text.lines().next().unwrap_or("").trim().to_string(),
                format!("in {}", path.display()),
            )
        }
        None => match env(ENV_TOKEN).filter(|t| !t.is_empty()) {
            Some(t) => (t, format!("in {ENV_TOKEN}")),
            None => return Ok(None),
        },
    };
    let valid = (1..=4096).contains(&token.len()) && token.bytes().all(|b| b.is_ascii_graphic());
    if !valid {
        return Err(ServerError::BadToken { origin });
    }
    Ok(Some(token))
}

/// The verifier of `[server.oauth]` for a server listening on `listen` (`tls`: over HTTPS):
/// the resource it guards is `config.audience`, else the server's own URL,
/// `http(s)://{listen}` (docs/api.md#oauth).
///
/// # Errors
/// [`ServerError::OAuth`] when the introspection client secret cannot be read or the HTTP
/// client not built.
pub fn oauth_verifier(
    config: &sluice_config::OAuthConfig,
    listen: SocketAddr,
    tls: bool,
) -> Result<std::sync::Arc<oauth::OAuthVerifier>, ServerError> {
    let scheme = if tls { "https" } else { "http" };
    let own = format!("{scheme}://{listen}");
    Ok(std::sync::Arc::new(oauth::OAuthVerifier::new(
        config, &own,
    )?))
}

/// A server, checked and ready to bind.
pub struct Server {
    state: AppState,
    options: ServeOptions,
    guard: Guard,
    mcp: Option<sluice_mcp::McpServer>,
    tools: sluice_wiring::report::ToolCatalog,
}

impl Server {
    /// A server over `services` with `options`.
    ///
    /// # Errors
    /// [`ServerError::TokenRequired`] when `options.listen` is not a loopback address and
    /// there is no token; [`ServerError::BadToken`] for an empty token;
    /// [`ServerError::BodyLimit`] for a zero body limit; [`ServerError::AllowedHost`] for an
    /// allowed host that is not a host name.
    pub fn new(services: Services, options: ServeOptions) -> Result<Server, ServerError> {
        check_options(&options)?;
        let state = AppState::new(services, options.max_body_bytes, &options.limits);
        let guard = options.guard();
        Ok(Server {
            state,
            options,
            guard,
            mcp: None,
            tools: sluice_wiring::report::ToolCatalog::default(),
        })
    }

    /// Also serves `mcp` at `POST /mcp` (MCP over Streamable HTTP), behind the same guard
    /// as the API (see [`mcp`]).
    pub fn with_mcp(mut self, mcp: sluice_mcp::McpServer) -> Server {
        self.mcp = Some(mcp);
        self
    }

    /// Answers `GET /tools` from `catalog`: the tools' reports
    /// ([`Loaded::report`](sluice_wiring::Loaded::report)), set anew by each live reload
    /// that swaps the tools ([`reload::Served::catalog`]). Without it the list is empty.
    pub fn with_tool_catalog(mut self, catalog: sluice_wiring::report::ToolCatalog) -> Server {
        self.tools = catalog;
        self
    }

    /// The routes behind the guard, for serving some other way (or testing without a
    /// socket).
    pub fn router(&self) -> axum::Router {
        let api = api::router(self.state.clone(), self.mcp.is_some(), self.tools.clone());
        let api = match &self.mcp {
            Some(server) => api.merge(sluice_mcp::http::router(
                server.clone(),
                &mcp::http_options(&self.options, self.state.shutdown_token().clone()),
            )),
            None => api,
        };
        let api = match self.options.metrics {
            Some(render) => api.merge(metrics::router(render)),
            None => api,
        };
        let api = match &self.options.oauth {
            Some(verifier) => api.merge(oauth::router(verifier.clone())),
            None => api,
        };
        self.guard.wrap(api.merge(console::router()))
    }

    /// The guard the API is behind: wrap any router served beside it in the same one
    /// ([`Guard::wrap`]).
    pub fn guard(&self) -> Guard {
        self.guard.clone()
    }

    /// Binds `options.listen`.
    ///
    /// # Errors
    /// [`ServerError::Bind`] when the address cannot be bound.
    pub async fn bind(self) -> Result<Bound, ServerError> {
        let listen = self.options.listen;
        let listener =
            tokio::net::TcpListener::bind(listen)
                .await
                .map_err(|e| ServerError::Bind {
                    listen,
                    reason: e.to_string(),
                })?;
        let local_addr = listener.local_addr().map_err(|e| ServerError::Bind {
            listen,
            reason: e.to_string(),
        })?;
        Ok(Bound {
            server: self,
            listener,
            local_addr,
        })
    }
}

impl ServeOptions {
    /// Checks the options as [`Server::new`] does, so a caller can refuse bad ones before
    /// loading anything.
    ///
    /// # Errors
    /// [`ServerError::TokenRequired`] when `listen` is not a loopback address and there is
    /// no token; [`ServerError::BadToken`] for an empty token; [`ServerError::BodyLimit`] for
    /// a zero body limit; [`ServerError::AllowedHost`] for an allowed host that is not a
    /// host name.
    pub fn check(&self) -> Result<(), ServerError> {
        check_options(self)
    }
}

/// The checks [`Server::new`] makes.
fn check_options(options: &ServeOptions) -> Result<(), ServerError> {
    if options.max_body_bytes == 0 {
        return Err(ServerError::BodyLimit);
    }
    if let Some(host) = options
        .allowed_hosts
        .iter()
        .find(|h| !sluice_config::valid_allowed_host(h))
    {
        return Err(ServerError::AllowedHost {
            host: host.clone(),
            rule: sluice_config::ALLOWED_HOST_RULE,
        });
    }
    match &options.token {
        Some(t) if t.is_empty() => Err(ServerError::BadToken {
            origin: "given".into(),
        }),
        None if options.tokens.is_empty()
            && options.oauth.is_none()
            && !options.listen.ip().is_loopback() =>
        {
            Err(ServerError::TokenRequired {
                listen: options.listen,
            })
        }
        _ => Ok(()),
    }
}

/// A bound server.
pub struct Bound {
    server: Server,
    listener: tokio::net::TcpListener,
    local_addr: SocketAddr,
}

impl Bound {
    /// The address it listens on (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves until `shutdown` completes; then refuses new runs, cancels the runs in
    /// progress (they end `aborted`), waits for them and for open requests to end.
    /// Connections are held to `options.limits` ([`listen`]).
    ///
    /// # Errors
    /// None today: accept errors are retried ([`listen`]); the `Result` is kept for
    /// failures to come.
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let state = self.server.state.clone();
        let router = self.server.router();
        let stopping = state.clone();
        let tls = self.server.options.tls.as_ref();
        if let Some(warning) = tls::clear_text_warning(self.local_addr, tls) {
            tracing::warn!("{warning}");
        }
        listen::serve(
            self.listener,
            router,
            &self.server.options.limits,
            tls,
            async move {
                shutdown.await;
                stopping.shut_down().await;
            },
        )
        .await;
        // Runs started while the last requests drained.
        state.shut_down().await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(listen: &str, token: Option<&str>) -> ServeOptions {
        ServeOptions {
            listen: listen.parse().unwrap(),
            token: token.map(str::to_string),
            tokens: Vec::new(),
            oauth: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            allowed_hosts: Vec::new(),
            limits: ServerLimits::default(),
            metrics: None,
            tls: None,
        }
    }

    #[test]
    fn beyond_loopback_a_token_is_required() {
        let e = check_options(&options("0.0.0.0:8080", None)).unwrap_err();
        assert!(matches!(e, ServerError::TokenRequired { .. }));
        assert!(
            e.to_string()
                .starts_with("refusing to listen on 0.0.0.0:8080 without a bearer token")
        );
        assert!(check_options(&options("[::]:8080", None)).is_err());
        assert!(check_options(&options("192.168.1.5:80", None)).is_err());
        assert!(check_options(&options("0.0.0.0:8080", Some("t0ken"))).is_ok());
        assert!(check_options(&options("127.0.0.1:0", None)).is_ok());
        assert!(check_options(&options("[::1]:0", None)).is_ok());
        assert!(check_options(&options("127.0.0.1:0", Some(""))).is_err());
    }

    #[test]
    fn the_token_comes_from_a_file_or_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "s3cret\n").unwrap();
        let env = |k: &str| (k == ENV_TOKEN).then(|| "from-env".to_string());
        assert_eq!(
            token_from(Some(&file), &env).unwrap().as_deref(),
            Some("s3cret")
        );
        assert_eq!(token_from(None, &env).unwrap().as_deref(), Some("from-env"));
        assert_eq!(token_from(None, &|_| None).unwrap(), None);
        assert_eq!(token_from(None, &|_| Some(String::new())).unwrap(), None);
        std::fs::write(&file, "\n").unwrap();
        assert!(matches!(
            token_from(Some(&file), &env),
            Err(ServerError::BadToken { .. })
        ));
        // A directory (like a FIFO or a device) is refused without being read.
        assert_eq!(
            token_from(Some(dir.path()), &env).unwrap_err().to_string(),
            format!(
                "failed to read the token file {}: not a regular file (it is a directory); name a regular file",
                dir.path().display()
            )
        );
        let missing = dir.path().join("missing");
        assert!(matches!(
            token_from(Some(&missing), &env),
            Err(ServerError::TokenFile { .. })
        ));
        assert!(token_from(None, &|_| Some("a b".into())).is_err());
    }

    #[test]
    fn the_openapi_document_lists_every_route() {
        let without = openapi_document(false);
        assert!(without["paths"].get("/mcp").is_none());
        let doc = openapi_document(true);
        let text = doc.to_string();
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["openapi"], "3.1.0");
        let paths = parsed["paths"].as_object().unwrap();
        let mut documented = Vec::new();
        for (path, methods) in paths {
            for method in methods.as_object().unwrap().keys() {
                documented.push((method.to_uppercase(), path.clone()));
            }
        }
        let mut routes: Vec<(String, String)> = ROUTES
            .iter()
            .chain(MCP_ROUTES)
            .map(|r| (r.method.to_string(), r.path.to_string()))
            .collect();
        routes.sort();
        documented.sort();
        assert_eq!(documented, routes);
        // The guard's answers are on every operation; 415 and 413 where there is a body.
        for (path, methods) in paths {
            for (method, op) in methods.as_object().unwrap() {
                let responses = op["responses"].as_object().unwrap();
                assert!(responses.contains_key("403"), "{method} {path}");
                let body = op.get("requestBody").is_some();
                assert_eq!(responses.contains_key("415"), body, "{method} {path}");
                assert_eq!(responses.contains_key("413"), body, "{method} {path}");
            }
        }
        // Every reference resolves.
        let schemas = parsed["components"]["schemas"].as_object().unwrap();
        for reference in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = &reference[..reference.find('"').unwrap()];
            assert!(schemas.contains_key(name), "{name}");
        }
    }
}
