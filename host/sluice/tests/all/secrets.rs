//! Secrets through the binary (docs/keys.md#secret-files,
//! docs/observations.md#secrets-are-withheld): `sluice call read_file` refuses the file a
//! secret is read from although only the built-in is loaded, and a component that puts its
//! secret in a request's host or method gets it into no log line, at `info` or `trace`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

/// `bytes` (a process's stdout or stderr) as text.
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The secret: 19 characters, letters, digits and `-` (it fits a host name and a method).
const SECRET: &str = "tok-9f2c4e7a1b3d5f6";

/// The model's API key, in a file the configuration names.
const API_KEY: &str = "sk-test-0123456789abcdef";

/// `sluice.toml` with root `data` holding the secret's file `data/token.txt` and the API
/// key's file `data/api-token`, and the config-reader component given the secret as
/// `token` (no `http` grant).
fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/token.txt"), format!("{SECRET}\n")).unwrap();
    std::fs::write(dir.path().join("data/api-token"), format!("{API_KEY}\n")).unwrap();
    std::fs::write(dir.path().join("data/notes.txt"), "ordinary notes\n").unwrap();
    let path = dir.path().join("sluice.toml");
    std::fs::write(
        &path,
        format!(
            "[model]\nprovider = \"openai\"\nname = \"m\"\napi_key_file = \"data/api-token\"\n\n[roots]\ndata = \"data\"\n\n[tools.reader]\ncomponent = {:?}\n\n[tools.reader.secrets]\ntoken = {{ file = \"data/token.txt\" }}\n",
            sluice_tests::CONFIG_READER_WASM
        ),
    )
    .unwrap();
    (dir, path)
}

/// Runs `sluice --config CONFIG call TOOL ARGS` at `SLUICE_LOG=log`.
fn call(config: &Path, log: &str, tool: &str, args: &Value) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--config", &config.display().to_string(), "call", tool])
        .arg(args.to_string())
        .env("SLUICE_CACHE_DIR", crate::warm_cache())
        .env_remove("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES")
        .env("SLUICE_LOG", log)
        .env("NO_COLOR", "1")
        .output()
        .expect("sluice runs")
}

/// True when `text` holds any 8 consecutive characters of `secret`.
fn shows_part_of(text: &str, secret: &str) -> bool {
    (0..=secret.len() - 8).any(|i| text.contains(&secret[i..i + 8]))
}

/// A copy of a component's secret elsewhere in a root (another file, another inode): `sluice
/// call` loads only the built-in, yet withholds the secret of the component it did not load,
/// as `sluice mcp` (which loads every component) does.
#[test]
fn sluice_call_withholds_the_secrets_of_the_components_it_does_not_load() {
    let (dir, config) = setup();
    std::fs::write(dir.path().join("data/copy.txt"), format!("{SECRET}\n")).unwrap();
    let o = call(&config, "warn", "read_file", &json!({"path": "copy.txt"}));
    let stdout = text(&o.stdout);
    assert!(!shows_part_of(&stdout, SECRET), "{stdout}");
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).unwrap()["result"]["content"],
        "[secret withheld: token]\n",
        "{}",
        text(&o.stderr)
    );
    let o = call(&config, "warn", "grep_files", &json!({"pattern": "tok-"}));
    let stdout = text(&o.stdout);
    assert!(!shows_part_of(&stdout, SECRET), "{stdout}");
    assert!(stdout.contains("[secret withheld: token]"), "{stdout}");
}

#[test]
fn sluice_call_read_file_refuses_the_files_secrets_and_keys_are_read_from() {
    let (_dir, config) = setup();
    for (path, secret) in [("token.txt", SECRET), ("api-token", API_KEY)] {
        for tool in ["read_file", "tail_file"] {
            let o = call(&config, "warn", tool, &json!({"path": path}));
            let stdout = text(&o.stdout);
            assert_eq!(
                serde_json::from_str::<Value>(&stdout).unwrap(),
                json!({"ok": false, "error": format!("refusing to read key material: {path}"), "kind": "key-material"}),
                "{tool} {path}: {}",
                text(&o.stderr)
            );
            assert!(!shows_part_of(&stdout, secret), "{stdout}");
        }
    }
    let o = call(
        &config,
        "warn",
        "grep_files",
        &json!({"pattern": "[a-z0-9]"}),
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["result"]["count"], 1, "{v}");
    assert_eq!(v["result"]["results"][0]["path"], "notes.txt");
    assert_eq!(v["result"]["skippedFiles"], 2);
}

#[test]
fn a_secret_in_a_requests_host_or_method_reaches_no_log_line_at_info_or_trace() {
    let (_dir, config) = setup();
    let cases = [
        json!({"key": "token", "url": "http://{}.example.com/", "method": "GET"}),
        json!({"key": "token", "url": "http://127.0.0.1:9/path/{}", "method": "{}"}),
    ];
    for log in ["info", "trace"] {
        for args in &cases {
            let o = call(&config, log, "send_with", args);
            let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
            let v: Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(v["kind"], "http-denied", "{v}");
            assert!(!shows_part_of(&stdout, SECRET), "{stdout}");
            assert!(
                !shows_part_of(&stderr, SECRET),
                "SLUICE_LOG={log} {args}: the log shows the secret:\n{stderr}"
            );
            // The call's line is there, the secret withheld from it.
            let line = stderr
                .lines()
                .find(|l| l.contains("tool call") && l.contains("http="))
                .unwrap_or_else(|| panic!("no call line at {log}:\n{stderr}"));
            assert!(line.contains("[secret withheld: token]"), "{line}");
        }
    }
}
