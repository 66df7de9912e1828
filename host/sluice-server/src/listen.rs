//! The accept loop of both HTTP surfaces (`sluice serve`, `sluice mcp --listen`): hyper's
//! HTTP/1.1 connections with a header-read timeout, a bound on connections open at once
//! (capped below the descriptor limit), a bound on connections that have not passed the
//! guard yet, and accept errors that back off instead of spinning
//! (docs/configuration.md#server).
//!
//! - **Header-read timeout** (`server.header_read_timeout_ms`): hyper closes a connection
//!   that has not sent a whole request head that long after it opened or after its last
//!   answer (so it is also the idle keep-alive timeout). Nothing is answered: the client
//!   sees the connection close.
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

use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use sluice_config::ServerLimits;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

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

/// The 503 a connection beyond `server.max_unauthenticated_connections` gets.
fn too_many_unauthenticated(limit: usize) -> Vec<u8> {
    let body = serde_json::json!({
        "error": format!(
            "too many connections that have not passed the guard yet (at most {limit} at once, server.max_unauthenticated_connections): try again once some have sent their request or closed"
        ),
        "limit": limit,
        "key": "server.max_unauthenticated_connections",
    })
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Serves `router` on `listener` under `limits` until `shutdown` completes; then stops
/// accepting, lets each connection finish its request in progress and waits for them.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: &ServerLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
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
        let Ok(unauth) = unauthenticated.clone().try_acquire_owned() else {
            let answer = too_many_unauthenticated(limits.max_unauthenticated_connections);
            tracker.spawn(async move {
                let mut stream = stream;
                // Answer, end the sending side, then read what the client sent until it
                // closes (at most 1 s in all): closing with its request unread would reset
                // the connection, and the client could lose the answer.
                let _ = tokio::time::timeout(Duration::from_secs(1), async {
                    let _ = stream.write_all(&answer).await;
                    let _ = stream.shutdown().await;
                    let mut sink = [0u8; 4096];
                    while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
                })
                .await;
                drop(permit);
            });
            continue;
        };
        let ticket = Arc::new(Ticket(Mutex::new(Some(unauth))));
        let router = router.clone();
        let timeout = limits.header_read_timeout;
        let stop = stop.clone();
        tracker.spawn(async move {
            connection(stream, router, ticket, timeout, stop).await;
            drop(permit);
        });
    }
    drop(listener);
    tracker.close();
    tracker.wait().await;
}

/// Serves one connection until it closes, or until `stop` fires and its request in
/// progress is answered.
async fn connection(
    stream: tokio::net::TcpStream,
    router: Router,
    ticket: Arc<Ticket>,
    header_read_timeout: Duration,
    stop: CancellationToken,
) {
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(ticket.clone());
        let mut router = router.clone();
        async move { tower_service::Service::call(&mut router, request.map(Body::new)).await }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(e) = result {
                tracing::debug!("a connection ended: {e}");
            }
            return;
        }
        () = stop.cancelled() => {}
    }
    conn.as_mut().graceful_shutdown();
    if let Err(e) = conn.await {
        tracing::debug!("a connection ended: {e}");
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
