//! What the table was measured on, printed above it so rows can be compared across machines:
//! cores, CPU model, kernel, the build profile, Sluice's version and commit, and `rg`'s
//! version (the baseline of the grep row).

use std::process::Command;

/// The lines printed above the table, as `- key: value` Markdown list items.
pub(crate) fn describe() -> Vec<String> {
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown (no /proc/cpuinfo)".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").map_or_else(
        |_| std::env::consts::OS.to_string(),
        |r| format!("Linux {}", r.trim()),
    );
    let profile = if cfg!(debug_assertions) {
        "debug build (its numbers are not comparable: build with --release)"
    } else {
        "release build"
    };
    let commit = first_line("git", &["rev-parse", "--short", "HEAD"])
        .map_or_else(String::new, |c| format!(" (commit {c})"));
    let rg = first_line("rg", &["--version"]).unwrap_or_else(|| "not installed".into());
    vec![
        format!("- machine: {cores} cores, {cpu}, {kernel}"),
        format!(
            "- Sluice {}{commit}, {profile}, wasmtime {}",
            env!("CARGO_PKG_VERSION"),
            locked_version("wasmtime").unwrap_or("unknown")
        ),
        format!("- baseline: {rg}"),
    ]
}

/// The version of package `name` in the workspace's `Cargo.lock` (what this binary was
/// built with, since the build is `--locked`).
fn locked_version(name: &str) -> Option<&'static str> {
    const LOCK: &str = include_str!("../../Cargo.lock");
    let entry = format!("name = \"{name}\"\n");
    let at = LOCK.find(&entry)? + entry.len();
    LOCK[at..]
        .lines()
        .next()?
        .strip_prefix("version = \"")?
        .strip_suffix('"')
}

/// The first line `program args` prints on stdout, if it runs and succeeds.
fn first_line(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    text.lines().next().map(str::to_string)
}
