//! A hostile component for Sluice's tests: each export misbehaves in one way (loops, grows
//! memory, returns a flood, panics, sleeps or blocks inside host calls, floods the host with
//! descriptors and pollables, asks for huge random buffers, hands the host pointers outside
//! its memory) or reaches for something a tool is not granted (files outside its roots, the
//! host's environment, the network, writes to a read-only root). File and socket errors are
//! returned as the WASI error code's name (`not-permitted`, `no-entry`), so tests see what
//! WASI said rather than the guest libc's text for its errno.

#![allow(unsafe_code)] // The generated export glue is unsafe.

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({
        world: "hostile",
        path: "wit",
    });
}

/// Pages of 64 KiB grown per `memory.grow` (1 MiB).
#[cfg(target_arch = "wasm32")]
const GROW_STEP_PAGES: usize = 16;

/// Pages in 4 GiB, the most a wasm32 memory can have.
#[cfg(target_arch = "wasm32")]
const MAX_PAGES: usize = 65_536;

/// The WASI error-code names of the errno values a guest's libc reports (wasi-libc uses
/// WASI preview 1 numbering), spelled as WASI 0.2's `error-code` cases where one exists.
const WASI_ERRNO_NAMES: [&str; 77] = [
    "success",
    "2big",
    "access",
    "addrinuse",
    "addrnotavail",
    "afnosupport",
    "would-block",
    "already",
    "bad-descriptor",
    "badmsg",
    "busy",
    "canceled",
    "child",
    "connaborted",
    "connrefused",
    "connreset",
    "deadlock",
    "destaddrreq",
    "dom",
    "quota",
    "exist",
    "fault",
    "file-too-large",
    "hostunreach",
    "idrm",
    "illegal-byte-sequence",
    "in-progress",
    "interrupted",
    "invalid",
    "io",
    "isconn",
    "is-directory",
    "loop",
    "mfile",
    "too-many-links",
    "message-size",
    "multihop",
    "name-too-long",
    "netdown",
    "netreset",
    "netunreach",
    "nfile",
    "nobufs",
    "no-device",
    "no-entry",
    "noexec",
    "no-lock",
    "nolink",
    "insufficient-memory",
    "nomsg",
    "noprotoopt",
    "insufficient-space",
    "nosys",
    "notconn",
    "not-directory",
    "not-empty",
    "not-recoverable",
    "notsock",
    "unsupported",
    "no-tty",
    "no-such-device",
    "overflow",
    "ownerdead",
    "not-permitted",
    "pipe",
    "proto",
    "protonosupport",
    "prototype",
    "range",
    "read-only",
    "invalid-seek",
    "srch",
    "stale",
    "timedout",
    "text-file-busy",
    "cross-device",
    "notcapable",
];

/// An I/O error as the model should read it: the WASI error code's name when the error
/// carries one, else the error's own text.
fn wasi_error(e: std::io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => usize::try_from(n)
            .ok()
            .and_then(|n| WASI_ERRNO_NAMES.get(n))
            .map_or_else(|| e.to_string(), |name| (*name).to_string()),
        None => e.to_string(),
    }
}

/// The size of the one allocation [`bad_realloc`](bindings::Guest::bad_realloc) answers
/// with a pointer outside linear memory: the random bytes it asks the host for.
#[cfg(target_arch = "wasm32")]
const BAD_REALLOC_BYTES: usize = 4099;

/// An allocator that, once armed, answers one allocation of [`BAD_REALLOC_BYTES`] with a
/// pointer 4 GiB − 64 KiB into the address space, far past the end of linear memory. The host
/// asks the guest's `cabi_realloc` (which uses this allocator) for room for a host call's
/// result, so the host is the only one that ever sees the pointer.
#[cfg(target_arch = "wasm32")]
mod evil_alloc {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicBool, Ordering};

    pub(crate) static ARMED: AtomicBool = AtomicBool::new(false);

    struct Evil;

    // SAFETY: every allocation but the armed one is the system allocator's; the armed one is
    // handed to the host only (see the module docs) and never dereferenced by the guest.
    unsafe impl GlobalAlloc for Evil {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            if layout.size() == super::BAD_REALLOC_BYTES && ARMED.swap(false, Ordering::SeqCst) {
                return 0xFFFF_0000usize as *mut u8;
            }
            // SAFETY: forwarded as is.
            unsafe { System.alloc(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: forwarded as is.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static EVIL: Evil = Evil;
}

struct Hostile;

impl bindings::Guest for Hostile {
    fn spin() {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }

    fn grow() -> u32 {
        #[cfg(target_arch = "wasm32")]
        {
            let mut grown = 0;
            while core::arch::wasm32::memory_size(0) + GROW_STEP_PAGES <= MAX_PAGES {
                if core::arch::wasm32::memory_grow(0, GROW_STEP_PAGES) == usize::MAX {
                    break;
                }
                grown += GROW_STEP_PAGES;
            }
            grown as u32
        }
        #[cfg(not(target_arch = "wasm32"))]
        0
    }

    fn big_string(bytes: u64) -> String {
        "x".repeat(bytes as usize)
    }

    fn bools(count: u32) -> Vec<bool> {
        (0..count).map(|i| i % 2 == 0).collect()
    }

    fn read_file(path: String) -> Result<String, String> {
        std::fs::read_to_string(path).map_err(wasi_error)
    }

    fn env_vars() -> Vec<String> {
        std::env::vars().map(|(k, v)| format!("{k}={v}")).collect()
    }

    fn connect(addr: String) -> Result<String, String> {
        let stream = std::net::TcpStream::connect(addr.as_str()).map_err(wasi_error)?;
        stream
            .peer_addr()
            .map(|a| a.to_string())
            .map_err(wasi_error)
    }

    fn write_file(path: String, contents: String) -> Result<(), String> {
        std::fs::write(path, contents).map_err(wasi_error)
    }

    fn list_dir(path: String) -> Result<Vec<String>, String> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(path).map_err(wasi_error)? {
            let entry = entry.map_err(wasi_error)?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    fn crash() {
        panic!("hostile crash: deliberate panic for the trap test");
    }

    fn sleep(ms: u64) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }

    fn block(ms: u64) {
        #[cfg(target_os = "wasi")]
        wasip2::clocks::monotonic_clock::subscribe_duration(ms.saturating_mul(1_000_000)).block();
        #[cfg(not(target_os = "wasi"))]
        let _ = ms;
    }

    fn poll_many(count: u32, ms: u64) -> u32 {
        #[cfg(target_os = "wasi")]
        {
            let ns = ms.saturating_mul(1_000_000);
            let pollables: Vec<_> = (0..count)
                .map(|_| wasip2::clocks::monotonic_clock::subscribe_duration(ns))
                .collect();
            let list: Vec<&wasip2::io::poll::Pollable> = pollables.iter().collect();
            wasip2::io::poll::poll(&list).len() as u32
        }
        #[cfg(not(target_os = "wasi"))]
        {
            let _ = (count, ms);
            0
        }
    }

    fn open_many(path: String, count: u32) -> Result<u32, String> {
        let mut open = Vec::new();
        for _ in 0..count {
            open.push(std::fs::File::open(&path).map_err(wasi_error)?);
        }
        let opened = open.len() as u32;
        // Held to the end: the host must bound what one call may hold.
        std::mem::forget(open);
        Ok(opened)
    }

    fn pollables(count: u32) -> u32 {
        #[cfg(target_os = "wasi")]
        for _ in 0..count {
            std::mem::forget(wasip2::clocks::monotonic_clock::subscribe_duration(1 << 60));
        }
        count
    }

    fn random_bytes(len: u64) -> u64 {
        #[cfg(target_os = "wasi")]
        {
            wasip2::random::random::get_random_bytes(len).len() as u64
        }
        #[cfg(not(target_os = "wasi"))]
        len
    }

    fn bad_realloc() -> u64 {
        #[cfg(target_arch = "wasm32")]
        {
            evil_alloc::ARMED.store(true, std::sync::atomic::Ordering::SeqCst);
            wasip2::random::random::get_random_bytes(BAD_REALLOC_BYTES as u64).len() as u64
        }
        #[cfg(not(target_arch = "wasm32"))]
        0
    }

    fn bad_return() -> String {
        #[cfg(target_arch = "wasm32")]
        {
            // SAFETY: not sound as Rust, on purpose: the export glue only reads the pointer and
            // length to hand them to the host, which must refuse them; the string is never
            // read, and the post-return that would free it does not run after a failed lift.
            unsafe { String::from_raw_parts(0xFFFF_0000usize as *mut u8, 16, 16) }
        }
        #[cfg(not(target_arch = "wasm32"))]
        String::new()
    }
}

bindings::export!(Hostile with_types_in bindings);
