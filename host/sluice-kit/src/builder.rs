//! `sluice build`: runs a project's build and checks what it made ([`build`]).

use std::ffi::OsString;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::{KitError, Manifest};

/// How [`build_with`] runs the build. The default ([`build`]) runs it in the caller's
/// environment with its output on stderr.
#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    /// Directories put before the caller's `PATH`, in order (where the toolchains are).
    pub path_prefix: Vec<PathBuf>,
    /// More environment variables for the command (they win over the caller's).
    pub env: Vec<(OsString, OsString)>,
    /// Capture the command's output (stdout and stderr, interleaved) into [`Built::log`] and
    /// the error's tail, instead of writing it to stderr as it comes. Default: false.
    pub capture: bool,
}

/// What [`build`] made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Built {
    /// The component: the project directory joined with tool.toml's `[build] output`.
    pub component: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// How long the command ran (wall clock).
    pub duration: Duration,
    /// The command run (tool.toml's `[build] command`).
    pub command: String,
    /// Its output, when captured ([`BuildOptions::capture`]); lossy UTF-8.
    pub log: Option<String>,
}

impl std::fmt::Display for Built {
    /// `built build/notes.wasm: a component of 65432 bytes, in 1.2 s`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "built {}: a component of {} bytes, in {:.1} s",
            self.component.display(),
            self.bytes,
            self.duration.as_secs_f64()
        )
    }
}

/// The lines of a captured log an error shows.
const LOG_TAIL_LINES: usize = 40;

/// Builds the project in `dir`: reads its `tool.toml` ([`Manifest`]), runs `[build] command`
/// with `sh -c` in `dir` (stdin empty; stdout and stderr both written to stderr, so a caller's
/// stdout stays its own), then checks that `[build] output` is a WebAssembly component.
/// The same as [`build_with`] with [`BuildOptions::default`].
///
/// # Errors
/// See [`build_with`].
pub fn build(dir: &Path) -> Result<Built, KitError> {
    build_with(dir, &BuildOptions::default())
}

/// [`build`], run as `options` say.
///
/// # Errors
/// [`Manifest::read`]'s errors; [`KitError::BuildDidNotStart`] when `sh` cannot be run;
/// [`KitError::BuildFailed`] when the command fails (its exit status, and the end of its
/// output when captured); [`KitError::NoOutput`] when it succeeds without making the output;
/// [`KitError::NotAComponent`] when the output is not a component (a core module, or not
/// WebAssembly).
pub fn build_with(dir: &Path, options: &BuildOptions) -> Result<Built, KitError> {
    let manifest = Manifest::read(dir)?;
    let command = manifest.build.command;
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&command)
        .current_dir(dir)
        .stdin(Stdio::null());
    if !options.path_prefix.is_empty() {
        let own = std::env::var_os("PATH").unwrap_or_default();
        let dirs = options
            .path_prefix
            .iter()
            .cloned()
            .chain(std::env::split_paths(&own));
        let path = std::env::join_paths(dirs).map_err(|e| KitError::BuildDidNotStart {
            command: command.clone(),
            dir: dir.to_path_buf(),
            reason: format!("the PATH it would run with is not valid: {e}"),
        })?;
        cmd.env("PATH", path);
    }
    cmd.envs(options.env.iter().map(|(k, v)| (k, v)));

    let start = Instant::now();
    let did_not_start = |e: std::io::Error| KitError::BuildDidNotStart {
        command: command.clone(),
        dir: dir.to_path_buf(),
        reason: e.to_string(),
    };
    let (status, log) = if options.capture {
        let (status, log) = run_captured(cmd).map_err(did_not_start)?;
        (status, Some(log))
    } else {
        (run_to_stderr(cmd).map_err(did_not_start)?, None)
    };
    let duration = start.elapsed();
    if !status.success() {
        return Err(KitError::BuildFailed {
            command,
            dir: dir.to_path_buf(),
            status: describe(status),
            log_tail: log.as_deref().map(tail),
        });
    }

    let component = dir.join(&manifest.build.output);
    let bytes = check_component(&component, &command)?;
    Ok(Built {
        component,
        bytes,
        duration,
        command,
        log,
    })
}

/// Runs `cmd` with its stdout and stderr on this process's stderr.
fn run_to_stderr(mut cmd: Command) -> std::io::Result<ExitStatus> {
    use std::os::fd::AsFd as _;
    let stderr = std::io::stderr().as_fd().try_clone_to_owned()?;
    cmd.stdout(Stdio::from(stderr)).stderr(Stdio::inherit());
    cmd.status()
}

/// Runs `cmd` with its stdout and stderr into one pipe; returns its status and output.
fn run_captured(mut cmd: Command) -> std::io::Result<(ExitStatus, String)> {
    let (mut reader, writer) = std::io::pipe()?;
    cmd.stdout(writer.try_clone()?).stderr(writer);
    let mut child = cmd.spawn()?;
    // The command holds the pipe's write ends: drop them, or the read below never ends.
    drop(cmd);
    let mut log = Vec::new();
    let read = reader.read_to_end(&mut log);
    let status = child.wait()?;
    read?;
    Ok((status, String::from_utf8_lossy(&log).into_owned()))
}

/// `exit status 1`, or `signal 9`.
fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => status.to_string(),
    }
}

/// The last [`LOG_TAIL_LINES`] lines of `log`.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.trim_end().lines().collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

/// Checks that `path` is a component; returns its size.
fn check_component(path: &Path, command: &str) -> Result<u64, KitError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => meta,
        Ok(_) => {
            return Err(KitError::NotAComponent {
                path: path.to_path_buf(),
                problem: "it is not a regular file; tool.toml's [build] output names the component file the command makes".to_string(),
            });
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(KitError::NoOutput {
                command: command.to_string(),
                path: path.to_path_buf(),
            });
        }
        Err(e) => return Err(KitError::io("read", path, &e)),
    };
    let mut header = Vec::with_capacity(8);
    std::fs::File::open(path)
        .and_then(|f| f.take(8).read_to_end(&mut header))
        .map_err(|e| KitError::io("read", path, &e))?;
    let Some(problem) = sluice_operator_files::not_a_component(&header) else {
        return Ok(meta.len());
    };
    Err(KitError::NotAComponent {
        path: path.to_path_buf(),
        problem: format!(
            "{problem}; tool.toml's [build] output names the component the command makes"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_lines() {
        let log: String = (1..=50).map(|i| format!("line {i}\n")).collect();
        let kept = tail(&log);
        assert_eq!(kept.lines().count(), 40);
        assert_eq!(kept.lines().next(), Some("line 11"));
        assert_eq!(kept.lines().last(), Some("line 50"));
    }
}
