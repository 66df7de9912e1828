//! The tool author's kit: what `sluice new` and `sluice build` do.
//!
//! - [`new_project`] writes a tool project that builds and loads the first time, from a
//!   template embedded in the binary (`host/sluice-kit/templates/`), in one of the
//!   [`Language`]s: `rust`, `python`, `js` or `c`. The project holds the WIT laid out for
//!   every toolchain (`wit/world.wit`, and `wit/deps/` with `sluice-tools.wit` and WASI 0.2),
//!   the sources of one starter tool that pages a text file to the host's page budget
//!   (`sluice:tools/budget` `page-bytes`) with a cursor and clear `tool-error`s, a build
//!   script, its manifest `tool.toml` ([`Manifest`]), a starter policy `sluice.toml` over a
//!   `sample/` root, a `tests.toml` of exact observations, a `.gitignore` and a README.
//! - [`build`] runs the manifest's `[build] command` and checks that its `output` is a
//!   WebAssembly component.
//! - [`cases`] (`sluice test`) runs a `tests.toml`'s calls through the host at each cap
//!   and checks their observations: exact, a subset, a snapshot, or that the cap did not
//!   cut them.
//! - [`dev`] (`sluice dev`) watches a project's sources, to build and test it on every save.
//!
//! Toolchains are found on `PATH` only ([`Language::requirements`] lists them with how to
//! install each). There is no Go template: no package registry here has a Go toolchain that
//! makes a WASI 0.2 component (Debian's Go is 1.19, TinyGo is in none). Any language whose
//! toolchain makes one still works: start from a template and change `tool.toml`'s
//! `[build]`.
//!
//! ```no_run
//! use std::path::Path;
//! use sluice_kit::{Language, build, new_project};
//!
//! let created = new_project(Path::new("notes"), "notes", "python".parse()?)?;
//! assert_eq!(created.tool, "notes");
//! let built = build(&created.dir)?;
//! println!("{built}"); // built notes/build/notes.wasm: a component of … bytes, in … s
//! # Ok::<(), sluice_kit::KitError>(())
//! ```

mod builder;
pub mod cases;
pub mod dev;
mod error;
mod language;
mod manifest;
mod name;
mod project;
mod templates;

pub use builder::{BuildOptions, Built, build, build_with};
pub use error::KitError;
pub use language::{Language, Requirement, find_program};
pub use manifest::{BuildSection, MANIFEST_FILE, Manifest};
pub use name::{MAX_NAME_CHARS, NAME_RULE, ToolName};
pub use project::{Created, new_project};
pub use templates::{TemplateFile, render, template_files};
