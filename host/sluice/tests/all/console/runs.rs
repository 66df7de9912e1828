//! Signing in, a run started from the console and watched live to its end, its transcript with
//! the paged reads marked, a slow run cancelled, and a token refused on an API call.

use serde_json::{Value, json};

use super::browser::Browser;
use super::server::Setup;
use super::transcripts::{assert_transcript, tool_of};

/// A log of 200 lines (about 12 KB), one in ten an error: with a 1,024-byte cap the scripted
/// model's search and reads of it page.
fn app_log() -> String {
    (1..=200)
        .map(|i| {
            if i % 10 == 0 {
                format!(
                    "2026-11-30T01:{:02}:{:02}Z ERROR worker-{} job {i} failed: connection reset\n",
                    i / 60,
                    i % 60,
                    i % 7
                )
            } else {
                format!(
                    "2026-11-30T01:{:02}:{:02}Z INFO worker-{} job {i} done in {} ms\n",
                    i / 60,
                    i % 60,
                    i % 7,
                    i * 3
                )
            }
        })
        .collect()
}

/// A wrong token is refused with the server's 401; the right one shows the sessions, and is
/// kept in sessionStorage only.
#[test]
fn signing_in_refuses_a_wrong_token_and_accepts_the_right_one() {
    let Some(browser) = Browser::get() else {
        return;
    };
    let serve = Setup::new().serve("", &[]);
    let facts = browser.flow("signin", &serve, json!({}));
    assert_eq!(facts["tokenType"], "password", "{facts:#}");
    let refused = facts["refused"].as_str().unwrap();
    assert!(refused.contains("401"), "{refused}");
    assert_eq!(facts["refusedView"], "signin");
    assert_eq!(facts["refusedStored"], Value::Null);
    assert_eq!(facts["hash"], "#/sessions");
    assert_eq!(facts["stored"], super::server::TOKEN);
    assert_eq!(facts["cookie"], "");
    assert_eq!(facts["local"], 0);
    assert!(
        !facts["url"]
            .as_str()
            .unwrap()
            .contains(super::server::TOKEN)
    );
    assert_eq!(
        facts["nav"],
        json!(["#/sessions", "#/approvals", "#/new", "#/tools", "#/config"])
    );
    assert_eq!(facts["signout"], true);
}

/// A prompt from #/new with the default (scripted) model: the live view shows the run's
/// events as the API has them until it completes; then the transcript shows every message
/// as the API has it, and each paged read marked with its next cursor.
#[test]
fn a_run_is_watched_live_then_its_paged_reads_are_marked() {
    let Some(browser) = Browser::get() else {
        return;
    };
    let setup = Setup::new();
    setup.file("app.log", &app_log());
    let serve = setup.serve("[agent]\nmax_tool_result_bytes = 1024\n", &[]);
    let facts = browser.flow(
        "live",
        &serve,
        json!({"prompt": "What failed in the logs?"}),
    );
    assert_eq!(facts["models"], json!(["scripted"]), "{facts:#}");
    assert_eq!(facts["model"], "scripted");
    assert_eq!(facts["status"], "completed");
    assert_eq!(facts["cancelDisabled"], true);
    let session = facts["session"].as_str().unwrap();
    let run = facts["run"].as_str().unwrap();
    let events: Vec<&str> = facts["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert_eq!(events, serve.event_types(session, run));
    for kind in ["model_request", "tool_started", "tool_finished", "finished"] {
        assert!(events.contains(&kind), "{kind} in {events:?}");
    }
    assert_eq!(events.first(), Some(&"started"));
    assert_eq!(events.last(), Some(&"finished"));

    let api = serve.settled(session);
    assert_eq!(api["session"]["status"], "completed");

    let facts = browser.flow("paged", &serve, json!({ "session": session }));
    assert_eq!(facts["sessionStatus"], "completed", "{facts:#}");
    let count = api["messages"].as_array().unwrap().len();
    assert_eq!(facts["range"], format!("messages 1–{count} of {count}"));
    assert_transcript(&facts["messages"], &api["messages"], &[]);
    // The scripted model read app.log a page at a time, three pages of a longer file: each
    // marked with the offset the next page starts at.
    let reads: Vec<&Value> = facts["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| tool_of(&api["messages"], m["seq"].as_u64().unwrap()) == Some("read_file"))
        .collect();
    assert_eq!(reads.len(), 3, "{reads:#?}");
    for read in reads {
        let content: Value = serde_json::from_str(read["content"].as_str().unwrap()).unwrap();
        let next = &content["result"]["nextOffset"];
        assert!(next.is_u64(), "{content:#}");
        assert_eq!(read["mark"], "paged", "{read:#}");
        assert_eq!(read["markText"], format!("paged · next cursor {next}"));
    }
}

/// A replay model that takes a minute to answer: the run started from the console is
/// cancelled from its live view and ends `aborted`.
#[test]
fn a_slow_run_is_cancelled_from_its_live_view() {
    let Some(browser) = Browser::get() else {
        return;
    };
    let setup = Setup::new();
    let script = setup.beside(
        "slow.jsonl",
        "{\"content\":\"This takes a minute.\",\"delayMs\":60000}\n{\"content\":\"Done.\"}\n",
    );
    let model = format!("replay:{}", script.display());
    let serve = setup.serve("", &["--model", &model]);
    let facts = browser.flow("cancel", &serve, json!({"prompt": "Take your time."}));
    assert_eq!(facts["statusBefore"], "running", "{facts:#}");
    assert_eq!(facts["status"], "aborted");
    assert_eq!(facts["cancelDisabled"], true);
    let events = facts["events"].as_array().unwrap();
    assert_eq!(events.first().unwrap(), "started");
    assert_eq!(events.last().unwrap(), "finished");
    let hash = facts["hash"].as_str().unwrap();
    let session = hash
        .strip_prefix("#/sessions/")
        .and_then(|rest| rest.split('/').next())
        .unwrap();
    let api = serve.settled(session);
    assert_eq!(api["session"]["status"], "aborted", "{api:#}");
}

/// A token refused on an API call (replaced in sessionStorage behind the console's back)
/// brings back the sign-in form with the 401.
#[test]
fn a_token_refused_on_an_api_call_signs_out() {
    let Some(browser) = Browser::get() else {
        return;
    };
    let serve = Setup::new().serve("", &[]);
    let facts = browser.flow("wrong-token", &serve, json!({}));
    assert_eq!(facts["view"], "signin", "{facts:#}");
    let error = facts["error"].as_str().unwrap();
    assert!(error.contains("401"), "{error}");
}
