//! Rows 15 and 16: what a tool author and an MCP client wait for, through the `sluice`
//! binary built beside this one.
//!
//! - Row 15, edit → first working call: a kit project per language (`sluice new`, then its
//!   first build and call, untimed), then each round edits the source (an error message gets
//!   `(edit N)`), runs `sluice build` and `sluice call`s the tool on a missing file, whose
//!   observation must carry the edit. The call compiles the new component (its hash
//!   changed); the compile's time is the one the binary logs. A language whose toolchain is
//!   missing is skipped with the build script's reason.
//! - Row 16, a cold `sluice mcp`: an empty compile cache (`SLUICE_CACHE_DIR`) and the Python
//!   and JavaScript guest examples with the policies of tests/mcp/cold_start.rs (each over its
//!   own sample); the time from the start to `initialize` answered, to `tools/list` answered,
//!   and to the first call of each interpreter tool answered (both sent at once, right after
//!   the list); then warm calls of each right away, and again once the log says the code
//!   that is kept (`compiled`, Cranelift's) is there for both. 16c: each line the process
//!   logged about an interpreter component, and the built-ins' compiles, as measured.
//!
//! Compile times are the ones the binary logs (compile_log.rs), each with its message, so
//! rows 15 and 16c show whatever the engine does (a baseline compiler's first code, then
//! Cranelift's). This crate does not depend on wasmtime: a Winch-against-Cranelift
//! comparison of the same bytes outside the binary would be a row of its own, compiling with
//! each `wasmtime::Config`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::compile_log::{COMPILE_LOG, KEPT, LogLine, parse_all};
use crate::process::McpChild;
use crate::{Bench, Row, median, millis, ratio, sibling_binary};

/// The repository (this crate's parent directory).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `PATH` with the toolchains `guest-examples/install-toolchains.sh` installs under
/// `target/guest-examples/` (and under `$CARGO_TARGET_DIR/guest-examples/`) first.
fn toolchain_path() -> anyhow::Result<OsString> {
    let mut targets: Vec<PathBuf> = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    targets.push(repo().join("target"));
    let own = std::env::var_os("PATH").unwrap_or_default();
    let first = targets.into_iter().flat_map(|t| {
        let out = t.join("guest-examples");
        [out.join("venv/bin"), out.join("bin")]
    });
    Ok(std::env::join_paths(
        first.chain(std::env::split_paths(&own)),
    )?)
}

/// The kit's languages: `--lang`, the name the row gives it, and the source file edited.
const LANGUAGES: [(&str, &str, &str); 4] = [
    ("c", "C", "tool.c"),
    ("rust", "Rust", "src/lib.rs"),
    ("js", "JavaScript", "tool.js"),
    ("python", "Python", "app.py"),
];

/// The string every template's source holds in its not-found error, which an edit changes.
const EDITED: &str = "no such file or directory";

/// Row 15: edit → first working call, per language.
pub(crate) fn edit_to_call(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let sluice = sibling_binary("sluice")?;
    let work = bench.work.join("authoring");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let path = toolchain_path()?;
    let rounds = if bench.quick { 1 } else { 3 };
    let mut rows = Vec::new();
    for (lang, language, source) in LANGUAGES {
        let what = format!(
            "15. edit → first working call, {language} kit project (`sluice build` + `sluice call`)"
        );
        match edit_rounds(&sluice, &work, &path, lang, source, rounds) {
            Ok(Rounds::Skipped(reason)) => {
                eprintln!("skipped {language}: {reason}");
                rows.push(not_measured(what, &format!("skipped: {reason}")));
            }
            Ok(Rounds::Measured {
                first_build,
                build,
                call,
                compile,
            }) => {
                let total = build + call;
                rows.push(Row {
                    what,
                    sluice: format!("{:.2} s", total.as_secs_f64()),
                    baseline: format!(
                        "build {:.2} s + call {:.2} s (compile {}); the project's first build {:.1} s",
                        build.as_secs_f64(),
                        call.as_secs_f64(),
                        compile,
                        first_build.as_secs_f64()
                    ),
                    ratio: "—".into(),
                    target: format!("(reported) median of {rounds}"),
                });
            }
            Err(e) => rows.push(not_measured(what, &format!("{e:#}"))),
        }
    }
    Ok(rows)
}

fn not_measured(what: String, why: &str) -> Row {
    Row {
        what,
        sluice: "—".into(),
        baseline: "—".into(),
        ratio: "—".into(),
        target: format!("not measured: {why}"),
    }
}

enum Rounds {
    /// The toolchain is missing: the build script's reason.
    Skipped(String),
    /// Medians of the rounds; `compile` as the log gave it.
    Measured {
        first_build: Duration,
        build: Duration,
        call: Duration,
        compile: String,
    },
}

/// `sluice new` of a `lang` project, its first build and call, then `rounds` of edit, build
/// and call.
fn edit_rounds(
    sluice: &Path,
    work: &Path,
    path: &OsString,
    lang: &str,
    source: &str,
    rounds: usize,
) -> anyhow::Result<Rounds> {
    let dir = work.join(format!("kit-{lang}"));
    let run = |args: &[&str]| -> anyhow::Result<std::process::Output> {
        Ok(Command::new(sluice)
            .args(args)
            .current_dir(&dir)
            .env("PATH", path)
            // Rust: one target directory for the project's builds, kept between rounds.
            .env("CARGO_TARGET_DIR", work.join("cargo"))
            .env("SLUICE_CACHE_DIR", work.join(format!("cache-{lang}")))
            .env("SLUICE_LOG", COMPILE_LOG)
            .env_remove("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES")
            .stdin(Stdio::null())
            .output()?)
    };
    let ok = |args: &[&str], out: &std::process::Output| -> anyhow::Result<()> {
        anyhow::ensure!(
            out.status.success(),
            "sluice {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    };
    let new = Command::new(sluice)
        .args(["new", "line-pager", "--lang", lang])
        .arg(&dir)
        .output()?;
    ok(&["new"], &new)?;
    let build_args = ["build"];
    let call_args = [
        "--config",
        "sluice.toml",
        "call",
        "line_pager",
        r#"{"path":"/data/nope.txt"}"#,
    ];
    let t = Instant::now();
    let first = run(&build_args)?;
    let first_build = t.elapsed();
    if !first.status.success() {
        // A missing program: build.sh says which, and how to install it, and exits 127.
        let stderr = String::from_utf8_lossy(&first.stderr);
        let reasons: Vec<&str> = stderr
            .lines()
            .filter_map(|l| l.trim().strip_prefix("build.sh: "))
            .collect();
        if !reasons.is_empty() {
            return Ok(Rounds::Skipped(reasons.join("; ")));
        }
        ok(&build_args, &first)?;
    }
    let first_call = run(&call_args)?;
    ok(&call_args, &first_call)?;

    let source_path = dir.join(source);
    let original = std::fs::read_to_string(&source_path)?;
    anyhow::ensure!(
        original.contains(EDITED),
        "{} does not say {EDITED:?}",
        source_path.display()
    );
    let (mut builds, mut calls, mut compile_times) = (Vec::new(), Vec::new(), Vec::new());
    for round in 1..=rounds {
        let marker = format!("{EDITED} (edit {round})");
        let t = Instant::now();
        std::fs::write(&source_path, original.replace(EDITED, &marker))?;
        let built = run(&build_args)?;
        let after_build = t.elapsed();
        ok(&build_args, &built)?;
        let called = run(&call_args)?;
        let after_call = t.elapsed();
        ok(&call_args, &called)?;
        let observation = String::from_utf8_lossy(&called.stdout);
        anyhow::ensure!(
            observation.contains(&format!("{marker}: /data/nope.txt"))
                && observation.contains(r#""kind":"not-found""#),
            "the call does not show the edit: {observation}"
        );
        builds.push(after_build);
        calls.push(after_call - after_build);
        // The project's component: the only compile (the cache has the rest).
        let compiled: Vec<String> = String::from_utf8_lossy(&called.stderr)
            .lines()
            .filter_map(|l| LogLine::parse(Duration::ZERO, l))
            .filter_map(|l| {
                let (label, took) = l.compile()?;
                Some(format!("{} {label}, `{}`", millis(took), l.message))
            })
            .collect();
        compile_times.push(if compiled.is_empty() {
            "none logged".to_string()
        } else {
            compiled.join(", ")
        });
    }
    // The compile of the median round by total time.
    let mut order: Vec<usize> = (0..rounds).collect();
    order.sort_by_key(|&i| builds[i] + calls[i]);
    let compile = compile_times[order[rounds / 2]].clone();
    Ok(Rounds::Measured {
        first_build,
        build: median(builds),
        call: median(calls),
        compile,
    })
}

/// The interpreter tools of row 16: the language, the example's file stem, the tool and its
/// arguments (each over its example's sample, as row 9 calls them).
const INTERPRETERS: [(&str, &str, &str, &str); 2] = [
    (
        "Python",
        "csv_summary",
        "summarize_table",
        r#"{"path":"sales.csv"}"#,
    ),
    (
        "JavaScript",
        "json_query",
        "query_json",
        r#"{"path":"shop.json","query":"$..name"}"#,
    ),
];

/// What one cold start measured.
struct ColdRun {
    initialize: Duration,
    list: Duration,
    /// The first call of each of [`INTERPRETERS`], since the start.
    first: [Duration; 2],
    /// A warm call of each, the median, right after the first calls.
    warm: [Duration; 2],
    /// The same once the kept code's compile of each was logged, and when that was.
    settled: Option<([Duration; 2], Duration)>,
    /// Every line of the log that parsed.
    log: Vec<LogLine>,
    /// Whether any interpreter tool had compiled when `initialize` was answered.
    compiled_before_initialize: bool,
}

/// How long a run waits for the kept code's compile of the interpreter tools to be logged.
const SETTLE: Duration = Duration::from_secs(600);

/// Row 16: a cold `sluice mcp` with the two interpreter examples.
pub(crate) fn cold_mcp(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let sluice = sibling_binary("sluice")?;
    let examples = repo().join("target/guest-examples");
    for (_, stem, _, _) in INTERPRETERS {
        let wasm = examples.join(format!("{stem}.wasm"));
        anyhow::ensure!(
            wasm.exists(),
            "{} not built: run guest-examples/install-toolchains.sh && guest-examples/build.sh",
            wasm.display()
        );
    }
    let dir = bench.work.join("cold-mcp");
    std::fs::create_dir_all(&dir)?;
    // The policies of tests/mcp/cold_start.rs; each example reads its own sample.
    let samples = repo().join("guest-examples");
    let config = dir.join("sluice.toml");
    std::fs::write(
        &config,
        format!(
            "[roots]\ndata = {:?}\nshop = {:?}\n\n\
             [tools.csv_summary]\ncomponent = {:?}\nread = [\"data\"]\nmemory_mib = 128\ntimeout_ms = 10000\n\n\
             [tools.json_query]\ncomponent = {:?}\nread = [\"shop\"]\nmemory_mib = 256\n",
            samples.join("python-csv-summary/sample"),
            samples.join("js-json-query/sample"),
            examples.join("csv_summary.wasm"),
            examples.join("json_query.wasm"),
        ),
    )?;
    let runs = if bench.quick { 1 } else { 3 };
    let calls = if bench.quick { 5 } else { 20 };
    let mut measured = Vec::new();
    for run in 0..runs {
        let cache = dir.join(format!("cache-{run}"));
        let _ = std::fs::remove_dir_all(&cache);
        measured.push(cold_run(&sluice, &config, &cache, calls)?);
    }
    let mid = |f: &dyn Fn(&ColdRun) -> Duration| median(measured.iter().map(f).collect());
    let mut rows = vec![Row {
        what: "16. cold `sluice mcp` (empty cache; Python and JavaScript examples): `initialize` answered".into(),
        sluice: millis(mid(&|r| r.initialize)),
        baseline: format!("`tools/list` answered at {}", millis(mid(&|r| r.list))),
        ratio: "—".into(),
        target: format!(
            "(reported) median of {runs}; answered before an interpreter tool compiled: {}",
            if measured.iter().any(|r| r.compiled_before_initialize) {
                "no"
            } else {
                "yes"
            }
        ),
    }];
    let settled: Vec<_> = measured.iter().filter_map(|r| r.settled).collect();
    for (i, (language, _, tool, _)) in INTERPRETERS.iter().enumerate() {
        let first = mid(&|r| r.first[i]);
        let warm = mid(&|r| r.warm[i]);
        let (later, last) = if settled.is_empty() {
            (
                warm,
                "its kept code's compile not logged within the wait".to_string(),
            )
        } else {
            let later = median(settled.iter().map(|(w, _)| w[i]).collect());
            let at = median(settled.iter().map(|(_, at)| *at).collect());
            (
                later,
                format!(
                    "{} once both kept compiles were logged (at {:.1} s)",
                    millis(later),
                    at.as_secs_f64()
                ),
            )
        };
        rows.push(Row {
            what: format!(
                "16. cold `sluice mcp`: first `{tool}` call ({language}) answered, since the start"
            ),
            sluice: millis(first),
            baseline: format!("warm call over MCP: {} right after; {last}", millis(warm)),
            ratio: ratio(first, later),
            target: format!(
                "(reported) median of {runs}; both first calls sent at once after `tools/list`; warm: median of {calls}"
            ),
        });
    }
    rows.extend(log_rows(&measured));
    Ok(rows)
}

/// 16c: each line the runs logged about an interpreter component (its compiles, and what
/// else the engine says of it), the medians over the runs of lines with the same component
/// and message; then the built-in tools' compiles, summed per message.
fn log_rows(measured: &[ColdRun]) -> Vec<Row> {
    // (component, message) → (compile times, times since the start).
    type Seen = Vec<((String, String), (Vec<Duration>, Vec<Duration>))>;
    let mut seen: Seen = Vec::new();
    for line in measured.iter().flat_map(|r| &r.log) {
        let Some(name) = line.component_name() else {
            continue;
        };
        let (label, took) = line.compile().map_or((name, None), |(l, t)| (l, Some(t)));
        let key = (label, line.message.clone());
        let i = match seen.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                seen.push((key, (Vec::new(), Vec::new())));
                seen.len() - 1
            }
        };
        let at = &mut seen[i].1;
        at.0.extend(took);
        at.1.push(line.at);
    }
    let runs = measured.len();
    let mut rows = Vec::new();
    let mut builtins: Vec<(String, Vec<String>, Duration)> = Vec::new();
    for ((label, message), (took, at)) in seen {
        if label.starts_with("built-in ") {
            let Some(t) = (!took.is_empty()).then(|| median(took)) else {
                continue;
            };
            match builtins.iter_mut().find(|(m, _, _)| *m == message) {
                Some((_, names, total)) => {
                    names.push(format!("{} {label}", millis(t)));
                    *total += t;
                }
                None => builtins.push((message, vec![format!("{} {label}", millis(t))], t)),
            }
            continue;
        }
        let n = at.len();
        rows.push(Row {
            what: format!("16c. cold `sluice mcp`: {label}: `{message}`"),
            sluice: if took.is_empty() {
                "—".into()
            } else {
                millis(median(took))
            },
            baseline: format!(
                "logged at {:.1} s since the start",
                median(at).as_secs_f64()
            ),
            ratio: "—".into(),
            target: format!("(reported) as the binary logs it; {n} lines in {runs} runs"),
        });
    }
    for (message, names, total) in builtins {
        rows.push(Row {
            what: format!(
                "16c. cold `sluice mcp`: the built-in tools' compiles (`{message}`), summed"
            ),
            sluice: millis(total),
            baseline: names.join("; "),
            ratio: "—".into(),
            target: format!(
                "(reported) as the binary logs it; medians of {runs} runs (a built-in is listed once its line came before the run ended)"
            ),
        });
    }
    rows
}

/// A `tools/call` request.
fn call(id: u64, tool: &str, args: &str) -> anyhow::Result<Value> {
    let args: Value = serde_json::from_str(args)?;
    Ok(
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}}),
    )
}

/// `calls` calls of each of [`INTERPRETERS`], one after another: the median of each.
fn warm_calls(mcp: &mut McpChild, id: &mut u64, calls: usize) -> anyhow::Result<[Duration; 2]> {
    let mut warm = [Duration::ZERO; 2];
    for (i, (_, _, tool, args)) in INTERPRETERS.iter().enumerate() {
        let mut samples = Vec::with_capacity(calls);
        for _ in 0..calls {
            *id += 1;
            let t = Instant::now();
            mcp.send(&call(*id, tool, args)?)?;
            let (_, answer) = mcp.answer(*id)?;
            samples.push(t.elapsed());
            anyhow::ensure!(
                answer["result"]["isError"] == false,
                "{tool} answered {answer}"
            );
        }
        warm[i] = median(samples);
    }
    Ok(warm)
}

/// One cold start of `sluice --config CONFIG mcp` over the empty cache `cache`.
fn cold_run(sluice: &Path, config: &Path, cache: &Path, calls: usize) -> anyhow::Result<ColdRun> {
    let mut mcp = McpChild::start(
        Command::new(sluice)
            .arg("--config")
            .arg(config)
            .arg("mcp")
            .env("SLUICE_CACHE_DIR", cache)
            .env("SLUICE_LOG", COMPILE_LOG)
            .env_remove("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES"),
    )?;
    // Whether the log has the line of a compile of each interpreter tool whose message is
    // `message` (any message when `None`).
    let compiled = |mcp: &McpChild, message: Option<&str>, all: bool| {
        let log = parse_all(&mcp.log_lines());
        let has = |stem: &str| {
            log.iter().any(|l| {
                l.compile().is_some()
                    && l.field("component").is_some_and(|c| c.contains(stem))
                    && message.is_none_or(|m| l.message == m)
            })
        };
        let mut stems = INTERPRETERS.iter().map(|(_, stem, _, _)| *stem);
        if all { stems.all(has) } else { stems.any(has) }
    };
    mcp.send(&json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sluice-bench","version":"0"}}}))?;
    let (initialize, init) = mcp.answer(1)?;
    anyhow::ensure!(
        init["result"]["serverInfo"]["name"] == "sluice",
        "initialize answered {init}"
    );
    let compiled_before_initialize = compiled(&mcp, None, false);
    mcp.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))?;
    mcp.send(&json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}))?;
    let (list, _) = mcp.answer(2)?;
    for (i, (_, _, tool, args)) in INTERPRETERS.iter().enumerate() {
        mcp.send(&call(10 + i as u64, tool, args)?)?;
    }
    let mut first = [Duration::ZERO; 2];
    for (i, (_, _, tool, _)) in INTERPRETERS.iter().enumerate() {
        let (at, answer) = mcp.answer(10 + i as u64)?;
        anyhow::ensure!(
            answer["result"]["isError"] == false,
            "{tool} answered {answer}"
        );
        first[i] = at;
    }
    let mut id = 100;
    let warm = warm_calls(&mut mcp, &mut id, calls)?;
    // Then the code that is kept: once its compile is logged for both (and a moment for the
    // engine to put it in place), the same calls again.
    let waited = Instant::now();
    let mut settled = None;
    while waited.elapsed() < SETTLE {
        if compiled(&mcp, Some(KEPT), true) {
            let at = mcp.started.elapsed();
            std::thread::sleep(Duration::from_millis(500));
            settled = Some((warm_calls(&mut mcp, &mut id, calls)?, at));
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(ColdRun {
        initialize,
        list,
        first,
        warm,
        settled,
        log: parse_all(&mcp.log_lines()),
        compiled_before_initialize,
    })
}
