//! Approvals: two sessions each wait for a destructive call (read_file, made destructive by
//! its policy) asked for by a replay model; the console approves one and denies the other,
//! and each resumed run stores what the decision says.

use serde_json::{Value, json};

use super::browser::Browser;
use super::server::Setup;

/// The replay script: each session's first request asks to read note.txt (`call_1`, then
/// `call_2`); the resumed runs answer.
const SCRIPT: &str = r#"{"content":"Reading note.txt.","toolCalls":[{"name":"read_file","arguments":{"path":"note.txt"}}]}
{"content":"Reading note.txt.","toolCalls":[{"name":"read_file","arguments":{"path":"note.txt"}}]}
{"content":"Answered."}
{"content":"Answered."}
"#;

const NOTE: &str = "hello from note.txt\n";

/// The tool message of session `session` (the API's) answering `call`.
fn observation<'a>(session: &'a Value, call: &str) -> &'a str {
    session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["toolCallId"] == call)
        .unwrap_or_else(|| panic!("an observation of {call} in {session:#}"))["content"]
        .as_str()
        .unwrap()
}

#[test]
fn one_destructive_call_is_approved_and_another_denied() {
    let Some(browser) = Browser::get() else {
        return;
    };
    let setup = Setup::new();
    setup.file("note.txt", NOTE);
    let script = setup.beside("approvals.jsonl", SCRIPT);
    let model = format!("replay:{}", script.display());
    let serve = setup.serve(
        "[tools.read_file]\ndestructive = true\n",
        &["--model", &model],
    );
    let approve = serve.create_session();
    let ended = serve.prompt(&approve, "Read note.txt.");
    assert_eq!(ended["status"], "awaiting_approval", "{ended:#}");
    let deny = serve.create_session();
    let ended = serve.prompt(&deny, "Read note.txt.");
    assert_eq!(ended["status"], "awaiting_approval", "{ended:#}");

    let facts = browser.flow(
        "approvals",
        &serve,
        json!({ "approve": approve, "deny": deny }),
    );
    let mut listed = facts["listed"].as_array().unwrap().clone();
    listed.sort_by_key(|a| a["callId"].as_str().unwrap().to_string());
    let arguments = "{\n  \"path\": \"note.txt\"\n}";
    assert_eq!(
        listed,
        [
            json!({"session": approve, "callId": "call_1", "tool": "read_file", "arguments": arguments}),
            json!({"session": deny, "callId": "call_2", "tool": "read_file", "arguments": arguments}),
        ],
        "{facts:#}"
    );
    assert_eq!(facts["emptyShown"], 0);

    let approved = serve.settled(&approve);
    let denied = serve.settled(&deny);
    assert_eq!(
        facts["results"]["approve"],
        format!(
            "approved; run {} resumed",
            approved["run"]["runId"].as_str().unwrap()
        )
    );
    assert_eq!(
        facts["results"]["deny"],
        format!(
            "denied; run {} resumed",
            denied["run"]["runId"].as_str().unwrap()
        )
    );
    assert_eq!(approved["session"]["status"], "completed", "{approved:#}");
    assert_eq!(denied["session"]["status"], "completed", "{denied:#}");
    let read: Value = serde_json::from_str(observation(&approved, "call_1")).unwrap();
    assert_eq!(read["ok"], true, "{read:#}");
    assert_eq!(read["result"]["content"], NOTE);
    let refused: Value = serde_json::from_str(observation(&denied, "call_2")).unwrap();
    assert_eq!(
        refused,
        json!({"ok": false, "error": "the operator denied this call of read_file; do not retry it", "kind": "denied"})
    );
}
