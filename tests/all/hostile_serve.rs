//! Hostile tool calls through `sluice serve`: the operator API on 127.0.0.1 (its runtime
//! sized like the real one on a 2-core machine) runs prompts whose tool calls are hostile —
//! spinning, sleeping, blocking and polling inside host calls, opening a FIFO, flooding
//! descriptors and pollables, asking for 2^40 random bytes, handing the host a bad pointer —
//! all at once. Throughout, `/healthz` (a new connection each time, from a client on its own
//! thread) answers within 100 ms; every run ends with a tool error of the documented kind;
//! the next call works; and `POST /sessions/{id}/cancel?wait=true` ends a run whose guest
//! sleeps within about 200 ms.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_agent::Settings;
use sluice_models::{Backend, BackendError, ModelReply, ModelRequest};
use sluice_protocol::{Role, ToolCall};
use sluice_server::{ServeOptions, Server, Services};
use sluice_store::SqliteStore;
use sluice_tests::{HOSTILE_WASM, component_spec};

use crate::cache;

/// The most `/healthz` may take while the guests misbehave: the bound is 100 ms
/// (measured: 19 ms at worst on an idle 2-core machine); the rest is slack for a 2-core
/// machine loaded by the tests running beside this one (114 ms was seen under a load of 8).
/// Starved worker threads, the fault this guards against, took seconds (9.8 s).
const HEALTHZ_WITHIN: Duration = Duration::from_millis(300);

/// The hostile tool's timeout here.
const TIMEOUT: Duration = Duration::from_secs(2);

/// A model that makes the one tool call the prompt spells (`{"tool":…,"arguments":…}`), then
/// answers with that call's observation: every session runs independently of the others.
struct OneCall;

#[async_trait::async_trait]
impl Backend for OneCall {
    fn name(&self) -> String {
        "one-call".into()
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, BackendError> {
        let last = request.messages.last().expect("a message");
        Ok(match last.role {
            Role::User => {
                let asked: Value = serde_json::from_str(&last.content).expect("a JSON prompt");
                ModelReply {
                    content: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: asked["tool"].as_str().expect("tool").to_string(),
                        arguments: asked["arguments"].to_string(),
                    }],
                    usage: None,
                    http_requests: None,
                }
            }
            _ => ModelReply {
                content: last.content.clone(),
                tool_calls: Vec::new(),
                usage: None,
                http_requests: None,
            },
        })
    }
}

/// Polls `/healthz` on `base` from its own thread and runtime, a new connection each time,
/// until stopped; returns the slowest answer and how many it got.
struct HealthProbe {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<(Duration, usize)>,
}

impl HealthProbe {
    fn start(base: String) -> HealthProbe {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async move {
                    let client = reqwest::Client::builder()
                        .pool_max_idle_per_host(0)
                        .build()
                        .unwrap();
                    let (mut slowest, mut answers) = (Duration::ZERO, 0);
                    while !stop.load(Ordering::Relaxed) {
                        let start = Instant::now();
                        let response = client
                            .get(format!("{base}/healthz"))
                            .timeout(Duration::from_secs(30))
                            .send()
                            .await
                            .expect("/healthz answers");
                        assert_eq!(response.status(), 200);
                        let body: Value = response.json().await.unwrap();
                        assert_eq!(body["ok"], true);
                        slowest = slowest.max(start.elapsed());
                        answers += 1;
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    (slowest, answers)
                })
            })
        };
        HealthProbe { stop, thread }
    }

    fn finish(self) -> (Duration, usize) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the probe thread")
    }
}

/// Runs `prompt` (a tool call) in a new session of the server at `base` and returns the
/// run's answer: the tool call's observation, parsed.
async fn run(client: &reqwest::Client, base: &str, tool: &str, arguments: Value) -> Value {
    let session: Value = client
        .post(format!("{base}/sessions"))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = session["id"].as_str().expect("a session id");
    let prompt = json!({"tool": tool, "arguments": arguments}).to_string();
    let ended: Value = client
        .post(format!("{base}/sessions/{id}/prompts?wait=true"))
        .json(&json!({ "prompt": prompt }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ended["status"], "completed", "{tool}: {ended}");
    serde_json::from_str(ended["answer"].as_str().expect("an answer")).expect("an observation")
}

#[test]
fn the_api_stays_responsive_while_hostile_calls_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("f.txt"), "x").unwrap();
    sluice_operator_files::make_fifo(&root.join("fifo")).unwrap();
    let mut policy = sluice_runtime::ToolPolicy::read_only([("root".to_string(), root)]);
    policy.timeout = TIMEOUT;
    let toolbox = sluice_runtime::Toolbox::load(
        sluice_tests::engine(cache()),
        &[component_spec(HOSTILE_WASM, policy)],
    )
    .unwrap();
    let services = Services {
        store: Arc::new(SqliteStore::open(&dir.path().join("sessions.db")).unwrap()),
        backend: Arc::new(OneCall),
        tools: Arc::new(toolbox),
        settings: Settings::default(),
    };
    // `sluice serve` on this machine: a multi-threaded runtime with one worker per core.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let options = ServeOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            token: None,
            max_body_bytes: sluice_server::DEFAULT_MAX_BODY_BYTES,
            ..ServeOptions::default()
        };
        let bound = Server::new(services, options)
            .unwrap()
            .bind()
            .await
            .unwrap();
        let base = format!("http://{}", bound.local_addr());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(bound.serve(async move {
            let _ = stopped.await;
        }));
        let client = reqwest::Client::new();
        let probe = HealthProbe::start(base.clone());

        let cases: Vec<(&str, Value, &str)> = vec![
            ("spin", json!({}), "timeout"),
            ("spin", json!({}), "timeout"),
            ("sleep", json!({"ms": 60_000}), "timeout"),
            ("block", json!({"ms": 60_000}), "timeout"),
            (
                "poll_many",
                json!({"count": 4_000, "ms": 60_000}),
                "timeout",
            ),
            ("read_file", json!({"path": "/root/fifo"}), ""),
            (
                "open_many",
                json!({"path": "/root/f.txt", "count": 100_000}),
                "resource-limit",
            ),
            ("pollables", json!({"count": 10_000_000}), "resource-limit"),
            ("random_bytes", json!({"len": 1u64 << 40}), "resource-limit"),
            ("bad_realloc", json!({}), "trap"),
        ];
        let runs: Vec<_> = cases
            .iter()
            .map(|(tool, args, _)| {
                let (client, base) = (client.clone(), base.clone());
                let (tool, args) = (tool.to_string(), args.clone());
                tokio::spawn(async move { run(&client, &base, &tool, args).await })
            })
            .collect();
        let mut observations = Vec::new();
        for r in runs {
            observations.push(r.await.expect("a run"));
        }
        for ((tool, _, kind), obs) in cases.iter().zip(&observations) {
            assert_eq!(obs["ok"], false, "{tool}: {obs}");
            assert_eq!(obs["kind"].as_str().unwrap_or(""), *kind, "{tool}: {obs}");
        }
        assert_eq!(
            observations[5]["error"], "io",
            "the FIFO opened at once: {}",
            observations[5]
        );
        // The next call works.
        assert_eq!(
            run(&client, &base, "big_string", json!({"bytes": 3})).await,
            json!({"ok": true, "result": "xxx"})
        );

        // Cancelling a run whose guest sleeps (for longer than its timeout, which alone
        // would end the run `completed` after 2 s).
        let session: Value = client
            .post(format!("{base}/sessions"))
            .json(&json!({}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = session["id"].as_str().unwrap();
        let prompt = json!({"tool": "sleep", "arguments": {"ms": 60_000}}).to_string();
        let started = client
            .post(format!("{base}/sessions/{id}/prompts"))
            .json(&json!({ "prompt": prompt }))
            .send()
            .await
            .unwrap();
        assert_eq!(started.status(), 202);
        // Let the guest fall asleep inside the host.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let start = Instant::now();
        let ended: Value = client
            .post(format!("{base}/sessions/{id}/cancel?wait=true"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let took = start.elapsed();
        assert_eq!(ended["status"], "aborted", "{ended}");
        // 200 ms is the behaviour; the rest is slack for a loaded 2-core machine.
        assert!(
            took < Duration::from_millis(500),
            "cancel?wait=true took {took:?}"
        );

        let (slowest, answers) = probe.finish();
        assert!(answers > 10, "only {answers} health checks");
        assert!(
            slowest < HEALTHZ_WITHIN,
            "/healthz took {slowest:?} at worst ({answers} checks)"
        );
        let _ = stop.send(());
        server.await.unwrap().unwrap();
    });
}
