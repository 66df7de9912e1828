//! A sweep over the shapes of key that escaped the deep-key rules (docs/keys.md#fail-closed):
//! every combination of line ending (`\n`, `\r\n`, lone `\r`, escaped `\n` on one line),
//! indentation, trailing blanks, OpenPGP armor headers and label length (short, 150,000
//! characters), with a body deeper than the 128 KiB look-back. read_file is called where
//! the look-back starts in the key's first lines and at depths through the key, at two caps;
//! tail_file on the key with its END line cut off. No observation may hold a body line.
//! Before the rules for line breaks, cut armor lines and neutral armor headers, 3,302 of
//! these 7,296 calls served body. Then two shapes of split armor lines
//! (docs/keys.md#key-body-and-neutral-lines): a label longer than the look-back, and a
//! split inside the closing dashes.

use sluice_file_tools::keys::LOOK_BACK_BYTES;
use sluice_file_tools::{ErrorKind, ReadFileArgs, TailFileArgs, read_file, tail_file};

use crate::support::{Fixture, obs};

/// Body line `i` of a fake key: 64 characters of base64, all starting with [`MARK`].
fn body_line(i: usize) -> String {
    format!("{MARK}{i:028}")
}

/// What every body line starts with: an observation holding it serves key body.
const MARK: &str = "RkFLRS1LRVktTk9ULUEtUkVBTC1LRVkt90AB";

/// One key: `(text of the file, offset of its BEGIN line)`.
fn key_file(nl: &str, indent: &str, trailing: &str, pgp: bool, label: &str) -> (String, usize) {
    let block = if pgp { " BLOCK" } else { "" };
    let mut out = String::from("some ordinary text before the key\n");
    if nl == r"\n" {
        out.push_str("KEY=\"");
    }
    let start = out.len();
    out.push_str(&format!(
        "{indent}-----BEGIN {label}PRIVATE KEY{block}-----{nl}"
    ));
    if pgp {
        out.push_str(&format!(
            "{indent}Version: GnuPG v2{nl}{indent}Comment: made for a test{nl}{indent}Hash: SHA256{nl}{nl}"
        ));
    }
    for i in 0..2200 {
        out.push_str(&format!("{indent}{}{trailing}{nl}", body_line(i)));
    }
    out.push_str(&format!(
        "{indent}-----END {label}PRIVATE KEY{block}-----{nl}"
    ));
    if nl == r"\n" {
        out.push_str("\"\n");
    }
    out.push_str("after the key\n");
    (out, start)
}

#[test]
fn deep_keys_of_every_shape_serve_no_body() {
    let fx = Fixture::new();
    let long_label = format!("{} ", "L".repeat(150_000));
    let mut calls = 0;
    let mut served: Vec<String> = Vec::new();
    for nl in ["\n", "\r\n", "\r", r"\n"] {
        for indent in ["", "  "] {
            for trailing in ["", " "] {
                for pgp in [false, true] {
                    for label in ["RSA ", long_label.as_str()] {
                        let (text, begin) = key_file(nl, indent, trailing, pgp, label);
                        fx.write("k.txt", &text);
                        let end = text.rfind("-----END").unwrap();
                        fx.write("open.txt", &text[..end]);
                        let shape = format!(
                            "nl {nl:?} indent {indent:?} trailing {trailing:?} pgp {pgp} label {}",
                            label.len()
                        );
                        let look_back = begin + LOOK_BACK_BYTES as usize;
                        let near = (0..100).step_by(4).map(|d| look_back + d);
                        let label_end = begin + indent.len() + 11 + label.len();
                        let depths = (1..=30).map(|k| label_end + (end - label_end) * k / 31);
                        for cap in [4096, 6866] {
                            let ctx = fx.ctx(cap);
                            for offset in near.clone().chain(depths.clone()) {
                                let args = ReadFileArgs {
                                    path: "k.txt".into(),
                                    offset: Some(offset as u64),
                                    ..Default::default()
                                };
                                let o = obs(&read_file(&ctx, &args));
                                calls += 1;
                                if o.contains(MARK) {
                                    served
                                        .push(format!("{shape} cap {cap}: read_file at {offset}"));
                                }
                            }
                            for lines in [1, 200] {
                                let args = TailFileArgs {
                                    path: "open.txt".into(),
                                    lines: Some(lines),
                                    ..Default::default()
                                };
                                let o = obs(&tail_file(&ctx, &args));
                                calls += 1;
                                if o.contains(MARK) {
                                    served.push(format!("{shape} cap {cap}: tail_file {lines}"));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    assert_eq!(calls, 7296);
    assert!(
        served.is_empty(),
        "{} of {calls} calls served key body, among them {:?}",
        served.len(),
        &served[..served.len().min(8)]
    );
}

/// A key whose BEGIN and END lines are split after their keyword (`-----BEGIN` on one line,
/// ` <label>PRIVATE KEY-----` on the next) and whose label is longer than the look-back,
/// over a body longer than the look-back too: the look-back of a page around the END line
/// then holds neither armor line whole (docs/keys.md#fail-closed). Every page from 300
/// bytes before the END line to 700 bytes into it, and every 509th through the rest of it,
/// is refused as key material, for each line ending and at two caps: none shows a body line
/// or a byte of the END line.
#[test]
fn split_armor_lines_with_labels_longer_than_the_look_back_serve_nothing_of_the_key() {
    let fx = Fixture::new();
    let label = format!("{} ", "C".repeat(140_000));
    let mut calls = 0;
    for nl in ["\n", "\r\n", r"\n"] {
        let mut text = String::from("some ordinary text before the key\nKEY=\"");
        text.push_str(&format!("-----BEGIN{nl} {label}PRIVATE KEY-----{nl}"));
        for i in 0..2100 {
            text.push_str(&format!("{}{nl}", body_line(i)));
        }
        let end = text.len();
        text.push_str(&format!("-----END{nl} {label}PRIVATE KEY-----"));
        let key_end = text.len();
        text.push_str("\"\nafter the key\n");
        fx.write("k.txt", &text);
        let offsets = (end - 300..end + 700).chain((end + 700..key_end).step_by(509));
        for cap in [1024, 4096] {
            let ctx = fx.ctx(cap);
            for offset in offsets.clone() {
                let args = ReadFileArgs {
                    path: "k.txt".into(),
                    offset: Some(offset as u64),
                    ..Default::default()
                };
                calls += 1;
                match read_file(&ctx, &args) {
                    Err(e) => assert_eq!(e.kind, ErrorKind::KeyMaterial, "{}", e.message),
                    Ok(page) => panic!(
                        "nl {nl:?} cap {cap}: read_file at {offset} served {} bytes ({}…) of the key's END line",
                        page.content.len(),
                        &page.content[..page.content.len().min(24)]
                    ),
                }
            }
        }
    }
    assert_eq!(calls, 3 * 2 * (1000 + 274));
}

/// A key whose BEGIN and END lines are split inside their closing dashes
/// (`-----BEGIN RSA PRIVATE KEY---` on one line, `--` on the next), over a body longer than
/// the look-back: the pages whose look-back starts anywhere in the split BEGIN line, where
/// the window sees no marker, are refused as key material, for every split of the dashes
/// and each line ending.
#[test]
fn armor_lines_split_inside_their_closing_dashes_serve_no_body() {
    let fx = Fixture::new();
    let mut calls = 0;
    for nl in ["\n", "\r\n", r"\n"] {
        for dashes in 1..=4 {
            let armor = |kind: &str| {
                let line = format!("  -----{kind} RSA PRIVATE KEY-----");
                let (first, second) = line.split_at(line.len() - dashes);
                format!("{first}{nl}  {second}{nl}")
            };
            let mut text = String::from("some ordinary text before the key\nKEY=\"");
            let begin = text.len();
            text.push_str(&armor("BEGIN"));
            let body = text.len();
            for i in 0..2100 {
                text.push_str(&format!("  {}{nl}", body_line(i)));
            }
            text.push_str(&armor("END"));
            text.push_str("\"\nafter the key\n");
            fx.write("k.txt", &text);
            let ctx = fx.ctx(1024);
            for offset in begin + LOOK_BACK_BYTES as usize..=body + LOOK_BACK_BYTES as usize {
                let args = ReadFileArgs {
                    path: "k.txt".into(),
                    offset: Some(offset as u64),
                    ..Default::default()
                };
                calls += 1;
                match read_file(&ctx, &args) {
                    Err(e) => assert_eq!(e.kind, ErrorKind::KeyMaterial, "{}", e.message),
                    Ok(page) => panic!(
                        "nl {nl:?} dashes {dashes}: read_file at {offset} served {:?}…",
                        &page.content[..page.content.len().min(40)]
                    ),
                }
            }
        }
    }
    assert_eq!(calls, 472);
}
