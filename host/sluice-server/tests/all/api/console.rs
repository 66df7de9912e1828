//! What the operator console needs of the server: its assets at `/` and `/console/…` without
//! the token (but not past the `Host` check), under a strict policy and ETags; windows onto
//! the session list and a transcript; the models a prompt may name.

use serde_json::json;

use super::{Setup, TestServer};

const TOKEN: &str = "console-t0ken";

/// The policy every console answer carries (docs/console.md#security).
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_is_served_without_the_token_and_cached_by_version() {
    let server = TestServer::start(Setup {
        token: Some(TOKEN.into()),
        ..Setup::default()
    })
    .await;
    let client = reqwest::Client::new();
    let page = client.get(server.url("/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let headers = page.headers().clone();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(headers["content-security-policy"], POLICY);
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    assert_eq!(headers["cache-control"], "no-cache");
    let html = page.text().await.unwrap();
    assert!(!html.contains("{{VERSION}}"));
    let script = html
        .split('"')
        .find(|s| s.starts_with("/console/") && s.ends_with("/app.js"))
        .expect("the page names its script")
        .to_string();
    let version = script.split('/').nth(2).unwrap().to_string();
    assert_eq!(version.len(), 16, "{script}");
    assert!(version.bytes().all(|b| b.is_ascii_hexdigit()));

    let js = client.get(server.url(&script)).send().await.unwrap();
    assert_eq!(js.status(), 200);
    assert_eq!(
        js.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    assert_eq!(
        js.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert_eq!(js.headers()["content-security-policy"], POLICY);
    let etag = js.headers()["etag"].to_str().unwrap().to_string();
    assert_eq!(etag.len(), 18, "{etag}");
    let again = client
        .get(server.url(&script))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"], etag.as_str());
    assert_eq!(again.content_length(), Some(0));
    assert_eq!(again.headers()["content-security-policy"], POLICY);

    // Another version, another file: JSON 404s that say what to do.
    let (status, body) = server
        .send(client.get(server.url("/console/0000000000000000/app.js")))
        .await;
    assert_eq!(status, 404);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .ends_with("the console was updated since the page was loaded; reload the page"),
        "{body}"
    );
    let (status, body) = server
        .send(client.get(server.url(&format!("/console/{version}/secrets.txt"))))
        .await;
    assert_eq!(status, 404);
    assert_eq!(
        body["error"],
        "the console has no file \"secrets.txt\"; its files are app.js, dom.js, view.js, api.js, sessions.js, transcript.js, live.js, operate.js, setup.js, app.css, icon.svg"
    );
    // Errors of the console carry its policy too, and are JSON like the API's.
    let old = client
        .get(server.url("/console/0000000000000000/app.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(old.status(), 404);
    assert_eq!(old.headers()["content-security-policy"], POLICY);
    assert_eq!(old.headers()["x-content-type-options"], "nosniff");
    let post = client
        .post(server.url("/"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 405);
    assert_eq!(post.headers()["content-security-policy"], POLICY);
    let body: serde_json::Value = post.json().await.unwrap();
    assert_eq!(
        body["error"],
        "/ does not take POST: the console's page and files answer GET and HEAD"
    );
    // Only reading is public: the API still asks for the token, and so does a POST to `/`.
    let (status, _) = server.send(client.get(server.url("/sessions"))).await;
    assert_eq!(status, 401);
    let (status, _) = server.send(client.post(server.url("/"))).await;
    assert_eq!(status, 401);
    // And the Host check comes first (DNS rebinding).
    let (status, body) = server
        .send(
            client
                .get(server.url("/"))
                .header("host", "attacker.example"),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["host"], "attacker.example");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_page_by_offset_and_filter_by_id_and_status() {
    let server = TestServer::scripted().await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(server.session().await);
    }
    server.prompt_wait(&ids[1], "what failed?").await;
    ids.reverse(); // Newest first.
    let (status, all) = server.get("/sessions").await;
    assert_eq!(status, 200);
    assert_eq!(all["total"], 5);
    assert_eq!(all["limit"], serde_json::Value::Null);
    let listed: Vec<&str> = all["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed.len(), 5);

    let (status, page) = server.get("/sessions?limit=2&offset=2").await;
    assert_eq!(status, 200);
    assert_eq!(
        (&page["total"], &page["offset"], &page["limit"]),
        (&json!(5), &json!(2), &json!(2))
    );
    assert_eq!(page["sessions"][0]["id"], listed[2]);
    assert_eq!(page["sessions"][1]["id"], listed[3]);

    let completed = server.get("/sessions?status=completed").await.1;
    assert_eq!(completed["total"], 1);
    assert_eq!(completed["sessions"][0]["status"], "completed");
    let wanted = &listed[4][2..8];
    let (_, found) = server
        .get(&format!("/sessions?q={}", wanted.to_uppercase()))
        .await;
    assert_eq!(found["sessions"][0]["id"], listed[4], "{found}");

    let (status, bad) = server.get("/sessions?limit=5000").await;
    assert_eq!(status, 400);
    assert_eq!(
        bad,
        json!({"error": "query parameter limit must be an integer from 1 to 1000; got \"5000\"", "parameter": "limit", "allowed": "an integer from 1 to 1000"})
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transcript_is_read_a_window_at_a_time() {
    let server = TestServer::scripted().await;
    let id = server.session().await;
    server.prompt_wait(&id, "what failed?").await;
    let whole = server.messages(&id).await;
    assert!(whole.len() > 4, "{whole:?}");
    let (status, first) = server.get(&format!("/sessions/{id}?from=1&limit=3")).await;
    assert_eq!(status, 200);
    assert_eq!(first["messages"].as_array().unwrap(), &whole[..3]);
    assert_eq!(first["nextFrom"], 4);
    let last = whole.len();
    let (_, tail) = server
        .get(&format!("/sessions/{id}?from={}&limit=3", last - 1))
        .await;
    assert_eq!(tail["messages"].as_array().unwrap(), &whole[last - 2..]);
    assert_eq!(tail["nextFrom"], serde_json::Value::Null);
    let (status, bad) = server.get(&format!("/sessions/{id}?from=0")).await;
    assert_eq!(status, 400);
    assert_eq!(bad["parameter"], "from");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_may_name_only_the_configured_model() {
    let server = TestServer::scripted().await;
    let (status, models) = server.get("/models").await;
    assert_eq!(status, 200);
    assert_eq!(
        models,
        json!({"models": [{"name": "scripted", "default": true}]})
    );
    let id = server.session().await;
    let (status, body) = server
        .post(
            &format!("/sessions/{id}/prompts"),
            json!({"prompt": "hi", "model": "openai:gpt-5"}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["model"], "openai:gpt-5");
    assert_eq!(body["allowed"], json!(["scripted"]));
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("model \"openai:gpt-5\" is not configured: this server runs \"scripted\""),
        "{body}"
    );
    let (status, body) = server
        .post(
            &format!("/sessions/{id}/prompts?wait=true"),
            json!({"prompt": "what failed?", "model": "scripted"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "completed");
    server.stop().await;
}
