//! Sluice processes the bench runs: started, their address read from stderr (or spoken to
//! over stdio), killed when dropped.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A `sluice serve` or `sluice mcp --listen` process listening on a loopback port; killed
/// (and waited for) when dropped.
pub(crate) struct Listening {
    child: Child,
    /// Its base URL (`http://127.0.0.1:PORT`), from the line it prints on stderr.
    pub(crate) base: String,
}

impl Listening {
    /// Spawns `command` (stdin and stdout null, stderr piped), reads stderr up to the line
    /// naming an `http://` address, and keeps stderr drained from then on so a full pipe
    /// never stops the process.
    ///
    /// # Errors
    /// When it cannot start or ends before printing an address.
    pub(crate) fn start(command: &mut Command) -> anyhow::Result<Listening> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let mut stderr = BufReader::new(
            child
                .stderr
                .take()
                .ok_or_else(|| anyhow::anyhow!("no stderr"))?,
        );
        let mut line = String::new();
        let base = loop {
            line.clear();
            anyhow::ensure!(
                stderr.read_line(&mut line)? > 0,
                "sluice ended before listening"
            );
            if let Some(addr) = line.split_whitespace().find(|w| w.starts_with("http://")) {
                break addr.trim_end_matches('/').to_string();
            }
        };
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Ok(Listening { child, base })
    }

    /// Its resident memory (`VmRSS`, KiB) and its threads, from `/proc/PID/status`; zeros
    /// where that cannot be read.
    pub(crate) fn rss_and_threads(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        (field("VmRSS:"), field("Threads:"))
    }

    /// User and system CPU time of the process so far (`/proc/PID/stat`, 100 ticks a
    /// second); zero where that cannot be read.
    pub(crate) fn cpu(&self) -> Duration {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // Fields after the command name (which may hold spaces) start at `) `.
        let ticks: u64 = stat
            .rsplit_once(") ")
            .map(|(_, rest)| {
                rest.split_whitespace()
                    .skip(11)
                    .take(2)
                    .filter_map(|t| t.parse::<u64>().ok())
                    .sum()
            })
            .unwrap_or(0);
        Duration::from_millis(ticks * 10)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `sluice mcp` child over stdio: requests written, answers matched by id, its log kept.
pub(crate) struct McpChild {
    child: Child,
    stdin: ChildStdin,
    /// When it was spawned.
    pub(crate) started: Instant,
    lines: Receiver<(Instant, String)>,
    answers: HashMap<u64, (Instant, Value)>,
    log: Arc<Mutex<Vec<(Duration, String)>>>,
}

impl McpChild {
    /// Spawns `command` (`sluice … mcp`) with its stdio piped; its clock starts here.
    pub(crate) fn start(command: &mut Command) -> anyhow::Result<McpChild> {
        let started = Instant::now();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stderr"))?;
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send((Instant::now(), line)).is_err() {
                    return;
                }
            }
        });
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push((started.elapsed(), line));
            }
        });
        Ok(McpChild {
            child,
            stdin,
            started,
            lines,
            answers: HashMap::new(),
            log,
        })
    }

    /// Writes `message` as one line.
    pub(crate) fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        self.stdin.write_all(format!("{message}\n").as_bytes())?;
        self.stdin.flush()?;
        Ok(())
    }

    /// The answer to request `id` and when it came (since the start); lines without an
    /// id (notifications) are passed over.
    pub(crate) fn answer(&mut self, id: u64) -> anyhow::Result<(Duration, Value)> {
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            if let Some((at, v)) = self.answers.remove(&id) {
                return Ok((at - self.started, v));
            }
            let (at, line) = self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .map_err(|_| {
                    anyhow::anyhow!(
                        "no answer to request {id} (log: {:?})",
                        self.log_lines().last()
                    )
                })?;
            let v: Value = serde_json::from_str(&line)?;
            if let Some(n) = v.get("id").and_then(Value::as_u64) {
                self.answers.insert(n, (at, v));
            }
        }
    }

    /// Its stderr so far, a line each, with when it came (since the start).
    pub(crate) fn log_lines(&self) -> Vec<(Duration, String)> {
        self.log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl Drop for McpChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
