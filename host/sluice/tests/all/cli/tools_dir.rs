//! Components in a tools directory beside the built-ins: run under their policy, nothing
//! without one, a name taken twice, a sha256 pin, an unknown root; `sluice inspect`.

use super::*;

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
    sluice_builtins::BUILTINS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, wasm)| *wasm)
        .unwrap()
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
        "{\"ok\":true,\"result\":{\"path\":\"f.txt\",\"size\":6,\"offset\":0,\"startLine\":1,\"endLine\":1,\"totalLines\":1,\"contentBytes\":6,\"content\":\"hello\\n\"}}\n"
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

/// The lowercase hex SHA-256 of `bytes`, computed here rather than by the code under test.
fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

#[test]
fn a_sha256_pin_mismatch_refuses_to_load() {
    let wrong = "0".repeat(64);
    let (_d, config) = drop_in(
        Some(&format!("read = [\"data\"]\nsha256 = \"{wrong}\"\n")),
        "[]",
    );
    // Under --strict the start stops on it.
    let o = sluice(&[
        "--config",
        &config.display().to_string(),
        "--strict",
        "tools",
    ]);
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
    // By default the component is left out, listed as unavailable with the same reason.
    let o = sluice(&["--config", &config.display().to_string(), "tools"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let tools: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(tools.as_array().unwrap().len(), 1);
    assert_eq!(tools[0]["unavailable"], true);
    assert!(
        tools[0]["reason"].as_str().unwrap().ends_with(&format!(
            "tools/reader.wasm: its sha256 is {actual}, but the policy pins {wrong}"
        )),
        "{tools}"
    );
    // The right pin loads.
    let (_d, config) = drop_in(
        Some(&format!("read = [\"data\"]\nsha256 = \"{actual}\"\n")),
        "[]",
    );
    let o = sluice(&["--config", &config.display().to_string(), "tools"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// A sibling policy naming an unknown root leaves its tool out, with the reason, and the
/// rest start; `--strict` refuses the start (docs/configuration.md#tools-directory).
#[test]
fn a_policy_naming_an_unknown_root_leaves_its_tool_out() {
    let (_d, config) = drop_in(Some("read = [\"logs\"]\n"), "[\"list_dir\"]");
    let o = sluice(&["--config", &config.display().to_string(), "tools"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let tools: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(tools[0]["name"], "list_dir", "{tools}");
    assert_eq!(tools[1]["unavailable"], true, "{tools}");
    let reason = tools[1]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "tools.reader.read must be names of defined roots (data); got \"logs\" (from "
        ),
        "{reason}"
    );
    let o = sluice(&[
        "--strict",
        "--config",
        &config.display().to_string(),
        "tools",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("tools.reader.read must be names of defined roots (data); got \"logs\""),
        "{err}"
    );
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
        .find(|i| i["name"] == "sluice:tools/budget@0.1.5")
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

/// Review finding: inspecting a file that is not a component printed wasmparser's dump of
/// the preamble bytes. Now it says what the file is and what a component is.
#[test]
fn inspect_says_what_a_non_component_file_is() {
    let d = tempfile::tempdir().unwrap();
    let text = d.path().join("notes.txt");
    std::fs::write(&text, "root:x:0:0:root:/root:/bin/bash\n").unwrap();
    let module = d.path().join("core.wasm");
    std::fs::write(&module, b"\0asm\x01\0\0\0").unwrap();
    for (file, why) in [
        (
            &text,
            "it is not a WebAssembly component (a component starts with `\\0asm` and the component layer)",
        ),
        (
            &module,
            "it is a core WebAssembly module, not a component: build it for wasm32-wasip2, or wrap it with `wasm-tools component new`",
        ),
    ] {
        let o = sluice(&["tools", "inspect", &file.display().to_string()]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(err.trim_end().ends_with(why), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}
