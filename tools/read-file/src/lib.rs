//! The built-in `read_file` tool: the `read-file` world of `sluice:tools` as a thin adapter over
//! [`sluice_file_tools::read_file`], with the key rules' state at each page's end kept by the
//! host (`sluice:tools/key-carries`, [`sluice_guest::HostKeyCarries`]) for the next page.

#![allow(unsafe_code)] // The generated export glue is unsafe.

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({
        world: "read-file",
        path: "../../wit",
        with: {
            "sluice:tools/types@0.1.5": sluice_guest::types,
            "sluice:tools/files@0.1.5": sluice_guest::files,
            "sluice:tools/budget@0.1.5": sluice_guest::budget,
            "sluice:tools/key-policy@0.1.5": sluice_guest::key_policy,
            "sluice:tools/key-carries@0.1.5": sluice_guest::key_carries,
        },
    });
}

use sluice_guest::{files, types};

struct Tool;

impl bindings::Guest for Tool {
    fn read_file(args: files::ReadFileArgs) -> Result<files::ReadFilePage, types::ToolError> {
        sluice_guest::run(
            sluice_guest::read_args(args),
            |ctx, args| {
                // The next page of the same file starts from what this one knew.
                let ctx = ctx
                    .clone()
                    .with_key_carries(std::sync::Arc::new(sluice_guest::HostKeyCarries));
                sluice_file_tools::read_file(&ctx, args)
            },
            sluice_guest::read_page,
        )
    }
}

bindings::export!(Tool with_types_in bindings);
