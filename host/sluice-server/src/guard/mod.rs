//! The guard in front of every HTTP surface of Sluice: which `Host`, which `Origin`, which
//! token and which bodies a request may bring. The operator API is wrapped in it, and any
//! other router served beside it (the MCP endpoint, say) must be wrapped in the same one, so
//! that a web page cannot reach either by DNS rebinding or a blind cross-site `POST`.
//!
//! A [`Guard`] checks, in this order, and answers with the API's JSON errors
//! (`{"error": "<what was wrong and what is allowed>", …}`):
//!
//! 0. **One `Host`, one `Origin`** (400, with `header` and `count`): a request with two
//!    `Host` or two `Origin` headers is refused before anything else. A browser never sends
//!    them; a proxy in front might pass them on, and then it and the guard could judge
//!    different ones.
//! 1. **Host** (403): the `Host` header and, for an absolute-form request line
//!    (`GET http://name/path HTTP/1.1`), the target's authority must each name the
//!    listening address or an allowed name (the target's authority is the request's own,
//!    RFC 9112 section 3.2.2, and is what step 3 compares `Origin` with). Always allowed: the listening IP itself; on a
//!    loopback listener also every loopback IP, `localhost` and names under `.localhost`
//!    (RFC 6761 keeps them on the machine); on an unspecified listener (`0.0.0.0`, `::`)
//!    every IP literal. Any other name must be in [`GuardOptions::allowed_hosts`]
//!    (`server.allowed_hosts`, `--allowed-host`). A DNS-rebinding page reaches the server
//!    under the attacker's name, so it is refused here. The port is not checked.
//!
//!    The operator console's assets (a `GET` or `HEAD` of `/` or `/console/…`) pass here:
//!    they hold no data (docs/console.md#security).
//! 2. **OAuth** (404): the OAuth discovery and registration paths answer 404 before the
//!    token is asked for: Sluice issues no tokens ([`crate::oauth`]). With `[server.oauth]`
//!    the protected-resource metadata document (`GET /.well-known/oauth-protected-resource`)
//!    is served instead, after the `Host` check, like the console's assets.
//! 3. **Token** (401; 503 when the authorization server cannot be reached): when the server
//!    has a bearer token, `[[server.tokens]]` or `[server.oauth]`, every request must carry
//!    one (`Authorization: Bearer <token>`). Static tokens are compared in time that does not
//!    depend on where they differ; any other token is an OAuth access token for the verifier
//!    (`bearer.rs`). The token names the request's [`Principal`]: the single token is
//!    `admin`, a `[[server.tokens]]` entry its name and scopes, an access token `oauth:<sub>`
//!    with the scopes its OAuth scopes grant; without tokens everyone is `admin`.
//! 4. **Origin** (403): a request whose `Origin` is not the server's own (scheme-less host
//!    and port equal to the `Host` header's; `Origin: null` never is) is a cross-origin
//!    request: a web page on another site sent it. It is refused unless the server has a
//!    token (which step 3 then required). Requests without `Origin` (curl, SDKs) are not
//!    cross-origin.
//! 5. **Body size** (413): a `Content-Length` over [`GuardOptions::max_body_bytes`] is refused
//!    before the body is read. (Bodies without a length are measured by whoever reads them.)
//! 6. **Content type** (415): a request with a body (a `Content-Length` over 0, or any
//!    `Transfer-Encoding`) must say `Content-Type: application/json` (parameters such as
//!    `; charset=utf-8` allowed). A browser cannot send that cross-site without a CORS
//!    preflight, which Sluice never grants.
//! 7. **Scope** (403, with `scope` and `principal`): the principal must hold the scope the
//!    route needs ([`crate::principal::required_scope`]). The principal then rides in the
//!    request's extensions for the handlers.
//!
//! Wrapping another router (the guard is cheap to clone; every clone shares one
//! configuration):
//!
//! ```
//! use axum::{Router, routing::post};
//! use sluice_server::guard::{Guard, GuardOptions};
//!
//! let guard = Guard::new(GuardOptions {
//!     listen: "127.0.0.1:8080".parse().expect("an address"),
//!     allowed_hosts: vec!["sluice.internal".into()],
//!     token: None,
//!     tokens: Vec::new(),
//!     oauth: None,
//!     max_body_bytes: 1 << 20,
//! });
//! let mcp: Router = guard.wrap(Router::new().route("/mcp", post(|| async { "ok" })));
//! # let _ = mcp;
//! ```
//!
//! With [`crate::Server`], take its guard with [`crate::Server::guard`] so both routers
//! share one configuration.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use serde_json::Value;

use crate::error::ApiError;
use crate::principal::Principal;

mod bearer;
pub(crate) use bearer::Caller;
pub use bearer::OAUTH_PRINCIPAL_PREFIX;

/// The only media type a request body may have.
pub const JSON_MEDIA_TYPE: &str = "application/json";

/// What a [`Guard`] allows.
#[derive(Clone, Debug)]
pub struct GuardOptions {
    /// The address the server listens on: its IP decides which `Host` values are the
    /// server's own (see the module docs).
    pub listen: SocketAddr,
    /// Further host names (or IP literals) the server answers to, without ports, compared
    /// case-insensitively: `server.allowed_hosts` in sluice.toml, `--allowed-host NAME`.
    /// Empty by default.
    pub allowed_hosts: Vec<String>,
    /// The single bearer token (principal `admin`), if any.
    pub token: Option<String>,
    /// `[[server.tokens]]`: the named principals' tokens, by hash. With `token` unset, this
    /// empty and no `oauth`, the server asks for no token and everyone is `admin`.
    pub tokens: Vec<sluice_config::ServerToken>,
    /// `[server.oauth]`: the verifier of OAuth access tokens, if any (docs/api.md#oauth).
    pub oauth: Option<Arc<crate::oauth::OAuthVerifier>>,
    /// The largest `Content-Length` accepted, in bytes; larger answer 413.
    pub max_body_bytes: usize,
}

/// The guard: a layer of checks every request passes before any route sees it (see the
/// module docs). Cheap to clone.
#[derive(Clone, Debug)]
pub struct Guard(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    options: GuardOptions,
    /// `allowed_hosts`, normalised (lowercase, no brackets, no trailing dot).
    names: Vec<String>,
}

impl Guard {
    /// A guard that allows what `options` says.
    pub fn new(options: GuardOptions) -> Guard {
        let names = options
            .allowed_hosts
            .iter()
            .map(|h| normalise_host(h))
            .collect();
        Guard(Arc::new(Inner { options, names }))
    }

    /// The options it was built with.
    pub fn options(&self) -> &GuardOptions {
        &self.0.options
    }

    /// `router` behind this guard: every request to it (its fallback included) passes the
    /// checks first, inside the request's span (docs/telemetry.md#spans).
    pub fn wrap<S: Clone + Send + Sync + 'static>(&self, router: Router<S>) -> Router<S> {
        router
            .layer(from_fn_with_state(self.clone(), middleware))
            .layer(axum::middleware::from_fn(crate::spans::traced))
    }

    /// Checks the request line and headers of a request (steps 0 to 6), verifying an OAuth
    /// access token if it carries one; the request's principal, or a [`Refusal`] to answer
    /// instead of serving it. [`Guard::wrap`] calls this, then checks the route's scope.
    ///
    /// # Errors
    /// 400 for two `Host` or two `Origin` headers; 403 for a `Host` (or an absolute-form
    /// target) the server does not answer to or a cross-origin request without a token; 404
    /// for an OAuth path; 401 without the right token (or with an access token the verifier
    /// refuses); 413 for a `Content-Length` over the limit; 415 for a body that is not
    /// declared `application/json`; 503 when the authorization server cannot be reached.
    /// Each is a JSON error naming what was wrong and what is allowed.
    pub async fn check(&self, request: &Parts) -> Result<Principal, Refusal> {
        let caller = self
            .check_parts(
                &request.headers,
                request.uri.authority().map(|a| a.as_str()),
                request.uri.path(),
            )
            .map_err(|e| Refusal(Box::new(e)))?;
        self.verify(caller).await.map_err(|e| Refusal(Box::new(e)))
    }

    /// Checks only the request's `Host` (steps 0 and 1 of the module docs): what a request
    /// for the console's assets passes (docs/console.md#security) instead of [`Guard::check`].
    ///
    /// # Errors
    /// 400 for two `Host` or two `Origin` headers; 403 for a `Host` (or an absolute-form
    /// target) the server does not answer to.
    pub fn check_host(&self, request: &Request) -> Result<(), Refusal> {
        self.check_host_parts(
            request.headers(),
            request.uri().authority().map(|a| a.as_str()),
        )
        .map(|_| ())
        .map_err(|e| Refusal(Box::new(e)))
    }

    /// Steps 0 and 1: the host the request is for (name and port), when it names one.
    fn check_host_parts(
        &self,
        headers: &HeaderMap,
        uri_authority: Option<&str>,
    ) -> Result<Option<(String, Option<u16>)>, ApiError> {
        for name in [header::HOST, header::ORIGIN] {
            let count = headers.get_all(&name).iter().count();
            if count > 1 {
                return Err(duplicate(&name, count));
            }
        }
        let host_header = match headers.get(header::HOST) {
            Some(v) => Some(
                v.to_str()
                    .map_err(|_| bad_host("(not visible ASCII)", self))?,
            ),
            None => None,
        };
        // An absolute-form target (`GET http://name/path HTTP/1.1`) names the authority the
        // request is for, and HTTP/1.1 tells a server to use it over `Host` (RFC 9112
        // section 3.2.2): both are judged, and the target's is the request's own.
        let mut host = None;
        for text in [host_header, uri_authority].into_iter().flatten() {
            let (name, port) = split_authority(text).ok_or_else(|| bad_host(text, self))?;
            if !self.allows_host(&name) {
                return Err(bad_host(text, self));
            }
            host = Some((name, port));
        }
        Ok(host)
    }

    fn check_parts(
        &self,
        headers: &HeaderMap,
        uri_authority: Option<&str>,
        path: &str,
    ) -> Result<Caller, ApiError> {
        let host = self.check_host_parts(headers, uri_authority)?;
        let host_shown =
            uri_authority.or_else(|| headers.get(header::HOST).and_then(|v| v.to_str().ok()));
        if crate::oauth::is_oauth_path(path) {
            return Err(crate::oauth::refused_path(
                path,
                self.oauth().map(|v| v.issuer()),
            ));
        }
        let caller = self.check_token(headers)?;
        if let Some(origin) = headers.get(header::ORIGIN) {
            let same = origin
                .to_str()
                .ok()
                .and_then(origin_authority)
                .zip(host.as_ref())
                .is_some_and(|((oh, op), (hh, hp))| oh == *hh && op == *hp);
            if !same && !self.asks_for_tokens() {
                let shown = origin.to_str().unwrap_or("(not visible ASCII)");
                return Err(cross_origin(shown, host_shown));
            }
        }
        let length = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let limit = self.0.options.max_body_bytes;
        if let Some(n) = length
            && n > limit as u64
        {
            return Err(too_large(limit));
        }
        let has_body =
            length.is_some_and(|n| n > 0) || headers.contains_key(header::TRANSFER_ENCODING);
        if has_body {
            let given = headers
                .get(header::CONTENT_TYPE)
                .map(|v| v.to_str().unwrap_or("(not visible ASCII)"));
            let media = given.map(|t| t.split(';').next().unwrap_or("").trim());
            if !media.is_some_and(|m| m.eq_ignore_ascii_case(JSON_MEDIA_TYPE)) {
                return Err(unsupported_type(given));
            }
        }
        Ok(caller)
    }

    /// Whether requests must carry a token: the single token, `[[server.tokens]]` or
    /// `[server.oauth]` is set.
    pub fn asks_for_tokens(&self) -> bool {
        self.0.options.token.is_some()
            || !self.0.options.tokens.is_empty()
            || self.0.options.oauth.is_some()
    }

    /// Whether host name `name` (normalised) is one the server answers to.
    fn allows_host(&self, name: &str) -> bool {
        let listen = self.0.options.listen.ip();
        if let Ok(ip) = name.parse::<IpAddr>() {
            return ip == listen
                || listen.is_unspecified()
                || (listen.is_loopback() && ip.is_loopback())
                || self.0.names.iter().any(|n| n == name);
        }
        if listen.is_loopback() && (name == "localhost" || name.ends_with(".localhost")) {
            return true;
        }
        self.0.names.iter().any(|n| n == name)
    }

    /// The names a `Host` may have, for messages.
    fn described_hosts(&self) -> Vec<String> {
        let listen = self.0.options.listen.ip();
        let mut out = Vec::new();
        if listen.is_unspecified() {
            out.push("any IP address of this machine".to_string());
        } else {
            out.push(show_ip(listen));
        }
        if listen.is_loopback() {
            for name in ["127.0.0.1", "[::1]", "localhost", "*.localhost"] {
                if !out.iter().any(|o| o == name) {
                    out.push(name.to_string());
                }
            }
        }
        out.extend(self.0.names.iter().cloned());
        out
    }
}

/// Why the guard refused a request: a status and a JSON body
/// (`{"error": "<what was wrong and what is allowed>", …}`), answered as they are.
#[derive(Debug)]
pub struct Refusal(Box<ApiError>);

impl Refusal {
    /// The status: 400, 401, 403, 404 (an OAuth path), 413, 415 or 503 (the authorization
    /// server cannot be reached).
    pub fn status(&self) -> StatusCode {
        self.0.status
    }

    /// The JSON body's fields: `error`, and `header`/`count`, `host`/`allowedHosts`, `origin`,
    /// `contentType`/`allowed` or `limitBytes` as they apply.
    pub fn body(&self) -> &serde_json::Map<String, Value> {
        &self.0.body
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        (*self.0).into_response()
    }
}

/// The guard as axum middleware: `axum::middleware::from_fn_with_state(guard,
/// sluice_server::guard::middleware)` is what [`Guard::wrap`] adds. A request that passes
/// takes its connection off the unauthenticated ones ([`crate::listen`]). A refused request
/// with a body of up to 16 MiB is read to its end first, so the client sees the answer
/// rather than a reset connection.
pub async fn middleware(State(guard): State<Guard>, mut request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let public = crate::console::is_public(request.method(), path)
        || (guard.oauth().is_some() && crate::oauth::is_metadata_request(request.method(), path));
    let checked = if public {
        guard.check_host(&request).map(|()| None)
    } else {
        // The body stays behind while the token is verified (it is not `Sync`).
        let (parts, body) = request.into_parts();
        let checked = match guard.check(&parts).await {
            Ok(principal) => guard
                .check_scope(&parts, &principal)
                .map(|()| Some(principal)),
            Err(refusal) => Err(refusal),
        };
        request = Request::from_parts(parts, body);
        checked
    };
    match checked {
        Ok(principal) => {
            if let Some(principal) = principal {
                if let Some(ticket) = request.extensions().get::<Arc<crate::listen::Ticket>>() {
                    ticket.passed();
                }
                if let Some(grant) = principal.tool_grant() {
                    request.extensions_mut().insert(grant);
                }
                request.extensions_mut().insert(principal);
            }
            next.run(request).await
        }
        Err(refusal) => {
            drain(request.into_body().into_data_stream(), DRAIN_MAX_BYTES).await;
            refusal.into_response()
        }
    }
}

impl Guard {
    /// 403 unless `principal` holds the scope the route of `request` needs (step 7).
    fn check_scope(&self, request: &Parts, principal: &Principal) -> Result<(), Refusal> {
        let path = request
            .extensions
            .get::<MatchedPath>()
            .map_or(request.uri.path(), |m| m.as_str());
        let method = &request.method;
        let Some(scope) =
            crate::principal::required_scope(method, path).filter(|s| !principal.allows(*s))
        else {
            return Ok(());
        };
        let mut refusal = crate::principal::insufficient_scope(principal, scope, method, path);
        // An OAuth client is told which OAuth scopes to ask for, and where the metadata is.
        if let Some(verifier) = self.oauth()
            && principal.name().starts_with(OAUTH_PRINCIPAL_PREFIX)
        {
            let scopes =
                verifier.oauth_scopes_granting(&sluice_protocol::access::Grant::Scope(scope));
            let description = format!("{method} {path} needs scope {scope}");
            if let Some(value) = self.challenge(crate::oauth::Challenge::InsufficientScope {
                scopes: &scopes,
                description: &description,
            }) {
                refusal = refusal.with_header(header::WWW_AUTHENTICATE, value);
            }
        }
        Err(Refusal(Box::new(refusal)))
    }
}

/// The most bytes of a refused body read (and dropped) before answering. A client still
/// sending when the server closes the connection may see a reset instead of the answer.
pub(crate) const DRAIN_MAX_BYTES: u64 = 16 << 20;

/// Reads and drops the rest of a body, up to `max` bytes.
pub(crate) async fn drain(mut stream: axum::body::BodyDataStream, max: u64) {
    let mut seen = 0u64;
    while let Some(Ok(chunk)) = stream.next().await {
        seen += chunk.len() as u64;
        if seen > max {
            break;
        }
    }
}

/// 413: the body is over `limit` bytes.
pub(crate) fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "the request body is over the limit of {limit} bytes (sluice serve --max-body-bytes)"
        ),
    )
    .with("limitBytes", limit)
}

fn bad_host(given: &str, guard: &Guard) -> ApiError {
    let allowed = guard.described_hosts();
    ApiError::new(
        StatusCode::FORBIDDEN,
        format!(
            "refusing Host {given:?}: this server answers only to {} (a guard against DNS rebinding); to serve another name, add it with `sluice serve --allowed-host NAME` or server.allowed_hosts in sluice.toml",
            allowed.join(", ")
        ),
    )
    .with("host", given)
    .with(
        "allowedHosts",
        Value::Array(allowed.into_iter().map(Value::String).collect()),
    )
}

/// 400: a header that a request may carry once came `count` times. A browser never sends
/// that; a proxy in front might pass it, and then the guard and the proxy could each judge a
/// different one.
fn duplicate(name: &header::HeaderName, count: usize) -> ApiError {
    let shown = match *name {
        header::HOST => "Host",
        _ => "Origin",
    };
    ApiError::new(
        StatusCode::BAD_REQUEST,
        format!(
            "refusing a request with {count} {shown} headers: a request may carry at most one {shown} header (the guard will not choose between them; fix the client or the proxy in front)"
        ),
    )
    .with("header", shown)
    .with("count", count)
}

fn cross_origin(origin: &str, host: Option<&str>) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        format!(
            "refusing a cross-origin request from Origin {origin:?} (this server is {}): a page on another site may not drive the operator API. Without a bearer token only requests without an Origin, or from the server's own origin, are served; to allow others, start the server with a token (SLUICE_SERVER_TOKEN or --token-file) and send it",
            host.map_or_else(|| "reached without a Host".to_string(), |h| format!("{h:?}"))
        ),
    )
    .with("origin", origin)
}

fn unsupported_type(given: Option<&str>) -> ApiError {
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        format!(
            "a request body must be JSON sent with `Content-Type: {JSON_MEDIA_TYPE}`; got {}",
            given.map_or_else(
                || "no Content-Type".to_string(),
                |t| format!("Content-Type {t:?}")
            )
        ),
    )
    .with(
        "contentType",
        given.map_or(Value::Null, |t| Value::String(t.to_string())),
    )
    .with("allowed", JSON_MEDIA_TYPE)
}

/// Compares two secrets in time that depends on their lengths only.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A host name as compared: lowercase, IPv6 brackets and one trailing dot removed.
fn normalise_host(host: &str) -> String {
    let host = host.trim();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let host = host.strip_suffix('.').unwrap_or(host);
    host.to_ascii_lowercase()
}

/// An IP as a `Host` header writes it.
fn show_ip(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// `host[:port]` (`[v6][:port]` for IPv6) as (normalised host, port). `None` when it is not
/// of that shape (userinfo, a path, an empty host, a port that is not a number).
fn split_authority(text: &str) -> Option<(String, Option<u16>)> {
    let text = text.trim();
    if text.is_empty() || text.contains(['@', '/', '?', '#', ' ']) {
        return None;
    }
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        v6.parse::<std::net::Ipv6Addr>().ok()?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (format!("[{v6}]"), port)
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h.to_string(), Some(p)),
            Some(_) => return None, // A bare IPv6 address: not a valid Host.
            None => (text.to_string(), None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    let host = normalise_host(&host);
    (!host.is_empty()).then_some((host, port))
}

/// The host and port of an `Origin` header (`scheme://host[:port]`), with the scheme's
/// default port dropped; `None` for `null` or anything else.
fn origin_authority(origin: &str) -> Option<(String, Option<u16>)> {
    let (scheme, rest) = origin.trim().split_once("://")?;
    let (host, port) = split_authority(rest)?;
    let default = match scheme.to_ascii_lowercase().as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    };
    Some((host, port.filter(|p| Some(*p) != default)))
}

#[cfg(test)]
mod tests;
