//! Why a project could not be made or built: [`KitError`]. Every message says what was wrong,
//! what is allowed, and what changes it (the `NAME` or `--lang` of `sluice new`, a key of
//! `tool.toml`).

use std::path::PathBuf;

use crate::name::NAME_RULE;

/// Why [`crate::new_project`], [`crate::build`] or [`crate::Language`]'s `from_str` failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KitError {
    /// The tool name breaks [`NAME_RULE`].
    #[error("bad tool name `{name}`: {problem}; a tool name is {NAME_RULE}")]
    BadName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        problem: String,
    },
    /// No template for this language. The message lists the languages there are, and says
    /// why there is none for Go.
    #[error("{message}")]
    UnknownLanguage {
        /// The language given.
        given: String,
        /// The whole message.
        message: String,
    },
    /// The project directory exists and holds something: nothing was written.
    #[error(
        "{dir} is not empty; nothing was written (give a new or empty directory for the project)"
    )]
    DirNotEmpty {
        /// The directory.
        dir: PathBuf,
    },
    /// The project directory's path names something that is not a directory.
    #[error(
        "{path} exists and is not a directory; nothing was written (give a new or empty directory for the project)"
    )]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// The file system refused.
    #[error("failed to {action} {path}: {reason}")]
    Io {
        /// What was being done (`write`, `read`, `create`, …).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// Why, in the operating system's words.
        reason: String,
    },
    /// The project has no `tool.toml`.
    #[error(
        "{dir} has no tool.toml: `sluice build` builds a tool project made by `sluice new` (or any directory whose tool.toml has a [build] table with `command` and `output`)"
    )]
    NoManifest {
        /// The project directory.
        dir: PathBuf,
    },
    /// `tool.toml` is not valid: an unknown key, a missing one, a wrong type or value.
    #[error(
        "{path} is not a valid tool.toml: {reason}; it takes [build] command = \"…\" (run with `sh -c` in the project directory) and output = \"…\" (the component the command makes, relative to the project directory)"
    )]
    Manifest {
        /// The file.
        path: PathBuf,
        /// What is wrong, in the TOML parser's words (line, column, the key) or ours.
        reason: String,
    },
    /// `sh` could not be started.
    #[error(
        "failed to start the build `{command}` (tool.toml's [build] command) in {dir}: {reason}"
    )]
    BuildDidNotStart {
        /// The command.
        command: String,
        /// The project directory.
        dir: PathBuf,
        /// Why, in the operating system's words.
        reason: String,
    },
    /// The build command failed. Its output went to stderr, or, captured, ends the message.
    #[error(
        "the build failed: `{command}` (tool.toml's [build] command) in {dir} ended with {status}{}",
        log_tail.as_deref().map_or_else(|| "; its output is above".to_string(), |t| format!("; its output ends:\n{t}"))
    )]
    BuildFailed {
        /// The command.
        command: String,
        /// The project directory.
        dir: PathBuf,
        /// How it ended: `exit status 1`, or `signal 9`.
        status: String,
        /// The last lines of its output, when it was captured ([`crate::BuildOptions::capture`]).
        log_tail: Option<String>,
    },
    /// The build succeeded but its output is not there.
    #[error(
        "the build `{command}` succeeded but {path} is not there: tool.toml's [build] output names the component the command makes"
    )]
    NoOutput {
        /// The command.
        command: String,
        /// The output file expected.
        path: PathBuf,
    },
    /// The build's output is not a WebAssembly component.
    #[error("the build's output {path} cannot be loaded: {problem}")]
    NotAComponent {
        /// The output file.
        path: PathBuf,
        /// What it is instead, and what to do.
        problem: String,
    },
}

impl KitError {
    /// A [`KitError::Io`] from an operating-system error.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, e: &std::io::Error) -> Self {
        KitError::Io {
            action,
            path: path.into(),
            reason: e.to_string(),
        }
    }
}
