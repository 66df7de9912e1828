//! Compiles guest crates of this workspace to `wasm32-wasip2` components from a build script,
//! with a nested `cargo build`.
//!
//! The target's standard library is added when it is missing ([`ensure_target`]): the build
//! script runs `rustup target add wasm32-wasip2` for the toolchain that builds it and says
//! so (`cargo:warning`), so `cargo build` on a fresh rustup install needs no other step.
//! Build scripts of several crates (and several checkouts) may run at once; they take a
//! file lock first and check again under it, so the target is added once.
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

/// The target guests are compiled for.
pub const TARGET: &str = "wasm32-wasip2";

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
/// workspace's `wit/`, `tools/`, `tests/components/`, lock file or the host crates the
/// guests also use (`host/sluice-keys`, `host/sluice-text`) change.
///
/// # Panics
/// When the target is missing and cannot be added ([`ensure_target`]), cargo cannot run,
/// or the build fails: the panic message carries cargo's output. (A build script has no
/// other way to fail.)
#[allow(clippy::print_stdout)] // Cargo reads build-script instructions from stdout.
pub fn build(workspace: &Path, packages: &[&str]) -> Vec<PathBuf> {
    for dir in [
        "wit",
        "tools",
        "tests/components",
        "host/sluice-keys",
        "host/sluice-text",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", workspace.join(dir).display());
    }
    let target_dir = workspace.join("target").join("guests");
    ensure_target(&target_dir);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace)
        .args([
            "build",
            "--locked",
            "--profile",
            PROFILE,
            "--target",
            TARGET,
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
             --- cargo stderr ---\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    packages
        .iter()
        .map(|package| {
            target_dir
                .join(TARGET)
                .join(PROFILE)
                .join(format!("{}.wasm", package.replace('-', "_")))
        })
        .collect()
}

/// Makes sure the toolchain that runs this build (the `RUSTC` cargo gives build scripts)
/// has the [`TARGET`] standard library, adding it with `rustup target add --toolchain
/// <that toolchain> wasm32-wasip2` when it is missing, and telling the operator so with a
/// `cargo:warning`. `lock_dir` holds the lock file (`.rustup-target.lock`) that serialises
/// build scripts running at once; under it the check is made again, so only the first adds
/// the target and the others find it. A toolchain that has the target costs one
/// `rustc --print sysroot`.
///
/// # Panics
/// When the target is missing and rustup is not there to add it (a toolchain not managed
/// by rustup), or `rustup target add` fails: the message says what to install.
#[allow(clippy::print_stdout)] // Cargo reads build-script instructions from stdout.
pub fn ensure_target(lock_dir: &Path) {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let sysroot = sysroot(&rustc);
    // Cargo repeats a build script's warnings on every build until the script runs again.
    // Watching the target's library makes the build after the one that added it run the
    // script once more (quietly), and a toolchain update rebuild the guests.
    println!("cargo:rerun-if-changed={}", target_lib(&sysroot).display());
    if has_target(&sysroot) {
        return;
    }
    if let Err(e) = std::fs::create_dir_all(lock_dir) {
        panic!("failed to create {}: {e}", lock_dir.display());
    }
    let lock_path = lock_dir.join(".rustup-target.lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .unwrap_or_else(|e| panic!("failed to open the lock file {}: {e}", lock_path.display()));
    if let Err(e) = lock.lock() {
        panic!("failed to lock {}: {e}", lock_path.display());
    }
    if has_target(&sysroot) {
        return; // Another build script added it while this one waited.
    }
    // A rustup toolchain lives in `$RUSTUP_HOME/toolchains/<name>`; its name is what
    // `--toolchain` takes, so the target goes to the toolchain that is building, whatever
    // the default is.
    let toolchain = sysroot
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let under_rustup = sysroot
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "toolchains");
    let rustup = std::env::var_os("RUSTUP").unwrap_or_else(|| "rustup".into());
    let output = if under_rustup {
        Command::new(&rustup)
            .args(["target", "add", "--toolchain", &toolchain, TARGET])
            .output()
    } else {
        Err(std::io::Error::other(
            "the toolchain is not managed by rustup",
        ))
    };
    match output {
        Ok(out) if out.status.success() && has_target(&sysroot) => {
            println!(
                "cargo:warning=the {TARGET} target was missing from the Rust toolchain {toolchain}; added it with `rustup target add --toolchain {toolchain} {TARGET}` (the built-in tools are compiled for it)"
            );
        }
        Ok(out) => panic!(
            "the {TARGET} target (which the built-in tools are compiled for) is missing from the Rust toolchain at {}, and `rustup target add --toolchain {toolchain} {TARGET}` failed ({}):\n{}",
            sysroot.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!(
            "the {TARGET} target (which the built-in tools are compiled for) is missing from the Rust toolchain at {}, and rustup cannot add it ({e}). Install rustup (https://rustup.rs) and run `rustup target add {TARGET}`, or install the {TARGET} standard library for this toolchain, or set SLUICE_GUEST_WASM_DIR to prebuilt components",
            sysroot.display()
        ),
    }
}

/// The sysroot of `rustc` (`rustc --print sysroot`).
fn sysroot(rustc: &std::ffi::OsStr) -> PathBuf {
    let out = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "failed to run {} --print sysroot: {e}",
                rustc.to_string_lossy()
            )
        });
    if !out.status.success() {
        panic!(
            "{} --print sysroot failed ({}): {}",
            rustc.to_string_lossy(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// Where the toolchain at `sysroot` keeps the [`TARGET`] standard library.
fn target_lib(sysroot: &Path) -> PathBuf {
    sysroot.join("lib").join("rustlib").join(TARGET).join("lib")
}

/// Whether the toolchain at `sysroot` has the [`TARGET`] standard library.
fn has_target(sysroot: &Path) -> bool {
    std::fs::read_dir(target_lib(sysroot)).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().starts_with("libstd-"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sysroot_has_the_target_when_its_std_is_there() {
        let dir = std::env::temp_dir().join(format!("sluice-wasm-build-{}", std::process::id()));
        let lib = dir.join("lib/rustlib").join(TARGET).join("lib");
        std::fs::create_dir_all(&lib).unwrap();
        assert!(!has_target(&dir));
        std::fs::write(lib.join("libstd-0123abcd.rlib"), b"").unwrap();
        assert!(has_target(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(!has_target(&dir));
    }
}
