//! Outbound HTTP of components through `wasi:http` (wasmtime-wasi-http), by allowlist.
//!
//! Every component may import `wasi:http`; what a request reaches is its policy's
//! [`HttpGrant`]. The host sends each request itself (`HttpHooks`, the
//! `WasiHttpHooks::send_request` hook):
//!
//! 1. the method must be in `http_methods` (when set), and the host and port in `http`: an
//!    entry without a port covers the scheme's default port only (80 for `http`, 443 for
//!    `https`);
//! 2. a host name is resolved once, and every address it resolves to is checked: a loopback,
//!    private or link-local address ([`is_private`]) refuses the request unless
//!    `http_private = true`; an IP literal is reached only when listed;
//! 3. the host connects to a checked address (no second resolution, so no DNS rebinding),
//!    speaks TLS for `https` (rustls with the Mozilla roots), and sends the request over
//!    HTTP/1.1;
//! 4. the response body is counted: past `http_max_response_bytes` it fails.
//!
//! A refused request, and a response past the limit, fail the guest's request (`wasi:http`
//! error `HTTP-request-denied` or `HTTP-response-body-size`) and end the call with a tool
//! error, whatever the guest does next: kind `http-denied` naming the host and the policy
//! key, or `resource-limit` naming the limit. A request takes at most what is left of the
//! call's timeout (a shorter connect or first-byte timeout set by the guest applies too).
//! The requests a call made are in its log line (`HttpLog::summary`).

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http::uri::Scheme;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use tokio::net::TcpStream;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use crate::policy::{HttpGrant, HttpHost};

/// Documented kind of the tool error of a request the policy refused.
pub const HTTP_DENIED_KIND: &str = "http-denied";

/// What the host's `wasi:http` hooks know during one call.
pub(crate) struct HttpHooks {
    grant: Arc<HttpGrant>,
    deadline: Instant,
    log: Arc<Mutex<HttpLog>>,
}

impl HttpHooks {
    /// The hooks of a call under `grant` that ends at `deadline`.
    pub(crate) fn new(grant: Arc<HttpGrant>, deadline: Instant) -> Self {
        HttpHooks {
            grant,
            deadline,
            log: Arc::default(),
        }
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

    /// The requests as `METHOD host:port STATUS BYTES`, or `METHOD host:port failed: why`,
    /// separated by `; `.
    pub(crate) fn summary(&self) -> String {
        self.requests
            .iter()
            .map(|r| match (&r.error, r.status) {
                (Some(e), _) => format!("{} {} failed: {e}", r.method, r.authority),
                (None, Some(s)) => format!("{} {} {s} {} B", r.method, r.authority, r.bytes),
                (None, None) => format!("{} {} no response", r.method, r.authority),
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

/// True for the addresses a host name may resolve to only with `http_private = true`:
/// unspecified, loopback, private (RFC 1918, IPv6 unique local), shared (100.64.0.0/10),
/// link-local, broadcast and documentation ranges, and IPv4 addresses in those ranges
/// mapped into IPv6.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_unspecified()
                || v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_private(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_unspecified()
                || v6.is_loopback()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
}

/// Where a request may go: the addresses to try, in order, and the TLS server name.
struct Target {
    addrs: Vec<SocketAddr>,
    host: String,
    tls: bool,
}

/// Why a request was not sent: refused by the policy (a message for the tool error) or
/// failed (a `wasi:http` error for the guest).
enum NotSent {
    Refused(String),
    Failed(Error),
}

impl From<Error> for NotSent {
    fn from(e: Error) -> Self {
        NotSent::Failed(e)
    }
}

/// Checks a request to `host` (as in the URI: brackets around IPv6) port `port` against
/// `grant`, resolves it, and checks the addresses.
async fn target(
    grant: &HttpGrant,
    method: &str,
    host: &str,
    port: u16,
    tls: bool,
) -> Result<Target, NotSent> {
    let authority = format!("{host}:{port}");
    if !grant.methods.is_empty() && !grant.methods.iter().any(|m| m == method) {
        return Err(NotSent::Refused(format!(
            "the tool's {method} request to {authority} was refused: its policy allows only {} (policy key http_methods)",
            grant.methods.join(", ")
        )));
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let literal: Option<IpAddr> = bare.parse().ok();
    let name = bare.trim_end_matches('.').to_ascii_lowercase();
    let default_port = if tls { 443 } else { 80 };
    let listed = grant.allow.iter().any(|a| {
        a.port.unwrap_or(default_port) == port
            && match (&a.host, literal) {
                (HttpHost::Ip(ip), Some(l)) => *ip == l,
                (HttpHost::Name(n), None) => *n == name,
                (HttpHost::Subdomains(d), None) => name
                    .strip_suffix(d.as_str())
                    .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.')),
                _ => false,
            }
    });
    if !listed {
        let allowed = if grant.allow.is_empty() {
            "it grants no host".to_string()
        } else {
            let list: Vec<String> = grant.allow.iter().map(ToString::to_string).collect();
            format!("it allows {}", list.join(", "))
        };
        return Err(NotSent::Refused(format!(
            "the tool's {method} request to {authority} was refused: {authority} is not in its policy key http ({allowed}; an entry without a port allows port {default_port} only for {})",
            if tls { "https" } else { "http" }
        )));
    }
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
        && let Some(bad) = addrs.iter().find(|a| is_private(a.ip()))
    {
        return Err(NotSent::Refused(format!(
            "the tool's {method} request to {authority} was refused: {name} resolves to {}, a loopback, private or link-local address, which a host name may reach only with http_private = true in its policy (or list the address itself in http)",
            bad.ip()
        )));
    }
    Ok(Target {
        addrs,
        host: bare.to_string(),
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
        let log = self.log.clone();
        let deadline = self.deadline;
        Box::new(async move {
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
            // What the guest set, within what is left of the call.
            let connect_by = options
                .and_then(|o| o.connect_timeout)
                .map_or(deadline, |t| deadline.min(Instant::now() + t));
            let first_byte = options.and_then(|o| o.first_byte_timeout);
            let target = match tokio::time::timeout_at(
                connect_by.into(),
                target(&grant, &method, &host, port, tls),
            )
            .await
            {
                Err(_) => return Err(fail(Error::DnsTimeout)),
                Ok(Err(NotSent::Failed(e))) => return Err(fail(e)),
                Ok(Err(NotSent::Refused(message))) => {
                    record(&log, index, |l, i| {
                        l.requests[i].error = Some("refused by the policy".into());
                        l.refuse(message, HTTP_DENIED_KIND);
                    });
                    return Err(Error::HttpRequestDenied);
                }
                Ok(Ok(t)) => t,
            };
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
            let limit = grant.max_response_bytes;
            let response = response.map(|incoming| {
                LimitedBody {
                    incoming,
                    seen: 0,
                    limit,
                    log: log.clone(),
                    index,
                }
                .boxed_unsync()
            });
            let io: Boxed<Result<(), Error>> = Box::new(async move {
                if !conn_done {
                    conn.await?;
                }
                Ok(())
            });
            Ok((response, io))
        })
    }
}

/// A response body that counts its bytes into the call's log and fails past `limit`.
struct LimitedBody {
    incoming: hyper::body::Incoming,
    seen: u64,
    limit: u64,
    log: Arc<Mutex<HttpLog>>,
    index: usize,
}

impl Body for LimitedBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.incoming).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let len = frame.data_ref().map_or(0, |d| d.len() as u64);
                this.seen += len;
                let (seen, limit) = (this.seen, this.limit);
                record(&this.log, this.index, |l, i| {
                    l.requests[i].bytes = seen;
                    if seen > limit {
                        let r = &mut l.requests[i];
                        let message = format!(
                            "the response to the tool's {} request to {} is larger than {limit} bytes, the most one response may have (policy key http_max_response_bytes); it was cut there",
                            r.method, r.authority
                        );
                        r.error = Some(format!("body over {limit} bytes"));
                        l.refuse(message, "resource-limit");
                    }
                });
                if seen > limit {
                    return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(limit)))));
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.incoming.size_hint()
    }
}

/// A request's connection: plain TCP, or TLS over it.
trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> Stream for T {}

/// The connection as hyper's I/O.
type Io = wasmtime_wasi_http::io::TokioIo<Box<dyn Stream>>;
