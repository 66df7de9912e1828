//! Keys the look-back does not see whole, through the real components: labels of 1 KiB to
//! 200,000 characters, lines ended by a lone `\r`, OpenPGP armor headers, a key written as
//! one escaped line, body lines with trailing blanks (docs/keys.md#line-breaks,
//! docs/keys.md#cut-armor, docs/keys.md#key-body-and-neutral-lines). Each test's doc comment
//! gives the observation before the rule that fixed it. Every key is a fixed fake body.

use serde_json::{Value, json};
use sluice_tests::{Sandbox, fake_body_line};

use crate::cache;

/// Text that every fake body line starts with: an observation holding it serves key body.
const BODY_MARK: &str = "RkFLRS1LRVktTk9ULUEtUkVBTC1LRVkt";

/// `n` fake body lines, each as `indent` + the line + `trailing` + `nl`.
fn body(n: usize, indent: &str, trailing: &str, nl: &str) -> String {
    (0..n)
        .map(|i| format!("{indent}{}{trailing}{nl}", fake_body_line(i)))
        .collect()
}

/// The observation of `tool` with `args`, checked to serve no body line.
#[track_caller]
fn no_body(sb: &Sandbox, tool: &str, args: &Value) -> Value {
    let v = sb.call_json(tool, args);
    assert!(
        !v.to_string().contains(BODY_MARK),
        "{tool} {args} served key body"
    );
    v
}

/// Asserts `tool` with `args` is refused as key material with exactly `message`.
#[track_caller]
fn refused(sb: &Sandbox, tool: &str, args: Value, message: &str) {
    let v = no_body(sb, tool, &args);
    assert_eq!(
        (v["ok"].as_bool(), v["kind"].as_str()),
        (Some(false), Some("key-material")),
        "{tool} {args}: {v}"
    );
    // Which of the refusals a page gets depends on which key rule sees the key first
    // (a cut armor line counts as a BEGIN: docs/keys.md); each is a refusal of the page.
    let error = v["error"].as_str().unwrap();
    let path = args["path"].as_str().unwrap();
    let refusals = [
        message.to_string(),
        format!("refusing to read key material: {path} holds a PEM private key in that range"),
        format!("refusing to read key material: {path} holds a PEM private key at that position"),
        deep(path),
    ];
    assert!(
        refusals.iter().any(|r| r == error),
        "{tool} {args}: {error}"
    );
}

/// The fail-closed message of read_file for `path`.
fn deep(path: &str) -> String {
    format!(
        "refusing to read key material: {path} may hold a PEM private key at that position (the 128 KiB before it are only key-body lines)"
    )
}

/// Long labels. Before: with a label longer than the 128 KiB look-back, the page at cap
/// 4,096 that reaches `PRIVATE KEY-----` served the key's first body lines (the look-back
/// starts inside the label, where no marker is in sight). After: an armor line cut by the
/// look-back's start counts (docs/keys.md#cut-armor); every page from the label's end into
/// the body is refused, for labels of 1 KiB to 200,000 characters.
#[test]
fn long_labels_never_serve_the_body() {
    let sb = Sandbox::new(cache(), 4096);
    for n in [1024, 5000, 140_000, 200_000] {
        let label = "A".repeat(n);
        let path = format!("label{n}.txt");
        let text = format!(
            "intro\n-----BEGIN {label} PRIVATE KEY-----\n{}-----END {label} PRIVATE KEY-----\nouter\n",
            body(12, "", "", "\n")
        );
        sb.write(&path, &text);
        let private = text.find("PRIVATE KEY-----").unwrap();
        // Pages that start before `PRIVATE KEY-----` and reach it, then pages in the body.
        for offset in [
            private.saturating_sub(3000),
            private - 1000,
            private - 100,
            private - 1,
        ] {
            refused(
                &sb,
                "read_file",
                json!({"path": path, "offset": offset}),
                &format!(
                    "refusing to read key material: {path} holds a PEM private key in that range"
                ),
            );
        }
        for offset in [private + 17, private + 17 + 65 * 5] {
            refused(
                &sb,
                "read_file",
                json!({"path": path, "offset": offset}),
                &format!(
                    "refusing to read key material: {path} holds a PEM private key at that position"
                ),
            );
        }
        // Every 1,009th byte of the file: served without body, or refused.
        for offset in (0..text.len()).step_by(1009) {
            no_body(&sb, "read_file", &json!({"path": path, "offset": offset}));
        }
        // An END line whose label is longer than the look-back is cut by it and counts
        // as a BEGIN (its kind is out of sight): the tail fails closed.
        if n < 128 * 1024 {
            assert_eq!(
                sb.ok("tail_file", &json!({"path": path, "lines": 1}))["lines"],
                json!(["outer"])
            );
        } else {
            refused(
                &sb,
                "tail_file",
                json!({"path": path, "lines": 1}),
                &format!("refusing to read key material: {path} ends inside a PEM private key"),
            );
        }
        let r = sb.ok(
            "grep_files",
            &json!({"pattern": "[A-Za-z0-9+/]{16,}", "path": path}),
        );
        assert_eq!((&r["count"], &r["skippedFiles"]), (&json!(0), &json!(1)));
    }
}

/// Lone `\r`. Before: `read_file {"path":"deep1.txt","offset":237029}` at cap 6,866 returned
/// base64 lines of a 258,890-byte ML_KEM_768 key indented two spaces whose lines end in a
/// lone `\r`: without `\n` the look-back had no whole line, so it never failed closed.
/// After: a lone `\r` ends a line for the key rules (docs/keys.md#line-breaks) and the page
/// is refused; so is every page deeper than the look-back.
#[test]
fn lone_cr_keys_fail_closed_at_every_depth() {
    let sb = Sandbox::new(cache(), 6866);
    let mut text = String::from("  -----BEGIN ML_KEM_768 PRIVATE KEY-----\r");
    text.push_str(&body(3862, "  ", "", "\r"));
    text.push_str(&format!("  {}\r", &fake_body_line(3862)[..53]));
    text.push_str("  -----END ML_KEM_768 PRIVATE KEY-----\r");
    assert_eq!(text.len(), 258_890);
    sb.write("deep1.txt", &text);
    refused(
        &sb,
        "read_file",
        json!({"path": "deep1.txt", "offset": 237_029}),
        &deep("deep1.txt"),
    );
    for offset in (131_100..250_000).step_by(7919) {
        refused(
            &sb,
            "read_file",
            json!({"path": "deep1.txt", "offset": offset}),
            &deep("deep1.txt"),
        );
    }
    // Within the look-back of the BEGIN line, and the end of the file.
    refused(
        &sb,
        "read_file",
        json!({"path": "deep1.txt", "offset": 70_000}),
        "refusing to read key material: deep1.txt holds a PEM private key at that position",
    );
    refused(
        &sb,
        "tail_file",
        json!({"path": "deep1.txt", "lines": 1}),
        "refusing to read key material: deep1.txt holds a PEM private key",
    );
    // Without its END line the file ends inside the key: the tail fails closed.
    let open = &text[..200_000];
    sb.write("open.txt", open);
    refused(
        &sb,
        "tail_file",
        json!({"path": "open.txt"}),
        "refusing to read key material: open.txt may end inside a PEM private key (the 128 KiB before the returned lines are only key-body lines)",
    );
    // A BEGIN line split across a lone `\r` is armor: grep skips the file.
    sb.write(
        "split.txt",
        format!(
            "-----BEGIN RSA PRIVATE\rKEY-----\r{}",
            body(3, "", "", "\r")
        ),
    );
    for path in ["deep1.txt", "split.txt"] {
        let r = sb.ok(
            "grep_files",
            &json!({"pattern": "[A-Za-z0-9+/]{16,}", "path": path}),
        );
        assert_eq!((&r["count"], &r["skippedFiles"]), (&json!(0), &json!(1)));
    }
}

/// OpenPGP armor headers. Before: a block of `-----BEGIN PGP PRIVATE KEY BLOCK-----`,
/// `Version: GnuPG v2`, a blank line and 2,100 body lines served body at 38 offsets, among
/// them `read_file` at offset 131,082, cap 4,096: the look-back started inside the BEGIN
/// line and `Version:` counted as ordinary text. After: the cut BEGIN line counts, armor
/// headers are neutral, and every page from offset 131,073 to 131,300 is refused.
#[test]
fn pgp_armor_headers_do_not_clear_the_rule() {
    let sb = Sandbox::new(cache(), 4096);
    let text = format!(
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n{}=AbCd\n-----END PGP PRIVATE KEY BLOCK-----\n",
        body(2100, "", "", "\n")
    );
    sb.write("pgp.asc.txt", &text);
    refused(
        &sb,
        "read_file",
        json!({"path": "pgp.asc.txt", "offset": 131_082}),
        "refusing to read key material: pgp.asc.txt holds a PEM private key at that position",
    );
    for offset in 131_073..131_300 {
        let v = no_body(
            &sb,
            "read_file",
            &json!({"path": "pgp.asc.txt", "offset": offset}),
        );
        assert_eq!(v["kind"], "key-material", "offset {offset}");
    }
    // Comment: and Hash: lines, and the headers after a split BEGIN line, likewise.
    let text = format!(
        "-----BEGIN PGP PRIVATE\nKEY BLOCK-----\nComment: anything at all, even ordinary text\nHash: SHA256\n\n{}",
        body(2100, "", "", "\n")
    );
    sb.write("pgp2.txt", &text);
    for offset in (131_073..131_200).step_by(3) {
        let v = no_body(
            &sb,
            "read_file",
            &json!({"path": "pgp2.txt", "offset": offset}),
        );
        assert_eq!(v["kind"], "key-material", "offset {offset}");
    }
}

/// A key written as one escaped line. Before: a `.env`-style value
/// `"-----BEGIN RSA PRIVATE KEY-----\nMIIE…\n…"`, with `\n` written as two characters, 198 KB on
/// one line: pages deep inside it were served (the look-back held no line break at all).
/// After: escaped breaks end lines for the key rules (docs/keys.md#line-breaks) and those
/// pages fail closed; a body written without breaks at all is one long key-body line.
#[test]
fn a_key_on_one_escaped_line_fails_closed() {
    let sb = Sandbox::new(cache(), 4096);
    for (path, nl) in [("esc.env", r"\n"), ("esc2.json", r"\\r\\n")] {
        let text = format!(
            "{{\"tls\": {{\"key\": \"-----BEGIN RSA PRIVATE KEY-----{nl}{}-----END RSA PRIVATE KEY-----{nl}\"}}}}\nafter\n",
            body(3000, "", "", nl)
        );
        sb.write(path, &text);
        for offset in [140_000, 150_001, 190_000] {
            refused(
                &sb,
                "read_file",
                json!({"path": path, "offset": offset}),
                &deep(path),
            );
        }
        assert_eq!(
            sb.ok("tail_file", &json!({"path": path, "lines": 1}))["lines"],
            json!(["after"])
        );
    }
    let one_run = format!(
        "KEY=\"-----BEGIN PRIVATE KEY-----{}\"\n",
        (0..3000).map(fake_body_line).collect::<String>()
    );
    sb.write("run.env", &one_run);
    refused(
        &sb,
        "read_file",
        json!({"path": "run.env", "offset": 150_000}),
        &deep("run.env"),
    );
}

/// Trailing blanks. Before: a key whose 2,100 body lines each end in a space served its body
/// deeper than 128 KiB (each line read as ordinary text). After: trailing blanks are
/// ignored, and the pages fail closed.
#[test]
fn trailing_blanks_do_not_clear_the_rule() {
    let sb = Sandbox::new(cache(), 4096);
    for (path, trailing) in [("space.txt", " "), ("blanks.txt", " \t ")] {
        let text = format!(
            "-----BEGIN EC PRIVATE KEY-----\n{}-----END EC PRIVATE KEY-----\n",
            body(2100, "", trailing, "\n")
        );
        sb.write(path, &text);
        for offset in [131_200, 135_000, 138_000] {
            refused(
                &sb,
                "read_file",
                json!({"path": path, "offset": offset}),
                &deep(path),
            );
        }
    }
}
