//! docs/replicas.md: two real `sluice serve` replicas on one PostgreSQL database. Fifty sessions
//! spread over both complete with intact transcripts; a prompt to a session running on A
//! sent to B answers 409; B streams A's run; a cancel on B ends A's run `aborted`; A killed
//! with SIGKILL mid-run, B resumes the session with nothing lost or duplicated; A losing its
//! database connection mid-run ends the run `error` with nothing half-written; a
//! configuration PUT on A is seen by B and after a restart. The CLI (`sluice store migrate`,
//! `sluice run`, `sluice session`) works on the same database under the same one-run rule,
//! and a database that cannot be reached stops every command. The password in the URL never
//! appears in what the replicas or the CLI print (`runs.rs`). Failover after `kill -9`, trial
//! by trial, as docs/replicas.md#failover states it (`failover.rs`).
//!
//! Needs `SLUICE_TEST_POSTGRES_URL` (a role with CREATEDB): without it each test says it
//! skipped, and fails under `CI=true`. The model is the offline scripted one, or a fake
//! OpenAI-compatible server on 127.0.0.1 that holds each request until the test releases it,
//! so "a run is in progress on A" is a state the test waits for, not a timing.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use sluice_test_support::held_model::{EVENT_TIMEOUT, HeldModel};

mod failover; // kill -9 of the replica running a session: 409 with Retry-After until PostgreSQL ends its connection, then free.
mod runs; // Runs across replicas: 409, streams, cancel, kill -9, a lost connection, configuration, the CLI.
mod tenancy; // 20 principals x 5 sessions over two replicas: another's session is 404 on every route; admin sees all; the audit names each actor.

/// The server for the tests, or `None` (said) when there is none and `CI` is not `true`.
fn postgres_url(test: &str) -> Option<String> {
    match std::env::var("SLUICE_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            sluice_test_support::skip_or_fail(&format!(
                "{test}: SLUICE_TEST_POSTGRES_URL is not set"
            ));
            None
        }
    }
}

/// A scratch database, a root and a configuration, shared by the replicas of one test.
struct Cluster {
    dir: tempfile::TempDir,
    url: String,
    password: String,
    model: Option<HeldModel>,
}

impl Cluster {
    async fn new(test: &str, held: bool) -> Option<Cluster> {
        let server = postgres_url(test)?;
        let url = sluice_store::PgStore::create_scratch_database(&server)
            .await
            .unwrap();
        let password = url::Url::parse(&url)
            .unwrap()
            .password()
            .unwrap_or("")
            .to_string();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("logs")).unwrap();
        std::fs::write(
            dir.path().join("logs/app.log"),
            "2026-11-30T01:00:01Z ERROR worker-3 lost connection to db-2\n",
        )
        .unwrap();
        let model = held.then(HeldModel::start);
        let mut toml = String::from("[roots]\nlogs = \"logs\"\n");
        if let Some(m) = &model {
            toml.push_str(&format!(
                "\n[model]\nprovider = \"openai-compatible\"\nname = \"fake\"\nbase_url = \"{}\"\nstream = false\nmax_retries = 0\n",
                m.base_url
            ));
        }
        std::fs::write(dir.path().join("sluice.toml"), toml).unwrap();
        Some(Cluster {
            dir,
            url,
            password,
            model,
        })
    }

    fn model(&self) -> &HeldModel {
        self.model.as_ref().unwrap()
    }

    /// A `sluice serve` replica on a free loopback port, its store URL in the environment.
    fn replica(&self, name: &str) -> Replica {
        self.replica_with(name, &[])
    }

    /// [`Cluster::replica`] with further environment variables `env`.
    fn replica_with(&self, name: &str, env: &[(&str, &str)]) -> Replica {
        let log = self.dir.path().join(format!("{name}.stderr"));
        let mut child = self
            .sluice()
            .args(["serve", "--listen", "127.0.0.1:0"])
            .envs(env.iter().copied())
            .env("SLUICE_STORE_URL", &self.url)
            .env("SLUICE_LOG", "info")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut text = String::new();
        let addr = loop {
            let mut line = String::new();
            assert!(
                err.read_line(&mut line).unwrap() > 0,
                "{name} ended: {text}"
            );
            text.push_str(&line);
            if let Some(rest) = line.split("http://").nth(1) {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        };
        // Keep reading what it prints, into a file the test checks for the password.
        let path = log.clone();
        std::thread::spawn(move || {
            let mut file = std::fs::File::create(&path).unwrap();
            let _ = file.write_all(text.as_bytes());
            let _ = std::io::copy(&mut err, &mut file);
        });
        Replica {
            child,
            base: format!("http://{addr}"),
            client: reqwest::Client::new(),
            log,
        }
    }

    /// `sluice --config … ARGS` on the cluster's database (`--store-url` when `flag`, else
    /// `SLUICE_STORE_URL`).
    fn cli(&self, flag: bool, args: &[&str]) -> Command {
        let mut c = self.sluice();
        if flag {
            c.args(["--store-url", &self.url]);
        } else {
            c.env("SLUICE_STORE_URL", &self.url);
        }
        c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        c
    }

    /// `sluice --config …` with the shared compiled-component cache, no store or token from
    /// the environment, and no stdin.
    fn sluice(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
        c.arg("--config")
            .arg(self.dir.path().join("sluice.toml"))
            .env("SLUICE_CACHE_DIR", crate::warm_cache())
            .env_remove("SLUICE_STORE")
            .env_remove("SLUICE_SERVER_TOKEN")
            .stdin(Stdio::null());
        c
    }

    /// Runs `sluice ARGS` to its end: (exit code, stdout, stderr). Fails if the password
    /// shows in either.
    fn cli_output(&self, flag: bool, args: &[&str]) -> (Option<i32>, String, String) {
        let out = self.cli(flag, args).output().unwrap();
        self.checked(out)
    }

    fn checked(&self, out: std::process::Output) -> (Option<i32>, String, String) {
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(
            !stdout.contains(&self.password) && !stderr.contains(&self.password),
            "the password was printed: {stdout} {stderr}"
        );
        let stderr = sluice_tests::without_compile_progress(&stderr);
        (out.status.code(), stdout, stderr)
    }

    /// The session-level advisory locks granted in the cluster's database: one per run in
    /// progress, on its replica's connection.
    async fn run_locks(&self) -> i64 {
        let config: tokio_postgres::Config = self.url.parse().unwrap();
        let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client
            .query_one(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                &[],
            )
            .await
            .unwrap()
            .get(0)
    }

    /// Turns connections to the cluster's database off (and ends those open, as a database
    /// taken down would) or back on, from the server's own database.
    async fn allow_connections(&self, allow: bool) {
        let server = std::env::var("SLUICE_TEST_POSTGRES_URL").unwrap();
        let config: tokio_postgres::Config = server.parse().unwrap();
        let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        let scratch = url::Url::parse(&self.url)
            .unwrap()
            .path()
            .trim_start_matches('/')
            .to_string();
        client
            .batch_execute(&format!(
                "ALTER DATABASE \"{scratch}\" ALLOW_CONNECTIONS {allow}"
            ))
            .await
            .unwrap();
        if !allow {
            client
                .execute(
                    "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = $1",
                    &[&scratch],
                )
                .await
                .unwrap();
        }
    }

    /// Ends every connection holding a run's lock, as a lost network would.
    async fn cut_run_connections(&self) -> i64 {
        let config: tokio_postgres::Config = self.url.parse().unwrap();
        let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client
            .query_one(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
                 WHERE datname = current_database() AND application_name = 'sluice run') AS t",
                &[],
            )
            .await
            .unwrap()
            .get(0)
    }
}

impl Drop for Cluster {
    /// Drops the scratch database (the replicas, declared later, are gone by then).
    fn drop(&mut self) {
        let url = std::mem::take(&mut self.url);
        // Best effort, on a thread of its own: drop cannot wait in async code.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let _ = rt.block_on(sluice_store::PgStore::drop_scratch_database(&url));
        })
        .join();
    }
}

/// A `sluice serve` process; killed when dropped.
struct Replica {
    child: Child,
    base: String,
    client: reqwest::Client,
    log: std::path::PathBuf,
}

impl Replica {
    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut r = self.client.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            r = r.json(&b);
        }
        let response = r.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// POSTs `body` to `path`: (status, its `Retry-After` header, JSON body).
    async fn post_retry(&self, path: &str, body: Value) -> (u16, Option<String>, Value) {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let retry = response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        let text = response.text().await.unwrap();
        (
            status,
            retry,
            serde_json::from_str(&text).unwrap_or(Value::Null),
        )
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.send(reqwest::Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }

    async fn session(&self) -> String {
        let (status, body) = self.post("/sessions", json!({})).await;
        assert_eq!(status, 201, "{body}");
        body["id"].as_str().unwrap().to_string()
    }

    async fn messages(&self, id: &str) -> Vec<Value> {
        let (status, body) = self.get(&format!("/sessions/{id}")).await;
        assert_eq!(status, 200, "{body}");
        body["messages"].as_array().unwrap().clone()
    }

    /// Opens the event stream at `path`.
    async fn stream(&self, path: &str) -> Events {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        Events {
            response,
            text: String::new(),
        }
    }

    /// Kills it with SIGKILL.
    fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// What it printed so far.
    fn printed(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An SSE stream, read one event at a time.
struct Events {
    response: reqwest::Response,
    text: String,
}

impl Events {
    async fn next(&mut self) -> Option<Value> {
        // One deadline for the event, not one per chunk: the server's keep-alive comments
        // arrive every 15 s, so a stream that never sends the event would never time out.
        let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
        loop {
            while let Some(end) = self.text.find("\n\n") {
                let message: String = self.text.drain(..end + 2).collect();
                let data: String = message
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if !data.is_empty() {
                    return Some(serde_json::from_str(&data).unwrap());
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .expect("an event in time")
                .unwrap()?;
            self.text.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    /// Reads until `finished` (included) and returns the events' types.
    async fn read_to_finish(&mut self, seen: &mut Vec<Value>) {
        while let Some(e) = self.next().await {
            let done = e["type"] == "finished";
            seen.push(e);
            if done {
                return;
            }
        }
    }
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}
