//! Components from registries and live reload, through the real binary: a real registry
//! (`docker-registry`, started by the tests on 127.0.0.1), components pushed in the
//! WebAssembly artifact layout, cosign key pairs made at test time, and `sluice serve` /
//! `sluice mcp` with their tools replaced while they run.

// The tests print the pull, verify and reload times they measure (for the report; the
// bounds they assert are behaviour, not speed).
#![allow(clippy::print_stderr)]

mod author; // sluice new, build, test, then push, sign, a verified call and an MCP client's calls, per language.
mod publish; // keygen, push and sign with Sluice alone, then a verified load.
// The official MCP Python SDK, where install.sh puts it.
use sluice_test_support::mcp_clients;
mod registry; // Pull by tag and digest, the lock, offline starts, tampered blobs, signatures, inspect.
mod reload; // Replacing components while `serve` runs: calls in flight, broken replacements, 100 swaps, list_changed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary under test.
pub(crate) const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// A test's own directory: its configuration, cache, tools and docker config (empty, so
/// no credentials of the machine are used).
pub(crate) struct Workspace {
    pub(crate) dir: tempfile::TempDir,
}

impl Workspace {
    pub(crate) fn new() -> Workspace {
        let dir = tempfile::tempdir().expect("a temporary directory");
        for sub in ["cache", "docker", "work", "tools"] {
            std::fs::create_dir(dir.path().join(sub)).expect("a directory");
        }
        Workspace { dir }
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Copies the built-ins' compiled code from the shared warm cache into this workspace's
    /// cache, so a `--strict` server answers without compiling them first (from an empty
    /// cache, beside the other tests on 2 cores, that took past two minutes); the
    /// components a test adds still compile into this cache alone.
    pub(crate) fn with_builtins_compiled(self) -> Workspace {
        let warm = crate::warm_cache();
        for entry in std::fs::read_dir(&warm).expect("the warm cache") {
            let from = entry.expect("a warm cache entry").path();
            let to = self
                .path("cache")
                .join(from.file_name().expect("a file name"));
            std::fs::copy(&from, &to).expect("copy a compiled built-in");
        }
        self
    }

    /// Writes `sluice.toml` and returns its path.
    pub(crate) fn config(&self, body: &str) -> PathBuf {
        let path = self.path("sluice.toml");
        std::fs::write(&path, body).expect("write sluice.toml");
        path
    }

    /// `sluice ARGS…` with this workspace's cache and docker config.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(SLUICE);
        c.args(args)
            .current_dir(self.dir.path())
            .env("SLUICE_CACHE_DIR", self.path("cache"))
            .env("DOCKER_CONFIG", self.path("docker"))
            .env_remove("SLUICE_REGISTRY_USERNAME")
            .env_remove("SLUICE_REGISTRY_PASSWORD")
            .env_remove("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES")
            .env("SLUICE_LOG", "warn");
        c
    }

    /// Runs `sluice ARGS…` and returns its output.
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("sluice runs")
    }

    /// Runs `sluice ARGS…`, which must succeed, and returns its stdout as JSON.
    pub(crate) fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "sluice {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON on stdout")
    }

    /// The compiled components in the cache (`*.cwasm`).
    pub(crate) fn compiled(&self) -> Vec<PathBuf> {
        compiled_in(&self.path("cache"))
    }
}

fn compiled_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
                .collect()
        })
        .unwrap_or_default()
}

/// The stderr of a failed run, which must have failed.
pub(crate) fn failure(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "expected a failure; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}
