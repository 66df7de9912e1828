//! The built-in `tail_file` tool: the `tail-file` world of `sluice:tools` as a thin adapter over
//! [`sluice_file_tools::tail_file`].

#![allow(unsafe_code)] // The generated export glue is unsafe.

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({
        world: "tail-file",
        path: "../../wit",
        with: {
            "sluice:tools/types@0.1.5": sluice_guest::types,
            "sluice:tools/files@0.1.5": sluice_guest::files,
            "sluice:tools/budget@0.1.5": sluice_guest::budget,
            "sluice:tools/key-policy@0.1.5": sluice_guest::key_policy,
        },
    });
}

use sluice_guest::{files, types};

struct Tool;

impl bindings::Guest for Tool {
    fn tail_file(args: files::TailFileArgs) -> Result<files::TailFilePage, types::ToolError> {
        sluice_guest::run(
            sluice_guest::tail_args(args),
            sluice_file_tools::tail_file,
            sluice_guest::tail_page,
        )
    }
}

bindings::export!(Tool with_types_in bindings);
