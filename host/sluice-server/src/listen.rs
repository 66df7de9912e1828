//! The accept loop of the HTTP surfaces (`sluice serve`, `sluice mcp --listen`,
//! `telemetry.metrics_listen`): hyper's HTTP/1.1 connections, or with TLS
//! ([`ServerTls`], `[server.tls]`) HTTPS with HTTP/2 or HTTP/1.1 as ALPN chose; a
//! header-read timeout, a bound on connections open at once (capped below the descriptor
//! limit), a bound on connections that have not passed the guard yet, and accept errors
//! that back off instead of spinning (docs/configuration.md#server).
//!
//! - **Header-read timeout** (`server.header_read_timeout_ms`): hyper closes an HTTP/1.1
//!   connection that has not sent a whole request head that long after it opened or after
//!   its last answer (so it is also the idle keep-alive timeout). Nothing is answered: the
//!   client sees the connection close. With TLS the handshake must also end within that
//!   time of the accept; an HTTP/2 connection is closed (`GOAWAY`, then the close once its
//!   streams end) once no request has been in progress for that long.
//! - **TLS**: a connection whose first byte starts no TLS record but a plain HTTP request
//!   is answered 400 (a JSON body saying to use `https://`) and closed. An HTTP/2 request
//!   carries no `Host` header: its `:authority` is given to the guard as `Host`.
//! - **Connections** (`server.max_connections`, capped at the soft `RLIMIT_NOFILE` less
//!   [`DESCRIPTOR_RESERVE`]): the loop takes a permit before it accepts, so connections
//!   beyond the limit wait in the kernel's backlog, and the store, the tools and the
//!   listener keep descriptors to work with.
//! - **Unauthenticated connections** (`server.max_unauthenticated_connections`): a
//!   connection counts until one of its requests passes the guard (`Ticket`); one beyond
//!   the limit is answered 503 (a JSON body naming the limit and its key) and closed.
//! - **Accept errors**: a connection reset before it was accepted is skipped; any other
//!   error (`EMFILE`, `ENFILE`, `ENOBUFS`) waits [`ACCEPT_BACKOFF`] before the next accept,
//!   with one warning per streak.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulConnection;
use sluice_config::ServerLimits;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::tls::ServerTls;

/// Descriptors kept for everything but connections (the store's files or its PostgreSQL
/// pools of up to 81 connections, tool components, logs, the runtime's own): 128.
pub const DESCRIPTOR_RESERVE: u64 = 128;

/// How long the loop waits after an accept error other than a connection reset: 100 ms.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// A connection's standing with the guard, in every request's extensions: it holds a
/// permit of the unauthenticated connections until [`Ticket::passed`].
#[derive(Debug)]
pub(crate) struct Ticket(Mutex<Option<OwnedSemaphorePermit>>);

impl Ticket {
    /// One of the connection's requests passed the guard: it no longer counts as
    /// unauthenticated.
    pub(crate) fn passed(&self) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

/// The connections a listener may hold at once: `configured` capped at `nofile` (the soft
/// descriptor limit, `None` when unknown) less [`DESCRIPTOR_RESERVE`], and never below half
/// of `nofile` or 1.
pub fn connection_cap(configured: usize, nofile: Option<u64>) -> usize {
    let Some(nofile) = nofile else {
        return configured.max(1);
    };
    let room = nofile.saturating_sub(DESCRIPTOR_RESERVE).max(nofile / 2);
    configured
        .min(usize::try_from(room).unwrap_or(usize::MAX))
        .max(1)
}

/// The soft `RLIMIT_NOFILE` of this process, if it has one.
fn soft_nofile() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

/// The JSON body of the 503 a connection beyond `server.max_unauthenticated_connections`
/// gets.
fn too_many_unauthenticated_body(limit: usize) -> String {
    serde_json::json!({
        "error": format!(
            "too many connections that have not passed the guard yet (at most {limit} at once, server.max_unauthenticated_connections): try again once some have sent their request or closed"
        ),
        "limit": limit,
        "key": "server.max_unauthenticated_connections",
    })
    .to_string()
}

/// The 503 a connection beyond `server.max_unauthenticated_connections` gets, as plain
/// HTTP/1.1 bytes.
fn too_many_unauthenticated(limit: usize) -> Vec<u8> {
    let body = too_many_unauthenticated_body(limit);
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The 400 a plain HTTP request sent to a TLS listener gets (before any handshake).
fn plain_http_to_tls() -> Vec<u8> {
    let body = serde_json::json!({
        "error": "this port serves HTTPS (server.tls): send the request to https://, not http://",
        "key": "server.tls",
    })
    .to_string();
    format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Writes `answer` to `stream`, ends the sending side, then reads what the client sent until
/// it closes (at most 1 s in all): closing with its request unread would reset the
/// connection, and the client could lose the answer.
async fn answer_and_close(mut stream: TcpStream, answer: &[u8]) {
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(answer).await;
        let _ = stream.shutdown().await;
        let mut sink = [0u8; 4096];
        while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
}

/// Serves `router` on `listener` under `limits`, over TLS when `tls` is given (reloading
/// its files as they change), until `shutdown` completes; then stops accepting, lets each
/// connection finish its request in progress and waits for them.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: &ServerLimits,
    tls: Option<&ServerTls>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let acceptor = tls.map(|tls| {
        tls.watch();
        tls.acceptor()
    });
    let cap = connection_cap(limits.max_connections, soft_nofile());
    if cap < limits.max_connections {
        tracing::warn!(
            "serving at most {cap} connections at once, not server.max_connections = {}: the descriptor limit (ulimit -n) keeps {DESCRIPTOR_RESERVE} descriptors for the rest of the server",
            limits.max_connections
        );
    }
    let connections = Arc::new(Semaphore::new(cap));
    let unauthenticated = Arc::new(Semaphore::new(limits.max_unauthenticated_connections));
    let stop = CancellationToken::new();
    let stopping = stop.clone();
    tokio::spawn(async move {
        shutdown.await;
        stopping.cancel();
    });
    let tracker = TaskTracker::new();
    let mut failing = false;
    loop {
        let permit = tokio::select! {
            p = connections.clone().acquire_owned() => p,
            () = stop.cancelled() => break,
        };
        let Ok(permit) = permit else { break };
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = stop.cancelled() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                failing = false;
                stream
            }
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                if !failing {
                    tracing::warn!(
                        "cannot accept a connection: {e}; retrying every {} ms (the descriptor limit, ulimit -n, may be too low for server.max_connections)",
                        ACCEPT_BACKOFF.as_millis()
                    );
                }
                failing = true;
                drop(permit);
                tokio::select! {
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => {}
                    () = stop.cancelled() => break,
                }
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let timeout = limits.header_read_timeout;
        let stop = stop.clone();
        let Ok(unauth) = unauthenticated.clone().try_acquire_owned() else {
            let limit = limits.max_unauthenticated_connections;
            let acceptor = acceptor.clone();
            tracker.spawn(async move {
                match acceptor {
                    None => answer_and_close(stream, &too_many_unauthenticated(limit)).await,
                    Some(acceptor) => {
                        // The answer goes over TLS; all of it within the timeout and 1 s.
                        let done = stop.child_token();
                        let serves = Serves::Refusal {
                            limit,
                            done: done.clone(),
                        };
                        let refuse = secure(stream, &acceptor, timeout, &done, serves);
                        let _ =
                            tokio::time::timeout(timeout + Duration::from_secs(1), refuse).await;
                    }
                }
                drop(permit);
            });
            continue;
        };
        let ticket = Arc::new(Ticket(Mutex::new(Some(unauth))));
        let router = router.clone();
        let acceptor = acceptor.clone();
        tracker.spawn(async move {
            let serves = Serves::Router { router, ticket };
            match acceptor {
                None => {
                    let service = ConnService {
                        serves,
                        activity: None,
                    };
                    let conn = http1(timeout).serve_connection(TokioIo::new(stream), service);
                    drive(conn, &stop, std::future::pending()).await;
                }
                Some(acceptor) => secure(stream, &acceptor, timeout, &stop, serves).await,
            }
            drop(permit);
        });
    }
    drop(listener);
    tracker.close();
    tracker.wait().await;
}

/// The HTTP/1.1 side: hyper's, with the header-read timeout.
fn http1(header_read_timeout: Duration) -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    builder
}

/// Drives `conn` until it ends, or until `stop` fires or `idle` completes; then shuts it
/// down gracefully (its request in progress is answered) and waits for it.
async fn drive<C>(conn: C, stop: &CancellationToken, idle: impl Future<Output = ()>)
where
    C: GracefulConnection,
    C::Error: std::fmt::Display,
{
    tokio::pin!(conn);
    tokio::pin!(idle);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(e) = result {
                tracing::debug!("a connection ended: {e}");
            }
            return;
        }
        () = stop.cancelled() => {}
        () = &mut idle => {}
    }
    conn.as_mut().graceful_shutdown();
    if let Err(e) = conn.await {
        tracing::debug!("a connection ended: {e}");
    }
}

/// What a connection serves.
#[derive(Clone)]
enum Serves {
    /// The router, with the connection's [`Ticket`] in every request's extensions.
    Router { router: Router, ticket: Arc<Ticket> },
    /// The 503 of a connection beyond `server.max_unauthenticated_connections`: every
    /// request gets it, and the first ends the connection (`done`).
    Refusal {
        limit: usize,
        done: CancellationToken,
    },
}

/// The hyper service of one connection: what it serves, and on HTTP/2 its [`Activity`]
/// (requests get their `:authority` as `Host`).
struct ConnService {
    serves: Serves,
    activity: Option<Arc<Activity>>,
}

impl hyper::service::Service<Request<Incoming>> for ConnService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = std::pin::Pin<
        Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send + 'static>,
    >;

    fn call(&self, mut request: Request<Incoming>) -> Self::Future {
        match &self.serves {
            Serves::Router { router, ticket } => {
                request.extensions_mut().insert(ticket.clone());
                if self.activity.is_some() {
                    authority_as_host(&mut request);
                }
                let busy = self.activity.as_ref().map(Activity::begin);
                let mut router = router.clone();
                Box::pin(async move {
                    let response =
                        tower_service::Service::call(&mut router, request.map(Body::new)).await;
                    drop(busy);
                    response
                })
            }
            Serves::Refusal { limit, done } => {
                done.cancel();
                let mut response = Response::new(Body::from(too_many_unauthenticated_body(*limit)));
                *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                let headers = response.headers_mut();
                headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                Box::pin(std::future::ready(Ok(response)))
            }
        }
    }
}

/// Serves the TLS connection `stream`: a plain HTTP request is answered 400; otherwise the
/// handshake (within `timeout` of now), then HTTP/2 or HTTP/1.1 as ALPN chose, serving
/// `serves`, until it closes, `done` fires, or (HTTP/2) it has been idle for `timeout`.
async fn secure(
    stream: TcpStream,
    acceptor: &tokio_rustls::TlsAcceptor,
    timeout: Duration,
    done: &CancellationToken,
    serves: Serves,
) {
    let deadline = Instant::now() + timeout;
    let mut first = [0u8; 1];
    let peeked = tokio::select! {
        p = tokio::time::timeout_at(deadline, stream.peek(&mut first)) => p,
        () = done.cancelled() => return,
    };
    match peeked {
        // A TLS record of the handshake starts with 22.
        Ok(Ok(1)) if first[0] == 0x16 => {}
        Ok(Ok(1)) if first[0].is_ascii_alphabetic() => {
            answer_and_close(stream, &plain_http_to_tls()).await;
            return;
        }
        _ => return,
    }
    let accepted = tokio::select! {
        a = tokio::time::timeout_at(deadline, acceptor.accept(stream)) => a,
        () = done.cancelled() => return,
    };
    let stream = match accepted {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            tracing::debug!("a TLS handshake failed: {e}");
            return;
        }
        Err(_) => {
            tracing::debug!(
                "a TLS handshake did not end within {} ms (server.header_read_timeout_ms)",
                timeout.as_millis()
            );
            return;
        }
    };
    if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
        let activity = Arc::new(Activity {
            open: AtomicUsize::new(0),
            last: Mutex::new(Instant::now()),
        });
        let service = ConnService {
            serves,
            activity: Some(activity.clone()),
        };
        let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
        builder.timer(TokioTimer::new());
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        drive(conn, done, activity.idle(timeout)).await;
    } else {
        let service = ConnService {
            serves,
            activity: None,
        };
        let conn = http1(timeout).serve_connection(TokioIo::new(stream), service);
        drive(conn, done, std::future::pending()).await;
    }
}

/// An HTTP/2 request's `:authority` as its `Host` header, for the guard (HTTP/2 has no
/// `Host`; RFC 9113 section 8.3.1 makes `:authority` its equivalent). A `Host` the client
/// also sent is replaced: the authority is what the request is for.
fn authority_as_host<B>(request: &mut Request<B>) {
    let authority = request
        .uri()
        .authority()
        .and_then(|a| HeaderValue::from_str(a.as_str()).ok());
    if let Some(authority) = authority {
        request.headers_mut().insert(header::HOST, authority);
    }
}

/// The requests in progress on an HTTP/2 connection, and when the last one ended (or the
/// connection opened).
struct Activity {
    open: AtomicUsize,
    last: Mutex<Instant>,
}

/// A request in progress; its drop ends it.
struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        *self.0.last.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Activity {
    fn begin(self: &Arc<Self>) -> Busy {
        self.open.fetch_add(1, Ordering::SeqCst);
        Busy(self.clone())
    }

    /// Completes once no request has been in progress for `timeout`.
    async fn idle(&self, timeout: Duration) {
        loop {
            let last = *self.last.lock().unwrap_or_else(PoisonError::into_inner);
            tokio::time::sleep_until(last + timeout).await;
            let last = *self.last.lock().unwrap_or_else(PoisonError::into_inner);
            if self.open.load(Ordering::SeqCst) == 0 && last + timeout <= Instant::now() {
                return;
            }
            if self.open.load(Ordering::SeqCst) > 0 {
                tokio::time::sleep(timeout).await;
            }
        }
    }
}

/// An accept error about the one connection (it was reset before it was accepted), after
/// which the next accept may go on at once.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_descriptors_for_the_rest() {
        assert_eq!(connection_cap(1024, Some(1024)), 896);
        assert_eq!(connection_cap(100, Some(1024)), 100);
        assert_eq!(connection_cap(1024, Some(200)), 100);
        assert_eq!(connection_cap(1024, Some(1)), 1);
        assert_eq!(connection_cap(1024, None), 1024);
        assert_eq!(connection_cap(5000, Some(1 << 20)), 5000);
    }

    #[test]
    fn the_unauthenticated_refusal_is_a_whole_json_answer() {
        let answer = String::from_utf8(too_many_unauthenticated(2)).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
        assert!(head.contains(&format!("content-length: {}\r\n", body.len())));
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["limit"], 2);
        assert_eq!(body["key"], "server.max_unauthenticated_connections");
    }
}
