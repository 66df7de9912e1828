//! `sluice COMMAND --help` lists the options COMMAND takes, and no other; the shared
//! options (the configuration, the tools, the calls' limits, the session store) are taken
//! before the command or after it.

use std::collections::BTreeSet;
use std::process::{Command, Output};

use crate::binary::{sluice, text};

const CONFIG: &[&str] = &["--config"];
const TOOLS: &[&str] = &["--root", "--tools", "--strict"];
const CALLS: &[&str] = &["--max-tool-result-bytes", "--max-concurrent-calls"];
const STORE: &[&str] = &["--store", "--store-url"];

/// Every command, as its `--help` is asked for, with the options it lists besides
/// `--help`, `--version` and the global `--log-format`.
fn expected() -> Vec<(&'static str, Vec<&'static str>)> {
    let run = [
        "--session",
        "--model",
        "--context-window-bytes",
        "--max-turns",
        "--auto-approve",
        "--json",
    ];
    let serve = [
        "--listen",
        "--token-file",
        "--allowed-host",
        "--max-body-bytes",
        "--model",
        "--max-turns",
        "--auto-approve",
        "--allow-destructive",
        "--no-reload",
        "--tls-cert",
        "--tls-key",
    ];
    let mcp = [
        "--listen",
        "--token-file",
        "--max-body-bytes",
        "--allow-destructive",
        "--write-timeout-ms",
        "--no-reload",
        "--tls-cert",
        "--tls-key",
    ];
    let registry = ["--key", "--insecure"];
    let doctor = [
        "--json",
        "--model",
        "--max-turns",
        "--auto-approve",
        "--allowed-host",
        "--allow-destructive",
    ];
    let sessions = [CONFIG, STORE].concat();
    vec![
        ("", [CONFIG, TOOLS, CALLS, STORE].concat()),
        ("call", [CONFIG, TOOLS, CALLS].concat()),
        ("run", [&run[..], CONFIG, TOOLS, CALLS, STORE].concat()),
        ("serve", [&serve[..], CONFIG, TOOLS, CALLS, STORE].concat()),
        ("mcp", [&mcp[..], CONFIG, TOOLS, CALLS].concat()),
        ("session", sessions.clone()),
        ("session list", sessions.clone()),
        ("session show", sessions.clone()),
        ("session audit", sessions.clone()),
        ("session approve", sessions.clone()),
        ("session deny", sessions.clone()),
        ("store", sessions.clone()),
        ("store migrate", sessions),
        ("cache", CONFIG.to_vec()),
        ("cache info", CONFIG.to_vec()),
        ("cache prune", [&["--max-bytes"][..], CONFIG].concat()),
        ("wit", vec![]),
        ("new", vec!["--lang"]),
        ("build", vec![]),
        ("dev", vec![]),
        ("test", vec!["--bless"]),
        (
            "doctor",
            [&doctor[..], CONFIG, TOOLS, CALLS, STORE].concat(),
        ),
        ("tools", [CONFIG, TOOLS].concat()),
        ("tools inspect", [&registry[..], CONFIG].concat()),
        ("tools pull", [&registry[..], CONFIG].concat()),
        ("tools update", CONFIG.to_vec()),
        ("tools push", [&["--insecure"][..], CONFIG].concat()),
        (
            "tools sign",
            [&["--key", "--insecure"][..], CONFIG].concat(),
        ),
        ("tools keygen", vec!["--output-key-prefix"]),
        ("token", vec![]),
        ("token create", vec!["--scopes"]),
    ]
}

/// `sluice COMMAND --help`, which must succeed with nothing on stderr.
fn help(command: &str) -> String {
    let mut args: Vec<&str> = command.split_whitespace().collect();
    args.push("--help");
    let o = sluice(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "sluice {command} --help: {}",
        text(&o.stderr)
    );
    assert_eq!(text(&o.stderr), "", "sluice {command} --help");
    text(&o.stdout)
}

/// The long options a help text lists (`  -h, --help`, `      --root <DIR>`), not those its
/// descriptions mention.
fn options(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter_map(|line| {
            let flag = line.strip_prefix("      --").or_else(|| {
                line.strip_prefix("  -")
                    .and_then(|l| l.split_once(", --"))
                    .map(|(_, l)| l)
            })?;
            let name = flag.split([' ', '=']).next()?;
            Some(format!("--{name}"))
        })
        .collect()
}

/// The subcommands a help text lists under `Commands:`, without clap's `help`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn each_command_help_lists_exactly_the_options_it_takes() {
    let expected = expected();
    for (command, options_taken) in &expected {
        let shown = help(command);
        let mut want: BTreeSet<String> = options_taken.iter().map(|o| o.to_string()).collect();
        want.extend(["--help", "--version", "--log-format"].map(String::from));
        assert_eq!(options(&shown), want, "sluice {command} --help:\n{shown}");
    }
    // Every command there is, down to the subcommands: a new one is added above.
    let mut commands = vec![String::new()];
    let mut i = 0;
    while i < commands.len() {
        let parent = commands[i].clone();
        commands.extend(
            subcommands(&help(&parent))
                .into_iter()
                .map(|sub| format!("{parent} {sub}").trim().to_string()),
        );
        i += 1;
    }
    commands.sort();
    let mut listed: Vec<&str> = expected.iter().map(|(c, _)| *c).collect();
    listed.sort_unstable();
    assert_eq!(commands, listed);
}

#[test]
fn the_help_of_wit_names_none_of_the_shared_options() {
    let wit = help("wit");
    for option in [CONFIG, TOOLS, CALLS, STORE, &["--model"]].concat() {
        assert!(!wit.contains(option), "{option}:\n{wit}");
    }
    assert!(wit.contains("Usage: sluice wit [OPTIONS] [DIR]"), "{wit}");
    // The top level says where its options go.
    assert!(help("").contains(
        "An option given before COMMAND applies to it when it takes it (`sluice COMMAND --help` lists what it takes); given both before and after COMMAND, the one after wins."
    ));
}

/// `sluice ARGS` with the session store named only by `store` (SLUICE_STORE, or unset).
fn with_store(args: &[&str], store: Option<&std::path::Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.args(args)
        .env_remove("SLUICE_STORE")
        .env_remove("SLUICE_STORE_URL");
    if let Some(store) = store {
        c.env("SLUICE_STORE", store);
    }
    c.output().unwrap()
}

/// What `sluice … store migrate` printed: the store it migrated and the versions.
fn migrated(o: &Output) -> (String, i64, i64) {
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_str(&text(&o.stdout)).unwrap();
    (
        v["store"].as_str().unwrap().to_string(),
        v["fromVersion"].as_i64().unwrap(),
        v["toVersion"].as_i64().unwrap(),
    )
}

#[test]
fn a_shared_option_is_taken_before_the_command_or_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let [a, b, c, d] = ["a.db", "b.db", "c.db", "d.db"].map(|f| dir.path().join(f));
    let [a_s, b_s, c_s, d_s] = [&a, &b, &c, &d].map(|p| p.display().to_string());
    let version = sluice_store::SqliteStore::SCHEMA_VERSION;
    // Before the command, between it and its subcommand, after the subcommand.
    let o = with_store(&["--store", &a_s, "store", "migrate"], None);
    assert_eq!(migrated(&o), (a_s.clone(), 0, version));
    let o = with_store(&["store", "--store", &b_s, "migrate"], None);
    assert_eq!(migrated(&o), (b_s.clone(), 0, version));
    let o = with_store(&["store", "migrate", "--store", &c_s], None);
    assert_eq!(migrated(&o), (c_s.clone(), 0, version));
    // Given before and after, the one after wins.
    let o = with_store(
        &["--store", &a_s, "store", "migrate", "--store", &b_s],
        None,
    );
    assert_eq!(migrated(&o), (b_s.clone(), version, version));
    // The environment still stands in for the option, and the option still overrides it.
    let o = with_store(&["store", "migrate"], Some(&d));
    assert_eq!(migrated(&o), (d_s.clone(), 0, version));
    let o = with_store(&["--store", &c_s, "store", "migrate"], Some(&d));
    assert_eq!(migrated(&o), (c_s, version, version));
    // The session commands take it in the same places.
    for args in [
        vec!["--store", &a_s, "session", "list"],
        vec!["session", "--store", &a_s, "list"],
        vec!["session", "list", "--store", &a_s],
    ] {
        let o = with_store(&args, None);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
        assert_eq!(text(&o.stdout), "[]\n", "{args:?}");
    }
}

#[test]
fn an_option_a_command_does_not_take_is_refused_before_it_or_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("wit");
    let out = out.display().to_string();
    let o = sluice(&["--store", "x.db", "wit", &out]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    assert_eq!(
        text(&o.stderr),
        "error: `sluice wit` does not take --store; `sluice wit --help` lists what it takes\n\nUsage: sluice [OPTIONS] <COMMAND>\n\nFor more information, try '--help'.\n"
    );
    let o = sluice(&["wit", &out, "--store", "x.db"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).starts_with("error: unexpected argument '--store' found\n"),
        "{}",
        text(&o.stderr)
    );
    let o = sluice(&["--root", ".", "tools", "inspect", "x.wasm"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).starts_with(
            "error: `sluice tools inspect` does not take --root; `sluice tools inspect --help` lists what it takes\n"
        ),
        "{}",
        text(&o.stderr)
    );
    // The listing's options are not taken by the subcommands of `tools`.
    let o = sluice(&["tools", "--root", ".", "inspect", "x.wasm"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).starts_with(
            "error: the subcommand 'inspect' cannot be used with '--root <DIR|NAME=DIR>'\n"
        ),
        "{}",
        text(&o.stderr)
    );
    // Nothing was written.
    assert!(!std::path::Path::new(&out).exists());
    // Without the stray option, `wit` writes the WIT.
    let o = sluice(&["wit", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout).lines().next(),
        Some(format!("{out}/sluice-tools.wit").as_str())
    );
}

#[test]
fn token_create_prints_the_entry_on_stdout_and_the_token_once_on_stderr() {
    use sha2::Digest as _;
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "token",
            "create",
            "ci-bot",
            "--scopes",
            "sessions:read,tools:call:read_file",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let stdout = String::from_utf8(o.stdout).unwrap();
    let stderr = String::from_utf8(o.stderr).unwrap();
    let token = stderr.lines().last().unwrap();
    assert!(
        token.starts_with("sluice_") && token.len() == 50,
        "{stderr}"
    );
    assert!(!stdout.contains(token), "the token is never on stdout");
    let hash: String = sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        stdout,
        format!(
            "[[server.tokens]]\nname = \"ci-bot\"\nscopes = [\"sessions:read\", \"tools:call:read_file\"]\nsha256 = \"{hash}\"\n"
        )
    );
    // A scope that is none of them: exit 2 with what is allowed, nothing on stdout.
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["token", "create", "ci-bot", "--scopes", "root"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(
        stderr.contains("unknown scope \"root\": a scope is one of sessions:read, sessions:write, approvals, config, tools:call, metrics, admin, or tools:call:<tool> for one tool"),
        "{stderr}"
    );
}
