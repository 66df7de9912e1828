//! `wasi:config/store` for components (`tests/components/config-reader`,
//! docs/configuration.md#config-and-secrets).
//! A component reads a value and a secret granted by its policy; the secret's value never
//! appears in an observation (results and tool errors alike), in a log line of the call, or
//! in the session store. A secret that cannot be read makes its component unavailable with
//! the reason; a component granted nothing sees an empty store.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::json;
use sluice_protocol::SessionStatus;
use sluice_runtime::{ComponentSpec, RootGrant, SecretSource, ToolPolicy, Toolbox};
use sluice_store::Store;
use sluice_tests::{CONFIG_READER_WASM, component_spec, engine};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::agent_loop::{DEFAULT_CAP, agent, answer, block_on, calls, db, run, script};
use crate::cache;

/// The secret: its first byte, `Q`, appears in no marker or message of the host.
const SECRET: &str = "QXZ-sk-live-0123456789abcdef";

/// A policy granting `region` (a value) and `token` (the secret, from a file ending in a
/// newline, which is not part of the secret).
struct Granted {
    _dir: tempfile::TempDir,
    policy: ToolPolicy,
}

fn granted() -> Granted {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token.txt");
    std::fs::write(&file, format!("{SECRET}\n")).unwrap();
    let policy = ToolPolicy {
        config: BTreeMap::from([("region".to_string(), "eu-west-1".to_string())]),
        secrets: BTreeMap::from([("token".to_string(), SecretSource::File(file))]),
        ..ToolPolicy::default()
    };
    Granted { _dir: dir, policy }
}

fn toolbox(policy: ToolPolicy) -> Arc<Toolbox> {
    Arc::new(
        Toolbox::load(
            engine(cache()),
            &[component_spec(CONFIG_READER_WASM, policy)],
        )
        .unwrap(),
    )
}

#[test]
fn a_value_is_read_and_the_secret_is_withheld_from_every_observation() {
    let g = granted();
    let tools = toolbox(g.policy.clone());
    let obs = block_on(tools.call("get", r#"{"key":"region"}"#, DEFAULT_CAP));
    assert_eq!(obs.text(), r#"{"ok":true,"result":"eu-west-1"}"#);
    assert!(obs.withheld().is_empty());
    let obs = block_on(tools.call("get", r#"{"key":"token"}"#, DEFAULT_CAP));
    assert_eq!(
        obs.text(),
        r#"{"ok":true,"result":"[secret withheld: token]"}"#
    );
    assert_eq!(obs.withheld(), ["token"]);
    let obs = block_on(tools.call("echo_all", "{}", DEFAULT_CAP));
    assert_eq!(
        obs.text(),
        r#"{"ok":true,"result":[{"key":"region","value":"eu-west-1"},{"key":"token","value":"[secret withheld: token]"}]}"#
    );
    // A tool error is an observation too.
    let obs = block_on(tools.call("fail_with", r#"{"key":"token"}"#, DEFAULT_CAP));
    assert_eq!(
        obs.text(),
        r#"{"ok":false,"error":"cannot use token=[secret withheld: token]"}"#
    );
    assert_eq!(obs.withheld(), ["token"]);
}

#[test]
fn a_builtin_granted_the_secret_file_reads_it_withheld() {
    // The secret file sits in a directory the built-in read_file is granted (as a secrets/
    // directory under `--root .` would): every tool's observations withhold every loaded
    // secret, not only those of the component that owns it.
    let g = granted();
    let dir = g.policy.secrets["token"].clone();
    let SecretSource::File(file) = dir else {
        panic!("the secret comes from a file");
    };
    let read_file = ComponentSpec {
        source: sluice_tests::builtin("read_file"),
        policy: ToolPolicy {
            roots: vec![RootGrant {
                name: "data".into(),
                dir: file.parent().unwrap().to_path_buf(),
                write: false,
            }],
            ..ToolPolicy::default()
        },
    };
    let tools = Toolbox::load(
        engine(cache()),
        &[
            component_spec(CONFIG_READER_WASM, g.policy.clone()),
            read_file,
        ],
    )
    .unwrap();
    let obs = block_on(tools.call("read_file", r#"{"path":"token.txt"}"#, DEFAULT_CAP));
    assert!(!obs.text().contains(SECRET), "{}", obs.text());
    assert!(
        obs.text()
            .contains(r#""content":"[secret withheld: token]\n""#),
        "{}",
        obs.text()
    );
    assert_eq!(obs.withheld(), ["token"]);
}

#[test]
fn a_secret_from_the_environment_is_read_and_withheld() {
    // Cargo sets CARGO_MANIFEST_DIR for the tests it runs (and nextest does too): a
    // variable of the operator's environment that this process need not set itself.
    let value = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let policy = ToolPolicy {
        secrets: BTreeMap::from([(
            "dir".to_string(),
            SecretSource::Env("CARGO_MANIFEST_DIR".into()),
        )]),
        ..ToolPolicy::default()
    };
    let tools = toolbox(policy);
    let obs = block_on(tools.call("echo_all", "{}", DEFAULT_CAP));
    assert_eq!(
        obs.text(),
        r#"{"ok":true,"result":[{"key":"dir","value":"[secret withheld: dir]"}]}"#
    );
    assert!(!obs.text().contains(&value));
}

/// The stderr buffer keeps the last 64 KiB a guest writes; a secret the buffer's start cuts
/// through, and one the first 64 KiB would have cut (the tester's case: the old buffer kept
/// the first 64 KiB and the failure showed the secret's first bytes), leave nothing of it.
#[test]
fn a_secret_cut_by_the_stderr_buffer_leaves_no_part_in_the_failure() {
    let g = granted();
    let tools = toolbox(g.policy.clone());
    let kept = 64 * 1024;
    for (before, after) in [(0, kept - 5), (kept - 5, 0), (kept - 1, 0), (0, kept - 1)] {
        let args = format!(r#"{{"key":"token","before":{before},"after":{after}}}"#);
        let obs = block_on(tools.call("crash_after_stderr", &args, DEFAULT_CAP));
        let v: serde_json::Value = serde_json::from_str(obs.text()).unwrap();
        let error = v["error"].as_str().unwrap();
        assert_eq!(v["kind"], "trap", "{}", obs.text());
        assert_eq!(
            error,
            "the tool crashed: wasm trap: wasm `unreachable` instruction executed; its stderr ends: [secret withheld: token]",
            "before {before}, after {after}"
        );
        // `Q`, the secret's first byte, is in no marker or message of the host.
        assert!(!obs.text().contains('Q'), "{}", obs.text());
        assert!(!obs.text().contains("cdef"), "{}", obs.text());
    }
}

#[test]
fn a_component_granted_nothing_sees_an_empty_store() {
    let tools = toolbox(ToolPolicy::default());
    let obs = block_on(tools.call("echo_all", "{}", DEFAULT_CAP));
    assert_eq!(obs.text(), r#"{"ok":true,"result":[]}"#);
    let obs = block_on(tools.call("get", r#"{"key":"region"}"#, DEFAULT_CAP));
    assert_eq!(obs.text(), r#"{"ok":false,"error":"region is not set"}"#);
}

#[test]
fn a_secret_that_cannot_be_read_makes_the_component_unavailable() {
    let missing_var = ToolPolicy {
        secrets: BTreeMap::from([(
            "token".to_string(),
            SecretSource::Env("SLUICE_TEST_NEVER_SET_SECRET".into()),
        )]),
        ..ToolPolicy::default()
    };
    let expected = "failed to load sluice_test_config_reader.wasm: its secret \"token\" cannot be read from environment variable SLUICE_TEST_NEVER_SET_SECRET: it is not set";
    let specs = [component_spec(CONFIG_READER_WASM, missing_var)];
    let strict = Toolbox::load(engine(cache()), &specs).err().unwrap();
    assert_eq!(strict.to_string(), expected);
    let lenient = Toolbox::load_available(engine(cache()), &specs).unwrap();
    assert_eq!(lenient.tools().count(), 0);
    assert_eq!(lenient.unavailable().len(), 1);
    assert_eq!(lenient.unavailable()[0].reason, expected);

    let dir = tempfile::tempdir().unwrap();
    let absent = dir.path().join("absent.txt");
    let missing_file = ToolPolicy {
        secrets: BTreeMap::from([("token".to_string(), SecretSource::File(absent.clone()))]),
        ..ToolPolicy::default()
    };
    let e = Toolbox::load(
        engine(cache()),
        &[component_spec(CONFIG_READER_WASM, missing_file)],
    )
    .err()
    .unwrap();
    assert_eq!(
        e.to_string(),
        format!(
            "failed to load sluice_test_config_reader.wasm: its secret \"token\" cannot be read from file {}: No such file or directory (os error 2)",
            absent.display()
        )
    );
}

/// A tracing writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// Set in the child process [`the_secret_is_in_no_log_line_at_any_level`] runs itself in.
const LOGGING_ALONE: &str = "SLUICE_TESTS_LOGGING_ALONE";

/// The secret is in no log line at any level, on any thread, through the binary's logger
/// (the fmt subscriber with [`sluice_runtime::logs::may_log`], at `trace`), while the lines
/// of the calls are there: the caller's (`withheld=["token"]`) and the pool thread's each
/// call runs on (docs/observations.md#secrets-are-withheld).
///
/// The logger is the process's global default, as in the binary, so this test runs in a
/// child process of its own. A logger set for the test's thread alone (`set_default`) sees
/// nothing of the pool threads, and, while it is the only logger of the process, a call
/// site first reached by another thread (another test's call, a pool thread) asks that
/// thread's logger, finds none and caches "never" for every thread: the test's own
/// thread then logs nothing from it (tracing-core 0.1.36, tokio-rs/tracing#3611).
#[test]
fn the_secret_is_in_no_log_line_at_any_level() {
    const NAME: &str = "config_secrets::the_secret_is_in_no_log_line_at_any_level";
    if std::env::var_os(LOGGING_ALONE).is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--test-threads", "1"])
            .env(LOGGING_ALONE, "1")
            .output()
            .expect("the test binary runs again");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "the test in a child process failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let captured = Captured::default();
    // The binary's logger (host/sluice/src/main.rs), at `trace` for every target.
    tracing_subscriber::fmt()
        .with_max_level(LevelFilter::TRACE)
        .with_writer(captured.clone())
        .with_ansi(false)
        .finish()
        .with(tracing_subscriber::filter::filter_fn(
            sluice_runtime::logs::may_log,
        ))
        .try_init()
        .unwrap();
    let g = granted();
    let tools = toolbox(g.policy.clone());
    for (tool, args) in [
        ("get", r#"{"key":"token"}"#),
        ("echo_all", "{}"),
        ("fail_with", r#"{"key":"token"}"#),
    ] {
        block_on(tools.call(tool, args, DEFAULT_CAP));
    }
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let lines = |needle: &str| log.lines().filter(|l| l.contains(needle)).count();
    // One line per call (the caller's, once the observation is made), naming the key
    // withheld, never the value.
    for (tool, status) in [
        ("get", "ok"),
        ("echo_all", "ok"),
        ("fail_with", "tool_error"),
    ] {
        let line = format!(
            "sluice_runtime::call::facts: tool call tool=\"{tool}\" status=\"{status}\" outcome=\"returned\""
        );
        assert_eq!(lines(&line), 1, "{line}:\n{log}");
    }
    assert_eq!(lines("tool call"), 3, "{log}");
    assert_eq!(lines("withheld=[\"token\"]"), 3, "{log}");
    // No 10 bytes of the secret in a row, anywhere.
    for part in SECRET.as_bytes().windows(10) {
        let part = std::str::from_utf8(part).unwrap();
        assert!(!log.contains(part), "{part}:\n{log}");
    }
}

#[test]
fn the_secret_never_reaches_the_session_store() {
    let g = granted();
    let tools = toolbox(g.policy.clone());
    let db = db();
    let model = script(&[
        calls(&[
            ("get", json!({"key": "token"})),
            ("fail_with", json!({"key": "token"})),
        ]),
        answer("done"),
    ]);
    let agent = agent(&db.store, model, tools, DEFAULT_CAP);
    let id = block_on(db.store.create_session()).unwrap().id;
    let outcome = block_on(run(&agent, &id, Some("read the token")));
    assert_eq!(outcome.status, SessionStatus::Completed);
    let stored: Vec<String> = crate::agent_loop::tool_messages(&db.store, &id)
        .into_iter()
        .map(|m| m.message.content)
        .collect();
    assert_eq!(
        stored,
        [
            r#"{"ok":true,"result":"[secret withheld: token]"}"#,
            r#"{"ok":false,"error":"cannot use token=[secret withheld: token]"}"#,
        ]
    );
    drop(agent);
    // Every byte of the database and its journal: no prefix of the secret of 8 bytes.
    let dir: PathBuf = db.path.parent().unwrap().to_path_buf();
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        files += 1;
        assert!(
            !bytes.windows(8).any(|w| w == &SECRET.as_bytes()[..8]),
            "the secret is in the session store"
        );
    }
    assert!(files >= 1);
}
