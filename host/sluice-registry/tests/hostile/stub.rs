//! A hostile registry on 127.0.0.1: one thread per connection, one request per connection
//! (`Connection: close`), each answer chosen by the test, and for each request the bytes
//! of body it got written before the client hung up.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, mpsc};
use std::time::Duration;

/// How a stub answers one request.
pub(crate) enum Answer {
    /// `status` with `headers` and all of `body` (with its `Content-Length`).
    Bytes {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    },
    /// `status`, then `prefix` and spaces up to `total` bytes, with no `Content-Length`
    /// (the body ends when the connection does) unless `content_length`.
    Flood {
        status: u16,
        prefix: Vec<u8>,
        total: u64,
        content_length: bool,
    },
    /// 200 with a `Content-Length` of `total`, then one byte every `every`.
    Trickle { every: Duration, total: u64 },
}

/// A request the stub answered.
#[derive(Debug)]
pub(crate) struct Served {
    /// The connection's place in the order they were accepted (0 first).
    pub(crate) order: usize,
    /// The request target (`/v2/tools/wc/manifests/1`, with its query).
    pub(crate) target: String,
    /// The request's head (its lines, header names lowercased).
    pub(crate) head: String,
    /// The bytes of body written to the socket (the kernel took them) before the client
    /// hung up or the answer ended.
    pub(crate) sent: u64,
}

/// A running stub.
pub(crate) struct Stub {
    pub(crate) addr: String,
    served: mpsc::Receiver<Served>,
}

impl Stub {
    /// A stub answering each request with `route(target, head)` (as in [`Served`]).
    pub(crate) fn start(route: impl Fn(&str, &str) -> Answer + Send + Sync + 'static) -> Stub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (tx, served) = mpsc::channel();
        let route = Arc::new(route);
        std::thread::spawn(move || {
            for (order, stream) in listener.incoming().enumerate() {
                let Ok(stream) = stream else { break };
                let route = route.clone();
                let tx = tx.clone();
                std::thread::spawn(move || {
                    if let Some(s) = serve(order, stream, &*route) {
                        let _ = tx.send(s);
                    }
                });
            }
        });
        Stub { addr, served }
    }

    /// The next `n` requests answered (their connections closed), in the order they
    /// came, waiting up to a minute for each.
    pub(crate) fn take(&self, n: usize) -> Vec<Served> {
        let mut served: Vec<Served> = (0..n)
            .map(|_| {
                self.served
                    .recv_timeout(Duration::from_secs(60))
                    .expect("the stub answered a request")
            })
            .collect();
        served.sort_by_key(|s| s.order);
        served
    }
}

fn serve(order: usize, stream: TcpStream, route: &dyn Fn(&str, &str) -> Answer) -> Option<Served> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        match line.split_once(':') {
            Some((name, value)) if !head.is_empty() => {
                head.push_str(&format!("{}:{value}", name.to_ascii_lowercase()))
            }
            _ => head.push_str(&line),
        }
    }
    let target = head.split(' ').nth(1).unwrap_or("").to_string();
    let mut stream = stream;
    let sent = match route(&target, &head) {
        Answer::Bytes {
            status,
            headers,
            body,
        } => {
            let mut h = format!(
                "HTTP/1.1 {status} X\r\nConnection: close\r\nContent-Length: {}\r\n",
                body.len()
            );
            for (k, v) in headers {
                h.push_str(&format!("{k}: {v}\r\n"));
            }
            h.push_str("\r\n");
            stream.write_all(h.as_bytes()).ok()?;
            write_counted(&mut stream, &body)
        }
        Answer::Flood {
            status,
            prefix,
            total,
            content_length,
        } => {
            let length = if content_length {
                format!("Content-Length: {total}\r\n")
            } else {
                String::new()
            };
            let h = format!("HTTP/1.1 {status} X\r\nConnection: close\r\n{length}\r\n");
            stream.write_all(h.as_bytes()).ok()?;
            let mut sent = write_counted(&mut stream, &prefix);
            let chunk = vec![b' '; 64 << 10];
            while sent < total {
                let n = chunk.len().min((total - sent) as usize);
                let wrote = write_counted(&mut stream, &chunk[..n]);
                sent += wrote;
                if wrote < n as u64 {
                    break;
                }
            }
            sent
        }
        Answer::Trickle { every, total } => {
            let h =
                format!("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {total}\r\n\r\n");
            stream.write_all(h.as_bytes()).ok()?;
            let mut sent = 0;
            while sent < total {
                std::thread::sleep(every);
                if stream
                    .write_all(b" ")
                    .and_then(|()| stream.flush())
                    .is_err()
                {
                    break;
                }
                sent += 1;
            }
            sent
        }
    };
    Some(Served {
        order,
        target,
        head,
        sent,
    })
}

/// Writes `bytes`, returning how many the socket took before an error.
fn write_counted(stream: &mut TcpStream, bytes: &[u8]) -> u64 {
    let mut done = 0;
    while done < bytes.len() {
        match stream.write(&bytes[done..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => done += n,
        }
    }
    done as u64
}
