//! Sluice processes the bench runs: started, their address read from stderr, killed when
//! dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

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
