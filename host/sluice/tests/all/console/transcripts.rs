//! Transcripts as the console shows them: a shrunk observation with its original from the
//! audit, an XSS payload shown as characters, and the first screen of 10,000 messages; and
//! the check every shown transcript passes against the API.

use serde_json::{Value, json};
use sluice_protocol::{Message, ToolCall};
use sluice_store::{Store, now_rfc3339};

use super::browser::Browser;
use super::server::{Setup, block};

/// The payload of the XSS test: markup that would run if the console parsed it.
const PAYLOAD: &str = r#"<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>"#;

/// The tool that made message `seq` of `messages` (the API's), if it is a tool message.
pub(crate) fn tool_of(messages: &Value, seq: u64) -> Option<&str> {
    let messages = messages.as_array().unwrap();
    let call = messages.iter().find(|m| m["seq"] == seq)?["toolCallId"].as_str()?;
    messages
        .iter()
        .flat_map(|m| m["toolCalls"].as_array().into_iter().flatten())
        .find(|c| c["id"] == call)?["name"]
        .as_str()
}

/// `n` with thousands separators, as the console writes numbers: 12345 → "12,345".
pub(crate) fn grouped(n: impl std::fmt::Display) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Tool-call arguments as the console shows them: pretty-printed JSON (two spaces) when they
/// parse, else as they are.
pub(crate) fn pretty(arguments: &str) -> String {
    serde_json::from_str::<Value>(arguments)
        .map(|v| serde_json::to_string_pretty(&v).unwrap())
        .unwrap_or_else(|_| arguments.to_string())
}

/// The mark of a tool message and its text: `shrunk` when the audit holds its seq, `cut` when
/// the cap cut it, `paged` when it is a page with a next one (the cursor: `nextCursor`, else
/// `nextOffset`, so read_file and list_dir pages too), else `whole`.
fn expected_mark(content: &str, shrunk: bool) -> (&'static str, String) {
    const CUT: &str = "…[truncated; full result is ";
    if shrunk {
        return ("shrunk", "shrunk on recovery".into());
    }
    if let Some(at) = content.find(CUT) {
        let bytes: String = content[at + CUT.len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        return ("cut", format!("cut from {} bytes", grouped(bytes)));
    }
    let page: Value = serde_json::from_str(content).unwrap_or_default();
    let next = &page["result"]["nextCursor"];
    let next = if next.is_null() {
        &page["result"]["nextOffset"]
    } else {
        next
    };
    match next {
        Value::String(cursor) if page["ok"] == true => {
            ("paged", format!("paged · next cursor {cursor}"))
        }
        Value::Number(offset) if page["ok"] == true => {
            ("paged", format!("paged · next cursor {offset}"))
        }
        _ => ("whole", "whole".into()),
    }
}

/// The transcript the console showed (`shown`, from flows.py) is the API's (`api`), message
/// by message: seq, role, size, content as text, tool calls, and each observation's mark
/// (`shrunk`: the seqs the audit holds).
pub(crate) fn assert_transcript(shown: &Value, api: &Value, shrunk: &[u64]) {
    let shown = shown.as_array().unwrap();
    let api = api.as_array().unwrap();
    assert_eq!(shown.len(), api.len(), "{shown:#?}");
    for (s, a) in shown.iter().zip(api) {
        let content = a["content"].as_str().unwrap();
        assert_eq!(s["seq"], a["seq"], "{s:#}");
        assert_eq!(s["role"], a["role"], "{s:#}");
        assert_eq!(s["roleText"], a["role"], "{s:#}");
        assert_eq!(s["content"], content, "{s:#}");
        assert_eq!(
            s["size"],
            format!("{} bytes", grouped(content.len())),
            "{s:#}"
        );
        let calls: Vec<Value> = a["toolCalls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let arguments = pretty(c["arguments"].as_str().unwrap());
                json!({"id": c["id"], "name": c["name"], "arguments": arguments})
            })
            .collect();
        assert_eq!(s["toolCalls"], json!(calls), "{s:#}");
        if a["role"] == "tool" {
            let seq = a["seq"].as_u64().unwrap();
            let (mark, text) = expected_mark(content, shrunk.contains(&seq));
            assert_eq!(s["mark"], mark, "{s:#}");
            assert_eq!(s["markText"], text, "{s:#}");
            assert_eq!(s["showOriginal"], mark == "shrunk", "{s:#}");
        } else {
            assert_eq!(s["mark"], Value::Null, "{s:#}");
        }
    }
}

/// A read_file observation of `content` (a file read whole).
fn read_observation(path: &str, content: &str) -> String {
    json!({"ok": true, "result": {
        "path": path, "size": content.len(), "offset": 0, "startLine": 1,
        "endLine": content.lines().count(), "totalLines": content.lines().count(),
        "contentBytes": content.len(), "content": content,
    }})
    .to_string()
}

/// An observation shrunk by context-window recovery (seeded in the store as the agent leaves
/// it) shows `shrunk`, and its original from the audit on demand, exactly.
#[test]
fn a_shrunk_observation_shows_its_original_from_the_audit() {
    let Some(browser) = Browser::get() else {
        return;
    };
    let setup = Setup::new();
    let log: String = (1..=40)
        .map(|i| format!("2026-11-30T01:00:{i:02}Z ERROR <job {i}> failed & retried\n"))
        .collect();
    let original = read_observation("app.log", &log);
    let listing = json!({"ok": true, "result": {"path": ".", "total": 1, "offset": 0, "count": 1,
        "entries": [{"name": "app.log", "kind": "file", "size": log.len()}]}})
    .to_string();
    let shrunk = sluice_runtime::call::observation::shrink_text(
        original.clone(),
        300,
        "pass lineCount, or startLine with offset (from nextLine and nextOffset)",
    );
    let reason = "a request including this result exceeded the model's context window: prompt is too long: 9000 tokens > 8000 maximum";
    let store = setup.store();
    let call = |id: &str, name: &str, arguments: &str| ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    };
    let id = block(async {
        let session = store.create_session().await.unwrap();
        let id = session.id;
        for message in [
            Message::user("What failed in app.log?", now_rfc3339()),
            Message::assistant(
                "Listing `.`.",
                vec![call("call_1", "list_dir", r#"{"path":"."}"#)],
                now_rfc3339(),
            ),
            Message::tool("call_1", listing.clone(), now_rfc3339()),
            Message::assistant(
                "Reading `app.log`.",
                vec![call("call_2", "read_file", r#"{"path":"app.log"}"#)],
                now_rfc3339(),
            ),
            Message::tool("call_2", original.clone(), now_rfc3339()),
        ] {
            store.append(&id, &message).await.unwrap();
        }
        store
            .replace_content(&id, 5, &shrunk, reason)
            .await
            .unwrap();
        id
    });
    drop(store);
    let serve = setup.serve("", &[]);
    let facts = browser.flow("shrunk", &serve, json!({ "session": id }));
    let api = serve.get(&format!("/sessions/{id}"));
    assert_eq!(api["messages"][4]["content"], shrunk.as_str());
    assert_transcript(&facts["messages"], &api["messages"], &[5]);
    assert_eq!(facts["messages"][2]["mark"], "whole");
    assert_eq!(facts["messages"][4]["mark"], "shrunk");
    assert_eq!(facts["originalBefore"], 0, "the original only on demand");
    assert_eq!(facts["originalSeq"], 5);
    assert_eq!(facts["original"], original.as_str());
}

/// A file holding markup, read by the scripted model: the transcript shows it as characters;
/// no element of it exists and nothing of it ran.
#[test]
fn an_xss_payload_in_a_read_file_renders_as_text() {
    let Some(browser) = Browser::get() else {
        return;
    };
    let setup = Setup::new();
    setup.file("page.html", &format!("{PAYLOAD}\n"));
    let serve = setup.serve("", &[]);
    let id = serve.create_session();
    let ended = serve.prompt(&id, "What failed?");
    assert_eq!(ended["status"], "completed", "{ended:#}");
    let api = serve.settled(&id);
    // The scripted model read the file (the search found `onerror`).
    let reads = (1..=api["messages"].as_array().unwrap().len() as u64)
        .filter(|seq| tool_of(&api["messages"], *seq) == Some("read_file"))
        .count();
    assert_eq!(reads, 1, "{api:#}");

    let facts = browser.flow("xss", &serve, json!({ "session": id }));
    assert_eq!(facts["pwned"], "undefined", "{facts:#}");
    assert_eq!(facts["img"], 0);
    assert_eq!(facts["script"], 0);
    // The console's own script, from its own origin, is the only one.
    let scripts = facts["allScripts"].as_array().unwrap();
    assert_eq!(scripts.len(), 1, "{scripts:?}");
    let src = scripts[0].as_str().unwrap();
    assert!(
        src.starts_with("/console/") && src.ends_with("/app.js"),
        "{src}"
    );
    let contents = facts["contents"].as_array().unwrap();
    assert!(
        contents
            .iter()
            .any(|c| c.as_str().unwrap().contains(PAYLOAD)),
        "the payload as characters in {contents:#?}"
    );
    assert_transcript(&facts["messages"], &api["messages"], &[]);
}

/// A session of 10,000 messages (seeded before the server starts) shows its first screen,
/// 100 messages, in under a second, timed in the page from the navigation to the first
/// message shown with the view ready; the next page is the next 100.
#[test]
fn ten_thousand_messages_show_their_first_screen_in_under_a_second() {
    let Some(browser) = Browser::get() else {
        return;
    };
    let setup = Setup::new();
    let store = setup.store();
    let id = block(async {
        let id = store.create_session().await.unwrap().id;
        for i in 1..=10_000u32 {
            let text = format!("message {i}: the operator and the model take turns");
            let message = if i % 2 == 1 {
                Message::user(text, now_rfc3339())
            } else {
                Message::assistant(text, Vec::new(), now_rfc3339())
            };
            store.append(&id, &message).await.unwrap();
        }
        id
    });
    drop(store);
    let serve = setup.serve("", &[]);
    let facts = browser.flow("long", &serve, json!({ "session": id }));
    let ms = facts["ms"].as_f64().unwrap();
    #[allow(clippy::print_stderr)]
    {
        eprintln!("the first screen of 10,000 messages: {ms:.1} ms");
    }
    assert!(ms < 1000.0, "the first screen took {ms} ms");
    assert_eq!(facts["range"], "messages 1–100 of 10,000", "{facts:#}");
    assert_eq!(facts["shown"], json!((1..=100).collect::<Vec<u32>>()));
    assert_eq!(facts["prevDisabled"], true);
    assert_eq!(facts["nextRange"], "messages 101–200 of 10,000");
    assert_eq!(facts["nextShown"], json!((101..=200).collect::<Vec<u32>>()));
}
