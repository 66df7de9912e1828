//! Live reload through `sluice serve` (and `sluice mcp`): the tools directory changes while
//! the server runs and calls are in flight.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_tests::versioned;

use super::Workspace;

/// How long a reload may take on a loaded 2-core machine (it compiles a component).
const RELOAD_LIMIT: Duration = Duration::from_secs(60);

/// A running `sluice serve` and its stderr, line by line.
struct Served {
    child: Child,
    url: String,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Served {
    /// `sluice --root work=… --tools tools serve` over `w`, with the reloader's logs on.
    fn start(w: &Workspace) -> Served {
        Served::start_with(w, &[])
    }

    /// `sluice serve` with `more` flags too (`--strict`: it answers once every component
    /// has compiled).
    fn start_with(w: &Workspace, more: &[&str]) -> Served {
        let root = format!("work={}", w.path("work").display());
        let tools = w.path("tools").display().to_string();
        let store = w.path("sessions.db").display().to_string();
        let mut args = vec![
            "--root",
            &root,
            "--tools",
            &tools,
            "--store",
            &store,
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--allow-destructive",
        ];
        args.extend(more);
        let mut child = w
            .command(&args)
            .env("SLUICE_LOG", "warn,sluice_server::reload=info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sluice serve starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut served = Served {
            child,
            url: String::new(),
            lines,
            seen: Vec::new(),
        };
        let line = served.wait_for("the address", Duration::from_secs(120), |l| {
            l.contains("serving the operator API on http://")
        });
        let at = line.find("http://").expect("an address");
        let rest = &line[at..];
        served.url = rest[..rest[7..].find(' ').map_or(rest.len(), |i| i + 7)].to_string();
        served
    }

    /// The next stderr line that `matches`, waiting at most `limit`.
    fn wait_for(&mut self, what: &str, limit: Duration, matches: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if matches(&line) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no log line for {what} within {limit:?}; stderr so far:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// Waits for the reload to revision `revision`; returns its log line.
    fn reloaded(&mut self, revision: u64) -> String {
        let needle = format!("reloaded the tools (revision {revision},");
        self.wait_for(&format!("reload {revision}"), RELOAD_LIMIT, |l| {
            l.contains(&needle)
        })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `tools/call` over `POST /mcp`: the observation text.
fn call(url: &str, tool: &str, arguments: Value) -> String {
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":tool,"arguments":arguments}});
    let response = reqwest::blocking::Client::new()
        .post(format!("{url}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(body.to_string())
        .timeout(Duration::from_secs(120))
        .send()
        .expect("POST /mcp answers");
    let value: Value = response.json().expect("a JSON-RPC answer");
    value["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a tools/call result: {value}"))
        .to_string()
}

fn says(v: &str) -> String {
    format!("{{\"ok\":true,\"result\":\"{v}\"}}")
}

/// Replaces `tools/versioned.wasm` at once (a rename), as a deploy would.
fn install(w: &Workspace, wasm: &[u8]) {
    let staging = w.path("versioned.wasm.new");
    std::fs::write(&staging, wasm).expect("write the new component");
    std::fs::rename(&staging, w.path("tools/versioned.wasm")).expect("rename it into place");
}

fn setup(w: &Workspace) {
    install(w, &versioned("v1"));
    std::fs::write(w.path("tools/versioned.toml"), "write = [\"work\"]\n").unwrap();
}

/// Resident memory of process `pid`, in KiB (`VmRSS` of `/proc/PID/status`).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS")
}

/// Waits until the file at `path` exists and is not empty (the guest creates it, then
/// writes its version into it).
fn wait_for_file(path: &Path, limit: Duration) {
    let start = Instant::now();
    while !std::fs::read(path).is_ok_and(|v| !v.is_empty()) {
        assert!(start.elapsed() < limit, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_call_in_flight_finishes_on_the_old_version_and_the_next_call_uses_the_new() {
    let w = Workspace::new().with_builtins_compiled();
    setup(&w);
    // Strict: every component (run_script's large one too) has compiled before the first
    // reload, so the memory measured is the reloads', not a first compile's.
    let mut served = Served::start_with(&w, &["--strict"]);
    let url = served.url.clone();
    assert_eq!(call(&url, "version", json!({})), says("v1"));

    // A call that stays in flight until the test creates work/go.
    let in_flight = {
        let url = url.clone();
        std::thread::spawn(move || call(&url, "wait_for", json!({"path": "/work/go"})))
    };
    wait_for_file(&w.path("work/go.waiting"), Duration::from_secs(60));
    assert_eq!(
        std::fs::read_to_string(w.path("work/go.waiting")).unwrap(),
        "v1"
    );

    let replaced = Instant::now();
    install(&w, &versioned("v2"));
    let line = served.reloaded(1);
    eprintln!(
        "reload: {:?} from the rename to the swap ({line})",
        replaced.elapsed()
    );
    assert!(
        line.contains("7 tool(s) (added: [], removed: [])"),
        "{line}"
    );
    assert_eq!(
        call(&url, "version", json!({})),
        says("v2"),
        "the next call uses v2"
    );

    std::fs::write(w.path("work/go"), "").unwrap();
    let finished = in_flight.join().expect("the call thread");
    assert_eq!(finished, says("v1"), "the call in flight finished on v1");
}

#[test]
fn a_broken_replacement_keeps_the_old_version_and_says_why() {
    let w = Workspace::new();
    setup(&w);
    let mut served = Served::start(&w);
    let url = served.url.clone();
    assert_eq!(call(&url, "version", json!({})), says("v1"));

    install(&w, b"\0asm\x0d\0\x01\0 this is not a component");
    let line = served.wait_for("the refused reload", RELOAD_LIMIT, |l| {
        l.contains("reloading the tools failed, so the current tools stay")
    });
    assert!(line.contains("(revision 0)"), "{line}");
    assert!(line.contains("versioned.wasm"), "{line}");
    assert_eq!(
        call(&url, "version", json!({})),
        says("v1"),
        "v1 still serves"
    );

    // A policy that names an undefined root is refused the same way (with v1 back in
    // place: the same bytes as the tools served, so that alone reloads nothing).
    install(&w, &versioned("v1"));
    std::fs::write(w.path("tools/versioned.toml"), "read = [\"nowhere\"]\n").unwrap();
    // (One rename can reach the watcher as two batches of events, each a reload that fails
    // for the broken component: skip those, whose reason is not the policy's.)
    let line = served.wait_for("the refused policy", RELOAD_LIMIT, |l| {
        l.contains("reloading the tools failed") && l.contains("tools.versioned.read")
    });
    assert!(line.contains("(revision 0)"), "{line}");
    assert!(line.contains("tools.versioned.read"), "{line}");
    assert_eq!(call(&url, "version", json!({})), says("v1"));

    // v3 first, then the policy mended: a reload that sees only v3 fails for the policy still,
    // so revision 1 is v3 however the watcher batches the two changes (the other order let a
    // loaded machine serve v1 with the mended policy as revision 1).
    install(&w, &versioned("v3"));
    std::fs::write(w.path("tools/versioned.toml"), "write = [\"work\"]\n").unwrap();
    served.reloaded(1);
    assert_eq!(call(&url, "version", json!({})), says("v3"));

    // Removing the component removes its tools.
    std::fs::remove_file(w.path("tools/versioned.wasm")).unwrap();
    let line = served.reloaded(2);
    assert!(line.contains("removed: [version, wait_for]"), "{line}");
    assert_eq!(
        call(&url, "version", json!({})),
        // The tools left, nearest the name first (docs/observations.md#shapes).
        "{\"ok\":false,\"error\":\"unknown_tool\",\"name\":\"version\",\"tools\":[\"read_file\",\"grep_files\",\"list_dir\",\"run_script\",\"tail_file\"]}"
    );

    // A new component that fails to load is left out, as at a start without --strict: it
    // serves nothing yet, so the reload goes on without it.
    std::fs::write(
        w.path("tools/new.wasm"),
        b"\0asm\x0d\0\x01\0 not a component",
    )
    .unwrap();
    let line = served.wait_for("the new component's warning", RELOAD_LIMIT, |l| {
        l.contains("new.wasm is unavailable, its tools are not offered")
    });
    assert!(line.contains("WARN"), "{line}");
    let line = served.reloaded(3);
    assert!(line.contains("(added: [], removed: [])"), "{line}");
}

#[test]
fn a_hundred_replacements_under_concurrent_calls_lose_no_call_and_leak_no_memory() {
    const CLIENTS: usize = 4;
    const WARM_UP: u64 = 10;
    const REPLACEMENTS: u64 = 100;
    let w = Workspace::new().with_builtins_compiled();
    setup(&w);
    // --strict: serving starts once every component has compiled, so no background compile
    // (run_script's takes seconds) finishes between the two RSS readings and counts as a leak.
    let mut served = Served::start_with(&w, &["--strict"]);
    let url = served.url.clone();

    let stop = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (url, stop, calls) = (url.clone(), stop.clone(), calls.clone());
            std::thread::spawn(move || {
                let mut bad = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let text = call(&url, "version", json!({}));
                    let ok =
                        text.starts_with("{\"ok\":true,\"result\":\"") && text.ends_with("\"}");
                    if !ok {
                        bad.push(text);
                    }
                    calls.fetch_add(1, Ordering::Relaxed);
                }
                bad
            })
        })
        .collect();

    let mut reload_ms = Vec::new();
    let mut rss_before = 0;
    for i in 1..=WARM_UP + REPLACEMENTS {
        let started = Instant::now();
        install(&w, &versioned(&format!("r{i}")));
        served.reloaded(i);
        reload_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        if i == WARM_UP {
            rss_before = rss_kib(served.pid());
        }
    }
    assert_eq!(
        call(&url, "version", json!({})),
        says(&format!("r{}", WARM_UP + REPLACEMENTS))
    );
    let rss_after = rss_kib(served.pid());
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        let bad = client.join().expect("a client thread");
        assert!(
            bad.is_empty(),
            "calls that failed during the swaps: {bad:?}"
        );
    }
    let total = calls.load(Ordering::Relaxed);
    reload_ms.sort_by(f64::total_cmp);
    eprintln!(
        "{REPLACEMENTS} replacements after {WARM_UP} warm-up: {total} calls, none lost; reload median {:.0} ms, max {:.0} ms; RSS {rss_before} KiB -> {rss_after} KiB",
        reload_ms[reload_ms.len() / 2],
        reload_ms[reload_ms.len() - 1],
    );
    assert!(
        total >= REPLACEMENTS as usize,
        "the clients kept calling: {total}"
    );
    assert!(
        rss_after * 10 <= rss_before * 11,
        "RSS grew by more than 10% over {REPLACEMENTS} replacements: {rss_before} KiB -> {rss_after} KiB"
    );
}

/// `sluice mcp` over stdio: a client that opened with `initialize` is told when the tools
/// change.
#[test]
fn an_mcp_client_is_told_when_the_tools_change() {
    let w = Workspace::new();
    setup(&w);
    let root = format!("work={}", w.path("work").display());
    let tools = w.path("tools").display().to_string();
    let mut child = w
        .command(&[
            "--root",
            &root,
            "--tools",
            &tools,
            "mcp",
            "--allow-destructive",
        ])
        .env("SLUICE_LOG", "warn,sluice_server::reload=info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("sluice mcp starts");
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx
                .send(serde_json::from_str(&line).expect("a JSON-RPC line"))
                .is_err()
            {
                break;
            }
        }
    });
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    let next = |what: &str| {
        rx.recv_timeout(RELOAD_LIMIT)
            .unwrap_or_else(|_| panic!("no {what} from sluice mcp"))
    };
    send(
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}),
    );
    let init = next("initialize result");
    assert_eq!(
        init["result"]["capabilities"]["tools"]["listChanged"], true,
        "{init}"
    );
    send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    send(json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}));
    let list = next("tools/list");
    let names = |v: &Value| -> Vec<String> {
        v["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(names(&list).contains(&"version".to_string()), "{list}");

    std::fs::remove_file(w.path("tools/versioned.wasm")).unwrap();
    let note = next("notifications/tools/list_changed");
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    send(json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}));
    let list = next("tools/list");
    assert_eq!(
        names(&list),
        [
            "read_file",
            "tail_file",
            "grep_files",
            "list_dir",
            "run_script"
        ],
        "{list}"
    );
    let _ = child.kill();
    let _ = child.wait();
}
