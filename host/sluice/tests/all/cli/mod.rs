//! The `sluice` binary as an operator runs it: exit codes, stdout, stderr. Here: `call`, the
//! cap, boot checks, `tools`.

mod runs; // `run` with the scripted model, kill -9 and resume, Ctrl-C, sessions by name.
mod serve; // `serve`: its token rule, a prompt over HTTP, retry warnings without colour.
mod tools_dir; // A tools directory: policies, collisions, pins, roots; `inspect`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

/// Runs `sluice` with `args`, sharing one compiled-component cache across tests.
fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .env("SLUICE_CACHE_DIR", crate::warm_cache())
        .env_remove("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES")
        .output()
        .expect("sluice runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A temporary root holding `f.txt`.
fn root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "one\r\ntwo\nthree").unwrap();
    dir
}

#[test]
fn call_prints_the_exact_observation() {
    let dir = root();
    let root_flag = format!("logs={}", dir.path().display());
    let o = sluice(&[
        "call",
        "read_file",
        r#"{"path":"f.txt"}"#,
        "--root",
        &root_flag,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "{\"ok\":true,\"result\":{\"path\":\"f.txt\",\"size\":14,\"offset\":0,\"startLine\":1,\"endLine\":3,\"totalLines\":3,\"contentBytes\":14,\"content\":\"one\\r\\ntwo\\nthree\"}}\n"
    );
}

#[test]
fn a_tool_error_still_exits_zero() {
    let dir = root();
    let root_flag = dir.path().display().to_string();
    let o = sluice(&[
        "--root",
        &root_flag,
        "call",
        "read_file",
        r#"{"path":"missing.txt"}"#,
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        "{\"ok\":false,\"error\":\"no such file or directory: missing.txt\",\"kind\":\"not-found\"}\n"
    );
    let o = sluice(&["--root", &root_flag, "call", "read_file", "{not json"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stdout(&o).starts_with("{\"ok\":false,\"error\":\"arguments are not valid JSON: "),
        "{}",
        stdout(&o)
    );
    let o = sluice(&["--root", &root_flag, "call", "no_such_tool"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        "{\"ok\":false,\"error\":\"unknown_tool\",\"name\":\"no_such_tool\",\"tools\":[\"list_dir\",\"run_script\",\"read_file\",\"tail_file\",\"grep_files\"]}\n"
    );
}

#[test]
fn the_cap_flag_applies() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (1..=500).map(|i| format!("line {i:014}\n")).collect();
    std::fs::write(dir.path().join("f.txt"), text).unwrap();
    let root_flag = dir.path().display().to_string();
    let o = sluice(&[
        "--root",
        &root_flag,
        "--max-tool-result-bytes",
        "2048",
        "call",
        "read_file",
        r#"{"path":"f.txt"}"#,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.len() <= 2048 + 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["result"]["nextOffset"], 960);
    assert_eq!(v["result"]["nextLine"], 49);
}

#[test]
fn bad_cap_values_stop_at_boot_with_key_value_and_range() {
    for bad in ["1023", "1048577", "1.5", "x"] {
        let o = sluice(&["--max-tool-result-bytes", bad, "call", "read_file", "{}"]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(o.stdout.is_empty(), "{bad}: nothing runs");
        assert_eq!(
            stderr(&o),
            format!(
                "sluice: error: agent.max_tool_result_bytes must be an integer from 1024 to 1048576 (bytes); got {bad} (from --max-tool-result-bytes)\n"
            )
        );
    }
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["call", "read_file", "{}"])
        .env("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES", "1.5")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("got 1.5 (from SLUICE_AGENT_MAX_TOOL_RESULT_BYTES)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_call_pool_sizes_stop_at_boot_with_key_value_and_range() {
    for bad in ["0", "1025", "two"] {
        let o = sluice(&["--max-concurrent-calls", bad, "call", "read_file", "{}"]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(o.stdout.is_empty(), "{bad}: nothing runs");
        assert_eq!(
            stderr(&o),
            format!(
                "sluice: error: runtime.max_concurrent_calls must be an integer from 1 to 1024 (calls); got {bad} (from --max-concurrent-calls)\n"
            )
        );
    }
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["call", "read_file", "{}"])
        .env("SLUICE_RUNTIME_QUEUE_TIMEOUT_MS", "-1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "sluice: error: runtime.queue_timeout_ms must be an integer from 0 to 3600000 (ms); got -1 (from SLUICE_RUNTIME_QUEUE_TIMEOUT_MS)\n"
    );
    // In range, the calls run.
    let dir = root();
    let root_flag = dir.path().display().to_string();
    let o = sluice(&[
        "--max-concurrent-calls",
        "1",
        "--root",
        &root_flag,
        "call",
        "read_file",
        r#"{"path":"f.txt","lineCount":1}"#,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with(r#"{"ok":true,"#), "{}", stdout(&o));
}

#[test]
fn a_missing_root_is_a_clear_error() {
    let o = sluice(&["--root", "/no/such/dir", "call", "list_dir"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.starts_with(
            "sluice: error: root \"dir\" (/no/such/dir, set by --root /no/such/dir): cannot be opened: "
        ),
        "{err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
}

#[test]
fn bad_flags_are_reported_by_the_parser() {
    let o = sluice(&["call"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("required arguments were not provided"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn tools_lists_names_descriptions_and_schemas() {
    let dir = root();
    let root_flag = dir.path().display().to_string();
    let o = sluice(&["--root", &root_flag, "tools"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut tools: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    for t in tools.as_array_mut().unwrap() {
        t["source"] = "<source>".into();
    }
    insta::assert_json_snapshot!("tools", tools);
}

#[test]
fn an_empty_cache_variable_counts_as_unset() {
    let dir = root();
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["call", "list_dir"])
        .current_dir(dir.path())
        .env("SLUICE_CACHE_DIR", "")
        .env("XDG_CACHE_HOME", dir.path().join("xdg"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Nothing was written into the working directory; the cache went to XDG_CACHE_HOME.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cwasm"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
    assert!(dir.path().join("xdg/sluice/components").is_dir());
}

#[test]
fn a_missing_config_file_is_named_once() {
    let o = sluice(&["--config", "/no/such/sluice.toml", "tools"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "sluice: error: failed to read /no/such/sluice.toml: No such file or directory (os error 2)\n"
    );
}

/// Boot checks (docs/configuration.md#boot-checks) through the binary: a non-UTF-8 `SLUICE_AGENT_MAX_TOOL_RESULT_BYTES`
/// used to read as unset (the default applied), and a store path naming a file that is not
/// a store was made a database (an empty file) or refused in SQLite's words. Both stop the
/// start, naming the variable or the file, and the file is left as it was.
#[cfg(unix)]
#[test]
fn bad_environment_and_store_files_stop_the_start() {
    use std::os::unix::ffi::OsStrExt;
    let dir = root();
    let root_flag = dir.path().display().to_string();
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--root", &root_flag, "call", "list_dir"])
        .env(
            "SLUICE_AGENT_MAX_TOOL_RESULT_BYTES",
            std::ffi::OsStr::from_bytes(b"\xff\xfe"),
        )
        .output()
        .expect("sluice runs");
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "sluice: error: agent.max_tool_result_bytes must be valid UTF-8 text; got \"\\xFF\\xFE\" (from SLUICE_AGENT_MAX_TOOL_RESULT_BYTES)\n"
    );
    let empty = dir.path().join("notes.txt");
    std::fs::write(&empty, "").unwrap();
    let store_flag = empty.display().to_string();
    let o = sluice(&["--store", &store_flag, "session", "list"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        format!(
            "sluice: error: {store_flag} is not a Sluice session store: it is an empty file (0 bytes); refusing to use it (nothing was written). Give --store (SLUICE_STORE, store.path) a new file or an existing session store\n"
        )
    );
    assert_eq!(std::fs::read(&empty).unwrap(), b"");
}

/// A directory of a few log files: `logs/build.log` fails at line 3.
fn log_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    std::fs::write(
        logs.join("build.log"),
        "compiling core\ncompiling cli\nerror: linker failed with exit code 1\nbuild stopped\n",
    )
    .unwrap();
    std::fs::write(logs.join("app.log"), "started\nserving on :8080\nstopped\n").unwrap();
    std::fs::write(logs.join("notes.txt"), "nothing to see\n").unwrap();
    dir
}

/// Runs a store call to its end (the store is async; these tests are not).
fn block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}
