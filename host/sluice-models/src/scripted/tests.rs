//! Drives the scripted model through fake transcripts with realistic observations.

use serde_json::{Value, json};
use sluice_protocol::{Message, ToolCall, ToolSpec};

use super::prompt::analyse_prompt;
use super::step::{GREP_FILES, LIST_DIR, READ_FILE, TAIL_FILE};
use super::*;

fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: String::new(),
        input_schema: json!({"type":"object"}),
    }
}

fn all_tools() -> Vec<ToolSpec> {
    [LIST_DIR, GREP_FILES, READ_FILE, TAIL_FILE]
        .into_iter()
        .map(spec)
        .collect()
}

fn ok(result: Value) -> String {
    json!({"ok": true, "result": result}).to_string()
}

fn fail(error: &str) -> String {
    json!({"ok": false, "error": error}).to_string()
}

/// Runs the loop the way the agent does: ask, append the assistant message, answer each call
/// with `observe`, until a reply has no tool calls. Returns `(tool, arguments)` of every call
/// (with ids checked to be `call_1`, `call_2`, …) and the final text.
fn drive(
    history: Vec<Message>,
    prompt: &str,
    tools: Vec<ToolSpec>,
    mut observe: impl FnMut(&str, &Value) -> String,
) -> (Vec<(String, String)>, String, Vec<Message>) {
    let model = ScriptedModel::new();
    let mut messages = history;
    let first_id = messages.iter().map(|m| m.tool_calls.len()).sum::<usize>() + 1;
    messages.push(Message::user(prompt, "t0"));
    let mut calls = Vec::new();
    for _ in 0..20 {
        let request = ModelRequest {
            system: "sys".into(),
            messages: messages.clone(),
            tools: tools.clone(),
        };
        let reply = model.next_turn(&request);
        assert_eq!(
            reply.tool_calls.len().min(1),
            reply.tool_calls.len(),
            "one call per turn"
        );
        messages.push(Message::assistant(
            reply.content.clone(),
            reply.tool_calls.clone(),
            "t",
        ));
        if reply.tool_calls.is_empty() {
            return (calls, reply.content, messages);
        }
        for call in reply.tool_calls {
            assert_eq!(call.id, format!("call_{}", first_id + calls.len()));
            let args: Value = serde_json::from_str(&call.arguments).unwrap();
            let observation = observe(&call.name, &args);
            calls.push((call.name.clone(), call.arguments.clone()));
            messages.push(Message::tool(call.id, observation, "t"));
        }
    }
    panic!("no final answer after 20 turns");
}

fn names(calls: &[(String, String)]) -> Vec<(&str, &str)> {
    calls
        .iter()
        .map(|(n, a)| (n.as_str(), a.as_str()))
        .collect()
}

/// `logs/`: a build log with three matches, an app log with one, a directory, an empty file
/// and a symlink. `build.log` is 1,000 bytes, 26 lines; pages end at 400 and 800 bytes.
fn logs_tool(tool: &str, args: &Value) -> String {
    match (tool, args.get("offset").and_then(Value::as_u64)) {
        ("list_dir", _) => ok(json!({"path":"logs","total":5,"offset":0,"entries":[
            {"name":"app.log","kind":"file","size":5000},
            {"name":"archive","kind":"directory"},
            {"name":"build.log","kind":"file","size":1000},
            {"name":"empty.txt","kind":"file","size":0},
            {"name":"latest","kind":"symlink"}]})),
        ("grep_files", _) => ok(json!({"path":"logs","count":4,"results":[
            {"path":"logs/app.log","line":7,"text":"WARN retry failed once"},
            {"path":"logs/build.log","line":3,"text":"error[E0308]: mismatched types"},
            {"path":"logs/build.log","line":12,"text":"error: could not compile `demo`"},
            {"path":"logs/build.log","line":25,"text":"FAILED: 1 error"}],
            "truncated":false,"skippedFiles":1})),
        ("read_file", None) => ok(json!({"path":"logs/build.log","size":1000,"offset":0,
            "content":"...","startLine":1,"endLine":10,"nextOffset":400,"nextLine":11})),
        ("read_file", Some(400)) => ok(json!({"path":"logs/build.log","size":1000,"offset":400,
            "content":"...","startLine":11,"endLine":20,"nextOffset":800,"nextLine":21})),
        ("read_file", Some(800)) => ok(json!({"path":"logs/build.log","size":1000,"offset":800,
            "content":"...","startLine":21,"endLine":25,"nextOffset":950,"nextLine":26})),
        ("tail_file", _) => ok(json!({"path":"logs/build.log","lines":[
            "error: could not compile `demo`","","FAILED: 1 error","done in 3.2s"],"truncated":false})),
        other => panic!("unexpected call {other:?} {args}"),
    }
}

#[test]
fn investigates_a_named_directory_step_by_step() {
    let (calls, answer, _) = drive(
        Vec::new(),
        "Why did the build in logs/ fail?",
        all_tools(),
        logs_tool,
    );
    assert_eq!(
        names(&calls),
        vec![
            ("list_dir", r#"{"path":"logs"}"#),
            (
                "grep_files",
                r#"{"pattern":"(?i)error|fail|fatal|panic|exception","path":"logs"}"#
            ),
            ("read_file", r#"{"path":"logs/build.log"}"#),
            (
                "read_file",
                r#"{"path":"logs/build.log","offset":400,"startLine":11}"#
            ),
            (
                "read_file",
                r#"{"path":"logs/build.log","offset":800,"startLine":21}"#
            ),
            ("tail_file", r#"{"path":"logs/build.log","lines":20}"#),
        ]
    );
    assert_eq!(
        answer,
        "Findings for `logs` (scripted offline model: a fixed sequence of tool calls, not an LLM).
Listing: `logs` has 5 entries: app.log (5000 bytes), archive/, build.log (1000 bytes), empty.txt (0 bytes), latest (symlink).
Search: 4 matches for `(?i)error|fail|fatal|panic|exception` in 2 files: logs/app.log (1), logs/build.log (3). 1 file was skipped (binary, too large, key material or symlinks).
Matches:
- logs/app.log:7: WARN retry failed once
- logs/build.log:3: error[E0308]: mismatched types
- logs/build.log:12: error: could not compile `demo`
- logs/build.log:25: FAILED: 1 error
File: `logs/build.log`, because it has the most matches (3).
Read: 1000 bytes; 3 pages, lines 1–25 (bytes 0–950); stopped before the end; the rest starts at byte 950.
Last 4 lines of `logs/build.log`:
    error: could not compile `demo`
    
    FAILED: 1 error
    done in 3.2s"
    );
}

#[test]
fn quoted_term_no_match_largest_file_and_eof() {
    let (calls, answer, _) = drive(
        Vec::new(),
        "Look for \"conn.reset(\" here, please.",
        all_tools(),
        |tool, args| match tool {
            "list_dir" => ok(json!({"path":".","total":4,"offset":0,"entries":[
                {"name":"a.txt","kind":"file","size":10},
                {"name":"big.bin.d","kind":"directory"},
                {"name":"notes.md","kind":"file","size":300},
                {"name":"other.md","kind":"file","size":300}]})),
            "grep_files" => {
                ok(json!({"path":".","count":0,"results":[],"truncated":false,"skippedFiles":0}))
            }
            "read_file" => {
                assert_eq!(args, &json!({"path":"notes.md"}));
                ok(
                    json!({"path":"notes.md","size":300,"offset":0,"content":"x","startLine":1,"endLine":12,"totalLines":12}),
                )
            }
            "tail_file" => ok(json!({"path":"notes.md","lines":["last line\r"],"truncated":false})),
            other => panic!("{other}"),
        },
    );
    assert_eq!(
        names(&calls),
        vec![
            ("list_dir", r#"{"path":"."}"#),
            ("grep_files", r#"{"pattern":"conn\\.reset\\(","path":"."}"#),
            ("read_file", r#"{"path":"notes.md"}"#),
            ("tail_file", r#"{"path":"notes.md","lines":20}"#),
        ]
    );
    assert_eq!(
        answer,
        "Findings for `.` (scripted offline model: a fixed sequence of tool calls, not an LLM).
Listing: `.` has 4 entries: a.txt (10 bytes), big.bin.d/, notes.md (300 bytes), other.md (300 bytes).
Search: no matches for `conn\\.reset\\(` in `.`.
File: `notes.md`, because no search match, and it is the largest file in the listing (300 bytes).
Read: 300 bytes; 1 page, lines 1–12 (bytes 0–300); reached the end: 12 lines in total.
Last 1 line of `notes.md`:
    last line"
    );
}

#[test]
fn tool_errors_and_unreadable_observations_are_reported_not_used() {
    let cut = format!(
        "{}…[truncated; full result is 90000 bytes. Ask for less: pass offset]",
        &ok(json!({"path":"src","entries":[{"name":"x","kind":"file","size":1}]}))[..40]
    );
    let (calls, answer, _) = drive(
        Vec::new(),
        "check `src/`",
        all_tools(),
        |tool, _| match tool {
            "list_dir" => cut.clone(),
            "grep_files" => fail("invalid pattern: oops"),
            "read_file" => fail("`src` is a directory"),
            "tail_file" => {
                json!({"ok":false,"error":"unknown_tool","name":"tail_file"}).to_string()
            }
            other => panic!("{other}"),
        },
    );
    assert_eq!(
        names(&calls),
        vec![
            ("list_dir", r#"{"path":"src"}"#),
            (
                "grep_files",
                r#"{"pattern":"(?i)error|fail|fatal|panic|exception","path":"src"}"#
            ),
            ("read_file", r#"{"path":"src"}"#),
            ("tail_file", r#"{"path":"src","lines":20}"#),
        ]
    );
    assert_eq!(
        answer,
        "Findings for `src` (scripted offline model: a fixed sequence of tool calls, not an LLM).
Listing: the list_dir result is unreadable (it was cut to fit the observation cap and is no longer valid JSON); its data is skipped.
Search: grep_files failed: invalid pattern: oops.
File: `src`, because the prompt names it and it could not be listed.
Read: read_file failed on page 1: `src` is a directory.
Last lines: tail_file failed: unknown tool `tail_file`."
    );
}

#[test]
fn a_shrunk_page_stops_paging() {
    let (calls, answer, _) = drive(
        Vec::new(),
        "what is in logs/?",
        all_tools(),
        |tool, args| {
            match tool {
        "read_file" if args.get("offset").is_some() => {
            "{\"ok\":true,\"result\":{\"content\":\"aaaa…[cut from 9000 bytes: a request including this result exceeded the model's context window. Ask for less: offset]".to_string()
        }
        _ => logs_tool(tool, args),
    }
        },
    );
    assert_eq!(calls.len(), 5, "{calls:?}");
    assert_eq!(
        calls[3].1,
        r#"{"path":"logs/build.log","offset":400,"startLine":11}"#
    );
    assert_eq!(calls[4].0, "tail_file");
    assert!(answer.contains(
        "Read: 1000 bytes; 1 page, lines 1–10 (bytes 0–400); stopped before the end; the rest starts at byte 400; page 2 is unreadable (it was shrunk after a context-window rejection and is no longer valid JSON); its data is skipped."
    ), "{answer}");
}

#[test]
fn missing_tools_are_skipped() {
    let only_read = vec![spec(READ_FILE), spec(TAIL_FILE)];
    let (calls, answer, _) = drive(Vec::new(), "look at logs/", only_read, |_, _| {
        fail("`logs` is a directory; use list_dir")
    });
    assert_eq!(
        names(&calls),
        vec![
            ("read_file", r#"{"path":"logs"}"#),
            ("tail_file", r#"{"path":"logs","lines":20}"#)
        ],
        "with no listing and no search, the named path is the only candidate"
    );
    assert_eq!(
        answer,
        "Findings for `logs` (scripted offline model: a fixed sequence of tool calls, not an LLM).
Listing: skipped (list_dir is not available).
Search: skipped (grep_files is not available).
File: `logs`, because the prompt names it and it could not be listed.
Read: read_file failed on page 1: `logs` is a directory; use list_dir.
Last lines: tail_file failed: `logs` is a directory; use list_dir."
    );

    let (calls, answer, _) = drive(Vec::new(), "look around", vec![spec(GREP_FILES)], logs_tool);
    assert_eq!(calls.len(), 1);
    assert!(answer.ends_with(
        "File: `logs/build.log`, because it has the most matches (3).\nRead: skipped (read_file is not available).\nLast lines: skipped (tail_file is not available)."
    ), "{answer}");

    let (calls, answer, _) = drive(Vec::new(), "look around", vec![spec("weather")], logs_tool);
    assert!(calls.is_empty());
    assert_eq!(
        answer,
        "Findings for `.` (scripted offline model: a fixed sequence of tool calls, not an LLM).
None of list_dir, grep_files, read_file and tail_file is available, so there is nothing I can look at."
    );
}

#[test]
fn resumes_from_the_transcript_and_numbers_ids_over_it() {
    // A whole earlier run, then a new prompt: ids continue at call_7.
    let (_, _, earlier) = drive(
        Vec::new(),
        "Why did the build in logs/ fail?",
        all_tools(),
        logs_tool,
    );
    let (calls, _, _) = drive(earlier, "and in logs/ again?", all_tools(), logs_tool);
    assert_eq!(calls.len(), 6);

    // A transcript cut in the middle of a run: a fresh model continues with the next page.
    let (_, _, full) = drive(
        Vec::new(),
        "Why did the build in logs/ fail?",
        all_tools(),
        logs_tool,
    );
    let cut: Vec<Message> = full[..8].to_vec(); // user, list, obs, grep, obs, read, obs, read
    let request = ModelRequest {
        system: String::new(),
        messages: cut[..7].to_vec(),
        tools: all_tools(),
    };
    let reply = ScriptedModel::new().next_turn(&request);
    assert_eq!(reply.tool_calls, cut[7].tool_calls);
    assert_eq!(reply.content, "Reading `logs/build.log` from byte 400.");
    assert_eq!(reply.usage, None);
}

#[test]
fn a_missing_observation_is_not_repeated() {
    let messages = vec![
        Message::user("look at logs/", "t"),
        Message::assistant(
            "",
            vec![ToolCall {
                id: "call_1".into(),
                name: "list_dir".into(),
                arguments: r#"{"path":"logs"}"#.into(),
            }],
            "t",
        ),
    ];
    let request = ModelRequest {
        system: String::new(),
        messages,
        tools: all_tools(),
    };
    let reply = ScriptedModel::new().next_turn(&request);
    assert_eq!(reply.tool_calls[0].id, "call_2");
    assert_eq!(reply.tool_calls[0].name, "grep_files");
}

#[test]
fn many_matches_are_cited_up_to_ten_and_long_text_is_cut() {
    let results: Vec<Value> = (1..=14)
        .map(|i| json!({"path":"big.log","line":i,"text":format!("panic {i} {}", "x".repeat(if i == 1 { 300 } else { 0 }))}))
        .collect();
    let (_, answer, _) = drive(Vec::new(), "hi", vec![spec(GREP_FILES)], |_, _| {
        ok(
            json!({"path":".","count":14,"results":results,"truncated":true,"nextCursor":"c","skippedFiles":0,"stoppedBy":"time"}),
        )
    });
    let long = format!("- big.log:1: panic 1 {}…", "x".repeat(MAX_QUOTED_CHARS - 8));
    assert!(answer.contains(&long), "{answer}");
    assert!(
        answer.contains("- big.log:10: panic 10 \n- …and 4 more\n"),
        "{answer}"
    );
    assert!(answer.contains(
        "Search: 14 matches for `(?i)error|fail|fatal|panic|exception` in 1 file: big.log (14). More matches exist beyond this page. The search stopped at its time budget."
    ), "{answer}");
}

#[test]
fn prompt_analysis() {
    let cases: &[(&str, &str, Option<&str>)] = &[
        ("Why did the build in logs/ fail?", "logs", None),
        (
            "what's in ./target/debug/build.",
            "target/debug/build",
            None,
        ),
        ("look at ./", ".", None),
        ("summarise the project", ".", None),
        (
            "find 'timeout' in services/api",
            "services/api",
            Some("timeout"),
        ),
        (
            "grep for `OOM killer` under \"var/log\"",
            "var/log",
            Some("OOM killer"),
        ),
        (
            "it's Bob's \"deadlock\" in (src/net)",
            "src/net",
            Some("deadlock"),
        ),
        (
            "see https://example.com/a and /etc/passwd and ../up/x",
            ".",
            None,
        ),
        ("“panic!” in crates/core/", "crates/core", Some("panic!")),
    ];
    for (prompt, dir, term) in cases {
        let (d, t) = analyse_prompt(prompt);
        assert_eq!((d.as_str(), t.as_deref()), (*dir, *term), "{prompt}");
    }
}

#[tokio::test]
async fn backend_name_and_complete() {
    let model = ScriptedModel::new();
    assert_eq!(model.name(), "scripted");
    let request = ModelRequest {
        system: String::new(),
        messages: vec![Message::user("x", "t")],
        tools: all_tools(),
    };
    let reply = model.complete(&request).await;
    assert_eq!(reply.map(|r| r.tool_calls.len()), Ok(1));
}
