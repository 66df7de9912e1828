//! `sluice test` with recorded HTTP responses (`[[http]]`, docs/authoring.md#tests): the C
//! `fetch` example (guest-examples/c-fetch, built by guest-examples/build.sh into
//! `target/guest-examples/c_fetch.wasm`) run through `cases::load_tools` and `cases::run` as
//! `sluice test` runs it, under a policy granting `api.example.com` only. Nothing resolves
//! `api.example.com` or reaches the network: every answer is the host's, from the plan.
//!
//! Each case's exact observation: a recorded body, a `body_file` with its status, a request
//! no recording matches, a recorded host the policy does not grant, a recording past
//! `http_max_response_bytes`, a case's own `http` and an empty one. Without the component the
//! test prints `skipped:` and passes, except under `CI=true`, where it fails.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sluice_kit::cases::{self, TestPlan};

/// `target/guest-examples/c_fetch.wasm` when it is built; else a `skipped:` line (a failure
/// under `CI=true`) and `None`.
fn c_fetch() -> Option<PathBuf> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/guest-examples/c_fetch.wasm");
    if path.is_file() {
        return Some(path);
    }
    let why = "target/guest-examples/c_fetch.wasm is not built (run guest-examples/install-toolchains.sh && guest-examples/build.sh c-fetch)";
    sluice_test_support::skip_or_fail(why);
    None
}

/// The recorded JSON document.
const PARIS: &str = r#"{"city":"paris","sky":"clear"}"#;

/// What the tool answers for a page: `fetch`'s result record (no `contentType` when the
/// response has none).
fn page(url: &str, status: u16, content_type: Option<&str>, body: &str) -> Value {
    let mut result = serde_json::Map::new();
    result.insert("url".into(), json!(url));
    result.insert("status".into(), json!(status));
    if let Some(c) = content_type {
        result.insert("contentType".into(), json!(c));
    }
    result.insert("bytes".into(), json!(body.len()));
    result.insert("text".into(), json!(body));
    result.insert("cut".into(), json!(false));
    json!({"ok": true, "result": result})
}

/// A tool error.
fn error(message: &str, kind: &str) -> Value {
    json!({"ok": false, "error": message, "kind": kind})
}

/// A `[[case]]` calling `c_fetch` on `url` that expects `observation` exactly, with `extra`
/// keys (a case's own `http`).
fn case(name: &str, url: &str, observation: &Value, extra: &str) -> String {
    format!(
        "[[case]]\nname = {name:?}\ntool = \"c_fetch\"\nargs = {{ url = {url:?} }}\nexpect = {}\n{extra}\n",
        // A JSON string is a TOML basic string.
        Value::String(observation.to_string())
    )
}

#[test]
fn recorded_responses_answer_the_calls_in_place_of_the_network() {
    let Some(wasm) = c_fetch() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("sluice.toml"),
        format!(
            "builtins = []\n\n[tools.c_fetch]\ncomponent = {:?}\nhttp = [\"api.example.com\"]\nhttp_methods = [\"GET\"]\nhttp_max_response_bytes = 1024\nprefix = \"c\"\nmemory_mib = 16\n",
            wasm.display().to_string()
        ),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("fixtures")).unwrap();
    std::fs::write(dir.path().join("fixtures/gone.txt"), "no such city\n").unwrap();

    let paris = "https://api.example.com/weather?city=paris";
    let oslo = "https://api.example.com/weather?city=oslo";
    let recorded = "GET https://api.example.com/weather?city=paris, GET https://api.example.com/weather?city=atlantis, GET https://evil.example/weather, GET https://api.example.com/big";
    let mut plan = format!(
        r#"
[[http]]
url = "{paris}"
headers = {{ content-type = "application/json" }}
body = '{PARIS}'

[[http]]
url = "https://api.example.com/weather?city=atlantis"
status = 404
headers = {{ content-type = "text/plain; charset=utf-8" }}
body_file = "fixtures/gone.txt"

[[http]]
url = "https://evil.example/weather"
body = "never served"

[[http]]
url = "https://api.example.com/big"
body = "{big}"

"#,
        big = "x".repeat(2000)
    );
    plan += &case(
        "a recorded body",
        paris,
        &page(paris, 200, Some("application/json"), PARIS),
        "",
    );
    plan += &case(
        "a body_file and its status",
        "https://api.example.com/weather?city=atlantis",
        &page(
            "https://api.example.com/weather?city=atlantis",
            404,
            Some("text/plain; charset=utf-8"),
            "no such city\n",
        ),
        "",
    );
    plan += &case(
        "a request no recording matches",
        oslo,
        &error(
            &format!(
                "the tool's GET request to {oslo} was refused: no recording in [[http]] of tests.toml matches it (it records {recorded}); under recordings the host sends no request to the network"
            ),
            "http-denied",
        ),
        "",
    );
    plan += &case(
        "a recorded host the policy does not grant",
        "https://evil.example/weather",
        &error(
            "the tool's GET request to evil.example:443 was refused: evil.example:443 is not in its policy key http (it allows api.example.com)",
            "http-denied",
        ),
        "",
    );
    plan += &case(
        "a recording past http_max_response_bytes",
        "https://api.example.com/big",
        &error(
            "the response to the tool's GET request to api.example.com:443 is larger than 1024 bytes, the most one response may have (policy key http_max_response_bytes); it was cut there",
            "resource-limit",
        ),
        "",
    );
    plan += &case(
        "a case's own recordings",
        oslo,
        &page(oslo, 200, None, "snow"),
        &format!("http = [{{ url = {oslo:?}, body = \"snow\" }}]"),
    );
    plan += &case(
        "a case without recordings",
        paris,
        &error(
            &format!(
                "the tool's GET request to {paris} was refused: no recording in the `http` of case `a case without recordings` matches it (it records no request); under recordings the host sends no request to the network"
            ),
            "http-denied",
        ),
        "http = []",
    );
    // After a case of its own, the plan's recordings are back.
    plan += &case(
        "the plan's again",
        paris,
        &page(paris, 200, Some("application/json"), PARIS),
        "",
    );
    std::fs::write(dir.path().join("tests.toml"), &plan).unwrap();

    let plan = TestPlan::load(dir.path()).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let toolbox = runtime.block_on(cases::load_tools(&plan)).unwrap();
    let mut lines = Vec::new();
    let summary = runtime.block_on(cases::run(&plan, &toolbox, false, |o| {
        lines.push(o.to_string());
    }));
    assert_eq!(
        (summary.passed, summary.failed),
        (8, 0),
        "\n{}",
        lines.join("\n")
    );

    // The same plan with a wrong expectation fails, showing what the recording gave.
    let mut wrong = plan.clone();
    wrong.cases.truncate(1);
    wrong.cases[0].expect = Some(Value::String("{}".into()));
    let mut lines = Vec::new();
    let summary = runtime.block_on(cases::run(&wrong, &toolbox, false, |o| {
        lines.push(o.to_string());
    }));
    assert_eq!((summary.passed, summary.failed), (0, 1));
    assert!(lines[0].contains(r#"\"sky\":\"clear\""#), "{}", lines[0]);
}
