//! `sluice doctor`: every configuration of docs/configuration.md shown with the line of each
//! key it sets, variables and flags named as sources, and broken configurations refused with
//! their exact message.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn sluice() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    // One cache of compiled built-ins for every test of this file.
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("doctor-cache");
    c.env("SLUICE_CACHE_DIR", cache).env_remove("SLUICE_LOG");
    for (var, _) in sluice_config::ENV_KEYS {
        c.env_remove(var);
    }
    c
}

fn doctor(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = sluice();
    c.current_dir(dir).arg("doctor").args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// The TOML blocks of docs/configuration.md.
fn doc_blocks() -> Vec<String> {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md"),
    )
    .unwrap();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```toml") => current = Some(String::new()),
            (Some(b), "```") => {
                blocks.push(std::mem::take(b));
                current = None;
            }
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// The keys a block sets, with their lines: `key = …` lines under their table.
fn keys_set(text: &str) -> Vec<(String, usize)> {
    let unquote = |k: &str| {
        k.split('.')
            .map(|p| p.trim().trim_matches(|c| c == '"' || c == '\''))
            .collect::<Vec<_>>()
            .join(".")
    };
    let mut table = String::new();
    let mut keys = Vec::new();
    // Inside an array of tables (`[[server.tokens]]`), whose keys doctor shows as one: the
    // array, at the line of its first header.
    let mut in_array = false;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix("[[") {
            table = unquote(&header[..header.find("]]").unwrap()]);
            in_array = true;
            if !keys.iter().any(|(k, _)| *k == table) {
                keys.push((table.clone(), n + 1));
            }
        } else if let Some(header) = line.strip_prefix('[') {
            table = unquote(&header[..header.find(']').unwrap()]);
            in_array = false;
        } else if !line.starts_with('#')
            && !in_array
            && let Some((key, _)) = line.split_once('=')
        {
            keys.push((format!("{table}.{}", unquote(key)), n + 1));
        }
    }
    keys
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn source_of<'a>(report: &'a Value, key: &str) -> (&'a str, &'a str) {
    let s = report["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == key)
        .unwrap_or_else(|| panic!("no {key} in {report:#}"));
    (s["value"].as_str().unwrap(), s["source"].as_str().unwrap())
}

#[test]
fn every_configuration_of_the_docs_shows_each_key_with_its_line() {
    let blocks = doc_blocks();
    assert!(blocks.len() >= 5, "{} blocks", blocks.len());
    for block in blocks {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("sluice.toml"), &block).unwrap();
        // The roots it names exist.
        let table: toml::Table = block.parse().unwrap();
        if let Some(roots) = table.get("roots").and_then(|r| r.as_table()) {
            for dir_name in roots.values().filter_map(|v| v.as_str()) {
                std::fs::create_dir_all(dir.path().join(dir_name)).unwrap();
            }
        }
        let report = json(&doctor(
            dir.path(),
            &["--json", "--config", "sluice.toml"],
            &[],
        ));
        for (key, line) in keys_set(&block) {
            let (_, source) = source_of(&report, &key);
            assert_eq!(source, format!("sluice.toml:{line}"), "{key} of\n{block}");
        }
        let text = doctor(dir.path(), &["--config", "sluice.toml"], &[]);
        assert!(text.status.success());
    }
}

#[test]
fn variables_and_flags_are_named_as_sources() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("sluice.toml"), "[agent]\nmax_turns = 5\n").unwrap();
    let report = json(&doctor(
        dir.path(),
        &[
            "--json",
            "--config",
            "sluice.toml",
            "--max-tool-result-bytes",
            "4096",
        ],
        &[("SLUICE_AGENT_MAX_TURNS", "7")],
    ));
    assert_eq!(
        source_of(&report, "agent.max_turns"),
        ("7", "SLUICE_AGENT_MAX_TURNS")
    );
    assert_eq!(
        source_of(&report, "agent.max_tool_result_bytes"),
        ("4096", "--max-tool-result-bytes")
    );
    assert_eq!(
        source_of(&report, "agent.auto_approve"),
        ("false", "default")
    );
    let names: Vec<&str> = report["tools"]
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
            "run_script"
        ]
    );
    let read_file = &report["tools"][0];
    assert_eq!(read_file["source"], "built-in");
    assert_eq!(read_file["signature"], "built-in");
    assert_eq!(read_file["annotations"]["readOnly"], true);
    assert!(read_file["digest"].as_str().unwrap().starts_with("sha256:"));
}

#[test]
fn a_tool_with_network_or_write_grants_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("logs")).unwrap();
    std::fs::write(
        dir.path().join("sluice.toml"),
        "builtins = []\n[roots]\nlogs = \"logs\"\n[tools.web]\nbuiltin = \"read_file\"\nhttp = [\"api.example.com\"]\nwrite = [\"logs\"]\n",
    )
    .unwrap();
    let report = json(&doctor(
        dir.path(),
        &["--json", "--config", "sluice.toml"],
        &[],
    ));
    let logs = dir.path().join("logs").canonicalize().unwrap();
    assert_eq!(
        report["warnings"],
        serde_json::json!([
            "tool read_file may send HTTP requests to api.example.com (http in its policy)",
            format!(
                "tool read_file may write logs={} (write in its policy)",
                logs.display()
            ),
        ])
    );
}

#[test]
fn broken_configurations_give_the_exact_message() {
    let dir = tempfile::tempdir().unwrap();
    let run = |text: &str| {
        std::fs::write(dir.path().join("sluice.toml"), text).unwrap();
        let out = doctor(dir.path(), &["--config", "sluice.toml"], &[]);
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8(out.stderr).unwrap()
    };
    assert_eq!(
        run("[agent]\nmax_turn = 5\n"),
        "sluice: error: invalid configuration file sluice.toml: line 2, agent.max_turn: unknown field `max_turn`, expected one of `max_tool_result_bytes`, `max_turns`, `auto_approve`, `system_prompt`; did you mean `max_turns`?\n"
    );
    assert_eq!(
        run("[agent]\nmax_turns = 0\n"),
        "sluice: error: agent.max_turns must be an integer from 1 to 10000; got 0 (from sluice.toml line 2)\n"
    );
    assert_eq!(
        run("[roots]\nlogs = \"nowhere\"\n"),
        "sluice: error: root \"logs\" (nowhere, set by roots.logs in sluice.toml line 2): cannot be opened: No such file or directory (os error 2)\n"
    );
}
