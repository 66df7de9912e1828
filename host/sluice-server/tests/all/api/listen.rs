//! The listener's limits over raw TCP (docs/configuration.md#server): a connection that
//! stops inside its request head is closed after `server.header_read_timeout_ms` (before,
//! such a connection stayed open for as long as the client kept it: 75 s and counting), on
//! the API and on `sluice mcp --listen`'s `/mcp`; connections none of whose requests has
//! passed the guard are bounded (503 beyond), so 1,124 stalled connections no longer make
//! `/healthz` wait; connections beyond `server.max_connections` wait in the backlog.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_runtime::{LiveToolbox, Toolbox};
use sluice_server::{ServeOptions, ServerLimits};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::{Setup, TestServer, engine};

/// The longest a test waits for a connection to close or answer, where the bug is that it
/// never does: 30 s.
const NEVER: Duration = Duration::from_secs(30);

/// A request head cut off before its blank line.
const STALLED: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow";

fn limits(header_read_ms: u64, unauthenticated: usize, connections: usize) -> ServerLimits {
    ServerLimits {
        header_read_timeout: Duration::from_millis(header_read_ms),
        max_connections: connections,
        max_unauthenticated_connections: unauthenticated,
        ..ServerLimits::default()
    }
}

fn addr(base: &str) -> String {
    base.trim_start_matches("http://").to_string()
}

/// Reads until the server closes the connection and returns what it sent.
async fn read_to_close(stream: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    tokio::time::timeout(NEVER, stream.read_to_end(&mut out))
        .await
        .expect("the server closes the connection")
        .unwrap();
    out
}

/// Sends a whole `GET path` on a new connection and returns (status, body).
pub(crate) async fn raw(addr: &str, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let answer = String::from_utf8(read_to_close(&mut stream).await).unwrap();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("an HTTP answer: {answer:?}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn get(path: &str, addr: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
}

async fn stalled(addr: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(STALLED).await.unwrap();
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_request_head_is_closed() {
    let server = TestServer::start(Setup {
        limits: limits(300, 128, 1024),
        ..Setup::default()
    })
    .await;
    let addr = addr(&server.base);
    let mut slow = stalled(&addr).await;
    let t0 = Instant::now();
    // Closed without an answer (hyper sends none for a head that never ends).
    assert_eq!(read_to_close(&mut slow).await, b"");
    #[allow(clippy::print_stderr)]
    {
        eprintln!("a stalled head was closed after {:?}", t0.elapsed());
    }
    // A connection that sends nothing at all is closed the same way, and so is an idle
    // keep-alive connection after its answer.
    let mut silent = TcpStream::connect(&addr).await.unwrap();
    assert_eq!(read_to_close(&mut silent).await, b"");
    let mut idle = TcpStream::connect(&addr).await.unwrap();
    idle.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let answer = String::from_utf8(read_to_close(&mut idle).await).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_connections_are_bounded() {
    let server = TestServer::start(Setup {
        limits: limits(60_000, 3, 1024),
        ..Setup::default()
    })
    .await;
    let addr = addr(&server.base);
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(stalled(&addr).await);
    }
    // Wait until the server has taken all three (a 4th answers 503 once it has).
    let deadline = Instant::now() + NEVER;
    let (status, body) = loop {
        let (status, body) = raw(&addr, &get("/healthz", &addr)).await;
        if status == 503 || Instant::now() > deadline {
            break (status, body);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(status, 503, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["limit"], 3);
    assert_eq!(body["key"], "server.max_unauthenticated_connections");
    assert_eq!(
        body["error"],
        "too many connections that have not passed the guard yet (at most 3 at once, server.max_unauthenticated_connections): try again once some have sent their request or closed"
    );
    // One of them finishes its head: it passes the guard, no longer counts, and the
    // server answers others again.
    let mut first = held.remove(0);
    first
        .write_all(b"\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let answer = String::from_utf8(read_to_close(&mut first).await).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    let (status, body) = raw(&addr, &get("/healthz", &addr)).await;
    assert_eq!(status, 200, "{body}");
    drop(held);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_limit_wait_for_one_to_close() {
    let server = TestServer::start(Setup {
        limits: limits(60_000, 128, 2),
        ..Setup::default()
    })
    .await;
    let addr = addr(&server.base);
    let a = stalled(&addr).await;
    let _b = stalled(&addr).await;
    let mut waiting = TcpStream::connect(&addr).await.unwrap();
    waiting
        .write_all(get("/healthz", &addr).as_bytes())
        .await
        .unwrap();
    // Not served while two connections are open…
    let mut byte = [0u8; 1];
    let early = tokio::time::timeout(Duration::from_millis(300), waiting.read(&mut byte)).await;
    assert!(early.is_err(), "answered beyond max_connections: {early:?}");
    // …and served once one closes.
    drop(a);
    let answer = String::from_utf8(read_to_close(&mut waiting).await).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_listener_closes_a_stalled_head_too() {
    let toolbox = Toolbox::load(engine(), &[]).expect("an empty toolbox");
    let mcp = sluice_mcp::McpServer::live(
        Arc::new(LiveToolbox::new(toolbox)),
        sluice_mcp::McpOptions::default(),
    );
    let options = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        limits: limits(300, 128, 1024),
        ..ServeOptions::default()
    };
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(sluice_server::mcp::serve_mcp(
        mcp,
        options,
        move |a| {
            let _ = bound_tx.send(a);
        },
        async move {
            let _ = stopped.await;
        },
    ));
    let addr = bound_rx.await.unwrap().to_string();
    let mut slow = TcpStream::connect(&addr).await.unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json")
        .await
        .unwrap();
    assert_eq!(read_to_close(&mut slow).await, b"");
    let _ = stop.send(());
    serving.await.unwrap().unwrap();
}
