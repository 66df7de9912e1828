//! Event streams are bounded (`server.max_event_streams`): one more than the limit is 429
//! naming the limit and its key, and a stream that closes gives its place back. Before,
//! every stream was taken (4,000 idle streams held 1,250 MiB).

use std::time::{Duration, Instant};

use sluice_server::ServerLimits;

use crate::{Setup, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_beyond_the_limit_are_429_until_one_closes() {
    let server = TestServer::start(Setup {
        limits: ServerLimits {
            max_event_streams: 2,
            ..ServerLimits::default()
        },
        ..Setup::default()
    })
    .await;
    let id = server.session().await;
    let path = format!("/sessions/{id}/events");
    let open = || server.request(reqwest::Method::GET, &path).send();
    let first = open().await.unwrap();
    assert_eq!(first.status().as_u16(), 200);
    let second = open().await.unwrap();
    assert_eq!(second.status().as_u16(), 200);
    let (status, body) = server.get(&path).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["limit"], 2);
    assert_eq!(body["key"], "server.max_event_streams");
    assert_eq!(
        body["error"],
        "too many event streams open: at most 2 at once (server.max_event_streams in sluice.toml); close one, or raise the limit"
    );
    // A client that goes away frees its place (the server sees the connection close).
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(30);
    let third = loop {
        let r = open().await.unwrap();
        if r.status().as_u16() == 200 || Instant::now() > deadline {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(third.status().as_u16(), 200);
    drop((second, third));
    server.stop().await;
}
