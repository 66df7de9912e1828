//! A hostile component for Sluice's tests: each export misbehaves in one way (loops, grows
//! memory, returns a flood, panics) or reaches for something a tool is not granted (files
//! outside its roots, the host's environment, the network, writes to a read-only root).
//! Errors are returned as the guest's `std::io::Error` text, so tests see what WASI said.

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

    fn read_file(path: String) -> Result<String, String> {
        std::fs::read_to_string(path).map_err(|e| e.to_string())
    }

    fn env_vars() -> Vec<String> {
        std::env::vars().map(|(k, v)| format!("{k}={v}")).collect()
    }

    fn connect(addr: String) -> Result<String, String> {
        let stream = std::net::TcpStream::connect(addr.as_str()).map_err(|e| e.to_string())?;
        stream
            .peer_addr()
            .map(|a| a.to_string())
            .map_err(|e| e.to_string())
    }

    fn write_file(path: String, contents: String) -> Result<(), String> {
        std::fs::write(path, contents).map_err(|e| e.to_string())
    }

    fn list_dir(path: String) -> Result<Vec<String>, String> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(path).map_err(|e| e.to_string())? {
            let entry = entry.map_err(|e| e.to_string())?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    fn crash() {
        panic!("hostile crash: deliberate panic for the trap test");
    }
}

bindings::export!(Hostile with_types_in bindings);
