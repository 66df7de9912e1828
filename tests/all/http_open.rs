//! Open `wasi:http` requests hold host descriptors (docs/configuration.md#outbound-http):
//! one call may have at most `http_max_connections` open at once (one more stops it with a
//! `resource-limit` error naming the key), and whatever a call left open is closed when it
//! ends. The test component `tests/components/http-fetch` (`flood`) starts requests to a
//! local server on 127.0.0.1 that accepts connections and never answers, and keeps them
//! open; the descriptors this process holds for connections to that server are counted in
//! `/proc/self/fd` after each call: none are left.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use sluice_runtime::{HttpAllow, HttpHost, ToolPolicy};
use sluice_tests::{HTTP_FETCH_WASM, Sandbox};

use crate::cache;

/// The cap of these tests.
const CAP: u32 = 65_536;

/// How long `flood` waits after starting its requests, for the host to connect them, in ms.
const WAIT_MS: u32 = 1_000;

/// A server on 127.0.0.1 that accepts every connection and never answers, holding the
/// accepted sockets.
struct Silent {
    addr: SocketAddr,
    accepted: Arc<Mutex<Vec<TcpStream>>>,
}

impl Silent {
    fn start() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("its address");
        let accepted = Arc::new(Mutex::new(Vec::new()));
        let held = accepted.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                held.lock().unwrap().push(stream);
            }
        });
        Silent { addr, accepted }
    }

    /// Connections accepted so far.
    fn accepted(&self) -> usize {
        self.accepted.lock().unwrap().len()
    }

    fn url(&self) -> String {
        format!("http://{}/never", self.addr)
    }
}

/// How many descriptors of this process are sockets connected to `server` (the client
/// side: their remote address is the server's), from `/proc/net/tcp` and `/proc/self/fd`.
fn client_sockets(server: SocketAddr) -> usize {
    let IpAddr::V4(ip) = server.ip() else {
        panic!("an IPv4 server")
    };
    // /proc/net/tcp writes an IPv4 address as the 32-bit number in host order, in hex.
    let remote = format!(
        "{:08X}:{:04X}",
        u32::from_ne_bytes(ip.octets()),
        server.port()
    );
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    let inodes: HashSet<String> = table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            (cols.get(2) == Some(&remote.as_str())).then(|| cols[9].to_string())
        })
        .collect();
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter(|target| {
            let t = target.to_string_lossy();
            t.strip_prefix("socket:[")
                .and_then(|rest| rest.strip_suffix(']'))
                .is_some_and(|inode| inodes.contains(inode))
        })
        .count()
}

/// The http-fetch component granted `server` only, `adjust`ed.
fn fetcher(server: &Silent, adjust: impl FnOnce(&mut ToolPolicy)) -> Sandbox {
    let port = server.addr.port();
    Sandbox::with_component(cache(), CAP, HTTP_FETCH_WASM, |p| {
        p.roots.clear();
        p.http.allow = vec![HttpAllow {
            host: HttpHost::Ip(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            port: Some(port),
        }];
        adjust(p);
    })
}

fn flood_args(server: &Silent, count: u32) -> Value {
    json!({"url": server.url(), "count": count, "waitMs": WAIT_MS})
}

#[cfg(target_os = "linux")]
#[test]
fn requests_left_open_are_closed_when_their_calls_end() {
    let server = Silent::start();
    let sb = fetcher(&server, |_| {});
    assert_eq!(client_sockets(server.addr), 0);
    // One call, at the default bound: its 16 connections are made, and gone after it.
    assert_eq!(sb.ok("flood", &flood_args(&server, 16)), json!(16));
    assert_eq!(server.accepted(), 16);
    assert_eq!(client_sockets(server.addr), 0);
    // Three calls at once, as in the report that found 19,997 descriptors left open.
    let args = flood_args(&server, 16).to_string();
    let toolbox = sb.toolbox.clone();
    let observations = sb.block_on(async {
        tokio::join!(
            toolbox.call("flood", &args, CAP),
            toolbox.call("flood", &args, CAP),
            toolbox.call("flood", &args, CAP),
        )
    });
    for o in [observations.0, observations.1, observations.2] {
        assert_eq!(o.text(), r#"{"ok":true,"result":16}"#);
    }
    assert_eq!(server.accepted(), 64);
    assert_eq!(client_sockets(server.addr), 0);
}

#[cfg(target_os = "linux")]
#[test]
fn a_request_past_http_max_connections_stops_the_call_naming_the_key() {
    let server = Silent::start();
    let sb = fetcher(&server, |_| {});
    assert_eq!(
        sb.err("flood", &flood_args(&server, 17)),
        (
            "the tool had 16 HTTP requests open at once and started another; one call may have at most 16 open at once (policy key http_max_connections, at most 256); a request is open until its response has been read to the end or dropped".to_string(),
            "resource-limit".to_string()
        )
    );
    assert_eq!(client_sockets(server.addr), 0);
    // The key raises the bound.
    let sb = fetcher(&server, |p| p.http.max_connections = 40);
    assert_eq!(sb.ok("flood", &flood_args(&server, 40)), json!(40));
    assert_eq!(client_sockets(server.addr), 0);
    let (message, kind) = sb.err("flood", &flood_args(&server, 41));
    assert_eq!(kind, "resource-limit");
    assert!(
        message.starts_with("the tool had 40 HTTP requests open at once and started another; one call may have at most 40 open at once (policy key http_max_connections, at most 256)"),
        "{message}"
    );
    assert_eq!(client_sockets(server.addr), 0);
}
