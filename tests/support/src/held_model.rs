//! A fake OpenAI-compatible model that holds each request until the test releases it, for
//! tests that run real `sluice` processes side by side (one store shared, replicas).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use serde_json::{Value, json};

/// How long to wait for an event (a process to reach the model, a reply) before failing:
/// generous, for a loaded 2-core machine; no test waits this long when it passes.
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(120);

/// A fake model: every request is announced on `arrived` (with its body) and answered
/// `{"content": "done"}` only once the test sends a token on `release`.
pub struct HeldModel {
    /// The model's base URL (`http://127.0.0.1:PORT/v1`).
    pub base_url: String,
    arrived: Receiver<Value>,
    release: Sender<()>,
}

impl HeldModel {
    /// Starts the model on a free port of 127.0.0.1.
    pub fn start() -> HeldModel {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let (arrived_tx, arrived) = channel();
        let (release, release_rx) = channel::<()>();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let Some(body) = read_request(&stream) else {
                    continue;
                };
                if arrived_tx.send(body).is_err() || release_rx.recv().is_err() {
                    return;
                }
                let reply = json!({
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "fake",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
                })
                .to_string();
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                    reply.len()
                );
            }
        });
        HeldModel {
            base_url,
            arrived,
            release,
        }
    }

    /// Waits for the next request and returns its body.
    pub fn next_request(&self) -> Value {
        self.arrived
            .recv_timeout(EVENT_TIMEOUT)
            .expect("a model request")
    }

    /// Lets the held request (or the next one) be answered.
    pub fn release_one(&self) {
        self.release.send(()).unwrap();
    }
}

/// Reads one HTTP request and returns its JSON body.
fn read_request(stream: &TcpStream) -> Option<Value> {
    let mut reader = BufReader::new(stream);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}
