//! Code mode (docs/code-mode.md): `run_script` through the real components. A script's tool
//! calls take the model's path (policy, limits, key scan), its limits end it with the key
//! that changes them, and only its answer is its observation.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_runtime::{CallOptions, CallStatus};
use sluice_tests::Sandbox;
use sluice_tests::logs::{COUNT_LEVELS, levelled_log};
use tokio_util::sync::CancellationToken;

use super::cache;

/// The cap of these tests: the default.
const CAP: u32 = 65_536;

fn sandbox() -> Sandbox {
    Sandbox::new(cache(), CAP)
}

/// Runs `script` and returns the observation as JSON, checking it is within the cap.
fn run(sb: &Sandbox, script: &str) -> (CallStatus, Value) {
    let obs = sb.checked("run_script", &json!({ "script": script }));
    let value = serde_json::from_str(obs.text()).unwrap_or_else(|e| panic!("{e}: {}", obs.text()));
    (obs.status(), value)
}

/// The script's result, which must have succeeded.
fn result(sb: &Sandbox, script: &str) -> Value {
    let (status, obs) = run(sb, script);
    assert_eq!(status, CallStatus::Ok, "{obs}");
    obs["result"].clone()
}

#[test]
fn a_script_pages_a_large_log_and_only_its_counts_are_the_observation() {
    // Some 25 pages of 2 MiB split into lines, in 64 MiB: the garbage of each page is
    // collected (it once piled up past 1 GiB over a 1 GiB log).
    let sb = Sandbox::with_policy(cache(), CAP, |p| {
        p.timeout = Duration::from_secs(120);
        p.memory_bytes = 64 << 20;
    });
    // About 50 MB.
    let (text, [errors, warns, infos]) = levelled_log(740_000);
    assert!(text.len() > 50_000_000, "{}", text.len());
    sb.write("app.log", &text);
    let (status, obs) = run(&sb, COUNT_LEVELS);
    assert_eq!(status, CallStatus::Ok, "{obs}");
    let r = &obs["result"];
    assert_eq!(
        r["result"]["counts"],
        json!({"ERROR": errors, "WARN": warns, "INFO": infos})
    );
    // Pages of half the inner cap (4 MiB): about 25 of them, not the 1,600 of the cap.
    let pages = r["result"]["pages"].as_u64().unwrap();
    let expected = text.len().div_ceil(2 << 20) as u64;
    assert!(pages >= expected && pages <= expected + 2, "{pages} pages");
    assert_eq!(r["calls"].as_u64().unwrap(), pages);
    assert!(r["innerBytes"].as_u64().unwrap() > text.len() as u64);
    assert_eq!(r["log"], "");
}

#[test]
fn a_script_greps_and_aggregates_by_worker() {
    let sb = sandbox();
    let (text, [errors, ..]) = levelled_log(20_000);
    sb.write("logs/app.log", &text);
    let script = r#"
      const byWorker = {};
      let cursor;
      for (;;) {
        const page = tools.call("grep_files", cursor ? {pattern: " ERROR ", path: "logs", cursor}
                                                     : {pattern: " ERROR ", path: "logs"});
        if (!page.ok) return page;
        for (const m of page.result.results) {
          const w = m.text.match(/worker-\d+/)[0];
          byWorker[w] = (byWorker[w] || 0) + 1;
        }
        if (page.result.nextCursor == null) break;
        cursor = page.result.nextCursor;
      }
      console.log("workers:", Object.keys(byWorker).length);
      return byWorker;
    "#;
    let r = result(&sb, script);
    let counts = r["result"].as_object().unwrap();
    assert_eq!(
        counts.values().map(|v| v.as_u64().unwrap()).sum::<u64>(),
        errors as u64
    );
    // Every tenth line is an ERROR, of worker i % 16: the even workers only.
    assert_eq!(counts.len(), 8);
    assert_eq!(r["log"], "workers: 8\n");
}

#[test]
fn a_key_file_stays_refused_and_an_unknown_tool_is_unknown_inside_a_script() {
    let sb = sandbox();
    sb.write(
        "id.txt",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----\n",
    );
    let r = result(
        &sb,
        r#"return [tools.call("read_file", {path: "id.txt"}), tools.call("write_file", {path: "x"})];"#,
    );
    let [key, unknown] = [&r["result"][0], &r["result"][1]];
    assert_eq!(key["ok"], false);
    assert_eq!(key["kind"], "key-material");
    assert!(!r.to_string().contains("MIIEowIBAAKCAQEA7"));
    assert_eq!(unknown["error"], "unknown_tool");
    assert_eq!(unknown["name"], "write_file");
}

#[test]
fn a_script_cannot_start_another_script() {
    let sb = sandbox();
    let r = result(
        &sb,
        r#"return tools.call("run_script", {script: "return 1"});"#,
    );
    assert_eq!(r["result"]["ok"], false);
    assert_eq!(r["result"]["kind"], "denied");
    assert_eq!(
        r["result"]["error"],
        "a script cannot call run_script: run_script runs scripts, and one script cannot start another"
    );
}

#[test]
fn an_endless_loop_ends_at_the_timeout_and_the_next_call_works() {
    let sb = Sandbox::with_policy(cache(), CAP, |p| p.timeout = Duration::from_millis(500));
    let started = Instant::now();
    let (status, obs) = run(&sb, "while (true) {}");
    assert_eq!(status, CallStatus::ToolError);
    assert_eq!(obs["kind"], "timeout", "{obs}");
    // At least the 500 ms (how soon after it a guest stops is measured in host_limits.rs;
    // here the first call may also wait for the compile).
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert!(
        obs["error"]
            .as_str()
            .unwrap()
            .starts_with("the tool ran past its timeout of 500 ms"),
        "{obs}"
    );
    assert_eq!(result(&sb, "return 1 + 1")["result"], 2);
}

#[test]
fn allocating_without_end_hits_the_memory_limit() {
    let sb = Sandbox::with_policy(cache(), CAP, |p| p.memory_bytes = 64 << 20);
    let (status, obs) = run(
        &sb,
        "const a = []; for (;;) a.push('x'.repeat(1 << 16) + a.length);",
    );
    assert_eq!(status, CallStatus::ToolError);
    assert_eq!(obs["kind"], "memory-limit", "{obs}");
    assert!(
        obs["error"].as_str().unwrap().contains("memory_mib"),
        "{obs}"
    );
}

#[test]
fn the_call_limit_ends_a_script_naming_its_key() {
    let sb = sandbox();
    sb.write("a.txt", "a\n");
    let (status, obs) = run(
        &sb,
        r#"for (let i = 0; i < 2000; i++) tools.call("list_dir", {}); return "done";"#,
    );
    assert_eq!(status, CallStatus::ToolError);
    assert_eq!(obs["kind"], "resource-limit", "{obs}");
    assert_eq!(
        obs["error"],
        "the script made 1000 tool calls and started another; a script may make at most 1000 (code_mode.max_inner_calls): do more per call (larger pages, a narrower grep), or raise the limit"
    );
}

/// A result of 100 MB, at the default memory: the script keeps the first 8 MiB of its JSON
/// text (under what the host lifts from a tool); that cut text is no longer JSON, so the host
/// gives it as a JSON string;
/// the cap cuts that with the usual marker, and `resultBytes`, before the result, says how
/// long the whole was.
#[test]
fn a_huge_result_is_cut_to_the_cap_with_the_marker() {
    // The default memory: a returned string is quoted without another whole copy.
    let sb = sandbox();
    let obs = sb.call(
        "run_script",
        &json!({"script": "return 'x'.repeat(100 * 1000 * 1000);"}),
    );
    assert_eq!(obs.status(), CallStatus::Ok, "{}", obs.text());
    assert!(obs.truncated());
    assert!(obs.text().len() <= CAP as usize);
    assert!(
        obs.text().starts_with(
            r#"{"ok":true,"result":{"calls":0,"innerBytes":0,"resultBytes":100000002,"result":"\"xxx"#
        ),
        "{}",
        &obs.text()[..200]
    );
    let tail = &obs.text()[obs.text().len() - 120..];
    assert!(tail.contains("…[truncated; full result is "), "{tail}");
}

#[test]
fn a_syntax_error_names_the_line() {
    let sb = sandbox();
    let (status, obs) = run(&sb, "const a = 1;\nconst b = ;\nreturn a;");
    assert_eq!(status, CallStatus::ToolError);
    assert_eq!(obs["kind"], "syntax-error", "{obs}");
    assert!(obs["error"].as_str().unwrap().contains("line 2"), "{obs}");
    let (_, obs) = run(&sb, "\n\nthrow new Error('boom');");
    assert_eq!(obs["kind"], "uncaught-error", "{obs}");
    assert!(obs["error"].as_str().unwrap().contains("boom"), "{obs}");
}

#[test]
fn cancelling_stops_a_running_script() {
    let sb = Sandbox::with_policy(cache(), CAP, |p| p.timeout = Duration::from_secs(60));
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        stop.cancel();
    });
    let options = CallOptions::new(CAP).with_cancel(cancel);
    let started = Instant::now();
    let obs = sb.block_on(sb.toolbox.call_with(
        "run_script",
        &json!({"script": "for (;;) {}"}).to_string(),
        &options,
    ));
    assert_eq!(obs.status(), CallStatus::Cancelled, "{}", obs.text());
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(result(&sb, "return 'after'")["result"], "after");
}

#[test]
fn sixteen_scripts_run_at_once() {
    let sb = sandbox();
    for i in 0..16 {
        sb.write(
            &format!("f{i}.txt"),
            format!("{}\n", "line\n".repeat(i + 1)),
        );
    }
    let calls = (0..16).map(|i| {
        let toolbox = sb.toolbox.clone();
        let script = format!(
            r#"const r = tools.call("read_file", {{path: "f{i}.txt"}}); return r.result.content.split("\n").length;"#
        );
        async move {
            toolbox
                .call("run_script", &json!({ "script": script }).to_string(), CAP)
                .await
        }
    });
    let observations = sb.block_on(futures_util::future::join_all(calls));
    for (i, obs) in observations.iter().enumerate() {
        let v: Value = serde_json::from_str(obs.text()).unwrap();
        assert_eq!(v["result"]["result"], i + 3, "{v}");
    }
}

#[test]
fn the_record_of_a_script_holds_its_program_and_each_call() {
    let sb = sandbox();
    sb.write("a.txt", "hello\n");
    let script = r#"tools.call("read_file", {path: "a.txt"}); tools.call("nope", {}); return 1;"#;
    let obs = sb.call("run_script", &json!({ "script": script }));
    let record = obs.script().expect("a script record");
    assert_eq!(record.program, script);
    let calls: Vec<(&str, &str, usize)> = record
        .calls
        .iter()
        .map(|c| (c.tool.as_str(), c.arguments.as_str(), c.bytes))
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].0, "read_file");
    assert_eq!(calls[0].1, r#"{"path":"a.txt"}"#);
    assert_eq!(record.calls[0].status, CallStatus::Ok);
    assert_eq!(record.calls[1].status, CallStatus::UnknownTool);
    // The inner observations are in the record's sizes, never in the observation.
    assert!(!obs.text().contains("hello"));
    assert!(
        sb.call("read_file", &json!({"path": "a.txt"}))
            .script()
            .is_none()
    );
}

/// A script sees no wall clock: `Date` reads the Unix epoch (its timeout runs on the host's
/// clock all the same).
#[test]
fn a_script_cannot_tell_the_time() {
    let sb = sandbox();
    let r = result(&sb, "return [Date.now(), new Date().getUTCFullYear()];");
    assert_eq!(r["result"], json!([0, 1970]));
}
