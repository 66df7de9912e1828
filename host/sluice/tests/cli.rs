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

/// A drop-in setup: root `data` holding `f.txt`, a tools directory holding `reader.wasm`
/// (a copy of the read_file component, as a third party would ship it) and, if given, its
/// policy, and a sluice.toml with `builtins` as given.
fn drop_in(policy: Option<&str>, builtins: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/f.txt"), "hello\n").unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::write(tools.join("reader.wasm"), read_file_component()).unwrap();
    if let Some(p) = policy {
        std::fs::write(tools.join("reader.toml"), p).unwrap();
    }
    let config = dir.path().join("sluice.toml");
    std::fs::write(
        &config,
        format!("builtins = {builtins}\ntools_dir = \"tools\"\n\n[roots]\ndata = \"data\"\n"),
    )
    .unwrap();
    (dir, config)
}

fn read_file_component() -> &'static [u8] {
    sluice_builtin("read_file")
}

fn sluice_builtin(name: &str) -> &'static [u8] {
    sluice_runtime::builtins()
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, wasm)| *wasm)
        .unwrap()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn a_tools_directory_component_runs_under_its_policy() {
    let (_d, config) = drop_in(Some("read = [\"data\"]\ntimeout_ms = 5000\n"), "[]");
    let config = config.display().to_string();
    let o = sluice(&[
        "--config",
        &config,
        "call",
        "read_file",
        r#"{"path":"f.txt"}"#,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "{\"ok\":true,\"result\":{\"path\":\"f.txt\",\"size\":6,\"offset\":0,\"content\":\"hello\\n\",\"startLine\":1,\"endLine\":1,\"totalLines\":1}}\n"
    );
    let o = sluice(&["--config", &config, "tools"]);
    let tools: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(tools.as_array().unwrap().len(), 1);
    assert!(
        tools[0]["source"]
            .as_str()
            .unwrap()
            .ends_with("tools/reader.wasm")
    );
    assert_eq!(tools[0]["destructive"], false);
}

#[test]
fn without_a_policy_a_component_gets_nothing() {
    let (_d, config) = drop_in(None, "[]");
    let config = config.display().to_string();
    let o = sluice(&[
        "--config",
        &config,
        "call",
        "read_file",
        r#"{"path":"f.txt"}"#,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "{\"ok\":false,\"error\":\"this tool has no root directory granted; ask the operator to grant one\",\"kind\":\"invalid-argument\"}\n"
    );
}

#[test]
fn a_tool_name_taken_twice_stops_the_start() {
    let (_d, config) = drop_in(Some("read = [\"data\"]\n"), "[\"read_file\"]");
    let o = sluice(&["--config", &config.display().to_string(), "tools"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.starts_with(
            "sluice: error: two tools are named \"read_file\" (built-in read_file and "
        ),
        "{err}"
    );
}

#[test]
fn a_sha256_pin_mismatch_refuses_to_load() {
    let wrong = "0".repeat(64);
    let (_d, config) = drop_in(
        Some(&format!("read = [\"data\"]\nsha256 = \"{wrong}\"\n")),
        "[]",
    );
    let o = sluice(&["--config", &config.display().to_string(), "tools"]);
    assert_eq!(o.status.code(), Some(2));
    let actual = sha256_hex(sluice_builtin("read_file"));
    let err = stderr(&o);
    assert!(err.starts_with("sluice: error: refusing to load "), "{err}");
    assert!(
        err.ends_with(&format!(
            "tools/reader.wasm: its sha256 is {actual}, but the policy pins {wrong}\n"
        )),
        "{err}"
    );
    // The right pin loads.
    let (_d, config) = drop_in(
        Some(&format!("read = [\"data\"]\nsha256 = \"{actual}\"\n")),
        "[]",
    );
    let o = sluice(&["--config", &config.display().to_string(), "tools"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_policy_naming_an_unknown_root_stops_the_start() {
    let (_d, config) = drop_in(Some("read = [\"logs\"]\n"), "[]");
    let o = sluice(&["--config", &config.display().to_string(), "tools"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.starts_with("sluice: error: tools.reader.read must be names of defined roots (data); got \"logs\" (from "), "{err}");
}

#[test]
fn inspect_shows_tools_imports_and_digest_without_running() {
    let (d, _config) = drop_in(None, "[]");
    let file = d.path().join("tools/reader.wasm");
    let o = sluice(&["tools", "inspect", &file.display().to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["sha256"], sha256_hex(sluice_builtin("read_file")));
    assert_eq!(v["tools"][0]["name"], "read_file");
    let imports = v["imports"].as_array().unwrap();
    let budget = imports
        .iter()
        .find(|i| i["name"] == "sluice:tools/budget@0.1.0")
        .unwrap();
    assert_eq!(budget["provided"], true);
    // Components import only the functions they call; the Rust tools size pages themselves.
    assert_eq!(
        budget["functions"],
        serde_json::json!(["max-result-bytes", "time-budget-ms"])
    );
    assert!(imports.iter().all(|i| i["provided"] == true), "{imports:?}");
    assert!(imports.iter().any(|i| {
        i["name"]
            .as_str()
            .unwrap()
            .starts_with("wasi:filesystem/preopens@0.2.")
    }));
}
