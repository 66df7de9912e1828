//! A component of the shape of wassette's filesystem-rs example: world-level `read-file`
//! and `list-directory` taking a guest path. Its `read-file` becomes the tool `read_file`,
//! which the built-in already is: it loads beside it only under a prefix or a new name.

#![allow(unsafe_code)] // The generated export glue is unsafe.

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({
        world: "fs-like",
        path: "wit",
    });
}

struct FsLike;

impl bindings::Guest for FsLike {
    fn read_file(path: String) -> Result<String, String> {
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))
    }

    fn list_directory(path: String) -> Result<Vec<String>, String> {
        let entries = std::fs::read_dir(&path).map_err(|e| format!("cannot list {path}: {e}"))?;
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }
}

bindings::export!(FsLike with_types_in bindings);
