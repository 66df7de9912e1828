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
            // file tools never write, so that is the only way to get it.
            K::PermissionDenied => ToolError::outside_root(path),
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

/// Most characters of caller input (a path, a name, a cursor) repeated in a message; longer
/// input is cut with `…`, so an error always fits the cap with its advice intact.
pub const MAX_QUOTED_CHARS: usize = 200;

/// `input` for a message: as is, or its first [`MAX_QUOTED_CHARS`] characters and `…`.
pub fn quote(input: &str) -> String {
    sluice_text::cut_chars(input, MAX_QUOTED_CHARS).into_owned()
}

/// The result of a file tool.
pub type Result<T, E = ToolError> = std::result::Result<T, E>;
