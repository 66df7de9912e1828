//! The error a file tool returns to the model.

/// What kind of failure a [`ToolError`] is. Mirrors the cases of the WIT variant
/// `sluice:tools/types.tool-error`; [`ErrorKind::as_str`] is the case name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An argument has the wrong type, is out of range, or names something unknown.
    InvalidArgument,
    /// The path does not exist.
    NotFound,
    /// The path leaves the root.
    OutsideRoot,
    /// A directory where a file was expected, or the other way round.
    WrongKind,
    /// A NUL byte in the first 8 KiB.
    BinaryFile,
    /// A key-material name or PEM private-key armor.
    KeyMaterial,
    /// The cap leaves no room for a page of this path.
    PageTooSmall,
    /// The operating system refused or failed the read.
    Io,
}

impl ErrorKind {
    /// The kebab-case name of the kind, as in the WIT variant and the observation's `kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "invalid-argument",
            ErrorKind::NotFound => "not-found",
            ErrorKind::OutsideRoot => "outside-root",
            ErrorKind::WrongKind => "wrong-kind",
            ErrorKind::BinaryFile => "binary-file",
            ErrorKind::KeyMaterial => "key-material",
            ErrorKind::PageTooSmall => "page-too-small",
            ErrorKind::Io => "io",
        }
    }
}

/// A failed tool call: the message is what the model reads, so it says what was wrong and
/// what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// What kind of failure this is.
    pub kind: ErrorKind,
    /// The message for the model.
    pub message: String,
}

impl ToolError {
    /// A new error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ToolError {
            kind,
            message: message.into(),
        }
    }

    /// `<name> must be an integer of at least <min>; got <value>`
    /// (docs/observations.md#arguments).
    pub fn integer_below(name: &str, min: u64, got: impl std::fmt::Display) -> Self {
        ToolError::new(
            ErrorKind::InvalidArgument,
            format!("{name} must be an integer of at least {min}; got {got}"),
        )
    }

    /// An I/O failure on `path` (shown relative to the root), classified by its kind.
    pub fn io(path: &str, err: &std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        let path = &quote(path);
        match err.kind() {
            K::NotFound => ToolError::new(
                ErrorKind::NotFound,
                format!("no such file or directory: {path}"),
            ),
            // Inside the WASI sandbox an escape attempt surfaces as "not permitted"; the
            // file system's own "permission denied" is an I/O error of a path inside it.
            K::PermissionDenied if is_escape(err) => ToolError::outside_root(path),
            K::PermissionDenied => ToolError::new(
                ErrorKind::Io,
                format!("failed to read {path}: permission denied"),
            ),
            K::NotADirectory => ToolError::new(
                ErrorKind::WrongKind,
                format!("a component of the path is not a directory: {path}"),
            ),
            _ => ToolError::new(ErrorKind::Io, format!("failed to read {path}: {err}")),
        }
    }

    /// The path leaves the root.
    pub fn outside_root(path: &str) -> Self {
        let path = quote(path);
        ToolError::new(
            ErrorKind::OutsideRoot,
            format!(
                "path is outside the root: {path}; give a path relative to the root, without `..` above it or symlinks that leave it"
            ),
        )
    }
}

/// The error of a path that leaves the directory it was resolved beneath, refused by the
/// sandbox: what `wasi:filesystem`'s `not-permitted` (wasmtime-wasi's answer to a path that
/// escapes its preopen) and `sluice:tools/listing`'s `not-permitted` become, as the
/// payload of an [`std::io::Error`] of kind `PermissionDenied`. [`ToolError::io`] reports
/// it as `outside-root`; a plain "permission denied" of the file system (`access`,
/// `EACCES`) is about a path inside the root, and is `io`.
#[derive(Debug, thiserror::Error)]
#[error("not permitted: the path leaves the directory it was opened beneath")]
pub struct Escape;

impl Escape {
    /// This error as an [`std::io::Error`] of kind `PermissionDenied`.
    pub fn into_io(self) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::PermissionDenied, self)
    }
}

/// True when `err` is the sandbox refusing a path that leaves its root: an [`Escape`], or,
/// from `std::fs` inside a component, wasi-libc's `EPERM` (WASI errno 63), which
/// wasmtime-wasi gives only for such a path (the tools never write). Never natively: there
/// the tools resolve paths themselves, and `EPERM`/`EACCES` are the file system's.
fn is_escape(err: &std::io::Error) -> bool {
    /// `ERRNO_PERM` of WASI (`wasi_snapshot_preview1`, as wasi-libc numbers it).
    #[cfg(target_os = "wasi")]
    const WASI_EPERM: i32 = 63;
    #[cfg(target_os = "wasi")]
    if err.raw_os_error() == Some(WASI_EPERM) {
        return true;
    }
    err.get_ref().is_some_and(|e| e.is::<Escape>())
}

/// Most characters of caller input (a path, a name, a cursor) repeated in a message; longer
/// input is cut with `…`, so an error always fits the cap with its advice intact.
pub const MAX_QUOTED_CHARS: usize = 200;

/// `input` for a message: as is, or its first [`MAX_QUOTED_CHARS`] characters and `…`.
pub fn quote(input: &str) -> String {
    sluice_text::cut_chars(input, MAX_QUOTED_CHARS).into_owned()
}

/// The result of a file tool.
pub type Result<T, E = ToolError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_escape_is_outside_the_root_and_permission_denied_is_io() {
        let escape = ToolError::io("a/b", &Escape.into_io());
        assert_eq!(escape.kind, ErrorKind::OutsideRoot);
        assert_eq!(
            escape.message,
            "path is outside the root: a/b; give a path relative to the root, without `..` above it or symlinks that leave it"
        );
        let denied = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "access");
        let denied = ToolError::io("a/b", &denied);
        assert_eq!(denied.kind, ErrorKind::Io);
        assert_eq!(denied.message, "failed to read a/b: permission denied");
        #[cfg(target_os = "linux")]
        {
            // EACCES and EPERM natively: the file system's permissions, not the sandbox.
            for errno in [13, 1] {
                let e = ToolError::io("a/b", &std::io::Error::from_raw_os_error(errno));
                assert_eq!(e.kind, ErrorKind::Io, "errno {errno}");
            }
        }
    }
}
