//! `c-bindgen`: what the C example needs besides a C compiler and `wasm-tools`.
//!
//! ```text
//! c-bindgen bindings WIT_DIR WORLD OUT_DIR   # = wit-bindgen c WIT_DIR --world WORLD --out-dir OUT_DIR
//! c-bindgen adapter OUT_FILE                 # the WASI preview1 reactor adapter of wasmtime 48.0.8
//! ```
//!
//! `bindings` runs the same generator as `wit-bindgen c` of wit-bindgen-cli 0.63.0 with its
//! default options, and writes the same files: `<world>.h`, `<world>.c` and
//! `<world>_component_type.o` (the world's types, which the linker keeps in the core module
//! for `wasm-tools component new`).

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use wit_bindgen_core::Files;
use wit_bindgen_core::wit_parser::Resolve;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["bindings", wit, world, out_dir] => bindings(Path::new(wit), world, Path::new(out_dir)),
        ["adapter", out_file] => {
            let adapter =
                wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER;
            std::fs::write(out_file, adapter).with_context(|| format!("failed to write {out_file}"))
        }
        _ => bail!("usage: c-bindgen bindings WIT_DIR WORLD OUT_DIR | c-bindgen adapter OUT_FILE"),
    }
}

fn bindings(wit: &Path, world: &str, out_dir: &Path) -> Result<()> {
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_path(wit)
        .with_context(|| format!("failed to read the WIT in {}", wit.display()))?;
    let world = resolve.select_world(&[package], Some(world))?;
    let mut files = Files::default();
    wit_bindgen_c::Opts::default()
        .build()
        .generate(&mut resolve, world, &mut files)?;
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("failed to create {}", out_dir.display()))?;
    for (name, contents) in files.iter() {
        let path = out_dir.join(name);
        std::fs::write(&path, contents)
            .with_context(|| format!("failed to write {}", path.display()))?;
    }
    Ok(())
}
