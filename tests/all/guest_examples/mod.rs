//! End-to-end tests of the example tools in `guest-examples/`: components written in Python,
//! JavaScript, C and Rust against the shared `wit/`, built by `guest-examples/build.sh` into
//! `target/guest-examples/`, and of the tool author's guide (`guest-examples/README.md`),
//! whose snippets and commands `head` checks through the `sluice` binary.
//!
//! Each test loads its component the way an operator would: from a tools directory, with the
//! sibling policy taken from the example's `sluice.toml`, through
//! `sluice_config::Config::resolve`. It checks the schema Sluice derives (an insta snapshot),
//! calls the tool on the example's `sample/` files and on files it writes, and checks the
//! exact results and errors, and that every observation fits the cap without being cut: the
//! tools size their results to the page budget.
//!
//! A component that is not built skips its test with a line on stderr, except under
//! `CI=true`, where that is a failure (`.ci/run` builds them before the tests).

mod c_wc; // guest-examples/c-wc: `wc`, in C (zig + wit-bindgen + the preview1 adapter).
mod head; // guest-examples/{py,js,c,rust}-head: `head` in four languages, and the guide (README.md).
mod js_json_query; // guest-examples/js-json-query: `query_json`, in JavaScript (componentize-js).
mod python_csv_summary; // guest-examples/python-csv-summary: `summarize_table`, in Python (componentize-py).
mod rust_async_words; // guest-examples/rust-async-words: an `async func` export, refused by name.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{Value, json};
use sluice_config::{Config, Overrides, ToolConfig};
use sluice_runtime::{ComponentSpec, Observation, Toolbox};

/// The name of the root every example is granted (its policies say `read = ["data"]`).
const ROOT: &str = "data";

/// The compiled-component cache shared by every test process: the Python and JavaScript
/// components take seconds to compile, then milliseconds to load.
fn cache() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
}

/// The repository.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// `target/guest-examples/<stem>.wasm` when it is built. When it is not: under `CI=true` a
/// failure; otherwise a line on stderr (written past the test harness's capture, so a
/// plain `cargo test` shows it) and `None`, and the test returns.
fn built(example: &str, stem: &str) -> Option<PathBuf> {
    let path = repo()
        .join("target/guest-examples")
        .join(format!("{stem}.wasm"));
    let mut stderr = std::io::stderr();
    if !path.is_file() {
        let rel = format!("target/guest-examples/{stem}.wasm");
        sluice_test_support::skip_or_fail(&format!(
            "{rel} not built (run guest-examples/install-toolchains.sh && guest-examples/build.sh; .ci/run builds it before the tests)"
        ));
        return None;
    }
    let built_at = modified(&path);
    let sources = [
        repo().join("guest-examples").join(example),
        repo().join("wit"),
    ];
    if let Some(newer) = sources.iter().find_map(|dir| newer_source(dir, built_at)) {
        let _ = writeln!(
            stderr,
            "warning: {} is newer than {stem}.wasm: run guest-examples/build.sh to test the change",
            newer.display()
        );
    }
    Some(path)
}

fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// A build input under `dir` (not the policy, the README, `sample/` or `node_modules/`)
/// changed after `than`.
fn newer_source(dir: &Path, than: SystemTime) -> Option<PathBuf> {
    const NOT_INPUTS: [&str; 5] = [
        "node_modules",
        "sample",
        "sluice.toml",
        "README.md",
        ".gitignore",
    ];
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if NOT_INPUTS.iter().any(|n| entry.file_name() == *n) {
            continue;
        }
        if path.is_dir() {
            if let Some(p) = newer_source(&path, than) {
                return Some(p);
            }
        } else if modified(&path) > than {
            return Some(path);
        }
    }
    None
}

/// An example tool loaded from a tools directory over a temporary root `data` that starts as
/// a copy of the example's `sample/`.
struct Example {
    dir: tempfile::TempDir,
    toolbox: Toolbox,
    runtime: tokio::runtime::Runtime,
}

impl Example {
    /// Loads `guest-examples/<example>` (component `<stem>.wasm`) under the policy of its
    /// `sluice.toml`, which `adjust` may change; `None` when it is not built.
    fn load(example: &str, stem: &str, adjust: impl FnOnce(&mut toml::Table)) -> Option<Self> {
        let wasm = built(example, stem)?;
        let source = repo().join("guest-examples").join(example);
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data = dir.path().join(ROOT);
        copy_dir(&source.join("sample"), &data);

        // The example's own configuration names the component it builds and the root.
        let text = std::fs::read_to_string(source.join("sluice.toml")).expect("sluice.toml");
        let mut config: toml::Table = toml::from_str(&text).expect("sluice.toml parses");
        assert_eq!(
            config["roots"][ROOT].as_str(),
            Some("sample"),
            "{example}/sluice.toml grants sample/ as root {ROOT}"
        );
        let mut policy = config["tools"][stem]
            .as_table()
            .cloned()
            .unwrap_or_else(|| panic!("{example}/sluice.toml has [tools.{stem}]"));
        assert_eq!(
            policy
                .remove("component")
                .and_then(|c| c.as_str().map(String::from)),
            Some(format!("../../target/guest-examples/{stem}.wasm")),
            "{example}/sluice.toml names the component build.sh writes"
        );
        adjust(&mut policy);
        config.clear();

        // The operator's layout: tools/<stem>.wasm + tools/<stem>.toml, and a sluice.toml.
        let tools = dir.path().join("tools");
        std::fs::create_dir(&tools).expect("the tools directory");
        std::fs::copy(&wasm, tools.join(format!("{stem}.wasm"))).expect("copy the component");
        std::fs::write(
            tools.join(format!("{stem}.toml")),
            toml::to_string(&policy).expect("the policy serialises"),
        )
        .expect("write the policy");
        let config_path = dir.path().join("sluice.toml");
        std::fs::write(
            &config_path,
            format!("builtins = []\ntools_dir = \"tools\"\n\n[roots]\n{ROOT} = \"{ROOT}\"\n"),
        )
        .expect("write sluice.toml");
        let config = Config::resolve(Some(&config_path), &|_| None, &Overrides::default())
            .expect("the configuration resolves");
        assert_eq!(
            config.tools.len(),
            1,
            "one component in the tools directory"
        );
        let specs: Vec<ComponentSpec> = config.tools.iter().map(spec).collect();
        let toolbox = Toolbox::load(sluice_tests::engine(cache()), &specs)
            .unwrap_or_else(|e| panic!("{stem}.wasm loads: {e}"));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        Some(Example {
            dir,
            toolbox,
            runtime,
        })
    }

    /// Writes `contents` to `rel` under the root.
    fn write(&self, rel: &str, contents: impl AsRef<[u8]>) {
        let path = self.dir.path().join(ROOT).join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("parent directories");
        std::fs::write(path, contents).expect("write a test file");
    }

    /// Makes the directory `rel` under the root.
    fn mkdir(&self, rel: &str) {
        std::fs::create_dir_all(self.dir.path().join(ROOT).join(rel)).expect("a directory");
    }

    /// What the model is told about the tools: name, description, input schema.
    fn schema(&self) -> Value {
        self.toolbox
            .tools()
            .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema, "destructive": t.destructive}))
            .collect()
    }

    /// Calls `tool` under cap `cap` and checks the observation fits the cap without being
    /// cut (every example sizes its result to the page budget).
    fn call(&self, tool: &str, args: &Value, cap: u32) -> Observation {
        let obs = self
            .runtime
            .block_on(self.toolbox.call(tool, &args.to_string(), cap));
        assert!(
            obs.text().len() <= cap as usize,
            "{tool} {args}: observation of {} bytes over the cap {cap}",
            obs.text().len()
        );
        assert!(
            !obs.truncated(),
            "{tool} {args}: the cap cut {}",
            obs.text()
        );
        obs
    }

    /// Calls `tool`; the call must succeed: returns `result`.
    fn ok(&self, tool: &str, args: &Value, cap: u32) -> Value {
        let v: Value = serde_json::from_str(self.call(tool, args, cap).text()).expect("JSON");
        assert_eq!(v["ok"], json!(true), "{tool} {args}: expected success: {v}");
        v["result"].clone()
    }

    /// Calls `tool`; the call must fail: returns the whole observation.
    fn err(&self, tool: &str, args: &Value, cap: u32) -> Value {
        let v: Value = serde_json::from_str(self.call(tool, args, cap).text()).expect("JSON");
        assert_eq!(
            v["ok"],
            json!(false),
            "{tool} {args}: expected an error: {v}"
        );
        v
    }

    /// Follows a cursor: calls `tool` with `args`, then again with `arg` set to the
    /// result's `next` while there is one; returns the pages. Fails after `max_pages`.
    fn pages(
        &self,
        tool: &str,
        args: &Value,
        cap: u32,
        next: &str,
        arg: &str,
        max_pages: usize,
    ) -> Vec<Value> {
        let mut args = args.clone();
        let mut pages = Vec::new();
        loop {
            assert!(
                pages.len() < max_pages,
                "{tool}: more than {max_pages} pages"
            );
            let page = self.ok(tool, &args, cap);
            let cursor = page.get(next).cloned();
            pages.push(page);
            let Some(cursor) = cursor else { return pages };
            assert_ne!(
                args.get(arg),
                Some(&cursor),
                "{tool}: the cursor did not move"
            );
            args[arg] = cursor;
        }
    }
}

/// The runtime's view of one configured component, built as `sluice` builds it.
fn spec(t: &ToolConfig) -> ComponentSpec {
    sluice_wiring::component_spec(t).expect("the component's policy wires up")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a directory");
    for entry in std::fs::read_dir(from)
        .expect("sample/ is readable")
        .flatten()
    {
        let dest = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).expect("copy a sample file");
        }
    }
}
