//! A component that reports its version, read from a fixed-size marker in its data so a
//! test can make other versions of it by rewriting the marker's bytes (see the WIT).

#![allow(unsafe_code)] // The generated export glue is unsafe.

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({
        world: "versioned",
        path: "wit",
    });
}

/// `sluice-test-version=` and the version, padded with spaces to 24 bytes.
static MARKER: [u8; 44] = *b"sluice-test-version=v1                      ";

/// The version the marker holds.
fn version() -> String {
    // Read through `black_box` so the compiler cannot fold the answer into code.
    let marker: &[u8] = std::hint::black_box(&MARKER[..]);
    String::from_utf8_lossy(&marker[20..])
        .trim_end()
        .to_string()
}

struct Versioned;

impl bindings::Guest for Versioned {
    fn version() -> String {
        version()
    }

    fn wait_for(path: String) -> Result<String, String> {
        let waiting = format!("{path}.waiting");
        std::fs::write(&waiting, version()).map_err(|e| format!("{waiting}: {e}"))?;
        loop {
            match std::fs::metadata(&path) {
                Ok(_) => return Ok(version()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(e) => return Err(format!("{path}: {e}")),
            }
        }
    }
}

bindings::export!(Versioned with_types_in bindings);
