//! Two real `sluice` processes on one SQLite store (docs/storage.md#one-run-per-session). One run per session must
//! hold across processes, and a prompt is either accepted (and then in the transcript) or
//! refused with a clear error; never accepted and dropped. Before the fix, a prompt posted to
//! a second `sluice serve` while another process ran the session answered 202 `running` and
//! never reached the transcript.
//!
//! The model is a fake OpenAI-compatible server on 127.0.0.1 that holds each request until the
//! test releases it, so "a run is in progress" is a state the test waits for, not a timing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};

use sluice_test_support::held_model::{EVENT_TIMEOUT, HeldModel};

/// A store, a root and a configuration naming the fake model, shared by every process.
struct Shared {
    dir: tempfile::TempDir,
    model: HeldModel,
}

impl Shared {
    fn new() -> Shared {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("logs")).unwrap();
        std::fs::write(dir.path().join("logs/app.log"), "ERROR db-2 lost\n").unwrap();
        let model = HeldModel::start();
        std::fs::write(
            dir.path().join("sluice.toml"),
            format!(
                "[model]\nprovider = \"openai-compatible\"\nname = \"fake\"\nbase_url = \"{}\"\nstream = false\nmax_retries = 0\n\n[roots]\nlogs = \"logs\"\n",
                model.base_url
            ),
        )
        .unwrap();
        Shared { dir, model }
    }

    fn store(&self) -> PathBuf {
        self.dir.path().join("sessions.db")
    }

    /// `sluice --config … --store … ARGS`.
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
        c.arg("--config")
            .arg(self.dir.path().join("sluice.toml"))
            .arg("--store")
            .arg(self.store())
            .args(args)
            .env("SLUICE_CACHE_DIR", crate::warm_cache())
            .env_remove("SLUICE_SERVER_TOKEN")
            .env_remove("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES")
            .stdin(Stdio::null());
        c
    }

    /// `sluice run --session NAME PROMPT`, started (not waited for).
    fn spawn_run(&self, session: &str, prompt: &str) -> Child {
        self.command(&["run", "--session", session, prompt])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// `sluice run --session NAME PROMPT` to its end.
    fn run(&self, session: &str, prompt: &str) -> Output {
        self.spawn_run(session, prompt).wait_with_output().unwrap()
    }

    /// `sluice serve` on a free loopback port.
    fn serve(&self) -> Server {
        let mut child = self
            .command(&["serve", "--listen", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        err.read_line(&mut line).unwrap();
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("an address in {line:?}"))
            .to_string();
        Server { child, addr }
    }
}

/// A `sluice serve` process; killed when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    /// Sends a request; returns (status, JSON body).
    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(EVENT_TIMEOUT)).unwrap();
        let body = body.map(Value::to_string).unwrap_or_default();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let status = out[9..12].parse().unwrap();
        let json = out
            .split_once("\r\n\r\n")
            .map(|(_, b)| serde_json::from_str(b).unwrap_or(Value::Null))
            .unwrap_or(Value::Null);
        (status, json)
    }

    fn prompt(&self, session: &str, prompt: &str, wait: bool) -> (u16, Value) {
        let query = if wait { "?wait=true" } else { "" };
        self.request(
            "POST",
            &format!("/sessions/{session}/prompts{query}"),
            Some(&json!({ "prompt": prompt })),
        )
    }

    /// The user prompts of the transcript of `session`, in order.
    fn prompts(&self, session: &str) -> Vec<String> {
        let (status, body) = self.request("GET", &format!("/sessions/{session}"), None);
        assert_eq!(status, 200, "{body}");
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn one_run_per_session_across_processes_and_no_prompt_is_lost() {
    let shared = Shared::new();

    // 1. `sluice run` starts session "shared" (creating it under that name) and holds it:
    //    its model request is waiting.
    let first = shared.spawn_run("shared", "first: what failed?");
    let request = shared.model.next_request();
    assert_eq!(
        request["messages"].as_array().unwrap().last().unwrap()["content"],
        "first: what failed?"
    );

    // 2. A `sluice serve` on the same store refuses a prompt for that session (409), and a
    //    second `sluice run` refuses too; neither stores anything.
    let server = shared.serve();
    let (status, body) = server.prompt("shared", "second: refused", false);
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["session"], "shared");
    assert_eq!(
        body["error"],
        "session shared already has a run in progress in another Sluice process using the same session store (one run per session): nothing was added; wait for that run to end, or cancel it where it runs"
    );
    let third = shared.run("shared", "third: refused");
    assert_eq!(third.status.code(), Some(2), "{}", stderr(&third));
    assert_eq!(
        stderr(&third),
        "sluice: error: session \"shared\" already has a run in progress (one run per session, across every process using this store); nothing was added: wait for that run to end\n"
    );

    // 3. The first run ends; its answer is the model's.
    shared.model.release_one();
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(String::from_utf8_lossy(&first.stdout), "done\n");
    assert!(
        stderr(&first).starts_with("sluice: no session \"shared\" yet: created it\n"),
        "{}",
        stderr(&first)
    );

    // 4. Now the server runs the session (202 at once: the prompt is stored with the claim)
    //    and holds it; a second server and the CLI are refused meanwhile.
    let (status, body) = server.prompt("shared", "fourth: accepted", false);
    assert_eq!(status, 202, "{body}");
    let request = shared.model.next_request();
    assert_eq!(
        request["messages"].as_array().unwrap().last().unwrap()["content"],
        "fourth: accepted"
    );
    // The prompt was stored with the claim (queued) and joins the transcript when the run
    // starts, before its first model request.
    assert_eq!(
        server.prompts("shared"),
        ["first: what failed?", "fourth: accepted"],
        "an accepted prompt is in the transcript once its run has started"
    );
    let other = shared.serve();
    let (status, body) = other.prompt("shared", "fifth: refused", true);
    assert_eq!(status, 409, "{body}");
    let sixth = shared.run("shared", "sixth: refused");
    assert_eq!(sixth.status.code(), Some(2), "{}", stderr(&sixth));
    shared.model.release_one();

    // 5. Once it has ended, the other server runs the session to its end.
    let (status, body) = server.request("GET", "/sessions/shared", None);
    assert_eq!(status, 200);
    let run_id = body["run"]["runId"].as_str().unwrap().to_string();
    let (status, _) = server.request(
        "GET",
        &format!("/sessions/shared/events?runId={run_id}"),
        None,
    );
    assert_eq!(status, 200, "the event stream ends when the run does");
    shared.model.release_one(); // For the next request, answered as soon as it comes.
    let (status, body) = other.prompt("shared", "seventh: accepted", true);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "completed");

    // Every accepted prompt is in the transcript, once, in order; no refused one is.
    assert_eq!(
        other.prompts("shared"),
        [
            "first: what failed?",
            "fourth: accepted",
            "seventh: accepted"
        ]
    );
}
