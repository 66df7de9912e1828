//! A `sluice serve` of each test's own: a temporary directory with a root (`files/`), a
//! store (`sessions.db`, which a test may seed first), a `sluice.toml` and a token file; and
//! its API, called with the token.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_test_support::listening;

/// How long a run may take to reach a status (a loaded machine; nothing is asserted about
/// time).
const PATIENCE: Duration = Duration::from_secs(60);

/// The bearer token of every test server.
pub(crate) const TOKEN: &str = "console-test-token-5f1e0c";

/// A child process, killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A server's directory before it starts: the root, the store, the files.
pub(crate) struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    /// An empty root and no store yet.
    pub(crate) fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("files")).unwrap();
        Setup { dir }
    }

    /// Writes `contents` to `name` in the root.
    pub(crate) fn file(&self, name: &str, contents: &str) -> &Setup {
        std::fs::write(self.dir.path().join("files").join(name), contents).unwrap();
        self
    }

    /// Writes `contents` to `name` in the directory (beside the root, not in it).
    pub(crate) fn beside(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }

    /// The session store the server will open, for seeding before it starts.
    pub(crate) fn store(&self) -> sluice_store::SqliteStore {
        sluice_store::SqliteStore::open(&self.dir.path().join("sessions.db")).unwrap()
    }

    /// Starts `sluice serve` on 127.0.0.1 (a free port) with the token, the root `files`,
    /// the store, `toml` added to its sluice.toml and `args` after `serve`.
    pub(crate) fn serve(self, toml: &str, args: &[&str]) -> Serve {
        let path = |p: &Path| serde_json::to_string(&p.display().to_string()).unwrap();
        let dir = self.dir.path();
        std::fs::write(
            dir.join("sluice.toml"),
            format!(
                "[roots]\nfiles = {}\n\n[store]\npath = {}\n\n{toml}",
                path(&dir.join("files")),
                path(&dir.join("sessions.db"))
            ),
        )
        .unwrap();
        std::fs::write(dir.join("token"), format!("{TOKEN}\n")).unwrap();
        let mut server = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .current_dir(dir)
            .args([
                "--config",
                "sluice.toml",
                "serve",
                "--listen",
                "127.0.0.1:0",
            ])
            .args(["--token-file", "token", "--no-reload"])
            .args(args)
            .env("SLUICE_CACHE_DIR", crate::warm_cache())
            .env("SLUICE_LOG", "warn")
            .env_remove("SLUICE_SERVER_TOKEN")
            .env_remove("SLUICE_STORE")
            .env_remove("SLUICE_STORE_URL")
            .env_remove("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES")
            .env_remove("SLUICE_AGENT_MAX_TURNS")
            .env_remove("SLUICE_AGENT_AUTO_APPROVE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let url = listening::address_from(server.stderr.take().unwrap());
        let server = Killed(server);
        Serve {
            url,
            client: reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(120))
                .build()
                .unwrap(),
            _server: server,
            _dir: self.dir,
        }
    }
}

/// A running `sluice serve`, killed when dropped.
pub(crate) struct Serve {
    /// `http://127.0.0.1:PORT`.
    pub(crate) url: String,
    pub(crate) client: reqwest::blocking::Client,
    _server: Killed,
    _dir: tempfile::TempDir,
}

impl Serve {
    /// `GET path` with the token: the JSON answer (fails on a status other than 200).
    pub(crate) fn get(&self, path: &str) -> Value {
        let response = self
            .client
            .get(format!("{}{path}", self.url))
            .bearer_auth(TOKEN)
            .send()
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().unwrap();
        assert_eq!(status, 200, "GET {path}: {text}");
        serde_json::from_str(&text).unwrap()
    }

    /// `POST path` with the token and `body` (none when `Null`): the status and the JSON
    /// answer.
    pub(crate) fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let mut request = self
            .client
            .post(format!("{}{path}", self.url))
            .bearer_auth(TOKEN);
        if !body.is_null() {
            request = request.json(body);
        }
        let response = request.send().unwrap();
        let status = response.status().as_u16();
        let text = response.text().unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("POST {path}: {e}: {text}")),
        )
    }

    /// A new session's id.
    pub(crate) fn create_session(&self) -> String {
        let (status, created) = self.post("/sessions", &Value::Null);
        assert_eq!(status, 201, "{created}");
        created["id"].as_str().unwrap().to_string()
    }

    /// Posts `prompt` to session `id` and waits for the run's end: its answer.
    pub(crate) fn prompt(&self, id: &str, prompt: &str) -> Value {
        let (status, ended) = self.post(
            &format!("/sessions/{id}/prompts?wait=true"),
            &json!({ "prompt": prompt }),
        );
        assert_eq!(status, 200, "{ended}");
        ended
    }

    /// Session `id` with its transcript (`GET /sessions/{id}`), once its status is not
    /// `running`.
    pub(crate) fn settled(&self, id: &str) -> Value {
        let start = Instant::now();
        loop {
            let session = self.get(&format!("/sessions/{id}"));
            if session["session"]["status"] != "running" {
                return session;
            }
            assert!(start.elapsed() < PATIENCE, "still running: {session:#}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The `type` of each event of run `run` of session `id`, in order (the stream of a
    /// finished run replays it and ends).
    pub(crate) fn event_types(&self, id: &str, run: &str) -> Vec<String> {
        let text = self
            .client
            .get(format!("{}/sessions/{id}/events?runId={run}", self.url))
            .bearer_auth(TOKEN)
            .send()
            .unwrap()
            .text()
            .unwrap();
        text.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|data| {
                let event: Value = serde_json::from_str(data).unwrap();
                event["type"].as_str().unwrap().to_string()
            })
            .collect()
    }
}

/// Runs a store call to its end (the store is async; these tests are not).
pub(crate) fn block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}
