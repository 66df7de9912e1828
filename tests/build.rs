//! Compiles the test guest components (`tests/components/*`) for `wasm32-wasip2` with
//! `sluice-wasm-build`, copies them into `OUT_DIR`, and writes `components.rs`: one constant
//! per component holding its path, which `src/lib.rs` includes. Tests never name `target/`.

use std::path::PathBuf;

/// (constant name, guest package, what it is) of every test component.
const COMPONENTS: &[(&str, &str, &str)] = &[
    (
        "OUTSIDER_WASM",
        "outsider-textstats",
        "`tests/components/outsider`: a third-party-style component (`acme:textstats`) with its own WIT and no Sluice import.",
    ),
    (
        "HOSTILE_WASM",
        "sluice-test-hostile",
        "`tests/components/hostile`: exports that loop, grow memory, flood, crash, or reach outside their grants.",
    ),
    (
        "NEEDS_MISSING_WASM",
        "sluice-test-needs-missing",
        "`tests/components/needs-missing`: imports `acme:missing/clock`, which the host lacks.",
    ),
    (
        "VERSIONED_WASM",
        "sluice-test-versioned",
        "`tests/components/versioned`: reports its version (rewrite its marker for other versions).",
    ),
    (
        "FS_LIKE_WASM",
        "sluice-test-fs-like",
        "`tests/components/fs-like`: the shape of wassette's filesystem-rs (`read-file(path)`, `list-directory(path)`).",
    ),
    (
        "HTTP_FETCH_WASM",
        "sluice-test-http-fetch",
        "`tests/components/http-fetch`: `fetch(url, method)` through `wasi:http`, `flood(url, count, wait-ms)`, which keeps requests open, `exchange(url, method, headers, max-redirects)`, which sends headers of its own and follows redirects, and `look-around(keys)`, which reads its `wasi:config` store and environment (both in hex).",
    ),
    (
        "JSON_SUMMARY_WASM",
        "json-summary",
        "`guest-examples/rust-json-summary`: the example tool `summarize(url)` through `wasi:http`.",
    ),
    (
        "CONFIG_READER_WASM",
        "sluice-test-config-reader",
        "`tests/components/config-reader`: reads values and secrets from `wasi:config/store` (`get`, `echo-all`, `fail-with`), and sends one in a request (`send-with`).",
    ),
];

// A build script fails by panicking (cargo shows the message); the variables are ones cargo
// always sets for it.
#[allow(clippy::expect_used)]
fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let packages: Vec<&str> = COMPONENTS.iter().map(|(_, p, _)| *p).collect();
    let built = sluice_wasm_build::build(&manifest_dir.join(".."), &packages);
    // The example tool built here lives outside the directories `build` watches.
    println!(
        "cargo:rerun-if-changed={}",
        manifest_dir
            .join("../guest-examples/rust-json-summary")
            .display()
    );
    let mut generated = String::new();
    for ((constant, package, doc), path) in COMPONENTS.iter().zip(&built) {
        // A copy, so a later nested build cannot change the file under a compiled test.
        let dest = out_dir.join(format!("{}.wasm", package.replace('-', "_")));
        if let Err(e) = std::fs::copy(path, &dest) {
            panic!(
                "failed to copy the {package} component from {}: {e}",
                path.display()
            );
        }
        generated.push_str(&format!(
            "/// Path of the compiled component {doc}\npub const {constant}: &str = {:?};\n",
            dest.display().to_string()
        ));
    }
    std::fs::write(out_dir.join("components.rs"), generated).expect("OUT_DIR is writable");
}
