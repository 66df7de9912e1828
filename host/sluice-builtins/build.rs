//! Compiles the built-in tool components
//! (`tools/{read-file,tail-file,grep-files,list-dir,run-script}`) for `wasm32-wasip2` and
//! writes `builtins.rs`, which embeds them. Set `SLUICE_GUEST_WASM_DIR` to a directory holding
//! `read_file.wasm` … `run_script.wasm` to use prebuilt components instead.

use std::path::PathBuf;

/// (tool name, guest package) of every built-in tool.
const TOOLS: &[(&str, &str)] = &[
    ("read_file", "sluice-tool-read-file"),
    ("tail_file", "sluice-tool-tail-file"),
    ("grep_files", "sluice-tool-grep-files"),
    ("list_dir", "sluice-tool-list-dir"),
    ("run_script", "sluice-tool-run-script"),
];

// A build script fails by panicking (cargo shows the message); the variables are ones cargo
// always sets for it.
#[allow(clippy::expect_used)]
fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-env-changed=SLUICE_GUEST_WASM_DIR");
    let built = match std::env::var_os("SLUICE_GUEST_WASM_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            TOOLS
                .iter()
                .map(|(tool, _)| dir.join(format!("{tool}.wasm")))
                .collect()
        }
        None => {
            let packages: Vec<&str> = TOOLS.iter().map(|(_, p)| *p).collect();
            sluice_wasm_build::build(&manifest_dir.join("../.."), &packages)
        }
    };

    let mut entries = String::new();
    for ((tool, _), path) in TOOLS.iter().zip(&built) {
        let dest = out_dir.join(format!("{tool}.wasm"));
        if let Err(e) = std::fs::copy(path, &dest) {
            panic!(
                "failed to copy the {tool} component from {}: {e}",
                path.display()
            );
        }
        entries.push_str(&format!(
            "    ({tool:?}, include_bytes!({:?})),\n",
            dest.display().to_string()
        ));
    }
    let generated = format!(
        "/// (tool name, component bytes) of every built-in tool, in the order they are offered.\n\
         pub static BUILTINS: &[(&str, &[u8])] = &[\n{entries}];\n"
    );
    std::fs::write(out_dir.join("builtins.rs"), generated).expect("OUT_DIR is writable");
}
