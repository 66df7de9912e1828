//! `sluice new`: a tool project from a template ([`new_project`]).

use std::path::{Path, PathBuf};

use crate::name::ToolName;
use crate::templates::{render, template_files};
use crate::{KitError, Language};

/// The project [`new_project`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Created {
    /// The project directory, as given.
    pub dir: PathBuf,
    /// The tool name as given (kebab-case: the WIT world and function).
    pub name: String,
    /// The name the model calls it by (snake_case), as in `sluice call TOOL`.
    pub tool: String,
    /// The template's language.
    pub language: Language,
    /// Every file written, relative to `dir`, sorted.
    pub files: Vec<PathBuf>,
}

impl Created {
    /// What to run next, one command a line, from the directory the project was made in:
    /// `cd` into it (unless it is `.`), build, call the tool on the sample, run the tests.
    pub fn next_steps(&self) -> String {
        let cd = if self.dir == Path::new(".") || self.dir.as_os_str().is_empty() {
            String::new()
        } else {
            format!("cd {}\n", self.dir.display())
        };
        format!(
            "{cd}sluice build\nsluice --config sluice.toml call {tool} '{{\"path\":\"/data/notes.txt\"}}'\nsluice test\n",
            tool = self.tool,
        )
    }
}

impl std::fmt::Display for Created {
    /// `created notes: the python tool notes (22 files)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "created {}: the {} tool {} ({} files)",
            self.dir.display(),
            self.language,
            self.tool,
            self.files.len()
        )
    }
}

/// Writes a new tool project called `name` in `language` into `dir`: the template's files with
/// the name filled in, and the WIT the host implements under `wit/deps/`
/// (`sluice-tools.wit`, WASI 0.2.12, `wasi:config`). `dir` must not exist or be empty; its
/// parent directories are made as needed.
///
/// Nothing is written half: the project is written into a hidden directory beside `dir`
/// (`.DIR.sluice-new-PID`), then renamed to `dir`; into an existing empty `dir`, it is
/// written into `dir/.sluice-new-PID` and its entries moved up. On any error what was
/// written is removed.
///
/// # Errors
/// [`KitError::BadName`] for a name that breaks [`crate::NAME_RULE`];
/// [`KitError::DirNotEmpty`] or [`KitError::NotADirectory`] when `dir` is taken;
/// [`KitError::Io`] when a directory or file cannot be made.
pub fn new_project(dir: &Path, name: &str, language: Language) -> Result<Created, KitError> {
    let name = ToolName::parse(name)?;
    let existing = check_free(dir)?;
    // An empty directory stays (its owner and mode, and a shell's working directory in
    // it): the project is staged inside it and moved in. A new one is staged beside it and
    // renamed into place.
    let staging = if existing {
        Staging::create(dir.join(format!(".sluice-new-{}", std::process::id())))?
    } else {
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent).map_err(|e| KitError::io("create", &parent, &e))?;
        let leaf = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| name.kebab().to_string());
        Staging::create(parent.join(format!(".{leaf}.sluice-new-{}", std::process::id())))?
    };

    let mut files = write_template(&staging.path, &name, language)?;
    files.extend(write_wit(&staging.path)?);
    files.sort();

    if existing {
        move_into(&staging.path, dir)?;
    } else {
        std::fs::rename(&staging.path, dir).map_err(|e| match e.kind() {
            std::io::ErrorKind::DirectoryNotEmpty | std::io::ErrorKind::AlreadyExists => {
                KitError::DirNotEmpty {
                    dir: dir.to_path_buf(),
                }
            }
            _ => KitError::io("create", dir, &e),
        })?;
        staging.done();
    }
    Ok(Created {
        dir: dir.to_path_buf(),
        name: name.kebab().to_string(),
        tool: name.snake(),
        language,
        files,
    })
}

/// Refuses a `dir` that holds something or is not a directory; true when it is an empty
/// directory, false when there is nothing there.
fn check_free(dir: &Path) -> Result<bool, KitError> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => {
            let mut entries = std::fs::read_dir(dir).map_err(|e| KitError::io("read", dir, &e))?;
            if entries.next().is_some() {
                return Err(KitError::DirNotEmpty {
                    dir: dir.to_path_buf(),
                });
            }
            Ok(true)
        }
        Ok(_) => Err(KitError::NotADirectory {
            path: dir.to_path_buf(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(KitError::io("read", dir, &e)),
    }
}

/// Moves every entry of `staging` into `dir`; on a failure, removes the ones moved.
fn move_into(staging: &Path, dir: &Path) -> Result<(), KitError> {
    let entries: Vec<_> = std::fs::read_dir(staging)
        .and_then(|d| d.map(|e| e.map(|e| e.file_name())).collect())
        .map_err(|e| KitError::io("read", staging, &e))?;
    let mut moved = Vec::new();
    for name in entries {
        let to = dir.join(&name);
        if let Err(e) = std::fs::rename(staging.join(&name), &to) {
            for path in moved {
                let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
            }
            return Err(KitError::io("create", &to, &e));
        }
        moved.push(to);
    }
    Ok(())
}

/// Writes the template's files into `root`; returns their relative paths.
fn write_template(
    root: &Path,
    name: &ToolName,
    language: Language,
) -> Result<Vec<PathBuf>, KitError> {
    let (memory_mib, memory_note) = language.memory();
    let memory_mib = memory_mib.to_string();
    let (snake, camel) = (name.snake(), name.camel());
    let vars = [
        ("name_snake", snake.as_str()),
        ("name_camel", camel.as_str()),
        ("name", name.kebab()),
        ("memory_mib", memory_mib.as_str()),
        ("memory_note", memory_note),
    ];
    let mut written = Vec::new();
    for (rel, text) in template_files(language) {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| KitError::io("create", parent, &e))?;
        }
        std::fs::write(&path, render(text, &vars)).map_err(|e| KitError::io("write", &path, &e))?;
        if rel.ends_with(".sh") {
            make_executable(&path)?;
        }
        written.push(PathBuf::from(rel));
    }
    Ok(written)
}

/// Writes the WIT the host implements into `root/wit/deps/`, the layout every toolchain
/// reads beside `wit/world.wit`; returns the relative paths.
fn write_wit(root: &Path) -> Result<Vec<PathBuf>, KitError> {
    let wit = root.join("wit");
    let written = sluice_builtins::wit::write_wit(&wit).map_err(|e| KitError::Io {
        action: "write",
        path: wit.clone(),
        reason: e.to_string(),
    })?;
    // `write_wit` puts the `sluice:tools` package beside `deps/`; a project's own world is
    // there, so the package joins the other dependencies.
    let tools = sluice_builtins::wit::SLUICE_TOOLS_FILE;
    let (from, to) = (wit.join(tools), wit.join("deps").join(tools));
    std::fs::rename(&from, &to).map_err(|e| KitError::io("write", &to, &e))?;
    Ok(written
        .iter()
        .map(|p| if *p == from { to.clone() } else { p.clone() })
        .filter_map(|p| p.strip_prefix(root).ok().map(Path::to_path_buf))
        .collect())
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<(), KitError> {
    use std::os::unix::fs::PermissionsExt as _;
    let meta = std::fs::metadata(path).map_err(|e| KitError::io("read", path, &e))?;
    let mut permissions = meta.permissions();
    // Execute wherever read is allowed (the umask stays honoured).
    permissions.set_mode(permissions.mode() | ((permissions.mode() & 0o444) >> 2));
    std::fs::set_permissions(path, permissions).map_err(|e| KitError::io("write", path, &e))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<(), KitError> {
    Ok(())
}

/// The hidden directory a project is written into, removed on drop unless [`Staging::done`].
struct Staging {
    path: PathBuf,
    keep: bool,
}

impl Staging {
    /// Makes `path` (which must not exist: a leftover of a crashed run is an error naming it).
    fn create(path: PathBuf) -> Result<Staging, KitError> {
        std::fs::create_dir(&path).map_err(|e| KitError::io("create", &path, &e))?;
        Ok(Staging { path, keep: false })
    }

    /// The directory was renamed into place: nothing to remove.
    fn done(mut self) {
        self.keep = true;
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}
