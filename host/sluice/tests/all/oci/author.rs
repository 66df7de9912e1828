//! A tool author's whole path through the binary, per language, on a clean directory:
//! `sluice new` → `sluice build` → `sluice test` → `sluice tools keygen`, `push` to a real
//! registry and `sign` → a load by `oci://` with `verify.key` → `sluice call`, which gives
//! the observation the project's own tests.toml expects → `sluice mcp` serving that signed
//! component to a real MCP client (the official Python SDK), whose calls get those same
//! observations as their text and structured content.
//!
//! The toolchains are those guest-examples/install-toolchains.sh puts under
//! `target/guest-examples/` (on the build's PATH here), cargo with `wasm32-wasip2`, and npm;
//! a missing one skips its language with `skipped:`, and fails under `CI=true`. The Python
//! SDK is the one host/sluice-mcp/clients/install.sh installs; without it the MCP part says
//! it skipped (and fails under `CI=true`).

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sluice_kit::Language;
use sluice_kit::cases::TestPlan;
use sluice_tests::registry::TestRegistry;

use super::{SLUICE, Workspace, failure, mcp_clients};

#[test]
fn rust() {
    new_to_signed_call(Language::Rust);
}

#[test]
fn python() {
    new_to_signed_call(Language::Python);
}

#[test]
fn js() {
    new_to_signed_call(Language::Js);
}

#[test]
fn c() {
    new_to_signed_call(Language::C);
}

/// `target/` of the repository, and `CARGO_TARGET_DIR` when set.
fn target_dirs() -> Vec<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut dirs: Vec<PathBuf> = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    dirs.push(repo.join("target"));
    dirs
}

/// PATH with the toolchains install-toolchains.sh installs first.
fn search_path() -> OsString {
    let own = std::env::var_os("PATH").unwrap_or_default();
    let toolchains = target_dirs().into_iter().flat_map(|t| {
        let out = t.join("guest-examples");
        [out.join("venv/bin"), out.join("bin")]
    });
    std::env::join_paths(toolchains.chain(std::env::split_paths(&own))).unwrap()
}

/// Whether `language` can be built here; a `skipped:` line otherwise (a failure under
/// `CI=true`).
fn ready(language: Language) -> bool {
    let path = search_path();
    let mut missing: Vec<String> = language
        .missing(Some(&path))
        .iter()
        .map(ToString::to_string)
        .collect();
    if language == Language::Rust {
        let libdir = std::process::Command::new("rustc")
            .args(["--print", "target-libdir", "--target", "wasm32-wasip2"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
        if !libdir.is_some_and(|d| d.is_dir()) {
            missing.push("the wasm32-wasip2 target (rustup target add wasm32-wasip2)".into());
        }
    }
    if missing.is_empty() {
        return true;
    }
    let why = format!("{language}: {}", missing.join("; "));
    sluice_test_support::skip_or_fail(&why);
    false
}

fn new_to_signed_call(language: Language) {
    if !ready(language) {
        return;
    }
    let Some(registry) = TestRegistry::start() else {
        return;
    };
    let w = Workspace::new();
    let run = |args: &[&str]| {
        let out = w
            .command(args)
            .env("PATH", search_path())
            // Rust: one target directory for every run, so wit-bindgen compiles once.
            .env(
                "CARGO_TARGET_DIR",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("author-cargo"),
            )
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "sluice {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let started = std::time::Instant::now();
    let created = run(&["new", "line-pager", "--lang", &language.to_string()]);
    assert!(
        created.starts_with(&format!(
            "created line-pager: the {language} tool line_pager ("
        )),
        "{created}"
    );
    let built = run(&["build", "line-pager"]);
    assert!(
        built.starts_with("built line-pager/build/line_pager.wasm: a component of "),
        "{built}"
    );
    let built_at = started.elapsed();
    let tested = run(&["test", "line-pager"]);
    assert_eq!(
        tested.lines().last(),
        Some("6 passed, 0 failed"),
        "{tested}"
    );
    assert_eq!(tested.lines().filter(|l| l.starts_with("ok   ")).count(), 6);

    // A failing case: exit 1, its line and the summary say so.
    let plan_path = w.path("line-pager/tests.toml");
    let plan = std::fs::read_to_string(&plan_path).unwrap();
    std::fs::write(
        &plan_path,
        plan.replace("\"kind\":\"not-found\"", "\"kind\":\"missing\""),
    )
    .unwrap();
    let out = w.command(&["test", "line-pager"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("FAIL a missing file @65536: "), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("5 passed, 1 failed"));
    std::fs::write(&plan_path, &plan).unwrap();

    run(&["tools", "keygen"]);
    let tag = format!(
        "oci://{}/tools/line-pager-{language}:0.1.0",
        registry.addr()
    );
    let pushed: serde_json::Value = serde_json::from_str(&run(&[
        "tools",
        "push",
        "line-pager/build/line_pager.wasm",
        &tag,
    ]))
    .unwrap();
    let signed: serde_json::Value =
        serde_json::from_str(&run(&["tools", "sign", &tag, "--key", "sluice.key"])).unwrap();
    assert_eq!(signed["digest"], pushed["digest"]);
    assert_eq!(signed["added"], true);

    // The project's policy, its component now the signed one from the registry.
    let policy = std::fs::read_to_string(w.path("line-pager/sluice.toml")).unwrap();
    let published = policy.replace(
        "component = \"build/line_pager.wasm\"",
        &format!("component = \"{tag}\"\nverify.key = \"../sluice.pub\""),
    );
    assert_ne!(published, policy);
    std::fs::write(w.path("line-pager/published.toml"), published).unwrap();
    std::fs::remove_dir_all(w.path("line-pager/build")).unwrap();
    let observation = run(&[
        "--config",
        "line-pager/published.toml",
        "call",
        "line_pager",
        r#"{"path":"/data/notes.txt"}"#,
    ]);
    let plan = TestPlan::load(&plan_path).unwrap();
    let expected = plan.cases[0].expect.as_ref().unwrap().as_str().unwrap();
    assert_eq!(observation, format!("{expected}\n"));
    let _ = writeln!(
        std::io::stderr(),
        "{language}: new + build {:.1} s, to a signed oci:// call {:.1} s",
        built_at.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    served_over_mcp(&w, &plan, "line-pager/published.toml");

    // Signed by another key: refused.
    std::fs::write(
        w.path("line-pager/other.toml"),
        std::fs::read_to_string(w.path("line-pager/published.toml"))
            .unwrap()
            .replace("../sluice.pub", "../other.pub"),
    )
    .unwrap();
    run(&["tools", "keygen", "--output-key-prefix", "other"]);
    let e = failure(&w.run(&[
        "--strict",
        "--config",
        "line-pager/other.toml",
        "call",
        "line_pager",
        "{}",
    ]));
    assert!(
        e.contains("signature check failed: none of its 1 cosign signature(s) verifies"),
        "{e}"
    );
}

/// `sluice --config CONFIG mcp` (the signed component by `oci://`, built-ins off) driven by
/// the official MCP Python SDK over stdio: the handshake, a list of exactly the project's
/// tool, then a `tools/call` of each case of `plan` made at the plan's cap (the server's
/// default, 65,536): its one text block is the case's `expect` byte for byte, its
/// `structuredContent` that text as JSON, and `isError` set exactly for the `"ok":false` ones.
fn served_over_mcp(w: &Workspace, plan: &TestPlan, config: &str) {
    let Some(python) = mcp_clients::python() else {
        return;
    };
    assert_eq!(
        plan.caps,
        [65_536],
        "the cases are called at sluice mcp's default cap"
    );
    let cases: Vec<_> = plan.cases.iter().filter(|c| c.caps.is_none()).collect();
    assert_eq!(cases.len(), 4, "{:?}", plan.cases);
    let calls: Vec<Value> = cases
        .iter()
        .map(|c| json!({"name": c.tool, "arguments": c.args}))
        .collect();
    let expected: Vec<Value> = cases
        .iter()
        .map(|c| {
            let text = c.expect.as_ref().and_then(Value::as_str).unwrap();
            let observation: Value = serde_json::from_str(text).unwrap();
            json!({
                "content": [{"type": "text", "text": text}],
                "isError": observation["ok"] != true,
                "structuredContent": observation,
            })
        })
        .collect();
    // The server gets the client's environment and directory: the workspace's cache (which
    // holds the pulled, verified component) and docker config, as `sluice call` had.
    let mut client = std::process::Command::new(python);
    for (key, value) in w.command(&[]).get_envs() {
        match value {
            Some(value) => client.env(key, value),
            None => client.env_remove(key),
        };
    }
    let started = std::time::Instant::now();
    let out = client
        .arg(crate::mcp::python_client_script())
        .args(["stdio", "initialize"])
        .arg(json!([SLUICE, "--config", config, "mcp"]).to_string())
        .arg(Value::from(calls).to_string())
        .current_dir(w.dir.path())
        .output()
        .unwrap();
    let got = mcp_clients::answer(&out);
    assert_eq!(
        got,
        json!({
            "server": "sluice",
            "version": "2025-11-25",
            "tools": [cases[0].tool],
            "calls": expected,
        })
    );
    let _ = writeln!(
        std::io::stderr(),
        "served by sluice mcp: the Python SDK's {} calls in {:.1} s, handshake included",
        cases.len(),
        started.elapsed().as_secs_f64()
    );
}

/// `sluice dev`: a round at start, then one per save of a source: the edit that changes an
/// error message fails that case, a source that does not compile says so, and the fix passes
/// again; writes to the build's output start no round.
#[test]
fn dev_rebuilds_and_tests_on_every_save() {
    if !ready(Language::C) {
        return;
    }
    let w = Workspace::new();
    let new = w
        .command(&["new", "line-pager", "--lang", "c"])
        .output()
        .unwrap();
    assert!(new.status.success());
    let mut child = w
        .command(&["dev", "line-pager"])
        .env("PATH", search_path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (tx, lines) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    // The lines of one round, up to its `watching` line.
    let round = || -> Vec<String> {
        let mut got = Vec::new();
        loop {
            let line = lines
                .recv_timeout(std::time::Duration::from_secs(120))
                .unwrap_or_else(|e| panic!("{e}: {got:#?}"));
            let done = line.starts_with("watching line-pager for changes");
            got.push(line);
            if done {
                return got;
            }
        }
    };
    let first = round();
    assert!(
        first[0].starts_with("built line-pager/build/line_pager.wasm: a component of "),
        "{first:#?}"
    );
    assert_eq!(first[first.len() - 2], "6 passed, 0 failed", "{first:#?}");

    let source = w.path("line-pager/tool.c");
    let original = std::fs::read_to_string(&source).unwrap();
    std::fs::write(
        &source,
        original.replace("no such file or directory: %s", "missing: %s"),
    )
    .unwrap();
    let edited = round();
    assert_eq!(edited[0], "", "{edited:#?}");
    assert_eq!(edited[1], "changed: tool.c");
    assert!(
        edited
            .iter()
            .any(|l| l.starts_with("FAIL a missing file @65536: ")),
        "{edited:#?}"
    );
    assert_eq!(
        edited[edited.len() - 2],
        "5 passed, 1 failed",
        "{edited:#?}"
    );

    std::fs::write(&source, format!("{original}\nthis is not C\n")).unwrap();
    let broken = round();
    assert!(
        broken[2].starts_with("build failed: the build failed: `sh build.sh` (tool.toml's [build] command) in line-pager ended with exit status "),
        "{broken:#?}"
    );

    std::fs::write(&source, &original).unwrap();
    let fixed = round();
    assert_eq!(fixed[fixed.len() - 2], "6 passed, 0 failed", "{fixed:#?}");
    // The build's own writes start no round: the watch rests until the next save.
    let after = lines.recv_timeout(std::time::Duration::from_secs(2));
    assert!(after.is_err(), "a round started by itself: {after:?}");
    let _ = child.kill();
    let _ = child.wait();
}
