//! The built-in tools of Sluice (the file tools `read_file`, `tail_file`, `grep_files`,
//! `list_dir`, and `run_script`, code mode) as WASI 0.2 components, compiled from `tools/*` by
//! this crate's build script and embedded here, so one `sluice` binary runs anywhere.
//!
//! ```
//! let names: Vec<&str> = sluice_builtins::BUILTINS.iter().map(|(name, _)| *name).collect();
//! assert_eq!(names, ["read_file", "tail_file", "grep_files", "list_dir", "run_script"]);
//! assert!(sluice_builtins::BUILTINS.iter().all(|(_, wasm)| wasm.starts_with(b"\0asm")));
//! ```

include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

pub mod wit;

/// The `sluice:tools` WIT package the built-in tools are built from (`wit/sluice-tools.wit`),
/// for their documentation.
pub const WIT: &str = include_str!("../../../wit/sluice-tools.wit");

/// The component bytes of the built-in tool `name`, if there is one.
pub fn component(name: &str) -> Option<&'static [u8]> {
    BUILTINS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, wasm)| *wasm)
}
