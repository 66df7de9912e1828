//! What a `read_file` page leaves for the next page of the same file: the key rules' state
//! where it ended (docs/keys.md#sequential-pages).
//!
//! A page judges the 128 KiB before it ([`LOOK_BACK_BYTES`](crate::keys::LOOK_BACK_BYTES)).
//! When it finds there, and up to [`MARKER_BYTES`](crate::keys::MARKER_BYTES) past its end,
//! no armor marker and no NUL byte ([`holds_no_marker`](crate::keys::holds_no_marker)), it
//! leaves a [`KeyCarry`] for its `nextOffset` in the context's [`KeyCarries`], keyed by the
//! [`FileVersion`] it read. The page that starts there, in the same version, reads the first
//! 4 KiB of its look-back instead of all of it ([`scan_after_clean_look_back`]), and leaves
//! the next carry from the bytes it read. The model's cursor is never trusted for it: a
//! carry exists only where a page of the same version ended.
//!
//! [`scan_after_clean_look_back`]: crate::keys::scan_after_clean_look_back

/// One version of a file's bytes: what says two reads saw the same bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileVersion {
    /// The file's identity: its device and inode (in a component, `wasi:filesystem`'s
    /// `metadata-hash` of the open descriptor).
    pub identity: (u64, u64),
    /// Size in bytes.
    pub size: u64,
    /// Last data modification, in nanoseconds since the Unix epoch.
    pub modified_ns: u64,
    /// Last status change (a write, a rename, `touch`), in nanoseconds since the Unix epoch.
    pub changed_ns: u64,
}

/// What a page knew where it ended, for the page that starts there (in the same
/// [`FileVersion`]). Its existence says that the look-back of that page, and the 10 bytes
/// after its start, hold no armor marker and no NUL byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyCarry {
    /// The `nextLine` the page gave with that `nextOffset`, if it gave one: a `startLine`
    /// passed with the offset is checked against it (another falls back to the look-back).
    pub line: Option<u64>,
}

/// Where carries are kept between calls: in a component, the host
/// (`sluice:tools/key-carries`); natively, whatever the caller gives the [`Context`](crate::Context).
pub trait KeyCarries: Send + Sync + std::fmt::Debug {
    /// The carry a page of `file` left for `offset`, if one is kept.
    fn recall(&self, file: &FileVersion, offset: u64) -> Option<KeyCarry>;

    /// Keeps `carry` for the page of `file` that starts at `offset` (or not: a store may drop
    /// any carry, or keep none for a file changed moments ago).
    fn remember(&self, file: &FileVersion, offset: u64, carry: KeyCarry);
}
