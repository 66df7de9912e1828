//! `head`: a Sluice tool in Rust (wit-bindgen 0.63, `wasm32-wasip2`) that reads a file from
//! a granted root. On `wasm32-wasip2`, `std::fs` opens absolute paths through the preopens:
//! the host mounts each granted root at `/<root name>`, so `/data/poem.txt` just opens.

use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind};

// `generate_all`: also generate the `sluice:tools/types` package this world uses.
wit_bindgen::generate!({ world: "head", path: "wit", generate_all });

// The world's `use`d types (`HeadArgs`, `HeadPage`, `ToolError`) are generated at the crate
// root; `StoppedBy`, not named by the world, stays in its interface's module.
use example::head::lines::StoppedBy;

const DEFAULT_COUNT: u32 = 10;
const MAX_COUNT: u32 = 100;

struct Head;

impl Guest for Head {
    fn head(args: HeadArgs) -> Result<HeadPage, ToolError> {
        let count = args.count.unwrap_or(DEFAULT_COUNT);
        if !(1..=MAX_COUNT).contains(&count) {
            return Err(ToolError::InvalidArgument(format!(
                "count must be 1 to {MAX_COUNT}; got {count}"
            )));
        }
        let path = args.path;
        let error = |e: std::io::Error| match e.kind() {
            ErrorKind::NotFound => ToolError::NotFound(format!("no such file or directory: {path}")),
            ErrorKind::PermissionDenied => ToolError::OutsideRoot(format!(
                "not permitted: {path}; give a path under a granted root, mounted at /<root name>"
            )),
            ErrorKind::IsADirectory => {
                ToolError::WrongKind(format!("{path} is a directory; head reads files"))
            }
            ErrorKind::InvalidData => ToolError::BinaryFile(format!("{path} is not UTF-8 text")),
            _ => ToolError::Io(format!("cannot read {path}: {e}")),
        };
        let file = File::open(&path).map_err(error)?;
        // `lines()` splits at "\n" and drops it and a "\r" before it.
        let mut lines = Vec::new();
        let mut stopped_by = StoppedBy::EndOfFile;
        for line in BufReader::new(file).lines() {
            let line = line.map_err(error)?;
            if lines.len() == count as usize {
                stopped_by = StoppedBy::LineLimit;
                break;
            }
            lines.push(line);
        }
        Ok(HeadPage {
            path,
            lines,
            stopped_by,
        })
    }
}

export!(Head);
