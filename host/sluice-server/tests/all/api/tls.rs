//! HTTPS (`[server.tls]`, docs/configuration.md#servertls): the API, `/mcp` and the
//! console's `/` over TLS to a client that trusts only a test CA made here (rcgen; no key
//! is committed); plain HTTP to the TLS port answered 400; HTTP/2 when the client offers
//! `h2`; and a certificate swapped while serving, which new connections get.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use serde_json::{Value, json};
use sluice_config::TlsFiles;
use sluice_runtime::LiveToolbox;
use sluice_server::tls::ServerTls;
use sluice_server::{ServeOptions, Server, ServerLimits};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};

use super::{Setup, make_root, services, toolbox};

/// The longest a test waits for a reload, where the bug is that it never comes: 30 s.
const NEVER: Duration = Duration::from_secs(30);

/// A test CA: its certificate (PEM) and what signs with it.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        Ca {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A server certificate for `localhost` and 127.0.0.1 named `cn`: (certificate PEM,
    /// key PEM, certificate DER).
    fn server(&self, cn: &str) -> (String, String, Vec<u8>) {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem(), cert.der().to_vec())
    }
}

/// Writes a certificate and key to `dir` (replacing them by rename, as a certificate
/// manager does) and returns their paths.
fn write_pair(dir: &Path, cert: &str, key: &str) -> TlsFiles {
    let files = TlsFiles {
        cert_file: dir.join("server.crt"),
        key_file: dir.join("server.key"),
    };
    for (path, text) in [(&files.cert_file, cert), (&files.key_file, key)] {
        let next = path.with_extension("next");
        std::fs::write(&next, text).unwrap();
        std::fs::rename(&next, path).unwrap();
    }
    files
}

/// A server with MCP on 127.0.0.1 over `tls`; it serves until the test ends.
async fn serve(tls: ServerTls, dir: &Path) -> SocketAddr {
    serve_with(tls, dir, ServerLimits::default()).await
}

/// [`serve`] under `limits`.
async fn serve_with(tls: ServerTls, dir: &Path, limits: ServerLimits) -> SocketAddr {
    let root = make_root(dir);
    let setup = Setup::default();
    let services = services(dir, &root, &setup);
    let mcp = sluice_mcp::McpServer::live(
        Arc::new(LiveToolbox::from_arc(toolbox(&root, &[]))),
        sluice_mcp::McpOptions::default(),
    );
    let options = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        tls: Some(tls),
        limits,
        ..ServeOptions::default()
    };
    let bound = Server::new(services, options)
        .unwrap()
        .with_mcp(mcp)
        .bind()
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.serve(std::future::pending()));
    addr
}

/// reqwest trusting only `ca`, with `localhost` pinned to `addr`.
fn client(ca: &str, addr: SocketAddr) -> reqwest::Client {
    reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).unwrap())
        .resolve("localhost", addr)
        .build()
        .unwrap()
}

/// A TLS connection to `addr` trusting `cas`, offering `alpn`.
async fn connect(
    addr: SocketAddr,
    cas: &[&str],
    alpn: &[&[u8]],
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    for ca in cas {
        roots
            .add(CertificateDer::from_pem_slice(ca.as_bytes()).unwrap())
            .unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = TcpStream::connect(addr).await?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
}

use rustls::pki_types::pem::PemObject as _;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_mcp_and_console_are_served_over_https() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("Sluice test CA");
    let (cert, key, _) = ca.server("sluice one");
    let files = write_pair(dir.path(), &cert, &key);
    let addr = serve(ServerTls::load(&files).unwrap(), dir.path()).await;
    let base = format!("https://localhost:{}", addr.port());
    let client = client(&ca.pem, addr);

    // The API: a session made and read back.
    let made = client
        .post(format!("{base}/sessions"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201);
    assert_eq!(made.version(), reqwest::Version::HTTP_11);
    let id = made.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let read = client
        .get(format!("{base}/sessions/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    assert_eq!(
        read.json::<Value>().await.unwrap()["session"]["id"],
        id.as_str()
    );

    // MCP over Streamable HTTP.
    let listed = client
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 200);
    let listed: Value = listed.json().await.unwrap();
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"read_file"), "{names:?}");

    // The console's page.
    let page = client.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");

    // Plain HTTP to the TLS port: 400, saying to use https://.
    let plain = reqwest::Client::new()
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 400);
    assert_eq!(
        plain.json::<Value>().await.unwrap(),
        json!({
            "error": "this port serves HTTPS (server.tls): send the request to https://, not http://",
            "key": "server.tls",
        })
    );

    // A client that trusts other CAs only refuses the certificate.
    let other = client_error(&Ca::new("Another CA").pem, addr, &base).await;
    assert!(other.contains("UnknownIssuer"), "{other}");
}

/// The error of a request to `base/healthz` by a client trusting only `ca`, with its
/// sources.
async fn client_error(ca: &str, addr: SocketAddr, base: &str) -> String {
    let e = client(ca, addr)
        .get(format!("{base}/healthz"))
        .send()
        .await
        .unwrap_err();
    let mut text = format!("{e:?}");
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alpn_picks_h2_when_offered_and_the_guard_reads_its_authority() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("Sluice test CA");
    let (cert, key, _) = ca.server("sluice one");
    let files = write_pair(dir.path(), &cert, &key);
    let addr = serve(ServerTls::load(&files).unwrap(), dir.path()).await;

    let h1 = connect(addr, &[&ca.pem], &[b"http/1.1"]).await.unwrap();
    assert_eq!(h1.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));

    let h2 = connect(addr, &[&ca.pem], &[b"h2", b"http/1.1"])
        .await
        .unwrap();
    assert_eq!(h2.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut sender, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(h2),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    // HTTP/2 has no `Host`: the guard judges `:authority` (the listening address passes, a
    // name the server does not answer to is refused).
    for (authority, status) in [
        (format!("127.0.0.1:{}", addr.port()), 200),
        (format!("localhost:{}", addr.port()), 200),
        (format!("evil.example:{}", addr.port()), 403),
    ] {
        let request = hyper::Request::get(format!("https://{authority}/sessions"))
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.version(), hyper::Version::HTTP_2);
        assert_eq!(response.status(), status, "{authority}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_swapped_while_serving_reaches_new_connections() {
    let dir = tempfile::tempdir().unwrap();
    let first_ca = Ca::new("Sluice test CA one");
    let (cert, key, first_der) = first_ca.server("sluice one");
    let files = write_pair(dir.path(), &cert, &key);
    let addr = serve(ServerTls::load(&files).unwrap(), dir.path()).await;
    let open = connect(addr, &[&first_ca.pem], &[b"http/1.1"])
        .await
        .unwrap();
    assert_eq!(peer(&open), first_der);

    // A new certificate from another CA, for another name, written over the old.
    let second_ca = Ca::new("Sluice test CA two");
    let (cert, key, second_der) = second_ca.server("sluice two");
    write_pair(dir.path(), &cert, &key);
    let cas = [first_ca.pem.as_str(), second_ca.pem.as_str()];
    let served = tokio::time::timeout(NEVER, async {
        loop {
            let fresh = connect(addr, &cas, &[b"http/1.1"]).await.unwrap();
            if peer(&fresh) != first_der {
                return peer(&fresh);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("new connections get the new certificate");
    assert_eq!(served, second_der);
    // The connection opened before keeps the certificate it was given.
    assert_eq!(peer(&open), first_der);
    // A client trusting only the second CA now gets through; one trusting only the first,
    // not.
    let base = format!("https://localhost:{}", addr.port());
    let ok = client(&second_ca.pem, addr)
        .get(format!("{base}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let refused = client_error(&first_ca.pem, addr, &base).await;
    assert!(refused.contains("UnknownIssuer"), "{refused}");
}

/// The DER of the certificate the server presented on `stream`.
fn peer(stream: &tokio_rustls::client::TlsStream<TcpStream>) -> Vec<u8> {
    stream.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handshake_is_bounded_and_counted_against_the_limits() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("Sluice test CA");
    let (cert, key, _) = ca.server("sluice one");
    let files = write_pair(dir.path(), &cert, &key);
    let limits = ServerLimits {
        // Long enough that the holder below still holds its place when the next connects.
        header_read_timeout: Duration::from_millis(1000),
        max_unauthenticated_connections: 1,
        ..ServerLimits::default()
    };
    let addr = serve_with(ServerTls::load(&files).unwrap(), dir.path(), limits).await;

    // A connection that never starts its handshake is closed after the header-read
    // timeout, unanswered.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(NEVER, silent.read_to_end(&mut out))
        .await
        .expect("the server closes a connection without a handshake")
        .unwrap();
    assert_eq!(out, b"");

    // A connection past its handshake that has sent nothing holds the one unauthenticated
    // place: the next connection gets its 503 over TLS.
    let mut holder = connect(addr, &[&ca.pem], &[b"http/1.1"]).await.unwrap();
    let mut refused = connect(addr, &[&ca.pem], &[b"http/1.1"]).await.unwrap();
    refused
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(NEVER, refused.read_to_end(&mut answer))
        .await
        .expect("the refusal closes the connection")
        .ok();
    let answer = String::from_utf8(answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{answer}"
    );
    let body: Value = serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(body["key"], "server.max_unauthenticated_connections");
    assert_eq!(body["limit"], 1);
    // The holder is closed by the header-read timeout too, giving its place back.
    let mut rest = Vec::new();
    tokio::time::timeout(NEVER, holder.read_to_end(&mut rest))
        .await
        .expect("the server closes an idle TLS connection")
        .ok();
    let ok = client(&ca.pem, addr)
        .get(format!("https://localhost:{}/healthz", addr.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_http2_connection_is_closed_after_the_header_read_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("Sluice test CA");
    let (cert, key, _) = ca.server("sluice one");
    let files = write_pair(dir.path(), &cert, &key);
    let limits = ServerLimits {
        header_read_timeout: Duration::from_millis(300),
        ..ServerLimits::default()
    };
    let addr = serve_with(ServerTls::load(&files).unwrap(), dir.path(), limits).await;
    let h2 = connect(addr, &[&ca.pem], &[b"h2"]).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(h2),
    )
    .await
    .unwrap();
    let driven = tokio::spawn(conn);
    let request = hyper::Request::get(format!("https://localhost:{}/healthz", addr.port()))
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    assert_eq!(sender.send_request(request).await.unwrap().status(), 200);
    // Idle from then on: the server sends GOAWAY and closes; the client's connection ends.
    tokio::time::timeout(NEVER, driven)
        .await
        .expect("the server closes an idle HTTP/2 connection")
        .unwrap()
        .unwrap();
}
