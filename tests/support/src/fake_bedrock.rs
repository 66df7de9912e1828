//! A fake Bedrock Converse endpoint on `127.0.0.1:0`: it answers every request with
//! [`Canned`] replies in turn (JSON, errors, event streams sent in pieces a few ms apart) and
//! records what it received ([`Seen`]). The event-stream frames of its streamed replies are
//! made with [`crate::event_stream`].

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use serde_json::{Value, json};

/// One canned reply: status, headers, and body pieces (sent as separate chunks, a few ms
/// apart, so the client reads them incrementally).
#[derive(Clone)]
pub struct Canned {
    /// The HTTP status.
    pub status: u16,
    /// The response headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body, in the pieces it is sent in.
    pub chunks: Vec<Vec<u8>>,
}

impl Canned {
    /// A JSON body.
    pub fn json(status: u16, body: Value) -> Canned {
        Canned {
            status,
            headers: vec![("content-type", "application/json".into())],
            chunks: vec![body.to_string().into_bytes()],
        }
    }

    /// A Bedrock error: a JSON `message` and the `x-amzn-ErrorType` header.
    pub fn error(status: u16, error_type: &str, message: &str) -> Canned {
        let mut canned = Canned::json(status, json!({ "message": message }));
        canned
            .headers
            .push(("x-amzn-ErrorType", error_type.to_string()));
        canned
    }

    /// An event stream (`application/vnd.amazon.eventstream`) of these body pieces.
    pub fn stream(chunks: Vec<Vec<u8>>) -> Canned {
        Canned {
            status: 200,
            headers: vec![("content-type", "application/vnd.amazon.eventstream".into())],
            chunks,
        }
    }
}

/// What the fake server received.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The request path.
    pub path: String,
    /// The request headers, names in lower case.
    pub headers: HashMap<String, String>,
    /// The request body.
    pub body: Vec<u8>,
}

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Canned>>,
    seen: Mutex<Vec<Seen>>,
}

/// A running fake Bedrock ([`fake`]).
pub struct Fake {
    /// Its base URL, `http://127.0.0.1:PORT`.
    pub url: String,
    shared: Arc<Shared>,
}

impl Fake {
    /// The requests received so far, oldest first.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    shared.seen.lock().unwrap().push(Seen {
        path: uri.path().to_string(),
        headers: headers
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap().to_string()))
            .collect(),
        body: body.to_vec(),
    });
    let canned = {
        let mut replies = shared.replies.lock().unwrap();
        if replies.len() > 1 {
            replies.pop_front().unwrap()
        } else {
            replies.front().cloned().unwrap()
        }
    };
    let pieces = futures_util::stream::unfold(
        (canned.chunks.into_iter(), true),
        |(mut chunks, first)| async move {
            let chunk = chunks.next()?;
            if !first {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Some((
                Ok::<_, std::convert::Infallible>(Bytes::from(chunk)),
                (chunks, false),
            ))
        },
    );
    let mut response = Response::builder().status(canned.status);
    for (name, value) in canned.headers {
        response = response.header(name, value);
    }
    response.body(Body::from_stream(pieces)).unwrap()
}

/// A fake Bedrock answering with `replies` in turn (the last one again once the others are
/// used up).
pub async fn fake(replies: Vec<Canned>) -> Fake {
    let shared = Arc::new(Shared {
        replies: Mutex::new(replies.into()),
        seen: Mutex::new(Vec::new()),
    });
    let app = axum::Router::new()
        .fallback(handle)
        .with_state(shared.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Fake { url, shared }
}
