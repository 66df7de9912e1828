//! The `sluice` binary as an operator runs it: exit codes, stdout, stderr.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `sluice` with `args`, sharing one compiled-component cache across tests.
fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .env(
            "SLUICE_CACHE_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-cache"),
        )
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
        "{\"ok\":true,\"result\":{\"path\":\"f.txt\",\"size\":14,\"offset\":0,\"content\":\"one\\r\\ntwo\\nthree\",\"startLine\":1,\"endLine\":3,\"totalLines\":3}}\n"
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
        "{\"ok\":false,\"error\":\"unknown_tool\",\"name\":\"no_such_tool\"}\n"
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
fn a_missing_root_is_a_clear_error() {
    let o = sluice(&["--root", "/no/such/dir", "call", "list_dir"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.starts_with("sluice: error: root \"dir\" (/no/such/dir): cannot be opened: "),
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
