//! `{{name}}`: a Sluice tool in Rust (wit-bindgen 0.63, `wasm32-wasip2`) that reads a text
//! file from a granted root one page at a time. Each page holds as many whole lines as fit the
//! page budget the host grants the call (`sluice:tools/budget` `page-bytes`), and says where
//! the next page starts (`next_cursor`). On `wasm32-wasip2`, `std::fs` opens absolute paths
//! through the preopens: the host mounts each granted root at `/<root name>`.

use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Seek, SeekFrom};

// `generate_all`: also generate the `sluice:tools` interfaces the world uses. The types the
// world names (`PageArgs`, `Page`, `ToolError`) are generated at the crate root.
wit_bindgen::generate!({ world: "{{name}}", path: "wit", generate_all });

use sluice::tools::budget;

struct Tool;

impl Guest for Tool {
    fn {{name_snake}}(args: PageArgs) -> Result<Page, ToolError> {
        let path = args.path;
        let cursor = args.cursor.unwrap_or(0);
        // The bytes of JSON this page may fill: 0 when the cap leaves no room for one.
        let page = budget::page_bytes(&path) as usize;
        if page == 0 {
            return Err(ToolError::PageTooSmall(format!(
                "the cap (agent.max_tool_result_bytes, {} bytes) leaves no room for a page of {path}; raise it or use a shorter path",
                budget::max_result_bytes()
            )));
        }
        let error = |e: std::io::Error| match e.kind() {
            ErrorKind::NotFound => {
                ToolError::NotFound(format!("no such file or directory: {path}"))
            }
            ErrorKind::PermissionDenied => ToolError::OutsideRoot(format!(
                "not permitted: {path}; give a path under a granted root, mounted at /<root name>"
            )),
            _ => ToolError::Io(format!("cannot read {path}: {e}")),
        };
        let mut file = File::open(&path).map_err(error)?;
        let meta = file.metadata().map_err(error)?;
        if meta.is_dir() {
            return Err(ToolError::WrongKind(format!(
                "{path} is a directory; give the path of a text file"
            )));
        }
        if cursor > meta.len() {
            return Err(ToolError::InvalidArgument(format!(
                "cursor {cursor} is past the end of {path} ({} bytes); pass the nextCursor of a page, or leave cursor out to start at the beginning",
                meta.len()
            )));
        }
        file.seek(SeekFrom::Start(cursor)).map_err(error)?;
        let mut reader = BufReader::new(file);

        let mut lines = Vec::new();
        let mut used = 2; // the list's `[]`
        let mut offset = cursor; // where the next line starts
        let mut raw = Vec::new();
        loop {
            raw.clear();
            let read = reader.read_until(b'\n', &mut raw).map_err(error)?;
            if read == 0 {
                return Ok(Page {
                    path,
                    lines,
                    next_cursor: None,
                });
            }
            // Split at "\n"; drop it and a "\r" before it.
            if raw.last() == Some(&b'\n') {
                raw.pop();
                if raw.last() == Some(&b'\r') {
                    raw.pop();
                }
            }
            let Ok(line) = std::str::from_utf8(&raw) else {
                return Err(ToolError::BinaryFile(format!("{path} is not UTF-8 text")));
            };
            // The line as the host writes it: a JSON string, and a comma after the first.
            let cost = escaped_len(line) + 2 + usize::from(!lines.is_empty());
            if used + cost > page {
                if lines.is_empty() {
                    return Err(ToolError::PageTooSmall(format!(
                        "the line at byte {offset} of {path} does not fit a page of {page} bytes; raise agent.max_tool_result_bytes"
                    )));
                }
                return Ok(Page {
                    path,
                    lines,
                    next_cursor: Some(offset),
                });
            }
            used += cost;
            lines.push(line.to_string());
            offset += read as u64;
        }
    }
}

/// The bytes of `s` written as a JSON string, without its quotes: `"` and `\` and the
/// control characters with a short escape take two bytes, other control characters six.
fn escaped_len(s: &str) -> usize {
    s.bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..0x20 => 6,
            _ => 1,
        })
        .sum()
}

export!(Tool);
