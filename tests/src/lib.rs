//! Helpers for Sluice's end-to-end tests: a temporary root directory with the built-in
//! tools loaded over it, and calls that return the exact observation a session would
//! store.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;
use sluice_runtime::{ComponentSpec, EngineOptions, Observation, Source, ToolEngine, ToolPolicy, Toolbox};

/// The built-in tools.
pub const BUILTIN_TOOLS: [&str; 4] = ["read_file", "tail_file", "grep_files", "list_dir"];

/// One engine per test process (its epoch ticker is a thread), with the compiled
/// components cached under `cache_dir` so later processes skip compilation.
pub fn engine(cache_dir: &Path) -> Arc<ToolEngine> {
    static ENGINE: OnceLock<Arc<ToolEngine>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            Arc::new(
                ToolEngine::new(EngineOptions {
                    cache_dir: Some(cache_dir.to_path_buf()),
                    ..EngineOptions::default()
                })
                .expect("the engine starts"),
            )
        })
        .clone()
}

/// A temporary root directory (named `root`) and the built-in tools over it.
pub struct Sandbox {
    /// The temporary directory; the root is `dir/root`.
    pub dir: tempfile::TempDir,
    /// The tools, read-only over the root.
    pub toolbox: Toolbox,
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
    pub fn with_policy(cache_dir: &Path, cap: u32, adjust: impl FnOnce(&mut ToolPolicy)) -> Sandbox {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let root = dir.path().join("root");
        std::fs::create_dir(&root).expect("the root directory");
        let mut policy = ToolPolicy::read_only([("root".to_string(), root)]);
        adjust(&mut policy);
        let specs: Vec<ComponentSpec> = BUILTIN_TOOLS
            .iter()
            .map(|name| ComponentSpec {
                source: Source::Builtin(name),
                policy: policy.clone(),
            })
            .collect();
        let toolbox = Toolbox::load(engine(cache_dir), &specs).expect("the built-in tools load");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        Sandbox {
            dir,
            toolbox,
            cap,
            runtime,
        }
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

    /// Calls `tool` with `args` (JSON) and returns the observation.
    pub fn call(&self, tool: &str, args: &Value) -> Observation {
        self.call_raw(tool, &args.to_string())
    }

    /// Calls `tool` with the raw argument text `args`.
    pub fn call_raw(&self, tool: &str, args: &str) -> Observation {
        self.runtime.block_on(self.toolbox.call(tool, args, self.cap))
    }

    /// Calls `tool`, checks the observation is within the cap and not cut, and returns it
    /// parsed.
    pub fn call_json(&self, tool: &str, args: &Value) -> Value {
        let obs = self.call(tool, args);
        assert!(obs.text.len() <= self.cap as usize, "observation of {} bytes over the cap {}", obs.text.len(), self.cap);
        assert!(!obs.truncated, "the cap cut the observation: {}", obs.text);
        serde_json::from_str(&obs.text).expect("an uncut observation is JSON")
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

/// How long a test may wait for something that should take milliseconds.
pub const PATIENCE: Duration = Duration::from_secs(30);
