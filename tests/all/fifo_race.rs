//! Anyone who can write into a root can swap a regular file for a FIFO
//! (`renameat2(RENAME_EXCHANGE)` in a loop) between a tool's look at it and its open. The
//! built-in tools check the type of what they opened, by descriptor, and the host opens
//! without blocking, so every call ends with the file's content or a clear error: no call
//! hangs, none runs into its timeout.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_tests::Sandbox;

use crate::cache;

/// Calls of each tool during the swaps.
const CALLS: usize = 1_000;

/// The tools' timeout here: a call that waited on the FIFO would end with a `timeout` error
/// after it (and fail the test), instead of hanging the test run.
const TIMEOUT: Duration = Duration::from_secs(2);

/// Swaps `a` and `b` (a regular file and a FIFO) in a loop until dropped; counts swaps.
struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Swapper {
    fn start(a: PathBuf, b: PathBuf) -> Swapper {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, swaps) = (stop.clone(), swaps.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    rustix::fs::renameat_with(
                        rustix::fs::CWD,
                        &a,
                        rustix::fs::CWD,
                        &b,
                        rustix::fs::RenameFlags::EXCHANGE,
                    )
                    .expect("renameat2(RENAME_EXCHANGE)");
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        Swapper {
            stop,
            swaps,
            thread: Some(thread),
        }
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How the calls of one tool ended.
#[derive(Debug, Default)]
struct Tally {
    /// The file's content came back.
    content: usize,
    /// The FIFO was refused or skipped, with a clear message.
    refused: usize,
    /// The slowest call.
    slowest: Duration,
}

/// Runs `calls` calls of `tool` with `args` against `data.txt` while it is swapped with a
/// FIFO; `classify` says whether a result is the content (true) or the FIFO refused (false)
/// and fails on anything else.
fn race(tool: &str, args: Value, classify: impl Fn(&Value) -> bool) -> Tally {
    let sb = Sandbox::with_policy(cache(), 65_536, |p| p.timeout = TIMEOUT);
    sb.write("data.txt", "hello swap\n");
    let fifo = sb.root().join("fifo");
    sluice_operator_files::make_fifo(&fifo).expect("a FIFO");
    let swapper = Swapper::start(sb.root().join("data.txt"), fifo);
    let mut tally = Tally::default();
    for i in 0..CALLS {
        let start = Instant::now();
        let obs = sb.checked(tool, &args);
        tally.slowest = tally.slowest.max(start.elapsed());
        let v: Value = serde_json::from_str(obs.text()).expect("an observation is JSON");
        if v["ok"] == true {
            if classify(&v["result"]) {
                tally.content += 1;
            } else {
                tally.refused += 1;
            }
        } else {
            assert_eq!(
                (v["error"].as_str(), v["kind"].as_str()),
                (
                    Some(
                        "data.txt is not a regular file (a device, FIFO or socket); only regular files can be read"
                    ),
                    Some("wrong-kind")
                ),
                "{tool} call {i}: {}",
                obs.text()
            );
            tally.refused += 1;
        }
    }
    let swaps = swapper.swaps.load(Ordering::Relaxed);
    drop(swapper);
    assert!(swaps > CALLS as u64, "only {swaps} swaps: no race");
    tally
}

/// Every call ended with content or a refusal, well before the timeout; the race hit both.
fn assert_no_hang(tool: &str, tally: &Tally) {
    assert_eq!(tally.content + tally.refused, CALLS, "{tool}: {tally:?}");
    assert!(
        tally.slowest < TIMEOUT,
        "{tool}: a call took {:?}",
        tally.slowest
    );
    assert!(
        tally.content > 0 && tally.refused > 0,
        "{tool}: the swap never showed (or never hid) the file: {tally:?}"
    );
}

#[test]
fn read_file_never_hangs_on_a_fifo_swapped_in() {
    let tally = race("read_file", json!({"path": "data.txt"}), |r| {
        assert_eq!(r["content"], "hello swap\n", "{r}");
        true
    });
    assert_no_hang("read_file", &tally);
}

#[test]
fn tail_file_never_hangs_on_a_fifo_swapped_in() {
    let tally = race("tail_file", json!({"path": "data.txt"}), |r| {
        assert_eq!(r["lines"], json!(["hello swap"]), "{r}");
        true
    });
    assert_no_hang("tail_file", &tally);
}

#[test]
fn grep_files_never_hangs_on_a_fifo_swapped_in() {
    // One file: what was opened is searched if it is a regular file, else skipped.
    let tally = race(
        "grep_files",
        json!({"pattern": "swap", "path": "data.txt"}),
        |r| {
            let count = r["count"].as_u64().expect("count");
            assert_eq!(
                count + r["skippedFiles"].as_u64().expect("skippedFiles"),
                1,
                "{r}"
            );
            if count == 1 {
                assert_eq!(
                    r["results"],
                    json!([{"path": "data.txt", "line": 1, "text": "hello swap"}])
                );
            }
            count == 1
        },
    );
    assert_no_hang("grep_files", &tally);
    // A walk lists `data.txt` and `fifo` and opens what it listed as regular files: each
    // name is searched or skipped, whatever it is by then.
    let tally = race("grep_files", json!({"pattern": "swap"}), |r| {
        let count = r["count"].as_u64().expect("count");
        assert_eq!(
            count + r["skippedFiles"].as_u64().expect("skippedFiles"),
            2,
            "{r}"
        );
        for m in r["results"].as_array().expect("results") {
            assert_eq!(m["text"], "hello swap", "{r}");
        }
        count > 0
    });
    assert_no_hang("grep_files (walk)", &tally);
}
