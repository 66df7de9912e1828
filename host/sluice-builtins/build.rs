//! Compiles the built-in tool components (`tools/{read-file,tail-file,grep-files,list-dir}`)
//! for `wasm32-wasip2` with a nested `cargo build`, and hands their paths to `lib.rs`.
//!
//! The nested build uses its own target directory (`target/guests`) so it never waits on
//! the outer build's lock, and clears the outer build's flag variables so that coverage,
//! sanitizer or clippy settings do not leak into the guests. Set `SLUICE_GUEST_WASM_DIR` to
//! a directory holding `read_file.wasm` … `list_dir.wasm` to use prebuilt components.

use std::path::{Path, PathBuf};
use std::process::Command;

/// (tool name, guest package) of every built-in tool.
const TOOLS: &[(&str, &str)] = &[
    ("read_file", "sluice-tool-read-file"),
    ("tail_file", "sluice-tool-tail-file"),
    ("grep_files", "sluice-tool-grep-files"),
    ("list_dir", "sluice-tool-list-dir"),
];

fn main() {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let workspace = manifest_dir.join("../..");
    let out_dir = PathBuf::from(env("OUT_DIR"));
    println!("cargo:rerun-if-env-changed=SLUICE_GUEST_WASM_DIR");
    for dir in ["wit", "tools", "Cargo.lock", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", workspace.join(dir).display());
    }

    let built = match std::env::var_os("SLUICE_GUEST_WASM_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            TOOLS
                .iter()
                .map(|(tool, _)| dir.join(format!("{tool}.wasm")))
                .collect::<Vec<_>>()
        }
        None => build_guests(&workspace),
    };

    let mut consts = String::new();
    for ((tool, _), path) in TOOLS.iter().zip(&built) {
        let dest = out_dir.join(format!("{tool}.wasm"));
        if let Err(e) = std::fs::copy(path, &dest) {
            panic!(
                "failed to copy the {tool} component from {}: {e}",
                path.display()
            );
        }
        consts.push_str(&format!(
            "    ({tool:?}, include_bytes!({:?})),\n",
            dest.display().to_string()
        ));
    }
    let generated = format!(
        "/// (tool name, component bytes) of every built-in tool.\npub static BUILTINS: &[(&str, &[u8])] = &[\n{consts}];\n"
    );
    std::fs::write(out_dir.join("builtins.rs"), generated).expect("OUT_DIR is writable");
}

/// Runs the nested cargo build and returns each component's path, in `TOOLS` order.
fn build_guests(workspace: &Path) -> Vec<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target_dir = workspace.join("target").join("guests");
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace)
        .args([
            "build",
            "--locked",
            "--profile",
            "guest",
            "--target",
            "wasm32-wasip2",
        ])
        .arg("--target-dir")
        .arg(&target_dir);
    for (_, package) in TOOLS {
        cmd.args(["-p", package]);
    }
    for var in [
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
    ] {
        cmd.env_remove(var);
    }
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("failed to run cargo for the guest tools: {e}"));
    if !output.status.success() {
        panic!(
            "building the guest tools for wasm32-wasip2 failed ({}).\n\
             Is the target installed? Run `rustup target add wasm32-wasip2`.\n\
             --- cargo stderr ---\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    TOOLS
        .iter()
        .map(|(_, package)| {
            target_dir
                .join("wasm32-wasip2")
                .join("guest")
                .join(format!("{}.wasm", package.replace('-', "_")))
        })
        .collect()
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name} for build scripts"))
}
