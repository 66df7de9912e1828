//! The built-in `grep_files` tool: the `grep-files` world of `sluice:tools` as a thin adapter over
//! [`sluice_pager::grep_files`].

#![allow(unsafe_code)] // The generated export glue is unsafe.

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({
        world: "grep-files",
        path: "../../wit",
        with: {
            "sluice:tools/types@0.1.1": sluice_guest::types,
            "sluice:tools/files@0.1.1": sluice_guest::files,
            "sluice:tools/budget@0.1.1": sluice_guest::budget,
            "sluice:tools/key-policy@0.1.1": sluice_guest::key_policy,
        },
    });
}

use sluice_guest::{files, types};

struct Tool;

impl bindings::Guest for Tool {
    fn grep_files(args: files::GrepFilesArgs) -> Result<files::GrepFilesPage, types::ToolError> {
        sluice_guest::run(
            sluice_guest::grep_args(args),
            sluice_pager::grep_files,
            sluice_guest::grep_page,
        )
    }
}

bindings::export!(Tool with_types_in bindings);
