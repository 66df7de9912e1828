//! Code mode's two promises (docs/code-mode.md) as a property: for generated programs over generated
//! files, under several caps, the observation of `run_script` is within the cap, and what the
//! tools returned inside the script reaches it only through what the script returns.
//!
//! Every line of every file carries a token (`Q<file>L<line>Z`) that no tool adds and no
//! script writes: a program that returns only counts and kinds must leave no token in its
//! observation; a program that returns pages too must still stay within the cap.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use sluice_runtime::CallStatus;
use sluice_tests::Sandbox;

use super::cache;

/// Generated cases (each a script run in one of the sandboxes).
const CASES: u32 = 48;

/// Words of the generated lines and patterns.
const WORDS: [&str; 6] = ["alpha", "ERROR", "warn", "é€", "tab\tsep", "quote\"d"];

/// One step of a generated program; each pushes what it found (a number or an error kind)
/// onto `acc`, and keeps the last observation in `last`.
#[derive(Clone, Debug)]
enum Step {
    Read {
        file: usize,
        offset: u32,
    },
    Tail {
        file: usize,
        lines: u32,
    },
    Grep {
        word: usize,
    },
    List,
    Missing,
    BadArguments,
    /// Pages through a file to its end, at most `pages` pages.
    PageThrough {
        file: usize,
        pages: u32,
    },
    Log {
        times: u32,
    },
}

/// A generated case: files (lines of words), steps, whether the result holds the last
/// observation `repeat` times (a leak by design), and the sandbox (cap) it runs in.
#[derive(Clone, Debug)]
struct Case {
    files: Vec<Vec<Vec<usize>>>,
    steps: Vec<Step>,
    leak: Option<u32>,
    sandbox: usize,
}

fn step(files: usize) -> impl Strategy<Value = Step> {
    prop_oneof![
        (0..files, 0u32..200_000).prop_map(|(file, offset)| Step::Read { file, offset }),
        (0..files, 0u32..5_000).prop_map(|(file, lines)| Step::Tail { file, lines }),
        (0..WORDS.len()).prop_map(|word| Step::Grep { word }),
        Just(Step::List),
        Just(Step::Missing),
        Just(Step::BadArguments),
        (0..files, 1u32..6).prop_map(|(file, pages)| Step::PageThrough { file, pages }),
        (0u32..50).prop_map(|times| Step::Log { times }),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    let line = proptest::collection::vec(0..WORDS.len(), 0..12);
    let file = proptest::collection::vec(line, 0..3_000);
    proptest::collection::vec(file, 1..4).prop_flat_map(|files| {
        let n = files.len();
        (
            Just(files),
            proptest::collection::vec(step(n), 1..7),
            proptest::option::of(1u32..400),
            0..CAPS.len(),
        )
            .prop_map(|(files, steps, leak, sandbox)| Case {
                files,
                steps,
                leak,
                sandbox,
            })
    })
}

/// The caps of the sandboxes: the floor, a small one and the default.
const CAPS: [u32; 3] = [1_024, 4_096, 65_536];

/// The file's text: each line its words and its token.
fn text(index: usize, lines: &[Vec<usize>]) -> String {
    let mut out = String::new();
    for (n, words) in lines.iter().enumerate() {
        for &w in words {
            out.push_str(WORDS[w]);
            out.push(' ');
        }
        out.push_str(&format!("Q{index}L{n}Z\n"));
    }
    out
}

/// The program of `case` over the files under `dir`.
fn program(case: &Case, dir: &str) -> String {
    let path = |file: usize| format!("{dir}/f{file}.txt");
    let mut js = String::from("const acc = []; let last = null;\n");
    let push = "acc.push(last.ok ? 'ok' : last.kind);";
    for step in &case.steps {
        let line = match step {
            Step::Read { file, offset } => format!(
                "last = tools.call('read_file', {{path: '{}', offset: {offset}}}); {push} if (last.ok) acc.push(last.result.contentBytes);",
                path(*file)
            ),
            Step::Tail { file, lines } => format!(
                "last = tools.call('tail_file', {{path: '{}', lines: {lines}}}); {push} if (last.ok) acc.push(last.result.count);",
                path(*file)
            ),
            Step::Grep { word } => format!(
                "last = tools.call('grep_files', {{pattern: {:?}, path: '{dir}'}}); {push} if (last.ok) acc.push(last.result.count);",
                WORDS[*word]
            ),
            Step::List => format!(
                "last = tools.call('list_dir', {{path: '{dir}'}}); {push} if (last.ok) acc.push(last.result.entries.length);"
            ),
            Step::Missing => {
                format!("last = tools.call('read_file', {{path: '{dir}/missing.txt'}}); {push}")
            }
            Step::BadArguments => {
                format!("last = tools.call('read_file', {{path: '{dir}', offset: -1}}); {push}")
            }
            Step::PageThrough { file, pages } => format!(
                "{{ let offset = 0, bytes = 0; for (let i = 0; i < {pages}; i++) {{ last = tools.call('read_file', {{path: '{}', offset}}); if (!last.ok) break; bytes += last.result.contentBytes; if (last.result.nextOffset == null) break; offset = last.result.nextOffset; }} acc.push(bytes); }}",
                path(*file)
            ),
            Step::Log { times } => {
                format!("for (let i = 0; i < {times}; i++) console.log('step', i, acc.length);")
            }
        };
        js.push_str(&line);
        js.push('\n');
    }
    match case.leak {
        Some(times) => js.push_str(&format!(
            "return acc.concat(Array({times}).fill(JSON.stringify(last)));"
        )),
        None => js.push_str("return acc;"),
    }
    js
}

/// Whether `text` holds a line token of the files.
fn has_token(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.windows(2).enumerate().any(|(i, w)| {
        w[0] == b'Q'
            && w[1].is_ascii_digit()
            && text[i + 1..].split_once('L').is_some_and(|(f, rest)| {
                f.bytes().all(|b| b.is_ascii_digit())
                    && rest.split_once('Z').is_some_and(|(l, _)| {
                        !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit())
                    })
            })
    })
}

#[test]
fn the_observation_is_within_the_cap_and_holds_only_what_the_script_returned() {
    let sandboxes: Vec<Sandbox> = CAPS.iter().map(|&cap| Sandbox::new(cache(), cap)).collect();
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    let counter = std::cell::Cell::new(0u32);
    runner
        .run(&case(), |case| {
            let n = counter.get();
            counter.set(n + 1);
            let sb = &sandboxes[case.sandbox];
            let dir = format!("case{n}");
            for (i, lines) in case.files.iter().enumerate() {
                sb.write(&format!("{dir}/f{i}.txt"), text(i, lines));
            }
            let script = program(&case, &dir);
            let obs = sb.call("run_script", &serde_json::json!({ "script": script }));
            let cap = CAPS[case.sandbox] as usize;
            prop_assert!(
                obs.text().len() <= cap,
                "{} bytes over the cap {cap}",
                obs.text().len()
            );
            if case.leak.is_none() {
                prop_assert!(
                    !has_token(obs.text()),
                    "an inner observation in the observation: {}",
                    obs.text()
                );
            }
            // A program of these steps runs to its end (its inner errors are values it
            // pushes), unless it returns so many copies of a page that writing them as JSON
            // passes the memory limit, which then ends it with its key.
            let memory = obs.status() == CallStatus::ToolError
                && obs.text().contains(r#""kind":"memory-limit""#)
                && obs.text().contains("memory_mib");
            if obs.status() != CallStatus::Ok && !(case.leak.is_some() && memory) {
                return Err(TestCaseError::fail(format!(
                    "the script failed: {}",
                    obs.text()
                )));
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_token_finder_finds_tokens() {
    assert!(has_token("x Q0L12Z y"));
    assert!(has_token("Q12L0Z"));
    assert!(!has_token("Q L1Z"));
    assert!(!has_token("QxL1Z"));
    assert!(!has_token("Q1LZ"));
    assert!(!has_token("{\"ok\":true,\"result\":[\"ok\",12]}"));
}
