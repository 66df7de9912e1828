//! Event streams are bounded (`server.max_event_streams`): one more than the limit is 429
//! naming the limit and its key, and a stream that closes gives its place back. Before,
//! every stream was taken (4,000 idle streams held 1,250 MiB).

use std::time::{Duration, Instant};

use sluice_server::ServerLimits;

use super::{Setup, TestServer};

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

/// What `/healthz` counts as open event streams, and the store's live subscriptions.
async fn held(server: &TestServer) -> (u64, usize) {
    let (status, health) = server.get("/healthz").await;
    assert_eq!(status, 200, "{health}");
    (
        health["eventStreams"].as_u64().unwrap(),
        server.store.subscriptions(),
    )
}

/// `held` once it equals `want`, or when 60 s have passed: the server learns that a client
/// went away when it next touches the connection, and an aborted task drops what it held
/// when it is next polled.
async fn settled(server: &TestServer, want: (u64, usize)) -> (u64, usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut now = held(server).await;
    while now != want && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        now = held(server).await;
    }
    now
}

/// Streams give back what they hold when their clients go away: round after round, 40 open
/// streams waiting for their session's next run (one session has run before) count 40 in
/// `/healthz` and hold 40 subscriptions of the store, and once the clients have closed,
/// both counts return to 0. Before, an idle stream read the store ten times a second, each
/// read on a thread of the blocking pool, and 4,000 streams kept 512 threads and 1,250 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_streams_give_back_what_they_held() {
    let server = TestServer::start(Setup {
        limits: ServerLimits {
            max_event_streams: 64,
            ..ServerLimits::default()
        },
        ..Setup::default()
    })
    .await;
    let mut sessions = Vec::new();
    for _ in 0..4 {
        sessions.push(server.session().await);
    }
    server.prompt_wait(&sessions[0], "What failed?").await;
    assert_eq!(settled(&server, (0, 0)).await, (0, 0), "before");
    for round in 0..3 {
        let mut open = Vec::new();
        for i in 0..40 {
            let path = format!("/sessions/{}/events", sessions[i % sessions.len()]);
            let response = server
                .request(reqwest::Method::GET, &path)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status().as_u16(), 200, "round {round}, stream {i}");
            open.push(response);
        }
        // A stream subscribes before its answer's head is sent: both counts are exact.
        assert_eq!(held(&server).await, (40, 40), "round {round}, all open");
        drop(open);
        assert_eq!(
            settled(&server, (0, 0)).await,
            (0, 0),
            "round {round}, after the clients closed"
        );
    }
    server.stop().await;
}
