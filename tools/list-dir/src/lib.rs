//! The built-in `list_dir` tool: the `list-dir` world of `sluice:tools` as a thin adapter over
//! [`sluice_file_tools::list_dir_from`], with the page's entries read by the host
//! (`sluice:tools/listing`, [`sluice_guest::HostListing`]), which sorts a directory once and
//! keeps it, instead of the `wasi:filesystem` directory stream, which costs the whole
//! directory on every page.

#![allow(unsafe_code)] // The generated export glue is unsafe.

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({
        world: "list-dir",
        path: "../../wit",
        with: {
            "sluice:tools/types@0.1.5": sluice_guest::types,
            "sluice:tools/files@0.1.5": sluice_guest::files,
            "sluice:tools/budget@0.1.5": sluice_guest::budget,
            "sluice:tools/key-policy@0.1.5": sluice_guest::key_policy,
            "sluice:tools/listing@0.1.5": sluice_guest::listing,
        },
    });
}

use sluice_guest::{HostListing, files, types};

struct Tool;

impl bindings::Guest for Tool {
    fn list_dir(args: files::ListDirArgs) -> Result<files::ListDirPage, types::ToolError> {
        sluice_guest::run(
            sluice_guest::list_args(args),
            |ctx, args| sluice_file_tools::list_dir_from(ctx, args, Some(&HostListing)),
            sluice_guest::list_page,
        )
    }
}

bindings::export!(Tool with_types_in bindings);
