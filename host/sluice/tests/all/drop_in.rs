//! Drop-in components through the binary (docs/components.md#drop-in-components): a component
//! that cannot load beside the built-ins (it imports an interface the host lacks) is reported
//! on stderr and listed by `sluice tools` as unavailable while the built-ins answer;
//! `strict = true` and `--strict` refuse to start instead. A component exporting `read-file` loads beside the built-in under a
//! `prefix`, and the collision error names the keys that end it.

use std::path::PathBuf;

use serde_json::Value;

use crate::binary::{sluice, text};

/// A configuration with root `data` (holding `f.txt`) and a tools directory holding
/// `component` as `<stem>.wasm`, with the sibling policy `policy` if any; `top` goes first
/// in `sluice.toml`.
fn setup(
    top: &str,
    component: &str,
    stem: &str,
    policy: Option<&str>,
) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/f.txt"), "hello\n").unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::copy(component, tools.join(format!("{stem}.wasm"))).unwrap();
    if let Some(p) = policy {
        std::fs::write(tools.join(format!("{stem}.toml")), p).unwrap();
    }
    let config = dir.path().join("sluice.toml");
    std::fs::write(
        &config,
        format!("{top}tools_dir = \"tools\"\n\n[roots]\ndata = \"data\"\n"),
    )
    .unwrap();
    (dir, config)
}

#[test]
fn a_component_that_cannot_load_is_reported_and_the_builtins_still_run() {
    let (d, config) = setup("", sluice_tests::NEEDS_MISSING_WASM, "clock", None);
    let config = config.display().to_string();
    let wasm = d.path().join("tools/clock.wasm").display().to_string();
    let reason = format!(
        "failed to load {wasm}: it imports interfaces the host does not provide: acme:missing/clock@1.0.0; the host provides WASI 0.2 (cli, clocks, filesystem, http, io, random, sockets), wasi:config/store@0.2.0-rc.1 and sluice:tools/budget, key-policy, listing and tool-calls"
    );

    let o = sluice(&["--config", &config, "tools"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let tools: Value = serde_json::from_slice(&o.stdout).unwrap();
    let tools = tools.as_array().unwrap();
    let names: Vec<&str> = tools[..5]
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "read_file",
            "tail_file",
            "grep_files",
            "list_dir",
            "run_script"
        ]
    );
    assert_eq!(tools.len(), 6);
    assert_eq!(
        tools[5],
        serde_json::json!({"source": wasm, "unavailable": true, "reason": reason})
    );
    let err = text(&o.stderr);
    assert!(
        err.contains(&format!(
            "{wasm} is unavailable, its tools are not offered: {reason} (set strict = true or pass --strict to refuse to start instead)"
        )),
        "{err}"
    );

    let o = sluice(&[
        "--config",
        &config,
        "call",
        "tail_file",
        r#"{"path":"f.txt"}"#,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "{\"ok\":true,\"result\":{\"path\":\"f.txt\",\"truncated\":false,\"count\":1,\"lines\":[\"hello\"]}}\n"
    );

    // --strict, and strict = true in sluice.toml, refuse to start with the reason.
    let o = sluice(&["--config", &config, "--strict", "tools"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(text(&o.stderr), format!("sluice: error: {reason}\n"));
    assert!(o.stdout.is_empty());
    let (d, config) = setup(
        "strict = true\n",
        sluice_tests::NEEDS_MISSING_WASM,
        "clock",
        None,
    );
    let wasm = d.path().join("tools/clock.wasm").display().to_string();
    let o = sluice(&["--config", &config.display().to_string(), "tools"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).starts_with(&format!("sluice: error: failed to load {wasm}: it imports")),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn strict_takes_a_boolean() {
    let (_d, config) = setup(
        "strict = \"yes\"\n",
        sluice_tests::NEEDS_MISSING_WASM,
        "clock",
        None,
    );
    let o = sluice(&["--config", &config.display().to_string(), "tools"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!(
            "sluice: error: strict must be true or false; got \"yes\" (from {} line 1)\n",
            config.display()
        )
    );
}

#[test]
fn a_read_file_component_loads_beside_the_builtin_under_a_prefix() {
    let (d, config) = setup(
        "",
        sluice_tests::FS_LIKE_WASM,
        "fs",
        Some("read = [\"data\"]\n"),
    );
    let config = config.display().to_string();
    let policy = d.path().join("tools/fs.toml");
    let o = sluice(&["--config", &config, "tools"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!(
            "sluice: error: two tools are named \"read_file\" (built-in read_file and {}); give one another name: prefix = \"…\" or [functions.read-file] name = \"…\" in {}; or [tools.read_file] prefix = \"…\" or [tools.read_file.functions.read-file] name = \"…\" in the configuration file, or leave read_file out of `builtins = [...]`\n",
            d.path().join("tools/fs.wasm").display(),
            policy.display()
        )
    );

    std::fs::write(&policy, "read = [\"data\"]\nprefix = \"fs\"\n").unwrap();
    let o = sluice(&["--config", &config, "tools"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let tools: Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "read_file",
            "tail_file",
            "grep_files",
            "list_dir",
            "run_script",
            "fs_read_file",
            "fs_list_directory"
        ]
    );
    let o = sluice(&[
        "--config",
        &config,
        "call",
        "fs_read_file",
        r#"{"path":"/data/f.txt"}"#,
    ]);
    assert_eq!(text(&o.stdout), "{\"ok\":true,\"result\":\"hello\\n\"}\n");
    // The built-in keeps its name and still answers alone.
    let o = sluice(&[
        "--config",
        &config,
        "call",
        "read_file",
        r#"{"path":"f.txt"}"#,
    ]);
    assert!(
        text(&o.stdout).starts_with("{\"ok\":true,\"result\":{\"path\":\"f.txt\""),
        "{}",
        text(&o.stdout)
    );

    // Renaming the function instead, in the sibling policy.
    std::fs::write(&policy, "read = [\"data\"]\n\n[functions.read-file]\nname = \"cat\"\ndescription = \"Print a file.\"\n").unwrap();
    let o = sluice(&[
        "--config",
        &config,
        "call",
        "cat",
        r#"{"path":"/data/f.txt"}"#,
    ]);
    assert_eq!(
        text(&o.stdout),
        "{\"ok\":true,\"result\":\"hello\\n\"}\n",
        "{}",
        text(&o.stderr)
    );

    // Renaming the built-in in sluice.toml.
    std::fs::write(&policy, "read = [\"data\"]\n").unwrap();
    std::fs::write(
        &config,
        "tools_dir = \"tools\"\n\n[roots]\ndata = \"data\"\n\n[tools.read_file]\nprefix = \"host\"\n",
    )
    .unwrap();
    let o = sluice(&[
        "--config",
        &config,
        "call",
        "read_file",
        r#"{"path":"/data/f.txt"}"#,
    ]);
    assert_eq!(
        text(&o.stdout),
        "{\"ok\":true,\"result\":\"hello\\n\"}\n",
        "{}",
        text(&o.stderr)
    );
    let o = sluice(&[
        "--config",
        &config,
        "call",
        "host_read_file",
        r#"{"path":"f.txt"}"#,
    ]);
    assert!(
        text(&o.stdout).starts_with("{\"ok\":true,\"result\":{\"path\":\"f.txt\""),
        "{}",
        text(&o.stdout)
    );
}

#[test]
fn names_outside_the_rule_are_refused_naming_the_key_and_line() {
    let (_d, config) = setup("", sluice_tests::FS_LIKE_WASM, "fs", None);
    std::fs::write(
        &config,
        "builtins = []\n\n[tools.fs]\ncomponent = \"tools/fs.wasm\"\n\n[tools.fs.functions.read-file]\nname = \"read file\"\n",
    )
    .unwrap();
    let o = sluice(&["--config", &config.display().to_string(), "tools"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!(
            "sluice: error: tools.fs.functions.read-file.name must be a tool name: 1 to 64 characters of A-Z, a-z, 0-9, `_` and `-`; got \"read file\" (from {} line 7)\n",
            config.display()
        )
    );
    std::fs::write(
        &config,
        "builtins = []\n\n[tools.fs]\ncomponent = \"tools/fs.wasm\"\nprefix = \"f/s\"\n",
    )
    .unwrap();
    let o = sluice(&["--config", &config.display().to_string(), "tools"]);
    assert_eq!(
        text(&o.stderr),
        format!(
            "sluice: error: tools.fs.prefix must be 1 to 32 characters of A-Z, a-z, 0-9, `_` and `-`; got \"f/s\" (from {} line 5)\n",
            config.display()
        )
    );
}

/// Item 7: `sluice wit DIR` writes the sluice:tools package and the WASI WIT, and says
/// where.
#[test]
fn sluice_wit_writes_the_packages() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("wit");
    let o = sluice(&["wit", &out.display().to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let listed: Vec<String> = text(&o.stdout).lines().map(str::to_string).collect();
    let expected: Vec<String> = [
        "sluice-tools.wit",
        "deps/cli.wit",
        "deps/clocks.wit",
        "deps/filesystem.wit",
        "deps/http.wit",
        "deps/io.wit",
        "deps/random.wit",
        "deps/sockets.wit",
        "deps/config/store.wit",
        "deps/config/world.wit",
    ]
    .iter()
    .map(|f| out.join(f).display().to_string())
    .collect();
    assert_eq!(listed, expected);
    assert_eq!(
        std::fs::read_to_string(out.join("sluice-tools.wit")).unwrap(),
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../wit/sluice-tools.wit"
        ))
        .unwrap()
    );
    // Other contents are never overwritten.
    std::fs::write(out.join("deps/io.wit"), "mine\n").unwrap();
    let o = sluice(&["wit", &out.display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!(
            "sluice: error: {} already exists with other contents; nothing was written (remove it, or write to another directory)\n",
            out.join("deps/io.wit").display()
        )
    );
}

/// Through the binary: a typo in one sibling policy leaves that tool out
/// with the reason and a did-you-mean, the built-ins and the rest start (exit 0); `--strict`
/// refuses with the same reason (exit 2).
#[test]
fn a_bad_sibling_policy_leaves_only_its_tool_out_and_strict_refuses() {
    let (d, config) = setup(
        "",
        sluice_tests::HTTP_FETCH_WASM,
        "fetch",
        Some("memroy_mib = 64\n"),
    );
    let config = config.display().to_string();
    let policy = d.path().join("tools/fetch.toml").display().to_string();
    let o = sluice(&["--config", &config, "tools"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let tools: Value = serde_json::from_slice(&o.stdout).unwrap();
    let tools = tools.as_array().unwrap();
    assert_eq!(tools.len(), 6, "{tools:?}");
    assert_eq!(tools[4]["name"], "run_script");
    assert_eq!(tools[5]["unavailable"], true);
    let reason = tools[5]["reason"].as_str().unwrap();
    assert!(
        reason.contains(&policy)
            && reason.contains("memroy_mib")
            && reason.contains("did you mean `memory_mib`?"),
        "{reason}"
    );
    let o = sluice(&["--config", &config, "--strict", "tools"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.starts_with("sluice: error: ") && err.contains("did you mean `memory_mib`?"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

/// Through the binary: an unknown key of `sluice.toml` stops the start with
/// the file, the line and the nearest key.
#[test]
fn an_unknown_key_of_sluice_toml_is_told_the_nearest_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sluice.toml");
    std::fs::write(&config, "[agent]\nmax_tool_result_byte = 4096\n").unwrap();
    let o = sluice(&["--config", &config.display().to_string(), "tools"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains(&config.display().to_string())
            && err.contains("line 2")
            && err.contains("did you mean `max_tool_result_bytes`?"),
        "{err}"
    );
}
