//! What one call may take from the host besides its linear memory and its time, and the
//! errors a call ends with when it asks for more.
//!
//! A guest is untrusted: without these bounds one call could hold every file descriptor of
//! the process (other sessions' tools then fail with "too many open files"), or make the
//! host allocate without bound (2^40 random bytes, ten million pollables). Each limit is per
//! call; a call that passes one is stopped (a trap, as for the memory limit) and its tool
//! error, of kind `resource-limit`, names the limit.

use wasmtime::component::Val;

/// The most files, directories and HTTP requests one call may hold open at once, besides
/// its preopened roots (each is a host file descriptor: an open `wasi:http` request holds
/// its connection's socket from `outgoing-handler.handle` until the host is done with it).
/// With `runtime.max_concurrent_calls` calls at once, tools hold at most that many times
/// this (plus their roots), and nothing once their calls have ended.
pub use sluice_protocol::limits::MAX_OPEN_DESCRIPTORS;

/// The most host resources (WASI resource-table entries: descriptors, streams, pollables,
/// directory listings, errors) one call may hold at once. Each costs the host memory, so
/// this bounds what a guest can make the host allocate for it.
pub const MAX_RESOURCES: usize = 10_000;

/// The most random bytes one `wasi:random` call may ask for, in bytes (1 MiB); the host
/// allocates what is asked before copying it into the guest.
pub const MAX_RANDOM_BYTES: u64 = 1 << 20;

/// The most the host copies out of a guest in one go, in bytes of the host's copy: the
/// arguments of one host call, or a call's result (16 MiB). Strings count their bytes;
/// every other value (each list element, record field, tuple item, and so on) counts
/// [`LIFT_BYTES_PER_VALUE`], what the host's copy of it takes, so a result of only numbers
/// or booleans may have at most [`MAX_LIFT_VALUES`] of them. Larger data is refused before
/// the host allocates it (wasmtime's hostcall fuel).
pub const MAX_LIFT_BYTES: usize = 16 << 20;

/// What each value that is not a string costs against [`MAX_LIFT_BYTES`], in bytes: the size
/// of the host's copy of one value (wasmtime 48's `Val`: 40 bytes on 64-bit hosts).
pub const LIFT_BYTES_PER_VALUE: usize = std::mem::size_of::<Val>();

/// The most values (list elements, fields, …) a result of no strings may have (500,000
/// booleans are too many):
/// [`MAX_LIFT_BYTES`] / [`LIFT_BYTES_PER_VALUE`] (419,430 on 64-bit hosts).
pub const MAX_LIFT_VALUES: usize = MAX_LIFT_BYTES / LIFT_BYTES_PER_VALUE;

/// A host limit a call passed. Raised from a host function, so the guest stops there; the
/// call's tool error shows this message with kind `resource-limit`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HostLimit {
    /// The call asked for one descriptor more than [`MAX_OPEN_DESCRIPTORS`] (files,
    /// directories and HTTP requests together).
    #[error(
        "the tool held {MAX_OPEN_DESCRIPTORS} open files, directories and HTTP requests at once and tried to open another; one call may hold at most {MAX_OPEN_DESCRIPTORS} (close what it no longer reads)"
    )]
    Descriptors,
    /// The call started one `wasi:http` request more than its policy's
    /// `http_max_connections` while that many were open.
    #[error(
        "the tool had {max} HTTP requests open at once and started another; one call may have at most {max} open at once (policy key http_max_connections, at most {MAX_OPEN_DESCRIPTORS}); a request is open until its response has been read to the end or dropped"
    )]
    Connections {
        /// The policy's `http_max_connections`.
        max: usize,
    },
    /// One `wasi:random` call asked for more than [`MAX_RANDOM_BYTES`].
    #[error(
        "the tool asked the host for {asked} random bytes in one call; one wasi:random call may ask for at most {MAX_RANDOM_BYTES} bytes (1 MiB)"
    )]
    RandomBytes {
        /// The length it asked for, in bytes.
        asked: u64,
    },
    /// A script made one tool call more than `code_mode.max_inner_calls`.
    #[error(
        "the script made {max} tool calls and started another; a script may make at most {max} (code_mode.max_inner_calls): do more per call (larger pages, a narrower grep), or raise the limit"
    )]
    InnerCalls {
        /// `code_mode.max_inner_calls`.
        max: u32,
    },
    /// A script's tool calls returned more than `code_mode.max_inner_bytes` in all.
    #[error(
        "the script's tool calls returned {bytes} bytes, past the {max} a script may read in all (code_mode.max_inner_bytes): read less (tail_file, grep_files, offsets), or raise the limit"
    )]
    InnerBytes {
        /// The bytes returned so far, the last call's included.
        bytes: u64,
        /// `code_mode.max_inner_bytes`.
        max: u64,
    },
}

/// Why the host stopped a call that was still running (raised by the epoch callback while
/// guest code runs; the same reasons end a call that waits inside the host).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Interrupt {
    /// The call's timeout passed.
    #[error("the call's timeout passed")]
    Timeout,
    /// The call was cancelled.
    #[error("the call was cancelled")]
    Cancelled,
}
