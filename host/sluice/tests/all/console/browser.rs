//! The browser: `flows.py` run by the venv's Python, which starts the distribution's
//! `chromedriver` (by path, on a free port chosen here) and headless `chromium`. One flow at a
//! time: [`Browser::get`] holds a lock until the test ends.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_test_support::mcp_clients;
use sluice_test_support::skip_or_fail as skip;

use super::server::{Serve, TOKEN};

/// The longest a flow may take before it is killed (its conditions wait up to 60 s each).
const FLOW_LIMIT: Duration = Duration::from_secs(600);

/// One test at a time (a browser takes both of CI's cores, and the first-screen timing needs
/// a quiet machine).
static SERIAL: Mutex<()> = Mutex::new(());

/// Waits for the other tests of this binary to finish; held until the guard drops.
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What drives the browser, found; and the lock of [`serial`].
pub(crate) struct Browser {
    python: PathBuf,
    chromium: PathBuf,
    chromedriver: PathBuf,
    _serial: MutexGuard<'static, ()>,
}

impl Browser {
    /// The browser once no other test of this binary runs; `None` (skipped, a failure under
    /// `CI=true`) without `chromium`, `chromedriver` or the venv's `selenium`.
    pub(crate) fn get() -> Option<Browser> {
        let python = mcp_clients::python()?;
        let chromium = program("chromium")?;
        let chromedriver = program("chromedriver")?;
        let selenium = Command::new(&python)
            .args(["-c", "import selenium"])
            .output()
            .unwrap();
        if !selenium.status.success() {
            skip("selenium is not installed in the venv (run host/sluice-mcp/clients/install.sh)");
            return None;
        }
        Some(Browser {
            python,
            chromium,
            chromedriver,
            _serial: serial(),
        })
    }

    /// Runs flow `flow` of `flows.py` against `serve` with `args` (merged into its input) and
    /// returns the facts it printed; checks that it saved its screenshot,
    /// `console-screenshots/<flow>.png`. Fails when the flow fails (with what it printed).
    pub(crate) fn flow(&self, flow: &str, serve: &Serve, args: Value) -> Value {
        let screenshot = screenshots().join(format!("{flow}.png"));
        let _ = std::fs::remove_file(&screenshot);
        let mut input = json!({
            "flow": flow,
            "chromedriver": self.chromedriver,
            "port": free_port(),
            "chromium": self.chromium,
            "base": serve.url,
            "token": TOKEN,
            "screenshot": screenshot,
        });
        for (key, value) in args.as_object().unwrap() {
            input[key] = value.clone();
        }
        let (ok, stdout, stderr) = self.run(&input);
        assert!(ok, "flow {flow} failed:\n{stdout}\n{stderr}");
        let png =
            std::fs::read(&screenshot).unwrap_or_else(|e| panic!("{}: {e}", screenshot.display()));
        assert!(
            png.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{} is not a PNG",
            screenshot.display()
        );
        let facts: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
            .unwrap_or_else(|e| panic!("flow {flow} printed no facts ({e}):\n{stdout}\n{stderr}"));
        // The console breaks none of its own Content-Security-Policy (an inline script or
        // style, an eval, another origin): the browser would have said so.
        let console = facts["console"].as_array().unwrap();
        let violations: Vec<&Value> = console
            .iter()
            .filter(|m| m.as_str().unwrap().contains("Content Security Policy"))
            .collect();
        assert!(violations.is_empty(), "flow {flow}: {violations:#?}");
        facts
    }

    /// Runs `flows.py` with `input` on stdin, in a process group of its own (its chromedriver
    /// and chromium with it), killed whole when it ends or overruns [`FLOW_LIMIT`]: whether
    /// it succeeded, its stdout and its stderr.
    fn run(&self, input: &Value) -> (bool, String, String) {
        use std::os::unix::process::CommandExt;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/console/flows.py");
        let child = Command::new(&self.python)
            .arg(script)
            .env("SE_OFFLINE", "true")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut group = Group(child);
        let mut stdin = group.0.stdin.take().unwrap();
        stdin.write_all(input.to_string().as_bytes()).unwrap();
        drop(stdin);
        let reader = |mut from: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut text = String::new();
                from.read_to_string(&mut text).unwrap();
                text
            })
        };
        let stdout = reader(Box::new(group.0.stdout.take().unwrap()));
        let stderr = reader(Box::new(group.0.stderr.take().unwrap()));
        let start = Instant::now();
        let status = loop {
            if let Some(status) = group.0.try_wait().unwrap() {
                break status;
            }
            assert!(
                start.elapsed() < FLOW_LIMIT,
                "the flow ran past {FLOW_LIMIT:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        // Whatever the flow left behind (a browser that outlived its driver) goes too.
        drop(group);
        (
            status.success(),
            stdout.join().unwrap(),
            stderr.join().unwrap(),
        )
    }
}

/// A process leading a process group, killed with its whole group when dropped.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.0.id() as i32) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Where the screenshots go: `$CARGO_TARGET_TMPDIR/console-screenshots/`.
fn screenshots() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A port free on 127.0.0.1 now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `name` on the `PATH`, or `None` after saying it is missing (see [`skip`]).
fn program(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        skip(&format!(
            "{name} is not installed (Debian: apt-get install chromium chromium-driver)"
        ));
    }
    found
}
