//! The built-in `grep_files` tool: the `grep-files` world of `sluice:tools` as a thin adapter over
//! [`sluice_file_tools::grep_files_from`], walking through directory listings read by the host
//! (`sluice:tools/listing`, [`sluice_guest::HostFiles`]): one crossing and no `stat` per
//! entry, where the `wasi:filesystem` directory stream costs one of each; and reading the
//! files it searches through `sluice:tools/whole-files`, which the host reads ahead of it.

#![allow(unsafe_code)] // The generated export glue is unsafe.

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({
        world: "grep-files",
        path: "../../wit",
        with: {
            "sluice:tools/types@0.1.5": sluice_guest::types,
            "sluice:tools/files@0.1.5": sluice_guest::files,
            "sluice:tools/budget@0.1.5": sluice_guest::budget,
            "sluice:tools/key-policy@0.1.5": sluice_guest::key_policy,
            "sluice:tools/listing@0.1.5": sluice_guest::listing,
            "sluice:tools/whole-files@0.1.5": sluice_guest::whole_files,
        },
    });
}

use sluice_guest::{HostFiles, files, types};

struct Tool;

impl bindings::Guest for Tool {
    fn grep_files(args: files::GrepFilesArgs) -> Result<files::GrepFilesPage, types::ToolError> {
        sluice_guest::run(
            sluice_guest::grep_args(args),
            |ctx, args| sluice_file_tools::grep_files_from(ctx, args, Some(&HostFiles)),
            sluice_guest::grep_page,
        )
    }
}

bindings::export!(Tool with_types_in bindings);
