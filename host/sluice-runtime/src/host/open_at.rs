//! The host's own `wasi:filesystem` `[method]descriptor.open-at`: wasmtime-wasi's rules, with
//! three changes.
//!
//! 1. **Every open is non-blocking** (`O_NONBLOCK`). wasmtime-wasi 48 opens with a blocking
//!    `open(2)`, and opening a FIFO for reading blocks until a writer appears: a guest (or
//!    anyone who can swap a file for a FIFO inside a root) could hang a call, and its thread,
//!    forever. A non-blocking open of a FIFO returns at once; reading it then fails or ends
//!    instead of waiting, and the built-in tools refuse it (they check the type of what they
//!    opened, by descriptor). For regular files and directories the flag changes nothing.
//! 2. **Descriptors are counted**: one call may hold at most
//!    [`MAX_OPEN_DESCRIPTORS`](crate::limits::MAX_OPEN_DESCRIPTORS) open at once, its open
//!    `wasi:http` requests included.
//! 3. **The files the configuration names as sources of secrets and keys are refused**
//!    ([`crate::host::refused`]): an open that reaches one, by any path, answers `access`.
//!
//! Everything else is wasmtime-wasi's `Dir::open_at` (wasmtime-wasi 48.0.8,
//! `src/filesystem.rs`), rule for rule: the open and descriptor flags and their checks, the
//! preopen's permissions (a read-only root refuses creating, truncating and writing), the
//! symlink policy (`symlink-follow`), directory handling (a directory opens as a directory
//! descriptor; `directory` on anything else is `not-directory`), and the sandbox: the path
//! is resolved beneath the directory by `cap-primitives` (`openat2` with `RESOLVE_BENEATH`
//! where the kernel has it), the crate wasmtime-wasi's own copy came from, so `..`, absolute
//! paths and symlinks cannot leave the preopen.

use std::path::Path;
use std::sync::Arc;

use cap_primitives::fs::{FollowSymlinks, OpenOptions};
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, Dir, File};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, OpenFlags, PathFlags,
};
use wasmtime_wasi::{FsPerms, OpenMode};

use crate::host::preopens::ALLOW_BLOCKING_CURRENT_THREAD;
use crate::host::state::{CallState, WASI_VERSION};
use crate::limits::{HostLimit, MAX_OPEN_DESCRIPTORS};

/// Replaces `[method]descriptor.open-at` of `wasi:filesystem/types` in `linker` (which
/// already holds wasmtime-wasi's) with [`open_at`].
///
/// # Errors
/// wasmtime's error when the function cannot be defined.
pub(crate) fn shadow(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(&format!("wasi:filesystem/types@{WASI_VERSION}"))?;
    types.func_wrap(
        "[method]descriptor.open-at",
        |mut store: StoreContextMut<'_, CallState>,
         (fd, path_flags, path, oflags, flags): (
            Resource<Descriptor>,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| {
            Ok((open_at(
                store.data_mut(),
                &fd,
                path_flags,
                &path,
                oflags,
                flags,
            )?,))
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// Opens `path` beneath the directory `fd` for the guest; see the module docs. The outer
/// error stops the call (a bad handle, a full resource table, too many descriptors); the
/// inner one is the guest's.
fn open_at(
    state: &mut CallState,
    fd: &Resource<Descriptor>,
    path_flags: PathFlags,
    path: &str,
    oflags: OpenFlags,
    flags: DescriptorFlags,
) -> wasmtime::Result<Result<Resource<Descriptor>, ErrorCode>> {
    let (dir, perms) = match state.table.get(fd)? {
        Descriptor::Dir(d) => (d.dir.clone(), d.perms),
        Descriptor::File(_) => return Ok(Err(ErrorCode::NotDirectory)),
    };
    let (opts, open_mode) = match options(path_flags, oflags, flags, perms) {
        Ok(o) => o,
        Err(code) => return Ok(Err(code)),
    };
    state.descriptors.retain(|d| d.strong_count() > 0);
    // Open HTTP requests hold descriptors too (crate::host::http_open).
    if state.descriptors.len() + state.http.open_requests().count() >= MAX_OPEN_DESCRIPTORS {
        return Err(HostLimit::Descriptors.into());
    }
    let opened = match cap_primitives::fs::open(&dir, Path::new(path), &opts) {
        Ok(f) => f,
        Err(e) => return Ok(Err(e.into())),
    };
    let is_dir = match opened.metadata() {
        Ok(m) if !m.is_dir() && state.refused.is_refused_file(&m) => {
            return Ok(Err(ErrorCode::Access));
        }
        Ok(m) => m.is_dir(),
        Err(e) => return Ok(Err(e.into())),
    };
    let descriptor = if is_dir {
        Descriptor::Dir(Dir::new(
            opened,
            perms,
            open_mode,
            ALLOW_BLOCKING_CURRENT_THREAD,
        ))
    } else if oflags.contains(OpenFlags::DIRECTORY) {
        return Ok(Err(ErrorCode::NotDirectory));
    } else {
        Descriptor::File(File::new(
            opened,
            perms,
            open_mode,
            ALLOW_BLOCKING_CURRENT_THREAD,
        ))
    };
    let handle = match &descriptor {
        Descriptor::Dir(d) => Arc::downgrade(&d.dir),
        Descriptor::File(f) => Arc::downgrade(&f.file),
    };
    let resource = state.table.push(descriptor)?;
    state.descriptors.push(handle);
    state.peak_descriptors = state.peak_descriptors.max(state.descriptors.len());
    Ok(Ok(resource))
}

/// The options of an open, and the mode to record, from the guest's flags; or the error
/// code wasmtime-wasi answers them with.
fn options(
    path_flags: PathFlags,
    oflags: OpenFlags,
    flags: DescriptorFlags,
    perms: FsPerms,
) -> Result<(OpenOptions, OpenMode), ErrorCode> {
    let mut create = false;
    let mut open_mode = OpenMode::empty();
    let mut opts = OpenOptions::new();
    if oflags.contains(OpenFlags::CREATE) {
        if oflags.contains(OpenFlags::EXCLUSIVE) {
            opts.create_new(true);
        } else {
            opts.create(true);
        }
        create = true;
        opts.write(true);
        open_mode |= OpenMode::WRITE;
    }
    if oflags.contains(OpenFlags::TRUNCATE) {
        opts.truncate(true).write(true);
        open_mode |= OpenMode::WRITE;
    }
    if flags.contains(DescriptorFlags::READ) {
        opts.read(true);
        open_mode |= OpenMode::READ;
    }
    if flags.contains(DescriptorFlags::WRITE) {
        opts.write(true);
        open_mode |= OpenMode::WRITE;
    } else {
        // Opened for reading even when not asked, as wasmtime-wasi does: the OS lets the
        // open through, and the permissions refuse what the descriptor may not do.
        opts.read(true);
        open_mode |= OpenMode::READ;
    }
    // `_cap_fs_ext_*` are cap-primitives' public hooks for the options `std` lacks (the
    // `cap-fs-ext` crate's traits are thin wrappers over them).
    opts._cap_fs_ext_follow(if path_flags.contains(PathFlags::SYMLINK_FOLLOW) {
        FollowSymlinks::Yes
    } else {
        FollowSymlinks::No
    });
    if flags.intersects(
        DescriptorFlags::FILE_INTEGRITY_SYNC
            | DescriptorFlags::DATA_INTEGRITY_SYNC
            | DescriptorFlags::REQUESTED_WRITE_SYNC,
    ) {
        return Err(ErrorCode::Unsupported);
    }
    if oflags.contains(OpenFlags::DIRECTORY)
        && oflags.intersects(OpenFlags::CREATE | OpenFlags::EXCLUSIVE | OpenFlags::TRUNCATE)
    {
        return Err(ErrorCode::Invalid);
    }
    if perms.write_not_permitted() && (create || open_mode.contains(OpenMode::WRITE)) {
        return Err(ErrorCode::NotPermitted);
    }
    // The one change: never wait for a FIFO's other end (or a device) to open.
    opts._cap_fs_ext_nonblock(true);
    Ok((opts, open_mode))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_follow_wasmtime_wasi() {
        let read = DescriptorFlags::READ;
        let (_, mode) = options(
            PathFlags::empty(),
            OpenFlags::empty(),
            read,
            FsPerms::ReadOnly,
        )
        .expect("a plain read");
        assert_eq!(mode, OpenMode::READ);
        for (oflags, flags) in [
            (OpenFlags::CREATE, read),
            (OpenFlags::TRUNCATE, read),
            (OpenFlags::empty(), DescriptorFlags::WRITE),
        ] {
            assert_eq!(
                options(PathFlags::empty(), oflags, flags, FsPerms::ReadOnly).err(),
                Some(ErrorCode::NotPermitted),
                "{oflags:?} {flags:?} on a read-only root"
            );
        }
        let (_, mode) = options(
            PathFlags::empty(),
            OpenFlags::CREATE,
            DescriptorFlags::WRITE,
            FsPerms::ReadWrite,
        )
        .expect("a create on a writable root");
        assert_eq!(mode, OpenMode::WRITE);
        assert_eq!(
            options(
                PathFlags::empty(),
                OpenFlags::DIRECTORY | OpenFlags::CREATE,
                read,
                FsPerms::ReadWrite
            )
            .err(),
            Some(ErrorCode::Invalid)
        );
        assert_eq!(
            options(
                PathFlags::empty(),
                OpenFlags::empty(),
                read | DescriptorFlags::FILE_INTEGRITY_SYNC,
                FsPerms::ReadWrite
            )
            .err(),
            Some(ErrorCode::Unsupported)
        );
    }
}
