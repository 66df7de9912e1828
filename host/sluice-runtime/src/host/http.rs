//! Outbound HTTP of components through `wasi:http` (wasmtime-wasi-http), by allowlist.
//!
//! Every component may import `wasi:http`; what a request reaches is its policy's
//! [`HttpGrant`]. The host sends each request itself (`HttpHooks`, the
//! `WasiHttpHooks::send_request` hook):
//!
//! 1. the method must be in `http_methods` (when set), and the host and port in `http`: an
//!    entry without a port covers the scheme's default port only (80 for `http`, 443 for
//!    `https`);
//! 2. a host name is resolved once, and every address it resolves to is checked: an address
//!    that is not globally reachable (loopback, private, link-local, documentation and the
//!    other special-purpose blocks, [`special_range`]) refuses the request unless
//!    `http_private = true`; an IP literal is reached only when listed. A host that the
//!    WHATWG URL parser would read as an IPv4 address in another form than `a.b.c.d`
//!    (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.0.0.1.`) is refused, and so is an
//!    authority with userinfo (`user:pw@host`): credentials in a URL are never sent;
//! 3. the host connects to a checked address (no second resolution, so no DNS rebinding),
//!    speaks TLS for `https` (rustls with the Mozilla roots), and sends the request over
//!    HTTP/1.1;
//! 4. the response body is counted: past `http_max_response_bytes` it fails.
//!
//! A policy's `http_credentials` add a header with a secret the guest never holds to the
//! requests to one host, after steps 1 and 2, and withhold the secrets from every response
//! and error the guest sees (docs/configuration.md#credentials-the-tool-never-holds).
//!
//! Under recordings ([`ToolPolicy::http_recordings`](crate::policy::ToolPolicy::http_recordings),
//! `sluice test`'s `[[http]]`), a request that
//! passes the checks of step 1 (and the IPv4-form and userinfo checks of step 2) is answered
//! by the recording of its method and URL, or refused when none matches
//! ([`crate::host::http_recorded`]): no name is resolved, so `http_private` plays no part,
//! and nothing is sent. Step 4 is the same.
//!
//! A refused request, and a response past the limit, fail the guest's request (`wasi:http`
//! error `HTTP-request-denied` or `HTTP-response-body-size`) and end the call with a tool
//! error, whatever the guest does next: kind `http-denied` naming the host and the policy
//! key, or `resource-limit` naming the limit. A request takes at most what is left of the
//! call's timeout (a shorter connect or first-byte timeout set by the guest applies too).
//! The requests a call made are in its log line (`HttpLog::summary`).

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use http::uri::Scheme;
use http_body_util::BodyExt;
use tokio::net::TcpStream;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use crate::address::special_range;
use crate::host::http::credentials::compressed;
use crate::host::http::limited::LimitedBody;
use crate::host::http::refusal::HttpRefusal;
use crate::host::http_recorded::HttpRecordings;
use crate::host::open_requests::OpenRequests;
use crate::policy::{HttpGrant, HttpHost};

pub(crate) mod credentials;
mod limited;
pub mod refusal;
mod scrubbed;

pub(crate) use credentials::Credentials;

/// Documented kind of the tool error of a request the policy refused.
pub const HTTP_DENIED_KIND: &str = "http-denied";

/// What the host's `wasi:http` hooks know during one call.
pub(crate) struct HttpHooks {
    grant: Arc<HttpGrant>,
    /// The policy's recorded responses, which answer in place of the network when set.
    recordings: Option<HttpRecordings>,
    /// The component's resolved `http_credentials`.
    credentials: Arc<Credentials>,
    deadline: Instant,
    log: Arc<Mutex<HttpLog>>,
    /// The requests open now ([`crate::host::open_requests`]).
    open: OpenRequests,
}

impl HttpHooks {
    /// The hooks of a call under `grant` (answered from `recordings` when set), with the
    /// component's `credentials`, that ends at `deadline`.
    pub(crate) fn new(
        grant: Arc<HttpGrant>,
        recordings: Option<HttpRecordings>,
        credentials: Arc<Credentials>,
        deadline: Instant,
    ) -> Self {
        HttpHooks {
            grant,
            recordings,
            credentials,
            deadline,
            log: Arc::default(),
            open: OpenRequests::default(),
        }
    }

    /// The call's open requests: each from `handle` until the host is done with its
    /// connection.
    pub(crate) fn open_requests(&self) -> &OpenRequests {
        &self.open
    }

    /// The policy's `http_max_connections`.
    pub(crate) fn max_connections(&self) -> usize {
        self.grant.max_connections
    }

    /// The requests the call made so far.
    pub(crate) fn log(&self) -> std::sync::MutexGuard<'_, HttpLog> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The requests of one call and why the host refused one, if it did.
#[derive(Debug, Default)]
pub(crate) struct HttpLog {
    requests: Vec<RequestRecord>,
    refusal: Option<(String, &'static str)>,
}

/// One request of a call, for its log line.
#[derive(Debug)]
struct RequestRecord {
    method: String,
    authority: String,
    status: Option<u16>,
    /// Response body bytes received, so far.
    bytes: u64,
    /// Why it failed, if it did.
    error: Option<String>,
    /// The policy's allowlist (`http`) covers its host and port.
    listed: bool,
    /// The host refused it (the policy, an address check, no recording).
    denied: bool,
    /// The name of the header of `http_credentials` the host added, if it added one.
    credential: Option<String>,
}

impl HttpLog {
    /// The first refusal of the call: (message, kind).
    pub(crate) fn refusal(&self) -> Option<&(String, &'static str)> {
        self.refusal.as_ref()
    }

    /// True when the call made no request.
    pub(crate) fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// How many requests the call made, how many of them the host refused, and how many
    /// carried a credential of `http_credentials`.
    pub(crate) fn counts(&self) -> (usize, usize, usize) {
        let denied = self.requests.iter().filter(|r| r.denied).count();
        let credentials = self
            .requests
            .iter()
            .filter(|r| r.credential.is_some())
            .count();
        (self.requests.len(), denied, credentials)
    }

    /// Each request as its metric's labels: the host (`host:port` when the allowlist covers
    /// it, else `unlisted`, so a guest cannot make a series per name it invents) and
    /// whether it was denied.
    pub(crate) fn egress(&self) -> impl Iterator<Item = (&str, bool)> {
        self.requests.iter().map(|r| {
            let host = if r.listed {
                r.authority.as_str()
            } else {
                "unlisted"
            };
            (host, r.denied)
        })
    }

    /// The requests as `METHOD host:port STATUS BYTES`, or `METHOD host:port failed: why`,
    /// each followed by `, credential HEADER` when it carried one, separated by `; `.
    pub(crate) fn summary(&self) -> String {
        self.requests
            .iter()
            .map(|r| {
                let line = match (&r.error, r.status) {
                    (Some(e), _) => format!("{} {} failed: {e}", r.method, r.authority),
                    (None, Some(s)) => format!("{} {} {s} {} B", r.method, r.authority, r.bytes),
                    (None, None) => format!("{} {} no response", r.method, r.authority),
                };
                match &r.credential {
                    Some(header) => format!("{line}, credential {header}"),
                    None => line,
                }
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn refuse(&mut self, message: String, kind: &'static str) {
        self.refusal.get_or_insert((message, kind));
    }
}

/// Records on `log` (request `index`) what `f` does to it.
fn record(log: &Mutex<HttpLog>, index: usize, f: impl FnOnce(&mut HttpLog, usize)) {
    f(
        &mut log.lock().unwrap_or_else(PoisonError::into_inner),
        index,
    );
}

/// True when the WHATWG URL host parser reads `host` as an IPv4 address written in another
/// form than `a.b.c.d` (a last label that is a number: `2130706433`, `0x7f.1`,
/// `0177.0.0.1`, or a trailing dot: `127.0.0.1.`). Resolvers read some of those forms as
/// addresses too, so such a host never matches a listed name.
pub fn is_other_ipv4_form(host: &str) -> bool {
    matches!(url::Host::parse(host), Ok(url::Host::Ipv4(ip)) if ip.to_string() != host)
}

/// Where a request may go: the addresses to try, in order, and the TLS server name.
struct Target {
    addrs: Vec<SocketAddr>,
    host: String,
    tls: bool,
}

/// Why a request was not sent: refused by the policy (the tool error's message) or failed
/// (a `wasi:http` error for the guest).
enum NotSent {
    Refused(HttpRefusal),
    Failed(Error),
}

impl From<Error> for NotSent {
    fn from(e: Error) -> Self {
        NotSent::Failed(e)
    }
}

/// A request the policy allows, before its host name is resolved.
struct Allowed {
    /// The host without brackets, as in the URI.
    bare: String,
    /// The host as an IP literal, when it is one.
    literal: Option<IpAddr>,
    /// The host name, lowercase, without a trailing dot.
    name: String,
}

/// Checks a request to `host` (as in the URI: brackets around IPv6) port `port` against
/// `grant`'s methods and hosts; the refusal when it is not allowed.
fn allowed(
    grant: &HttpGrant,
    method: &str,
    host: &str,
    port: u16,
    tls: bool,
) -> Result<Allowed, HttpRefusal> {
    let authority = format!("{host}:{port}");
    if !grant.methods.is_empty() && !grant.methods.iter().any(|m| m == method) {
        return Err(HttpRefusal::Method {
            method: method.to_string(),
            authority,
            methods: grant.methods.clone(),
        });
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let literal: Option<IpAddr> = bare.parse().ok();
    if literal.is_none() && is_other_ipv4_form(bare) {
        return Err(HttpRefusal::OtherIpv4Form {
            method: method.to_string(),
            authority,
            host: bare.to_string(),
        });
    }
    // A trailing dot (a fully qualified name) names the same host.
    let name = bare.strip_suffix('.').unwrap_or(bare).to_ascii_lowercase();
    let default_port = if tls { 443 } else { 80 };
    let host_matches = |a: &&crate::policy::HttpAllow| match (&a.host, literal) {
        (HttpHost::Ip(ip), Some(l)) => *ip == l,
        (HttpHost::Name(n), None) => *n == name,
        (HttpHost::Subdomains(d), None) => name
            .strip_suffix(d.as_str())
            .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.')),
        _ => false,
    };
    let listed = grant
        .allow
        .iter()
        .filter(host_matches)
        .any(|a| a.port.unwrap_or(default_port) == port);
    if !listed {
        // The note on ports applies where an entry without a port names this host.
        let portless_same_host = port != default_port
            && grant
                .allow
                .iter()
                .filter(host_matches)
                .any(|a| a.port.is_none());
        return Err(HttpRefusal::NotListed {
            method: method.to_string(),
            authority,
            allows: grant.allow.clone(),
            portless: portless_same_host
                .then_some((default_port, if tls { "https" } else { "http" })),
        });
    }
    Ok(Allowed {
        bare: bare.to_string(),
        literal,
        name,
    })
}

/// Resolves the host of `allowed` (a request `method` to port `port`) and checks the
/// addresses against `grant`'s `http_private`.
async fn target(
    grant: &HttpGrant,
    method: &str,
    allowed: Allowed,
    port: u16,
    tls: bool,
) -> Result<Target, NotSent> {
    let Allowed {
        bare,
        literal,
        name,
    } = allowed;
    let authority = format!("{bare}:{port}");
    let addrs: Vec<SocketAddr> = match literal {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => tokio::net::lookup_host((name.as_str(), port))
            .await
            .map_err(|e| Error::DnsError {
                rcode: Some(e.to_string()),
                info_code: None,
            })?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(NotSent::Failed(Error::DestinationNotFound));
    }
    if literal.is_none()
        && !grant.private
        && let Some((bad, range)) = addrs
            .iter()
            .find_map(|a| special_range(a.ip()).map(|r| (a.ip(), r)))
    {
        return Err(NotSent::Refused(HttpRefusal::NotGlobal {
            method: method.to_string(),
            authority,
            name,
            address: bad,
            range,
        }));
    }
    Ok(Target {
        addrs,
        host: bare,
        tls,
    })
}

/// Connects to the first address of `target` that answers and speaks TLS over it for
/// `https`.
async fn connect(target: &Target) -> Result<Io, Error> {
    let mut last = None;
    for addr in &target.addrs {
        match TcpStream::connect(addr).await {
            Ok(tcp) => {
                if !target.tls {
                    return Ok(Io::new(Box::new(tcp)));
                }
                let roots = rustls::RootCertStore {
                    roots: webpki_roots::TLS_SERVER_ROOTS.into(),
                };
                let config = rustls::ClientConfig::builder_with_provider(Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .with_safe_default_protocol_versions()
                .map_err(|e| Error::InternalError(Some(e.to_string())))?
                .with_root_certificates(roots)
                .with_no_client_auth();
                let name = rustls::pki_types::ServerName::try_from(target.host.clone())
                    .map_err(|_| Error::HttpRequestUriInvalid)?;
                let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
                    .connect(name, tcp)
                    .await
                    .map_err(Error::Tls)?;
                return Ok(Io::new(Box::new(tls)));
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.map_or(Error::ConnectionRefused, Error::Connect))
}

/// A boxed future of the hook's shape.
type Boxed<T> = Box<dyn Future<Output = T> + Send>;

impl WasiHttpHooks for HttpHooks {
    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Boxed<Result<(), Error>>,
    ) -> Boxed<Result<(http::Response<WasiBody>, Boxed<Result<(), Error>>), Error>> {
        let grant = self.grant.clone();
        let recordings = self.recordings.clone();
        let credentials = self.credentials.clone();
        let scrub = self.credentials.clone();
        let log = self.log.clone();
        let deadline = self.deadline;
        // Counted open until the connection is closed (or the request fails).
        let held = self.open.hold();
        let send = async move {
            let uri = request.uri().clone();
            let tls = uri.scheme() == Some(&Scheme::HTTPS);
            let host = uri.host().unwrap_or_default().to_string();
            let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
            let method = request.method().to_string();
            let index = {
                let mut l = log.lock().unwrap_or_else(PoisonError::into_inner);
                l.requests.push(RequestRecord {
                    method: method.clone(),
                    authority: format!("{host}:{port}"),
                    status: None,
                    bytes: 0,
                    error: None,
                    listed: false,
                    denied: false,
                    credential: None,
                });
                l.requests.len() - 1
            };
            let fail = |e: Error| {
                record(&log, index, |l, i| {
                    l.requests[i].error.get_or_insert_with(|| e.to_string());
                });
                e
            };
            if host.is_empty() {
                return Err(fail(Error::HttpRequestUriInvalid));
            }
            let refuse = |why: HttpRefusal| {
                record(&log, index, |l, i| {
                    l.requests[i].error = Some("refused by the policy".into());
                    l.requests[i].denied = true;
                    l.refuse(why.to_string(), HTTP_DENIED_KIND);
                });
                Error::HttpRequestDenied
            };
            // Userinfo would go out in the Host header; it is refused and never echoed.
            if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
                return Err(refuse(HttpRefusal::Userinfo {
                    method,
                    authority: format!("{host}:{port}"),
                }));
            }
            let allowed = allowed(&grant, &method, &host, port, tls).map_err(refuse)?;
            record(&log, index, |l, i| l.requests[i].listed = true);
            let limit = grant.max_response_bytes;
            let request_line = format!("{method} {host}:{port}");
            // Under recordings, the answer is the recording's: nothing is resolved or sent
            // (and no credential added).
            if let Some(recordings) = &recordings {
                let recording = recordings.answer(&method, &uri).map_err(refuse)?;
                let response = recording.response();
                record(&log, index, |l, i| {
                    l.requests[i].status = Some(response.status().as_u16());
                });
                let response = scrubbed::deliver(response, &credentials, request_line, |body| {
                    let full = http_body_util::Full::new(body)
                        .map_err(|never: std::convert::Infallible| -> Error { match never {} });
                    LimitedBody::new(full, limit, log.clone(), index)
                });
                // The guest's request body is read to its end (and dropped), as a
                // connection would take it; the request is open until then.
                let io: Boxed<Result<(), Error>> = Box::new(async move {
                    let _held = held;
                    let _ = request.into_body().collect().await;
                    Ok(())
                });
                return Ok((response, io));
            }
            // What the guest set, within what is left of the call.
            let connect_by = options
                .and_then(|o| o.connect_timeout)
                .map_or(deadline, |t| deadline.min(Instant::now() + t));
            let first_byte = options.and_then(|o| o.first_byte_timeout);
            let (name, literal) = (allowed.name.clone(), allowed.literal);
            let target = match tokio::time::timeout_at(
                connect_by.into(),
                target(&grant, &method, allowed, port, tls),
            )
            .await
            {
                Err(_) => return Err(fail(Error::DnsTimeout)),
                Ok(Err(NotSent::Failed(e))) => return Err(fail(e)),
                Ok(Err(NotSent::Refused(why))) => return Err(refuse(why)),
                Ok(Ok(t)) => t,
            };
            let credential = credentials
                .attach(
                    credentials::Request {
                        method: &method,
                        authority: &format!("{host}:{port}"),
                        name: &name,
                        literal,
                        port,
                        tls,
                        addrs: &target.addrs,
                    },
                    request.headers_mut(),
                )
                .map_err(refuse)?;
            if let Some(header) = &credential {
                record(&log, index, |l, i| {
                    l.requests[i].credential = Some(header.clone());
                });
            }
            let io = match tokio::time::timeout_at(connect_by.into(), connect(&target)).await {
                Err(_) => return Err(fail(Error::ConnectionTimeout)),
                Ok(r) => r.map_err(fail)?,
            };
            let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
                .await
                .map_err(|e| fail(e.into()))?;
            // The request line takes the path only; `host` is already a header.
            let path = uri.path_and_query().map_or("/", |p| p.as_str());
            *request.uri_mut() =
                http::Uri::try_from(path).map_err(|_| fail(Error::HttpRequestUriInvalid))?;
            let answer_by = first_byte.map_or(deadline, |t| deadline.min(Instant::now() + t));
            let mut conn = Box::pin(conn);
            let mut conn_done = false;
            let sent = async {
                let send = sender.send_request(request);
                tokio::pin!(send);
                tokio::select! {
                    biased;
                    r = &mut send => r,
                    c = &mut conn => {
                        conn_done = true;
                        c?;
                        send.await
                    }
                }
            };
            let response = match tokio::time::timeout_at(answer_by.into(), sent).await {
                Err(_) => return Err(fail(Error::ConnectionReadTimeout)),
                Ok(r) => r.map_err(|e| fail(e.into()))?,
            };
            let status = response.status().as_u16();
            record(&log, index, |l, i| l.requests[i].status = Some(status));
            if credential.is_some()
                && let Some(coding) = compressed(response.headers())
            {
                return Err(refuse(HttpRefusal::Compressed {
                    request: request_line,
                    coding,
                }));
            }
            let response = scrubbed::deliver(response, &credentials, request_line, |incoming| {
                LimitedBody::new(incoming, limit, log.clone(), index)
            });
            let io: Boxed<Result<(), Error>> = Box::new(async move {
                let _held = held;
                if !conn_done {
                    conn.await?;
                }
                Ok(())
            });
            Ok((response, io))
        };
        // Every error the guest sees has the component's credentials withheld from its text.
        Box::new(async move {
            match send.await {
                Err(e) => Err(scrub.scrub_error(e)),
                Ok((response, io)) => {
                    let io: Boxed<Result<(), Error>> = Box::new(async move {
                        Box::into_pin(io).await.map_err(|e| scrub.scrub_error(e))
                    });
                    Ok((response, io))
                }
            }
        })
    }
}

/// A request's connection: plain TCP, or TLS over it.
trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> Stream for T {}

/// The connection as hyper's I/O.
type Io = wasmtime_wasi_http::io::TokioIo<Box<dyn Stream>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::HttpAllow;

    /// Sends `uri` through the hooks of a call allowed `127.0.0.1:9` and returns the error
    /// and the call's log summary.
    fn send(uri: &str) -> (Error, Option<(String, &'static str)>, String) {
        let grant = HttpGrant {
            allow: vec![HttpAllow {
                host: HttpHost::Ip([127, 0, 0, 1].into()),
                port: Some(9),
            }],
            ..HttpGrant::default()
        };
        let mut hooks = HttpHooks::new(
            Arc::new(grant),
            None,
            Arc::default(),
            Instant::now() + std::time::Duration::from_secs(5),
        );
        let body: WasiBody = http_body_util::Empty::new()
            .map_err(|never| match never {})
            .boxed_unsync();
        let request = http::Request::get(uri).body(body).unwrap();
        let sent = hooks.send_request(request, None, Box::new(async { Ok(()) }));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let error = match runtime.block_on(Box::into_pin(sent)) {
            Err(e) => e,
            Ok(_) => panic!("{uri} was sent"),
        };
        let log = hooks.log();
        (error, log.refusal().cloned(), log.summary())
    }

    #[test]
    fn credentials_are_refused_and_in_no_log_line() {
        let (error, refusal, summary) = send("http://alice:hunter2pw@127.0.0.1:9/x");
        assert!(matches!(error, Error::HttpRequestDenied), "{error:?}");
        assert_eq!(
            refusal,
            Some((
                "the tool's GET request to 127.0.0.1:9 was refused: credentials in the URL are not sent; use an Authorization header".to_string(),
                HTTP_DENIED_KIND
            ))
        );
        // The call's log line shows host and port only.
        assert_eq!(summary, "GET 127.0.0.1:9 failed: refused by the policy");
    }

    #[test]
    fn other_ipv4_forms_are_refused_by_name() {
        let (_, refusal, summary) = send("http://0x7f.1:9/x");
        assert_eq!(
            refusal.unwrap().0,
            "the tool's GET request to 0x7f.1:9 was refused: the host 0x7f.1 is an IPv4 address written in another form than four decimal numbers a.b.c.d, which the policy does not match (write the address as a.b.c.d, and list it in the policy key http)"
        );
        assert_eq!(summary, "GET 0x7f.1:9 failed: refused by the policy");
        assert!(is_other_ipv4_form("2130706433"));
        assert!(is_other_ipv4_form("127.0.0.1."));
        assert!(!is_other_ipv4_form("127.0.0.1"));
        assert!(!is_other_ipv4_form("example.com"));
    }
}
