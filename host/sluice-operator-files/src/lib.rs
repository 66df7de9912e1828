//! Reading a file the operator names (`sluice.toml`, a sibling policy file, a secret file,
//! the API key and token files, a component file, `sluice.lock`, a `verify.key`)
//! without letting it hang the start: the file is opened with `O_NONBLOCK` (so a FIFO
//! without a writer does not block the open), checked on the open handle to be a regular
//! file (a FIFO, a device, a socket or a directory is refused), and read up to a limit.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The most bytes read from a configuration file (`sluice.toml`, a sibling policy file,
/// `sluice.lock`): 1 MiB.
pub const MAX_CONFIG_FILE_BYTES: u64 = 1 << 20;

/// The most bytes read from a component file named by a path (`component = "x.wasm"`, a
/// tools directory): 1 GiB.
pub const MAX_COMPONENT_FILE_BYTES: u64 = 1 << 30;

/// Why `wasm` cannot be a component, judged by its first 8 bytes (`\0asm`, version `0x0d`,
/// layer 1, from the component model's binary format), or `None` when it may be one. The
/// one check of a component's preamble: the runtime before a compile, `sluice build` on its
/// output, `sluice tools push` before a push.
///
/// ```
/// assert_eq!(sluice_operator_files::not_a_component(b"\0asm\x0d\x00\x01\x00rest"), None);
/// assert_eq!(
///     sluice_operator_files::not_a_component(b"\0asm\x01\x00\x00\x00"),
///     Some("it is a core WebAssembly module, not a component: build it for wasm32-wasip2, or wrap it with `wasm-tools component new`")
/// );
/// assert_eq!(
///     sluice_operator_files::not_a_component(b"#!/bin/sh"),
///     Some("it is not a WebAssembly component (a component starts with `\\0asm` and the component layer)")
/// );
/// ```
pub fn not_a_component(wasm: &[u8]) -> Option<&'static str> {
    match wasm.get(..8) {
        Some([0, b'a', b's', b'm', 0x0d, 0, 1, 0]) => None,
        Some([0, b'a', b's', b'm', 1, 0, 0, 0]) => Some(
            "it is a core WebAssembly module, not a component: build it for wasm32-wasip2, or wrap it with `wasm-tools component new`",
        ),
        _ => Some(
            "it is not a WebAssembly component (a component starts with `\\0asm` and the component layer)",
        ),
    }
}

/// The most bytes read from a secret or key file (`{ file = "…" }` in `[secrets]`,
/// `model.api_key_file`, the server's token file, a registry's `verify.key`): 64 KiB.
pub const MAX_SECRET_FILE_BYTES: u64 = 64 << 10;

/// Why a file could not be read. The messages are lowercase and never hold the contents.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegularFileError {
    /// It is there but is no regular file.
    #[error("not a regular file (it is {0}); name a regular file")]
    NotRegular(&'static str),
    /// It holds more than the limit.
    #[error("it is larger than {0} bytes, the most read from such a file")]
    TooLarge(u64),
    /// It is not UTF-8 (where text is read): `line` (from 1) holds the first invalid byte,
    /// `column` (from 1) is that byte's position in the line, counted in bytes.
    #[error(
        "it is not UTF-8: line {line}, byte {column} of the line, is not valid UTF-8 (save the \
         file as UTF-8)"
    )]
    NotUtf8 {
        /// The line holding the first byte that is not UTF-8, from 1.
        line: usize,
        /// That byte's position in its line, in bytes, from 1.
        column: usize,
    },
    /// There is no file at the path (the operating system's words).
    #[error("{0}")]
    NotFound(String),
    /// The operating system refused to open or read it, in its words.
    #[error("{0}")]
    Io(String),
}

/// What a file that is not regular is, for the message.
fn kind_of(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

/// The contents of the regular file at `path` (symbolic links followed), at most
/// `max_bytes` bytes.
///
/// # Errors
/// [`RegularFileError::NotRegular`] for a directory, FIFO, socket or device (checked on the
/// open handle, so the check and the read see the same file); [`RegularFileError::TooLarge`]
/// when it holds more than `max_bytes` (its size is checked before anything is read, and
/// the read stops one byte past the bound if it grows); [`RegularFileError::NotFound`] when nothing is at
/// `path`; [`RegularFileError::Io`] when it cannot be opened or read.
pub fn read_regular(path: &Path, max_bytes: u64) -> Result<Vec<u8>, RegularFileError> {
    let io = |e: std::io::Error| RegularFileError::Io(e.to_string());
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => RegularFileError::NotFound(e.to_string()),
            _ => io(e),
        })?;
    let meta = file.metadata().map_err(io)?;
    if !meta.file_type().is_file() {
        return Err(RegularFileError::NotRegular(kind_of(meta.file_type())));
    }
    // Refused before a byte is read: a sparse file of gigabytes costs nothing to make.
    if meta.len() > max_bytes {
        return Err(RegularFileError::TooLarge(max_bytes));
    }
    // The bound holds for a file that grows while it is read, too.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(RegularFileError::TooLarge(max_bytes));
    }
    Ok(bytes)
}

/// Creates a named pipe (FIFO) at `path`, readable and writable by its owner only (mode
/// 0600). A FIFO without a writer is the file that hangs a plain `open` for ever, so this is
/// how tests show that a special file where a regular one belongs is refused at once.
///
/// # Errors
/// The operating system's, as from `mkfifo(3)`: for example `AlreadyExists` when something
/// is at `path`, or `NotFound` when its directory is missing.
pub fn make_fifo(path: &Path) -> std::io::Result<()> {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
    )
    .map_err(std::io::Error::from)
}

/// [`read_regular`], as UTF-8 text.
///
/// # Errors
/// Those of [`read_regular`], and [`RegularFileError::NotUtf8`] with the line and column of
/// the first byte that is not UTF-8 (never the bytes themselves: the file may be a secret).
pub fn read_text(path: &Path, max_bytes: u64) -> Result<String, RegularFileError> {
    String::from_utf8(read_regular(path, max_bytes)?).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        RegularFileError::NotUtf8 {
            line: valid.iter().filter(|&&b| b == b'\n').count() + 1,
            column: valid.len() - line_start + 1,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_is_not_utf8_is_placed_by_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sluice.toml");
        std::fs::write(&path, b"[agent]\nmax_turns = 3\nname = \"caf\xE9\"\n").unwrap();
        let err = read_text(&path, MAX_CONFIG_FILE_BYTES).unwrap_err();
        assert_eq!(
            err,
            RegularFileError::NotUtf8 {
                line: 3,
                column: 12
            }
        );
        assert_eq!(
            err.to_string(),
            "it is not UTF-8: line 3, byte 12 of the line, is not valid UTF-8 (save the file \
             as UTF-8)"
        );
        // The first byte of the file, with no line before it.
        std::fs::write(&path, b"\xFFrest").unwrap();
        assert_eq!(
            read_text(&path, 100),
            Err(RegularFileError::NotUtf8 { line: 1, column: 1 })
        );
    }

    #[test]
    fn reads_a_regular_file_up_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_regular(&path, 10), Ok(b"0123456789".to_vec()));
        assert_eq!(read_regular(&path, 9), Err(RegularFileError::TooLarge(9)));
    }

    #[test]
    fn a_fifo_a_directory_and_a_device_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        make_fifo(&fifo).unwrap();
        // Without O_NONBLOCK this open would wait for a writer for ever.
        assert_eq!(
            read_regular(&fifo, 10).unwrap_err().to_string(),
            "not a regular file (it is a FIFO); name a regular file"
        );
        assert_eq!(
            read_regular(dir.path(), 10),
            Err(RegularFileError::NotRegular("a directory"))
        );
        assert_eq!(
            read_regular(Path::new("/dev/null"), 10),
            Err(RegularFileError::NotRegular("a character device"))
        );
        assert_eq!(
            read_regular(&dir.path().join("absent"), 10),
            Err(RegularFileError::NotFound(
                "No such file or directory (os error 2)".into()
            ))
        );
    }

    /// Bytes this process has read through `read(2)` and its kin (`rchar` of
    /// `/proc/self/io`).
    fn bytes_read() -> u64 {
        let io = std::fs::read_to_string("/proc/self/io").unwrap();
        io.lines()
            .find_map(|l| l.strip_prefix("rchar: "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap()
    }

    /// A sparse 2 GiB file (one `truncate`, no disk) is refused by its size before a byte
    /// of it is read, and a link to `/dev/zero` by its type: neither costs memory or time.
    #[test]
    fn an_oversized_file_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let sparse = dir.path().join("big.wasm");
        std::fs::File::create(&sparse)
            .unwrap()
            .set_len(2 << 30)
            .unwrap();
        let before = bytes_read();
        assert_eq!(
            read_regular(&sparse, MAX_COMPONENT_FILE_BYTES),
            Err(RegularFileError::TooLarge(MAX_COMPONENT_FILE_BYTES))
        );
        // (Other tests of this binary may read a little meanwhile; nothing near 1 GiB.)
        let read = bytes_read() - before;
        assert!(read < 1 << 20, "{read} bytes were read");
        let zero = dir.path().join("zero.wasm");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert_eq!(
            read_regular(&zero, MAX_COMPONENT_FILE_BYTES),
            Err(RegularFileError::NotRegular("a character device"))
        );
    }
}
