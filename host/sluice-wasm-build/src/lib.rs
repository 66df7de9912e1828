//! Compiles guest crates of this workspace to `wasm32-wasip2` components from a build script,
//! with a nested `cargo build`.
//!
//! The nested build uses its own target directory (`target/guests`) so it never waits on the
//! outer build's lock, and clears the outer build's flag variables so that coverage,
//! sanitizer or clippy settings do not leak into the guests. Components come out of rustc
//! already componentised (`wasm-component-ld`). Guests are compiled with WebAssembly SIMD
//! ([`RUSTFLAGS`]), which wasmtime enables by default: `memchr` and the regex engine then
//! scan 16 bytes at a time.
//!
//! ```no_run
//! // build.rs
//! let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
//! let built = sluice_wasm_build::build(&workspace, &["sluice-tool-read-file"]);
//! println!("cargo:rustc-env=READ_FILE_WASM={}", built[0].display());
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

/// The cargo profile guests are built with (`[profile.guest]` in the workspace manifest).
pub const PROFILE: &str = "guest";

/// The flags every guest is compiled with, given to the nested cargo as
/// `--config target.wasm32-wasip2.rustflags=…`.
pub const RUSTFLAGS: &str = r#"target.wasm32-wasip2.rustflags=["-C", "target-feature=+simd128"]"#;

/// Environment variables of the outer build that must not reach the nested one.
const CLEARED_ENV: &[&str] = &[
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_BUILD_TARGET",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET_DIR",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_LLVM_COV",
    "LLVM_PROFILE_FILE",
];

/// Builds `packages` (guest crates of the workspace at `workspace`) for `wasm32-wasip2` and
/// returns each component's path, in order. Tells cargo to rerun the build script when the
/// workspace's `wit/`, `tools/`, `tests/components/` or lock file change.
///
/// # Panics
/// When cargo cannot run or the build fails: the panic message carries cargo's output and
/// the hint to install the target. (A build script has no other way to fail.)
#[allow(clippy::print_stdout)] // Cargo reads build-script instructions from stdout.
pub fn build(workspace: &Path, packages: &[&str]) -> Vec<PathBuf> {
    for dir in ["wit", "tools", "tests/components", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", workspace.join(dir).display());
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target_dir = workspace.join("target").join("guests");
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace)
        .args([
            "build",
            "--locked",
            "--profile",
            PROFILE,
            "--target",
            "wasm32-wasip2",
            "--config",
            RUSTFLAGS,
        ])
        .arg("--target-dir")
        .arg(&target_dir);
    for package in packages {
        cmd.args(["-p", package]);
    }
    for var in CLEARED_ENV {
        cmd.env_remove(var);
    }
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("failed to run cargo to build the guest components: {e}"));
    if !output.status.success() {
        panic!(
            "building the guest components for wasm32-wasip2 failed ({}).\n\
             Is the target installed? Run `rustup target add wasm32-wasip2`.\n\
             --- cargo stderr ---\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    packages
        .iter()
        .map(|package| {
            target_dir
                .join("wasm32-wasip2")
                .join(PROFILE)
                .join(format!("{}.wasm", package.replace('-', "_")))
        })
        .collect()
}
