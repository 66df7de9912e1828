//! `list_dir`: one page of a directory listing (docs/paging.md#list_dir).

use serde::{Deserialize, Serialize};

use crate::Context;
use crate::budget::json_len;
use crate::error::{ErrorKind, Result, ToolError};
use crate::sys::Kind;
use crate::text::escaped_prefix;

/// Arguments of `list_dir`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListDirArgs {
    /// Directory, relative to the root; default the root.
    pub path: Option<String>,
    /// Name of the root; default the first.
    pub root: Option<String>,
    /// Index of the first entry (default 0), as returned in `nextOffset`.
    pub offset: Option<u64>,
}

/// What a directory entry is (the WIT enum `entry-kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link, not followed.
    Symlink,
    /// Anything else.
    Other,
}

/// One entry (the WIT record `dir-entry`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DirEntry {
    /// The entry's name (cut when `name_truncated`).
    pub name: String,
    /// What it is.
    pub kind: EntryKind,
    /// Size in bytes, for files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// `Some(true)` when the name was too long for a page and is cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_truncated: Option<bool>,
}

/// One page of a listing (the WIT record `list-dir-page`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListDirPage {
    /// The directory, relative to the root (`.` for the root).
    pub path: String,
    /// Entries in the directory.
    pub total: u64,
    /// Index of this page's first entry.
    pub offset: u64,
    /// Entries sorted by name (byte order).
    pub entries: Vec<DirEntry>,
    /// Index of the next page's first entry; `None` on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// Entries left out of the listing (not in `total`): names that cannot be shown (not
    /// UTF-8, inside a component) or that spell a PEM private-key armor line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withheld: Option<u64>,
}

/// Lists one page of `args.path`. Names only: key-material names are listed, never refused.
///
/// # Errors
/// Paths outside the root, a file instead of a directory, an `offset` past the number of
/// entries, a page budget below 320 bytes, and I/O failures.
pub fn list_dir(ctx: &Context, args: &ListDirArgs) -> Result<ListDirPage> {
    let root = ctx.roots.pick(args.root.as_deref())?;
    let target = root.resolve(args.path.as_deref().unwrap_or(""))?;
    let page = ctx.limits.page_for(&target.shown)?;
    let shown = &crate::error::quote(&target.shown);
    let meta = crate::sys::stat(&target.fs_path, true).map_err(|e| ToolError::io(shown, &e))?;
    if !meta.is_dir() {
        let advice = if meta.is_file() {
            "; use read_file to read it"
        } else {
            " (a device, FIFO or socket)"
        };
        return Err(ToolError::new(
            ErrorKind::WrongKind,
            format!("{shown} is not a directory{advice}"),
        ));
    }

    // Names and kinds come from the directory itself; sizes are looked up for the page only.
    let listing = crate::sys::list(&target.fs_path).map_err(|e| ToolError::io(shown, &e))?;
    let mut withheld = listing.unreadable;
    let names: Vec<(std::ffi::OsString, EntryKind)> = listing
        .entries
        .into_iter()
        .filter(|(name, _)| {
            // A name that spells an armor line would get the whole page refused.
            let armor = crate::keys::has_armor(name.as_encoded_bytes());
            withheld += u64::from(armor);
            !armor
        })
        .map(|(name, kind)| {
            let kind = match kind {
                Kind::File => EntryKind::File,
                Kind::Dir => EntryKind::Directory,
                Kind::Symlink => EntryKind::Symlink,
                Kind::Other => EntryKind::Other,
            };
            (name, kind)
        })
        .collect();

    let total = names.len() as u64;
    let offset = args.offset.unwrap_or(0);
    if offset > total {
        return Err(ToolError::new(
            ErrorKind::InvalidArgument,
            format!("offset {offset} is past the end of the directory ({total} entries)"),
        ));
    }
    let mut entries = Vec::new();
    let mut used = 2u64; // `[` and `]`
    let mut next = total;
    for (i, (name, kind)) in names.iter().enumerate().skip(offset as usize) {
        let size = match kind {
            EntryKind::File => crate::sys::stat(&target.fs_path.join(name), false)
                .ok()
                .map(|m| m.size),
            _ => None,
        };
        let mut entry = DirEntry {
            name: name.to_string_lossy().into_owned(),
            kind: *kind,
            size,
            name_truncated: None,
        };
        let cost = json_len(&entry) + u64::from(!entries.is_empty());
        if used + cost > page {
            if entries.is_empty() {
                // A name too long for a page on its own: cut it, and move past it.
                let full = std::mem::take(&mut entry.name);
                entry.name_truncated = Some(true);
                let room = page - used - json_len(&entry);
                entry.name = escaped_prefix(&full, room).to_string();
                entries.push(entry);
                next = i as u64 + 1;
            } else {
                next = i as u64;
            }
            break;
        }
        used += cost;
        entries.push(entry);
    }
    Ok(ListDirPage {
        path: target.shown,
        total,
        offset,
        entries,
        next_offset: (next < total).then_some(next),
        withheld: (withheld > 0).then_some(withheld),
    })
}
