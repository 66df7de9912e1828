//! Secrets a tool never holds (`http_credentials`,
//! docs/configuration.md#credentials-the-tool-never-holds). The test component
//! `tests/components/http-fetch` holds a credential for one local server (A) and is allowed
//! a second (B); both record every request's head. The component tries every way to read
//! the secret: its `wasi:config` store (every key, and `get` of likely names), its
//! environment, A echoing the request's headers (in a header and in the body, whole, in
//! 3-byte chunks, and cut off by a failed connection), a redirect from A to B with a header
//! of its own, and a compressed answer. It reports in hex what it read, so the host's scan
//! of observations cannot hide it: the secret is never there, the marker is where A echoed
//! it; A receives the header with the exact value (the guest's own replaced), B never.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use sluice_runtime::{HttpAllow, HttpCredential, HttpHost, SecretSource, ToolPolicy, Toolbox};
use sluice_tests::{HTTP_FETCH_WASM, Sandbox, component_spec, engine};

use crate::cache;

/// The cap of these tests.
const CAP: u32 = 65_536;

/// The secret: its first bytes, `QXZ`, appear in no marker or message of the host.
const SECRET: &str = "QXZ-cred-7f3a9c1e5b2d4680";

/// The requests a server saw: path and headers (names lowercase), in order.
type Seen = Arc<Mutex<Vec<(String, Vec<(String, String)>)>>>;

/// A local HTTP/1.1 server on 127.0.0.1 that records each request and answers by path:
/// `/echo` (200, the request's head as the body, its `authorization` in `x-echo`),
/// `/chunked` (the same body in chunks of 3 bytes, each flushed on its own), `/cut` (a
/// `content-length` of 1000, `echo: ` and all but the last 2 bytes of the `authorization`
/// sent, then the connection closed), `/gzip` (`content-encoding: gzip`), `/redirect` (302 to
/// `redirect_to`). It serves until the test process ends.
struct Server {
    addr: SocketAddr,
    seen: Seen,
}

impl Server {
    fn start(redirect_to: Option<String>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("its address");
        let seen: Seen = Arc::default();
        let record = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (record, redirect_to) = (record.clone(), redirect_to.clone());
                std::thread::spawn(move || answer(stream, &record, redirect_to.as_deref()));
            }
        });
        Server { addr, seen }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The values of header `name` of each request the server saw, in order.
    fn header(&self, name: &str) -> Vec<Vec<String>> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(_, headers)| {
                headers
                    .iter()
                    .filter(|(n, _)| n == name)
                    .map(|(_, v)| v.clone())
                    .collect()
            })
            .collect()
    }

    /// The paths requested, in order.
    fn paths(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(p, _)| p.clone())
            .collect()
    }
}

/// Reads one request from `stream`, records it, and answers it.
fn answer(mut stream: TcpStream, seen: &Seen, redirect_to: Option<&str>) {
    let mut reader = BufReader::new(stream.try_clone().expect("a second handle"));
    let mut head = String::new();
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        head.push_str(&line);
        line.clear();
    }
    let mut lines = head.lines();
    let path = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .unwrap_or_default()
        .to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let auth = headers
        .iter()
        .find(|(n, _)| n == "authorization")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    seen.lock().unwrap().push((path.clone(), headers));
    let ok = |extra: &str, body: &[u8]| {
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )
    };
    let _ = match path.as_str() {
        "/echo" => {
            let reply = ok(&format!("x-echo: {auth}\r\n"), head.as_bytes());
            stream
                .write_all(reply.as_bytes())
                .and_then(|()| stream.write_all(head.as_bytes()))
        }
        "/chunked" => (|| {
            stream.write_all(
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
            )?;
            for chunk in head.as_bytes().chunks(3) {
                stream.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())?;
                stream.write_all(chunk)?;
                stream.write_all(b"\r\n")?;
                stream.flush()?;
                std::thread::sleep(Duration::from_millis(1));
            }
            stream.write_all(b"0\r\n\r\n")
        })(),
        "/cut" => {
            let part = &auth[..auth.len().saturating_sub(2)];
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: 1000\r\nconnection: close\r\n\r\necho: {part}"
            );
            stream.write_all(reply.as_bytes())
        }
        "/gzip" => {
            let reply = ok("content-encoding: gzip\r\n", b"not really gzip");
            stream
                .write_all(reply.as_bytes())
                .and_then(|()| stream.write_all(b"not really gzip"))
        }
        "/redirect" => stream.write_all(
            format!(
                "HTTP/1.1 302 Found\r\nlocation: {}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                redirect_to.unwrap_or("/echo")
            )
            .as_bytes(),
        ),
        _ => stream.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"),
    };
}

/// `127.0.0.1:port` as an entry of `http`.
fn loopback(port: u16) -> HttpAllow {
    HttpAllow {
        host: HttpHost::Ip([127, 0, 0, 1].into()),
        port: Some(port),
    }
}

/// The marker A's credential is withheld as.
fn marker(a: &Server) -> String {
    format!(
        "[secret withheld: http_credentials.127.0.0.1:{}]",
        a.addr.port()
    )
}

/// Servers A (the credential's host; `/redirect` goes to B's `/echo`) and B, and the
/// http-fetch component allowed both, holding `Authorization: Bearer SECRET` for A (from a
/// file), a config value `region` and the environment variable `LANG`.
struct Setup {
    a: Server,
    b: Server,
    sb: Sandbox,
    _dir: tempfile::TempDir,
}

fn setup() -> Setup {
    let b = Server::start(None);
    let a = Server::start(Some(b.url("/echo")));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{SECRET}\n")).unwrap();
    let (a_port, b_port) = (a.addr.port(), b.addr.port());
    let sb = Sandbox::with_component(cache(), CAP, HTTP_FETCH_WASM, |p| {
        p.roots.clear();
        p.http.allow = vec![loopback(a_port), loopback(b_port)];
        p.http.credentials = vec![HttpCredential {
            entry: loopback(a_port),
            header: "authorization".into(),
            value: "Bearer {secret}".into(),
            secret: SecretSource::File(file.clone()),
        }];
        p.config = BTreeMap::from([("region".to_string(), "eu-west-1".to_string())]);
        p.env = vec![("LANG".to_string(), "C.UTF-8".to_string())];
    });
    Setup {
        a,
        b,
        sb,
        _dir: dir,
    }
}

/// `hex` as text.
fn unhex(hex: &str) -> String {
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    String::from_utf8(bytes).unwrap()
}

/// The arguments of `exchange`.
fn exchange(url: &str, headers: &[(&str, &str)], max_redirects: u32) -> Value {
    json!({"url": url, "headers": headers, "maxRedirects": max_redirects})
}

/// An exchange's last response: its headers (values decoded) and its body.
fn response(result: &Value) -> (Vec<(String, String)>, String) {
    let headers = result["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["name"].as_str().unwrap().to_string(),
                unhex(h["valueHex"].as_str().unwrap()),
            )
        })
        .collect();
    (headers, unhex(result["bodyHex"].as_str().unwrap()))
}

#[test]
fn the_host_gets_the_exact_value_and_the_guest_reads_the_marker() {
    let s = setup();
    // The guest sets its own Authorization and asks for gzip: both are replaced.
    let obs = s.sb.call(
        "exchange",
        &exchange(
            &s.a.url("/echo"),
            &[
                ("Authorization", "Bearer guest-made"),
                ("Accept-Encoding", "gzip"),
            ],
            0,
        ),
    );
    assert_eq!(obs.facts().http_credentials, 1);
    assert_eq!(obs.facts().http_requests, 1);
    // The observation needed no withholding: the guest never read the secret.
    assert!(obs.withheld().is_empty(), "{:?}", obs.withheld());
    let v: Value = serde_json::from_str(obs.text()).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    let (headers, body) = response(&v["result"]);
    assert_eq!(
        s.a.header("authorization"),
        [vec![format!("Bearer {SECRET}")]]
    );
    assert_eq!(
        s.a.header("accept-encoding"),
        [vec!["identity".to_string()]]
    );
    let marker = marker(&s.a);
    assert_eq!(
        headers
            .iter()
            .filter(|(n, _)| n == "x-echo")
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>(),
        [format!("Bearer {marker}")]
    );
    // Withholding changes the body's length: the guest gets no content-length.
    assert!(
        !headers.iter().any(|(n, _)| n == "content-length"),
        "{headers:?}"
    );
    assert!(
        body.contains(&format!("authorization: Bearer {marker}\r\n")),
        "{body}"
    );
    assert!(
        !body.contains("QXZ") && !body.contains("guest-made"),
        "{body}"
    );
}

#[test]
fn a_secret_echoed_in_chunks_or_cut_off_leaves_nothing_to_read() {
    let s = setup();
    let result = s.sb.ok("exchange", &exchange(&s.a.url("/chunked"), &[], 0));
    let (_, body) = response(&result);
    assert!(
        body.contains(&format!("authorization: Bearer {}\r\n", marker(&s.a))),
        "{body}"
    );
    assert!(!body.contains("QXZ"), "{body}");
    // The connection ends 2 bytes short of the secret: what was held back is dropped with
    // the failure, and the error's text holds nothing of the secret.
    let (error, kind) = s.sb.err("exchange", &exchange(&s.a.url("/cut"), &[], 0));
    let error = unhex(&error);
    assert_eq!(kind, "");
    assert!(
        error.starts_with("reading the body failed: ")
            && error.ends_with("; read before: echo: Bearer "),
        "{error}"
    );
    assert!(!error.contains("QXZ"), "{error}");
    assert_eq!(s.a.paths(), ["/chunked", "/cut"]);
}

#[test]
fn a_redirect_to_a_second_allowed_host_carries_no_credential() {
    let s = setup();
    let result = s.sb.ok(
        "exchange",
        &exchange(
            &s.a.url("/redirect"),
            &[("Authorization", "Bearer guest-made")],
            1,
        ),
    );
    assert_eq!(
        result["hops"],
        json!([
            {"url": s.a.url("/redirect"), "status": 302},
            {"url": s.b.url("/echo"), "status": 200},
        ])
    );
    // A got the credential; B, a new request judged anew, only the guest's own header.
    assert_eq!(
        s.a.header("authorization"),
        [vec![format!("Bearer {SECRET}")]]
    );
    assert_eq!(
        s.b.header("authorization"),
        [vec!["Bearer guest-made".to_string()]]
    );
    let (_, body) = response(&result);
    assert!(
        body.contains("authorization: Bearer guest-made\r\n"),
        "{body}"
    );
    assert!(!body.contains("QXZ"), "{body}");
}

#[test]
fn config_and_environment_hold_no_credential() {
    let s = setup();
    let port = s.a.addr.port();
    let keys = [
        format!("http_credentials.127.0.0.1:{port}"),
        "http_credentials".to_string(),
        "authorization".to_string(),
        "Authorization".to_string(),
        "secret".to_string(),
        "token".to_string(),
        "region".to_string(),
    ];
    let result = s.sb.ok("look_around", &json!({"keys": keys}));
    let seen: Vec<(String, String)> = result
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                unhex(f["valueHex"].as_str().unwrap()),
            )
        })
        .collect();
    // The store's one value, `get` answering for it alone, and the one variable granted.
    assert_eq!(
        seen,
        [
            ("config:region".to_string(), "eu-west-1".to_string()),
            ("get:region".to_string(), "eu-west-1".to_string()),
            ("env:LANG".to_string(), "C.UTF-8".to_string()),
        ]
    );
}

#[test]
fn a_compressed_answer_to_a_request_carrying_a_credential_is_refused() {
    let s = setup();
    let (error, kind) = s.sb.err("fetch", &json!({"url": s.a.url("/gzip")}));
    assert_eq!(kind, "http-denied");
    assert_eq!(
        error,
        format!(
            "the response to the tool's GET {} request was refused: it is compressed (content-encoding: gzip) although the host asked for none, and the host must read a response to a request carrying a credential (policy key http_credentials) to withhold the credential from it",
            s.a.addr
        )
    );
    // A request to B carries no credential: its compressed answer passes as any does.
    assert_eq!(
        s.sb.ok("fetch", &json!({"url": s.b.url("/gzip")})),
        json!({"status": 200, "body": "not really gzip", "bytes": 15})
    );
}

#[test]
fn a_credential_that_cannot_be_read_makes_the_component_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent");
    let short = dir.path().join("short");
    std::fs::write(&short, "1234567\n").unwrap();
    for (file, reason) in [
        (
            missing.clone(),
            "No such file or directory (os error 2)".to_string(),
        ),
        (
            short.clone(),
            "it is 7 bytes; a secret must be at least 8 bytes so that it can be withheld from observations (put a shorter value that is not secret in `config`)".to_string(),
        ),
    ] {
        let mut policy = ToolPolicy::default();
        policy.http.allow = vec![loopback(9)];
        policy.http.credentials = vec![HttpCredential {
            entry: loopback(9),
            header: "authorization".into(),
            value: "Bearer {secret}".into(),
            secret: SecretSource::File(file.clone()),
        }];
        let spec = component_spec(HTTP_FETCH_WASM, policy);
        let tools = Toolbox::load_available(engine(cache()), &[spec]).unwrap();
        let unavailable = tools.unavailable();
        assert_eq!(unavailable.len(), 1);
        assert!(
            unavailable[0].reason.ends_with(&format!(
                "its secret \"http_credentials.127.0.0.1:9\" cannot be read from file {}: {reason}",
                file.display()
            )),
            "{}",
            unavailable[0].reason
        );
    }
}
