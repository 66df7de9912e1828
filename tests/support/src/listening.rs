//! The address a server under test listens on, read from its stderr.

use std::io::{BufRead, BufReader};
use std::process::ChildStderr;

/// The first `http://…` URL `stderr` prints (without a trailing `/`, `,` or `)`); the rest of
/// it is read and dropped on a thread of its own, so the server never blocks on a full pipe.
///
/// # Panics
/// When the server exits before printing a URL (the message holds what it printed).
pub fn address_from(stderr: ChildStderr) -> String {
    let mut lines = BufReader::new(stderr).lines();
    let mut said = String::new();
    let url = loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("the server exited before printing its address:\n{said}"))
            .unwrap();
        if let Some(at) = line.find("http://") {
            let url = line[at..].split_whitespace().next().unwrap();
            break url.trim_end_matches(['/', ',', ')']).to_string();
        }
        said.push_str(&line);
        said.push('\n');
    };
    std::thread::spawn(move || for _ in lines {});
    url
}
