//! Sluice's end-to-end tests: the real components in the real runtime.
//!
//! Every module builds its inputs in a temporary root, calls tools through
//! `sluice_runtime::Toolbox` exactly as a session does, and asserts the observation.

use std::path::Path;

use serde_json::json;
use sluice_tests::Sandbox;

/// The compiled-component cache shared by every test process.
fn cache() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
}

#[test]
fn smoke_read_file_through_the_component() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "one\r\ntwo\nthree");
    let r = sb.ok("read_file", &json!({"path": "f.txt"}));
    assert_eq!(
        r,
        json!({"path":"f.txt","size":14,"offset":0,"content":"one\r\ntwo\nthree","startLine":1,"endLine":3,"totalLines":3})
    );
}
