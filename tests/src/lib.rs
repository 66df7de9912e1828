//! Helpers for Sluice's end-to-end tests: a temporary root directory with the built-in
//! tools (or a test component) loaded over it, and calls that return the exact observation
//! a session would store.
//!
//! The test components of `tests/components/` are compiled by this crate's build script;
//! their paths are the `*_WASM` constants below.

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;
use sluice_runtime::{
    ComponentSpec, EngineOptions, Observation, PoolOptions, RuntimeError, Source, ToolEngine,
    ToolPolicy, Toolbox,
};

include!(concat!(env!("OUT_DIR"), "/components.rs"));

/// The built-in tool `name` (`read_file`, …) as a source: its component as the binary
/// embeds it ([`sluice_builtins::BUILTINS`]). Panics when there is none of that name.
pub fn builtin(name: &str) -> Source {
    let (name, wasm) = sluice_builtins::BUILTINS
        .iter()
        .find(|(n, _)| *n == name)
        .copied()
        .unwrap_or_else(|| panic!("no built-in tool called {name:?}"));
    Source::Builtin { name, wasm }
}

pub mod logs;

/// `stderr` of the `sluice` binary without the lines of its compile display (a compile that
/// took over a second: `compiling X (N MB); the first compile …` and `compiled X in T s`,
/// host/sluice/src/progress.rs), which come or not with the machine's load.
pub fn without_compile_progress(stderr: &str) -> String {
    stderr
        .split_inclusive('\n')
        .filter(|line| {
            let line = line.trim_end();
            !(line.starts_with("compiling ")
                && line
                    .ends_with("; the first compile of a component is cached for the next start")
                || line.starts_with("compiled ") && line.ends_with(" s"))
        })
        .collect()
}
pub mod registry;

/// The marker of the versioned test component: `sluice-test-version=` and 24 bytes.
const VERSION_MARKER: &[u8] = b"sluice-test-version=";

/// The versioned test component ([`VERSIONED_WASM`]) rewritten to report `version` (at
/// most 24 bytes): another component, with another digest, that behaves the same.
pub fn versioned(version: &str) -> Vec<u8> {
    assert!(version.len() <= 24, "a version is at most 24 bytes");
    let mut wasm = std::fs::read(VERSIONED_WASM).expect("the versioned component");
    let starts: Vec<usize> = wasm
        .windows(VERSION_MARKER.len())
        .enumerate()
        .filter(|(_, w)| *w == VERSION_MARKER)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(starts.len(), 1, "the version marker appears exactly once");
    let at = starts[0] + VERSION_MARKER.len();
    let field = &mut wasm[at..at + 24];
    field.fill(b' ');
    field[..version.len()].copy_from_slice(version.as_bytes());
    wasm
}

/// The component file at `path` (one of the `*_WASM` constants) as a [`ComponentSpec`]
/// under `policy`, named by its file name (`sluice_test_hostile.wasm`), as an operator's
/// component file would be.
pub fn component_spec(path: &str, policy: ToolPolicy) -> ComponentSpec {
    let path = Path::new(path);
    let wasm = std::fs::read(path)
        .unwrap_or_else(|e| panic!("the test component {} is readable: {e}", path.display()));
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    ComponentSpec {
        source: Source::Bytes {
            name,
            wasm: Arc::new(wasm),
        },
        policy,
    }
}

/// Loads the test component at `path` (one of the `*_WASM` constants) under `policy` with
/// the shared engine; a component the host cannot load is an `Err`.
pub fn load_component(
    cache_dir: &Path,
    path: &str,
    policy: ToolPolicy,
) -> Result<Toolbox, RuntimeError> {
    Toolbox::load(engine(cache_dir), &[component_spec(path, policy)])
}

/// Call slots of the shared test engine: the tests of one process run in parallel and
/// share it, and some hold a slot for seconds on purpose (guests that sleep or spin to
/// their timeout), which must not delay the calls of others.
pub const TEST_MAX_CONCURRENT_CALLS: usize = 32;

/// One engine per test process (its epoch ticker is a thread), with the compiled
/// components cached under `cache_dir` so later processes skip compilation, and
/// [`TEST_MAX_CONCURRENT_CALLS`] call slots.
pub fn engine(cache_dir: &Path) -> Arc<ToolEngine> {
    static ENGINE: OnceLock<Arc<ToolEngine>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            Arc::new(
                ToolEngine::new(EngineOptions {
                    cache_dir: Some(cache_dir.to_path_buf()),
                    pool: PoolOptions {
                        max_concurrent_calls: TEST_MAX_CONCURRENT_CALLS,
                        ..PoolOptions::default()
                    },
                    ..EngineOptions::default()
                })
                .expect("the engine starts"),
            )
        })
        .clone()
}

/// The policy of built-in `name` over `policy`, as the wiring gives it: `run_script` calls
/// the other tools (with the default `[code_mode]` limits), reads no root itself and has the
/// script timeout unless `policy` set a shorter one.
pub fn builtin_policy(name: &str, policy: &ToolPolicy) -> ToolPolicy {
    let mut policy = policy.clone();
    if name == "run_script" {
        policy.tool_calls = Some(sluice_runtime::ToolCallLimits::default());
        policy.roots.clear();
        let script = Duration::from_millis(sluice_protocol::limits::DEFAULT_SCRIPT_TIMEOUT_MS);
        if policy.timeout == ToolPolicy::default().timeout {
            policy.timeout = script;
        }
    }
    policy
}

/// A temporary root directory (named `root`) and the built-in tools over it.
pub struct Sandbox {
    /// The temporary directory; the root is `dir/root`.
    pub dir: tempfile::TempDir,
    /// The tools, read-only over the root (shared, so an agent loop can hold them too).
    pub toolbox: Arc<Toolbox>,
    /// The cap every call uses, in bytes.
    pub cap: u32,
    runtime: tokio::runtime::Runtime,
}

impl Sandbox {
    /// A sandbox with cap `cap` and the default tool timeout.
    pub fn new(cache_dir: &Path, cap: u32) -> Sandbox {
        Sandbox::with_policy(cache_dir, cap, |_| {})
    }

    /// A sandbox whose policy `adjust` may change (timeout, memory, more roots).
    pub fn with_policy(
        cache_dir: &Path,
        cap: u32,
        adjust: impl FnOnce(&mut ToolPolicy),
    ) -> Sandbox {
        Sandbox::load(cache_dir, cap, adjust, |policy| {
            sluice_builtins::BUILTINS
                .iter()
                .map(|&(name, wasm)| ComponentSpec {
                    source: Source::Builtin { name, wasm },
                    policy: builtin_policy(name, policy),
                })
                .collect()
        })
    }

    /// A sandbox with the test component at `wasm` (one of the `*_WASM` constants) instead
    /// of the built-in tools, under the read-only root policy that `adjust` may change.
    pub fn with_component(
        cache_dir: &Path,
        cap: u32,
        wasm: &str,
        adjust: impl FnOnce(&mut ToolPolicy),
    ) -> Sandbox {
        Sandbox::load(cache_dir, cap, adjust, |policy| {
            vec![component_spec(wasm, policy.clone())]
        })
    }

    /// Makes the root, the policy (read-only over the root, then `adjust`ed) and loads the
    /// components `specs` gives for it.
    fn load(
        cache_dir: &Path,
        cap: u32,
        adjust: impl FnOnce(&mut ToolPolicy),
        specs: impl FnOnce(&ToolPolicy) -> Vec<ComponentSpec>,
    ) -> Sandbox {
        let dir = temp_dir();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).expect("the root directory");
        let mut policy = ToolPolicy::read_only([("root".to_string(), root)]);
        adjust(&mut policy);
        let toolbox =
            Toolbox::load(engine(cache_dir), &specs(&policy)).expect("the components load");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        Sandbox {
            dir,
            toolbox: Arc::new(toolbox),
            cap,
            runtime,
        }
    }

    /// Runs `future` to completion on the sandbox's runtime (the one its calls use), for
    /// tests that drive an agent loop over the sandbox's tools.
    pub fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// The root directory.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// Writes `contents` to `rel` under the root, creating directories.
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("parent directories");
        }
        std::fs::write(&path, contents).expect("write a test file");
        path
    }

    /// Makes the directory `rel` (and its parents) under the root.
    pub fn mkdir(&self, rel: &str) -> PathBuf {
        let path = self.root().join(rel);
        std::fs::create_dir_all(&path).expect("a test directory");
        path
    }

    /// Creates a symlink at `rel` under the root pointing at `target`, taken literally
    /// (relative targets resolve from the link's directory).
    #[cfg(unix)]
    pub fn symlink(&self, target: impl AsRef<Path>, rel: &str) -> PathBuf {
        let path = self.root().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("parent directories");
        }
        std::os::unix::fs::symlink(target, &path).expect("a test symlink");
        path
    }

    /// A path beside the root (inside the sandbox's temporary directory, outside the root).
    pub fn outside(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Calls `tool` with `args` (JSON) and returns the observation.
    pub fn call(&self, tool: &str, args: &Value) -> Observation {
        self.call_raw(tool, &args.to_string())
    }

    /// Calls `tool` with the raw argument text `args`.
    pub fn call_raw(&self, tool: &str, args: &str) -> Observation {
        self.runtime
            .block_on(self.toolbox.call(tool, args, self.cap))
    }

    /// Calls `tool` and checks the observation is within the cap; returns it as is.
    pub fn checked(&self, tool: &str, args: &Value) -> Observation {
        let obs = self.call(tool, args);
        assert!(
            obs.text().len() <= self.cap as usize,
            "{tool} {args}: observation of {} bytes over the cap {}",
            obs.text().len(),
            self.cap
        );
        obs
    }

    /// Follows `read_file` from `args` to the end of the file: passes each page's
    /// `nextOffset` back as `offset` (and `nextLine` as `startLine` when given), checks that
    /// each page starts where the previous one said, and returns the pages (each
    /// [`Sandbox::ok`]-checked). Fails after `max_pages` pages.
    pub fn read_pages(&self, args: &Value, max_pages: usize) -> Vec<Value> {
        self.follow(
            "read_file",
            args,
            "nextOffset",
            "offset",
            max_pages,
            |page, args| {
                if let Some(line) = page.get("nextLine") {
                    args["startLine"] = line.clone();
                }
            },
        )
    }

    /// Follows `list_dir`'s `nextOffset` from `args` to the last page.
    pub fn list_pages(&self, args: &Value, max_pages: usize) -> Vec<Value> {
        self.follow(
            "list_dir",
            args,
            "nextOffset",
            "offset",
            max_pages,
            |_, _| {},
        )
    }

    /// Follows `grep_files`' `nextCursor` from `args` to the last page.
    pub fn grep_pages(&self, args: &Value, max_pages: usize) -> Vec<Value> {
        self.follow(
            "grep_files",
            args,
            "nextCursor",
            "cursor",
            max_pages,
            |_, _| {},
        )
    }

    fn follow(
        &self,
        tool: &str,
        args: &Value,
        next: &str,
        arg: &str,
        max_pages: usize,
        more: impl Fn(&Value, &mut Value),
    ) -> Vec<Value> {
        let mut args = args.clone();
        let mut pages = Vec::new();
        loop {
            assert!(
                pages.len() < max_pages,
                "{tool}: more than {max_pages} pages"
            );
            let page = self.ok(tool, &args);
            if arg == "offset" && !pages.is_empty() {
                assert_eq!(
                    page["offset"], args["offset"],
                    "{tool}: the page starts where the cursor said"
                );
            }
            let cursor = page.get(next).cloned();
            pages.push(page);
            let Some(cursor) = cursor else { return pages };
            assert_ne!(
                args.get(arg),
                Some(&cursor),
                "{tool}: the cursor did not move"
            );
            args[arg] = cursor;
            more(pages.last().expect("a page"), &mut args);
        }
    }

    /// Calls `tool`, checks the observation is within the cap and not cut, and returns it
    /// parsed.
    pub fn call_json(&self, tool: &str, args: &Value) -> Value {
        let obs = self.call(tool, args);
        assert!(
            obs.text().len() <= self.cap as usize,
            "observation of {} bytes over the cap {}",
            obs.text().len(),
            self.cap
        );
        assert!(
            !obs.truncated(),
            "the cap cut the observation: {}",
            obs.text()
        );
        serde_json::from_str(obs.text()).expect("an uncut observation is JSON")
    }

    /// Like [`Sandbox::call_json`], and the call must have succeeded: returns `result`.
    pub fn ok(&self, tool: &str, args: &Value) -> Value {
        let v = self.call_json(tool, args);
        assert_eq!(v["ok"], Value::Bool(true), "expected success: {v}");
        v["result"].clone()
    }

    /// Like [`Sandbox::call_json`], and the call must have failed: returns
    /// `(error, kind)`.
    pub fn err(&self, tool: &str, args: &Value) -> (String, String) {
        let v = self.call_json(tool, args);
        assert_eq!(v["ok"], Value::Bool(false), "expected an error: {v}");
        (
            v["error"].as_str().unwrap_or_default().to_string(),
            v["kind"].as_str().unwrap_or_default().to_string(),
        )
    }
}

/// `num(n)`: lines `line ` + a 14-digit zero-padded number + `\n`, for 1..=n (20 bytes each).
pub fn num(n: usize) -> String {
    (1..=n).map(|i| format!("line {i:014}\n")).collect()
}

/// The escaped size of `s` (docs/observations.md#terms): its length as a JSON string
/// literal without the quotes.
pub fn escaped_len(s: &str) -> usize {
    Value::from(s).to_string().len() - 2
}

/// The compact JSON length of `v`, in bytes.
pub fn json_len(v: &Value) -> usize {
    v.to_string().len()
}

/// Line `i` of the fixed, fake key body: 64 characters of the base64 alphabet. Never a real
/// key: the same text for every test run.
pub fn fake_body_line(i: usize) -> String {
    format!("RkFLRS1LRVktTk9ULUEtUkVBTC1LRVktZm9yLXNsdWljZS10ZXN0cy1vbmx5{i:04}")
}

/// A fake PEM private key: `-----BEGIN <kind>PRIVATE KEY-----`, `body_lines` lines of
/// [`fake_body_line`], the END line; each line ends with `\n`. `kind` is `""` (PKCS#8) or
/// a word followed by a space (`"EC "`, `"OPENSSH "`).
pub fn fake_pem(kind: &str, body_lines: usize) -> String {
    let mut s = format!("-----BEGIN {kind}PRIVATE KEY-----\n");
    for i in 0..body_lines {
        s.push_str(&fake_body_line(i));
        s.push('\n');
    }
    s.push_str(&format!("-----END {kind}PRIVATE KEY-----\n"));
    s
}

/// A temporary directory, on tmpfs (`/dev/shm`) when there is one: some cases build trees
/// of 20,000–30,000 files, and a slow disk would dominate the run time.
fn temp_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::Builder::new()
            .prefix("sluice-tests-")
            .tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().expect("a temporary directory")
}

/// How long a test may wait for something that should take milliseconds.
pub const PATIENCE: Duration = Duration::from_secs(30);

#[cfg(test)]
mod compile_progress_tests {
    #[test]
    fn only_the_compile_display_lines_are_removed() {
        let stderr = "sluice: no session \"cli\" yet: created it\ncompiling built-in run_script (6.2 MB); the first compile of a component is cached for the next start\ncompiled built-in run_script in 3.1 s\nsession cli: completed\ncompiled by hand\n";
        assert_eq!(
            super::without_compile_progress(stderr),
            "sluice: no session \"cli\" yet: created it\nsession cli: completed\ncompiled by hand\n"
        );
    }
}
