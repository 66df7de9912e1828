//! Each language's project, as `sluice new` writes it: built with its toolchain by `build`,
//! loaded under its own `sluice.toml` through the host's library (sluice-config, sluice-wiring,
//! sluice-runtime: what `sluice call` does), and called. Every case of its `tests.toml` must
//! pass as `sluice test` runs it (and a wrong one fail), and a few cases it does not show
//! must give their exact observations.
//!
//! The toolchains are the ones `guest-examples/install-toolchains.sh` installs under
//! `target/guest-examples/` (put on the build's `PATH` here; `sluice build` itself finds
//! them on `PATH` only), plus cargo with `wasm32-wasip2` and npm. A missing one skips its
//! test with a `skipped:` line on stderr, except under `CI=true`, where it fails.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use sluice_kit::cases::{self, Summary, TestPlan};
use sluice_kit::{BuildOptions, Built, Language, build_with, new_project};
use sluice_runtime::{EngineOptions, ToolEngine, Toolbox};

#[test]
fn rust() {
    build_and_call(Language::Rust);
}

#[test]
fn python() {
    build_and_call(Language::Python);
}

#[test]
fn js() {
    build_and_call(Language::Js);
}

#[test]
fn c() {
    build_and_call(Language::C);
}

/// The tool every test makes.
const NAME: &str = "line-pager";
const TOOL: &str = "line_pager";

/// The repository.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where install-toolchains.sh puts the toolchains: `target/guest-examples/{venv/bin,bin}`
/// of the repository, and of `CARGO_TARGET_DIR` when that is set.
fn toolchain_dirs() -> Vec<PathBuf> {
    let mut targets = Vec::new();
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        targets.push(PathBuf::from(dir));
    }
    targets.push(repo().join("target"));
    targets
        .iter()
        .flat_map(|t| {
            let out = t.join("guest-examples");
            [out.join("venv/bin"), out.join("bin")]
        })
        .collect()
}

/// The `PATH` the builds run with.
fn search_path() -> OsString {
    let own = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(
        toolchain_dirs()
            .into_iter()
            .chain(std::env::split_paths(&own)),
    )
    .unwrap()
}

/// Whether `language`'s toolchain is there. When it is not: under `CI=true` a failure;
/// otherwise a `skipped:` line on stderr (past the harness's capture) and false.
fn toolchain_ready(language: Language) -> bool {
    let path = search_path();
    let mut missing: Vec<String> = language
        .missing(Some(&path))
        .iter()
        .map(|r| format!("{} ({})", r.programs.join(" or "), r.install))
        .collect();
    if language == Language::Rust && !wasip2_installed() {
        missing.push("the wasm32-wasip2 target (rustup target add wasm32-wasip2)".to_string());
    }
    if missing.is_empty() {
        return true;
    }
    let why = format!(
        "{language}: not on PATH: {}; run guest-examples/install-toolchains.sh",
        missing.join("; ")
    );
    sluice_test_support::skip_or_fail(&why);
    false
}

fn wasip2_installed() -> bool {
    std::process::Command::new("rustc")
        .args(["--print", "target-libdir", "--target", "wasm32-wasip2"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .is_some_and(|o| Path::new(String::from_utf8_lossy(&o.stdout).trim()).is_dir())
}

/// One engine for every test, without a compile cache: the Python and JavaScript builds are
/// not byte for byte reproducible, so each run's components would be new entries.
fn engine() -> Arc<ToolEngine> {
    static ENGINE: OnceLock<Arc<ToolEngine>> = OnceLock::new();
    ENGINE
        .get_or_init(|| Arc::new(ToolEngine::new(EngineOptions::default()).unwrap()))
        .clone()
}

/// The project's tool, loaded under its sluice.toml as `sluice call` loads it.
struct Loaded {
    toolbox: Toolbox,
    runtime: tokio::runtime::Runtime,
}

impl Loaded {
    fn new(dir: &Path) -> Loaded {
        let config = sluice_config::Config::resolve(
            Some(&dir.join("sluice.toml")),
            &|_| None,
            &sluice_config::Overrides::default(),
        )
        .unwrap();
        let specs: Vec<_> = config
            .tools
            .iter()
            .map(|t| sluice_wiring::component_spec(t).unwrap())
            .collect();
        let toolbox = Toolbox::load(engine(), &specs).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Loaded { toolbox, runtime }
    }

    /// `plan` run through this tool as `sluice test` runs it: the summary and the line
    /// printed for each case.
    fn test(&self, plan: &TestPlan) -> (Summary, Vec<String>) {
        let mut lines = Vec::new();
        let summary = self
            .runtime
            .block_on(cases::run(plan, &self.toolbox, false, |o| {
                lines.push(o.to_string());
            }));
        (summary, lines)
    }

    /// The observation of one call under a cap of `cap` bytes.
    fn call(&self, args: &str, cap: u32) -> String {
        let obs = self.runtime.block_on(self.toolbox.call(TOOL, args, cap));
        assert!(!obs.truncated(), "{args}: cut by the cap: {}", obs.text());
        obs.text().to_string()
    }
}

fn build_and_call(language: Language) {
    if !toolchain_ready(language) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(NAME);
    new_project(&dir, NAME, language).unwrap();
    let options = BuildOptions {
        path_prefix: toolchain_dirs(),
        // Rust: one target dir for every run, so only the first build compiles wit-bindgen.
        env: vec![(
            "CARGO_TARGET_DIR".into(),
            Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join("sluice-kit-cargo")
                .into(),
        )],
        capture: true,
    };
    let build = || -> Built { build_with(&dir, &options).unwrap_or_else(|e| panic!("{e}")) };
    let first = build();
    assert_eq!(first.component, dir.join(format!("build/{TOOL}.wasm")));
    assert_eq!(
        first.bytes,
        std::fs::metadata(&first.component).unwrap().len()
    );
    assert_eq!(first.command, "sh build.sh");
    let again = build();
    if language == Language::Js {
        let log = again.log.as_deref().unwrap();
        assert!(
            !log.contains("npm install"),
            "the rebuild installed again: {log}"
        );
    }
    let _ = writeln!(
        std::io::stderr(),
        "{language}: first build {:.1} s, rebuild {:.1} s, component {} bytes",
        first.duration.as_secs_f64(),
        again.duration.as_secs_f64(),
        again.bytes
    );

    let tool = Loaded::new(&dir);
    // The project's tests.toml, run as `sluice test` runs it: six cases, each passing.
    let plan = TestPlan::load(&dir).unwrap();
    assert_eq!(plan.cases.len(), 6);
    let (summary, lines) = tool.test(&plan);
    assert_eq!(
        summary,
        Summary {
            passed: 6,
            failed: 0
        },
        "{language}: {lines:#?}"
    );
    let expected_bytes = |i: usize| {
        plan.cases[i]
            .expect
            .as_ref()
            .unwrap()
            .as_str()
            .unwrap()
            .len()
    };
    assert_eq!(
        lines[1],
        format!(
            "ok   the first of two pages @1024: {} bytes, paged",
            expected_bytes(1)
        )
    );
    assert_eq!(
        lines[3],
        format!(
            "ok   a missing file @65536: {} bytes, whole",
            expected_bytes(3)
        )
    );
    // A wrong expectation fails that case alone, saying what came instead.
    let toml = std::fs::read_to_string(dir.join("tests.toml")).unwrap();
    std::fs::write(
        dir.join("tests.toml"),
        toml.replace(r#""nextCursor":448}}"#, r#""nextCursor":447}}"#),
    )
    .unwrap();
    let (summary, lines) = tool.test(&TestPlan::load(&dir).unwrap());
    assert_eq!(
        summary,
        Summary {
            passed: 5,
            failed: 1
        },
        "{lines:#?}"
    );
    assert!(
        lines[1].starts_with(&format!(
            "FAIL the first of two pages @1024: {} bytes, paged\n     expected ",
            expected_bytes(1)
        )),
        "{}",
        lines[1]
    );
    assert!(lines[1].contains(r#""nextCursor":447}}"#), "{}", lines[1]);
    more_cases(&tool, &dir.join("sample"));
}

/// What tests.toml does not show: a line longer than a page, a path too long for any page,
/// text that is not UTF-8, `\r\n` and no last newline, the end of the file as a cursor, and a
/// long file paged through to its end.
fn more_cases(tool: &Loaded, sample: &Path) {
    std::fs::write(
        sample.join("long.txt"),
        format!("{}\nshort\n", "x".repeat(600)),
    )
    .unwrap();
    assert_eq!(
        tool.call(r#"{"path":"/data/long.txt"}"#, 1024),
        r#"{"ok":false,"error":"the line at byte 0 of /data/long.txt does not fit a page of 512 bytes; raise agent.max_tool_result_bytes","kind":"page-too-small"}"#
    );
    assert_eq!(
        tool.call(r#"{"path":"/data/long.txt","cursor":601}"#, 1024),
        r#"{"ok":true,"result":{"path":"/data/long.txt","lines":["short"]}}"#
    );

    let long_path = format!("/data/{}", "d".repeat(470));
    assert_eq!(
        tool.call(&format!(r#"{{"path":"{long_path}"}}"#), 1024),
        format!(
            r#"{{"ok":false,"error":"the cap (agent.max_tool_result_bytes, 1024 bytes) leaves no room for a page of {long_path}; raise it or use a shorter path","kind":"page-too-small"}}"#
        )
    );

    std::fs::write(sample.join("latin1.txt"), b"ok\ncaf\xe9\n").unwrap();
    assert_eq!(
        tool.call(r#"{"path":"/data/latin1.txt"}"#, 65_536),
        r#"{"ok":false,"error":"/data/latin1.txt is not UTF-8 text","kind":"binary-file"}"#
    );

    std::fs::write(
        sample.join("crlf.txt"),
        "one\r\ntwo \"quoted\"\r\n\r\nlast\r",
    )
    .unwrap();
    assert_eq!(
        tool.call(r#"{"path":"/data/crlf.txt"}"#, 65_536),
        r#"{"ok":true,"result":{"path":"/data/crlf.txt","lines":["one","two \"quoted\"","","last\r"]}}"#
    );
    assert_eq!(
        tool.call(r#"{"path":"/data/crlf.txt","cursor":26}"#, 65_536),
        r#"{"ok":true,"result":{"path":"/data/crlf.txt","lines":[]}}"#
    );

    // 300 lines under the smallest cap: every page full to the byte budget, the cursors
    // chained, every line once.
    let text: String = (1..=300).map(|i| format!("line {i}\t\"{i}\"\n")).collect();
    std::fs::write(sample.join("many.txt"), &text).unwrap();
    let mut pages: Vec<Vec<String>> = Vec::new();
    let mut cursors = Vec::new();
    let mut args = serde_json::json!({"path": "/data/many.txt"});
    loop {
        let obs: serde_json::Value =
            serde_json::from_str(&tool.call(&args.to_string(), 1024)).unwrap();
        let page = &obs["result"];
        pages.push(serde_json::from_value(page["lines"].clone()).unwrap());
        match page.get("nextCursor") {
            Some(next) => {
                cursors.push(next.as_u64().unwrap());
                args["cursor"] = next.clone();
            }
            None => break,
        }
    }
    for page in &pages {
        let bytes = serde_json::to_string(page).unwrap().len();
        assert!(bytes <= 512, "a page of {bytes} bytes");
    }
    for pair in pages.windows(2) {
        let full = serde_json::to_string(&pair[0]).unwrap().len();
        let next = serde_json::to_string(&pair[1][0]).unwrap().len();
        assert!(
            full + 1 + next > 512,
            "a page of {full} bytes had room for {next} more"
        );
    }
    let lines: Vec<String> = pages.concat();
    let expected: Vec<String> = text.lines().map(str::to_string).collect();
    assert_eq!(lines, expected);
    assert_eq!(
        cursors,
        [
            359, 723, 1087, 1449, 1824, 2199, 2574, 2949, 3324, 3699, 4074
        ]
    );
}
