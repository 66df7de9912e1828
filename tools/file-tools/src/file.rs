//! Opening files for the file tools: kind checks, binary detection, positioned reads.

use crate::error::{ErrorKind, Result, ToolError};
use crate::root::Target;
use crate::sys::OpenFile;

/// How many leading bytes decide whether a file is binary (a NUL among them), in bytes.
pub const BINARY_SNIFF_BYTES: u64 = 8 * 1024;

/// An open regular file and its size.
pub(crate) struct TextFile {
    file: OpenFile,
    /// Size in bytes when opened.
    pub(crate) size: u64,
    /// The version of its bytes when opened, where the system tells and it was asked for.
    pub(crate) version: Option<crate::carry::FileVersion>,
    shown: String,
}

impl TextFile {
    /// Opens `target` for a tool that reads text: refuses directories (pointing at
    /// list_dir), other files that are not regular (FIFOs, devices, sockets) and binary
    /// files (naming the size). The kind is that of what was opened (a `stat` of the
    /// descriptor), so a file swapped for a FIFO after any earlier look is still refused,
    /// and the open itself never blocks. With `with_version`, its [`TextFile::version`] is
    /// read too (for key carries; one more crossing in a component).
    pub(crate) fn open(target: &Target, with_version: bool) -> Result<TextFile> {
        let shown = crate::error::quote(&target.shown);
        let file = OpenFile::open(&target.fs_path).map_err(|e| ToolError::io(&shown, &e))?;
        let meta = if with_version {
            file.stat_with_version()
        } else {
            file.stat()
        }
        .map_err(|e| ToolError::io(&shown, &e))?;
        if meta.is_dir() {
            return Err(ToolError::new(
                ErrorKind::WrongKind,
                format!("{shown} is a directory, not a file; use list_dir to see what it holds"),
            ));
        }
        if !meta.is_file() {
            // A FIFO would block the open forever and a device may never end.
            return Err(ToolError::new(
                ErrorKind::WrongKind,
                format!(
                    "{shown} is not a regular file (a device, FIFO or socket); only regular files can be read"
                ),
            ));
        }
        // The size the kind check read: no second stat.
        let mut text = TextFile {
            size: meta.size,
            version: meta.version,
            file,
            shown,
        };
        let head = text.read_at(0, BINARY_SNIFF_BYTES.min(text.size) as usize)?;
        if memchr::memchr(0, &head).is_some() {
            return Err(ToolError::new(
                ErrorKind::BinaryFile,
                format!(
                    "{} is a binary file ({} bytes; it has a NUL byte in its first 8 KiB); only text files can be read",
                    text.shown, text.size
                ),
            ));
        }
        Ok(text)
    }

    /// Reads up to `len` bytes at `offset` (fewer at the end of the file).
    pub(crate) fn read_at(&mut self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = Vec::with_capacity(len);
        self.read_into(offset, len, &mut buf)?;
        Ok(buf)
    }

    /// Replaces the contents of `buf` with up to `len` bytes at `offset` (fewer at the end
    /// of the file).
    pub(crate) fn read_into(&mut self, offset: u64, len: usize, buf: &mut Vec<u8>) -> Result<()> {
        buf.clear();
        self.file
            .read_into(offset, len as u64, buf)
            .map_err(|e| ToolError::io(&self.shown, &e))
    }
}
