//! Outbound HTTP through `wasi:http`, by the policy's allowlist
//! (docs/components.md#http-by-allowlist). The test
//! component `tests/components/http-fetch` fetches URLs from a local server on 127.0.0.1
//! (axum, on a thread of its own): a listed IP literal works; an unlisted host or port, a
//! method outside `http_methods`, and a listed name that resolves to loopback without
//! `http_private` are refused with a tool error naming the host and the policy key; a 50 MB
//! response is cut at `http_max_response_bytes`; a server that never answers is ended by
//! the call's timeout.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use serde_json::json;
use sluice_runtime::{HttpAllow, HttpHost, ToolPolicy};
use sluice_tests::{HTTP_FETCH_WASM, Sandbox};
use tokio::sync::oneshot;

use crate::cache;

/// The cap of these tests.
const CAP: u32 = 65_536;

/// What `/hello` answers.
const HELLO: &str = "hello from the test server\n";

/// The size of `/big`'s body: 50 MB.
const BIG_BYTES: usize = 50_000_000;

/// A local HTTP server on 127.0.0.1: `/hello` (200, [`HELLO`]), `/big` (200, 50 MB),
/// `/silent` (never answers). Stops when dropped.
struct TestServer {
    addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

impl TestServer {
    fn start() -> TestServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        listener.set_nonblocking(true).expect("non-blocking");
        let addr = listener.local_addr().expect("its address");
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the server");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                let app = Router::new()
                    .route("/hello", get(|| async { HELLO }))
                    .route("/big", get(|| async { vec![b'x'; BIG_BYTES] }))
                    .route(
                        "/silent",
                        get(|| async {
                            std::future::pending::<()>().await;
                            ""
                        }),
                    );
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = stopped => {}
                }
            });
        });
        TestServer { addr, _stop: stop }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// The http-fetch component under a policy that `adjust` changes (no roots, no HTTP).
fn fetcher(adjust: impl FnOnce(&mut ToolPolicy)) -> Sandbox {
    Sandbox::with_component(cache(), CAP, HTTP_FETCH_WASM, |p| {
        p.roots.clear();
        adjust(p);
    })
}

/// `127.0.0.1:port` as an `http` entry.
fn loopback(port: u16) -> HttpAllow {
    HttpAllow {
        host: HttpHost::Ip(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        port: Some(port),
    }
}

#[test]
fn a_listed_ip_literal_is_fetched() {
    let server = TestServer::start();
    let sb = fetcher(|p| p.http.allow = vec![loopback(server.addr.port())]);
    let result = sb.ok("fetch", &json!({"url": server.url("/hello")}));
    assert_eq!(
        result,
        json!({"status": 200, "body": HELLO, "bytes": HELLO.len()})
    );
    // Another path on the same host and port is allowed too; a 404 is the server's answer.
    let result = sb.ok("fetch", &json!({"url": server.url("/nothing-here")}));
    assert_eq!(result, json!({"status": 404, "body": "", "bytes": 0}));
}

#[test]
fn without_a_grant_the_component_loads_and_every_request_is_refused() {
    let server = TestServer::start();
    let sb = fetcher(|_| {});
    let (error, kind) = sb.err("fetch", &json!({"url": server.url("/hello")}));
    assert_eq!(kind, "http-denied");
    let authority = server.addr.to_string();
    assert_eq!(
        error,
        format!(
            "the tool's GET request to {authority} was refused: {authority} is not in its policy key http (it grants no host)"
        )
    );
}

#[test]
fn an_unlisted_host_or_port_is_refused_naming_it_and_the_key() {
    let server = TestServer::start();
    let port = server.addr.port();
    let sb = fetcher(|p| p.http.allow = vec![loopback(port)]);
    let (error, kind) = sb.err(
        "fetch",
        &json!({"url": format!("http://unlisted.example:{port}/hello")}),
    );
    assert_eq!(kind, "http-denied");
    assert_eq!(
        error,
        format!(
            "the tool's GET request to unlisted.example:{port} was refused: unlisted.example:{port} is not in its policy key http (it allows 127.0.0.1:{port})"
        )
    );
    // The listed address on another port.
    let other = if port == 65_535 { port - 1 } else { port + 1 };
    let (error, kind) = sb.err(
        "fetch",
        &json!({"url": format!("http://127.0.0.1:{other}/hello")}),
    );
    assert_eq!(kind, "http-denied");
    assert!(
        error.starts_with(&format!(
            "the tool's GET request to 127.0.0.1:{other} was refused: 127.0.0.1:{other} is not in its policy key http"
        )),
        "{error}"
    );
}

#[test]
fn a_method_outside_http_methods_is_refused() {
    let server = TestServer::start();
    let sb = fetcher(|p| {
        p.http.allow = vec![loopback(server.addr.port())];
        p.http.methods = vec!["GET".into()];
    });
    let (error, kind) = sb.err(
        "fetch",
        &json!({"url": server.url("/hello"), "method": "POST"}),
    );
    assert_eq!(kind, "http-denied");
    assert_eq!(
        error,
        format!(
            "the tool's POST request to {} was refused: its policy allows only GET (policy key http_methods)",
            server.addr
        )
    );
    assert_eq!(
        sb.ok(
            "fetch",
            &json!({"url": server.url("/hello"), "method": "GET"})
        )["status"],
        200
    );
}

#[test]
fn a_listed_name_resolving_to_loopback_needs_http_private() {
    let server = TestServer::start();
    let port = server.addr.port();
    let localhost = HttpAllow {
        host: HttpHost::Name("localhost".into()),
        port: Some(port),
    };
    let url = format!("http://localhost:{port}/hello");
    let sb = fetcher(|p| p.http.allow = vec![localhost.clone()]);
    let (error, kind) = sb.err("fetch", &json!({"url": url}));
    assert_eq!(kind, "http-denied");
    // localhost resolves to 127.0.0.1 or ::1, whichever the resolver answers first.
    let tail = ", an address that is not globally reachable, which a host name may reach only with http_private = true in its policy (or list the address itself in http)";
    let prefix =
        format!("the tool's GET request to localhost:{port} was refused: localhost resolves to ");
    assert!(
        error == format!("{prefix}127.0.0.1, in 127.0.0.0/8 (loopback){tail}")
            || error == format!("{prefix}::1, in ::1/128 (loopback){tail}"),
        "{error}"
    );
    let sb = fetcher(|p| {
        p.http.allow = vec![localhost];
        p.http.private = true;
    });
    assert_eq!(
        sb.ok("fetch", &json!({"url": url})),
        json!({"status": 200, "body": HELLO, "bytes": HELLO.len()})
    );
}

#[test]
fn a_50_mb_response_is_cut_at_the_body_limit() {
    let server = TestServer::start();
    let sb = fetcher(|p| p.http.allow = vec![loopback(server.addr.port())]);
    let (error, kind) = sb.err("fetch", &json!({"url": server.url("/big")}));
    assert_eq!(kind, "resource-limit");
    assert_eq!(
        error,
        format!(
            "the response to the tool's GET request to {} is larger than 10485760 bytes, the most one response may have (policy key http_max_response_bytes); it was cut there",
            server.addr
        )
    );
    // A limit set in the policy is the one named.
    let sb = fetcher(|p| {
        p.http.allow = vec![loopback(server.addr.port())];
        p.http.max_response_bytes = 1000;
    });
    let (error, kind) = sb.err("fetch", &json!({"url": server.url("/big")}));
    assert_eq!(kind, "resource-limit");
    assert!(error.contains("larger than 1000 bytes"), "{error}");
}

#[test]
fn a_server_that_never_answers_is_ended_by_the_calls_timeout() {
    let server = TestServer::start();
    let sb = fetcher(|p| {
        p.http.allow = vec![loopback(server.addr.port())];
        p.timeout = Duration::from_millis(1000);
    });
    let started = Instant::now();
    let (error, kind) = sb.err("fetch", &json!({"url": server.url("/silent")}));
    let elapsed = started.elapsed();
    assert_eq!(kind, "timeout");
    assert_eq!(
        error,
        "the tool ran past its timeout of 1000 ms and was stopped; raise timeout_ms in its policy (1 to 3600000 ms) if it needs longer"
    );
    // The pool ends a call within its timeout plus 200 ms; 1 s more of slack for a loaded
    // 2-core machine.
    assert!(
        elapsed < Duration::from_millis(2200),
        "the call took {elapsed:?}"
    );
    // The next call works.
    assert_eq!(
        sb.ok("fetch", &json!({"url": server.url("/hello")}))["status"],
        200
    );
}

#[test]
fn the_port_note_appears_only_for_a_portless_entry_of_the_host() {
    let server = TestServer::start();
    let port = server.addr.port();
    // 127.0.0.1 listed without a port: port 80 only, so the note says why.
    let sb = fetcher(|p| {
        p.http.allow = vec![HttpAllow {
            host: HttpHost::Ip(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            port: None,
        }]
    });
    let (error, kind) = sb.err("fetch", &json!({"url": server.url("/hello")}));
    assert_eq!(kind, "http-denied");
    assert_eq!(
        error,
        format!(
            "the tool's GET request to 127.0.0.1:{port} was refused: 127.0.0.1:{port} is not in its policy key http (it allows 127.0.0.1; an entry without a port allows port 80 only for http)"
        )
    );
    // Another host: no entry without a port names it, so no note.
    let (error, _) = sb.err(
        "fetch",
        &json!({"url": format!("http://127.0.0.2:{port}/hello")}),
    );
    assert_eq!(
        error,
        format!(
            "the tool's GET request to 127.0.0.2:{port} was refused: 127.0.0.2:{port} is not in its policy key http (it allows 127.0.0.1)"
        )
    );
}

#[test]
fn hosts_written_as_other_ipv4_forms_are_refused_before_resolution() {
    let server = TestServer::start();
    let port = server.addr.port();
    // A listed name, with private addresses allowed: were `2130706433` resolved, it would
    // reach 127.0.0.1.
    let sb = fetcher(|p| {
        p.http.allow = vec![HttpAllow {
            host: HttpHost::Name("localhost".into()),
            port: Some(port),
        }];
        p.http.private = true;
    });
    for host in ["2130706433", "0x7f.1", "0177.0.0.1", "127.0.0.1."] {
        let (error, kind) = sb.err(
            "fetch",
            &json!({"url": format!("http://{host}:{port}/hello")}),
        );
        assert_eq!(kind, "http-denied", "{host}");
        assert_eq!(
            error,
            format!(
                "the tool's GET request to {host}:{port} was refused: the host {host} is an IPv4 address written in another form than four decimal numbers a.b.c.d, which the policy does not match (write the address as a.b.c.d, and list it in the policy key http)"
            )
        );
    }
    // The listed name still works.
    assert_eq!(
        sb.ok(
            "fetch",
            &json!({"url": format!("http://localhost:{port}/hello")})
        )["status"],
        200
    );
}

#[test]
fn credentials_in_the_url_are_refused_and_never_echoed() {
    let server = TestServer::start();
    let port = server.addr.port();
    let sb = fetcher(|p| p.http.allow = vec![loopback(port)]);
    let (error, kind) = sb.err(
        "fetch",
        &json!({"url": format!("http://alice:hunter2pw@127.0.0.1:{port}/hello")}),
    );
    assert_eq!(kind, "http-denied");
    assert_eq!(
        error,
        format!(
            "the tool's GET request to 127.0.0.1:{port} was refused: credentials in the URL are not sent; use an Authorization header"
        )
    );
    // Without the credentials the same request goes through.
    assert_eq!(
        sb.ok("fetch", &json!({"url": server.url("/hello")}))["status"],
        200
    );
}
