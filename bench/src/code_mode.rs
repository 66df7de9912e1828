//! Row 14, code mode (docs/code-mode.md): the question "ERROR lines per worker" over a log with
//! 1% ERROR lines from 16 workers, answered by one `run_script` call against paging it through
//! the transcript (pages computed) and against a shell pipeline; and the cost of a script's
//! inner call against the same call from outside.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_runtime::{ComponentSpec, ToolCallLimits, ToolPolicy, Toolbox};

use crate::read_file::MIB;
use crate::{Bench, Row, builtin, millis, time_median};

/// A program that pages `app.log`, runs `body` on each page's `text` (adding to `counts`),
/// and returns `{counts, pages}`.
fn per_page(body: &str) -> String {
    format!(
        r#"
const counts = {{}};
let offset = 0, pages = 0;
for (;;) {{
  const page = tools.call("read_file", {{path: "app.log", offset}});
  if (!page.ok) return page;
  pages++;
  const text = page.result.content;
{body}
  if (page.result.nextOffset == null) return {{counts, pages}};
  offset = page.result.nextOffset;
}}
"#
    )
}

/// The question line by line: every page split into lines, each line tested.
const PER_LINE: &str = r#"
  if (text.includes(" ERROR ")) {
    for (const line of text.split("\n")) {
      if (!line.includes(" ERROR ")) continue;
      const w = line.split(" ")[2];
      counts[w] = (counts[w] || 0) + 1;
    }
  }"#;

/// The question by searching: only the ERROR lines of each page are visited, found with
/// `indexOf` (as the scripted model's program does).
const BY_SEARCH: &str = r#"
  let at = text.indexOf(" ERROR ");
  while (at >= 0) {
    const end = text.indexOf(" ", at + 7);
    const w = text.slice(at + 7, end);
    counts[w] = (counts[w] || 0) + 1;
    at = text.indexOf(" ERROR ", end);
  }"#;

/// `read_file` and `run_script` over `root`, the script's inner cap `inner_cap`.
fn toolbox(bench: &Bench, root: &Path, inner_cap: u32) -> anyhow::Result<Arc<Toolbox>> {
    let read = ToolPolicy::read_only([("root".to_string(), root.to_path_buf())]);
    let mut script = ToolPolicy {
        timeout: Duration::from_secs(3600),
        memory_bytes: 1 << 30,
        ..ToolPolicy::default()
    };
    script.tool_calls = Some(ToolCallLimits {
        inner_max_result_bytes: inner_cap,
        max_calls: 1_000_000,
        max_bytes: 1 << 40,
    });
    let specs = [
        ComponentSpec {
            source: builtin("read_file")?,
            policy: read,
        },
        ComponentSpec {
            source: builtin("run_script")?,
            policy: script,
        },
    ];
    Ok(Arc::new(Toolbox::load(bench.engine.clone(), &specs)?))
}

/// A log of about `bytes` bytes: 1% ERROR lines, 16 workers.
fn log(path: &Path, bytes: u64) -> anyhow::Result<u64> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let (mut written, mut i) = (0u64, 0u64);
    while written < bytes {
        let level = if i % 100 == 0 { "ERROR" } else { "INFO " };
        let line = format!(
            "2026-11-30T01:00:00Z {level} worker-{} processed batch {i} in 87 ms\n",
            i % 16
        );
        out.write_all(line.as_bytes())?;
        written += line.len() as u64;
        i += 1;
    }
    out.flush()?;
    Ok(written)
}

/// Row 14: the question in code mode, and the per-call cost of an inner call.
pub(crate) fn rows(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let root = bench.work.join("code-mode");
    std::fs::create_dir_all(&root)?;
    let path = root.join("app.log");
    let bytes = log(&path, if bench.quick { 16 * MIB } else { 1 << 30 })?;
    let toolbox = toolbox(
        bench,
        &root,
        sluice_protocol::limits::DEFAULT_INNER_MAX_RESULT_BYTES,
    )?;
    let cap = sluice_protocol::limits::DEFAULT_MAX_TOOL_RESULT_BYTES;
    // Paging alone: the model reads every page at the default cap (half the cap a page).
    let paged = bytes.div_ceil(u64::from(cap / 2));
    let pipeline = time_median(3, || {
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg("grep -F ' ERROR ' \"$0\" | cut -d' ' -f3 | sort | uniq -c")
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .status()?;
        anyhow::ensure!(status.success(), "the grep pipeline failed");
        Ok(())
    })?;
    let mut rows = Vec::new();
    for (label, script) in [("14", BY_SEARCH), ("14l", PER_LINE)] {
        let args = json!({ "script": per_page(script) }).to_string();
        let started = Instant::now();
        let obs = bench
            .runtime
            .block_on(toolbox.call("run_script", &args, cap));
        let took = started.elapsed();
        let v: Value = serde_json::from_str(obs.text())?;
        anyhow::ensure!(v["ok"] == true, "run_script failed: {}", obs.text());
        let pages = v["result"]["result"]["pages"].as_u64().unwrap_or(0);
        let errors: u64 = v["result"]["result"]["counts"]
            .as_object()
            .map(|o| o.values().filter_map(Value::as_u64).sum())
            .unwrap_or(0);
        rows.push(Row {
            what: format!(
                "{label}. ERROR lines per worker, {} MiB log ({errors} errors): one run_script call ({pages} inner pages), {}",
                bytes / MIB,
                if label == "14" { "lines found by indexOf" } else { "every line split and tested" }
            ),
            sluice: format!(
                "{}; {} bytes entered the transcript, 1 model turn",
                millis(took),
                obs.text().len()
            ),
            baseline: format!(
                "paging alone: {paged} pages, {} MiB into the transcript; `grep -F | cut | sort | uniq -c`: {}",
                bytes / MIB,
                millis(pipeline)
            ),
            ratio: format!(
                "{:.1}× the pipeline",
                took.as_secs_f64() / pipeline.as_secs_f64()
            ),
            target: "one call, ≤ 2 KB; ≤ 5× grep".into(),
        });
    }
    rows.push(inner_calls(bench, &root)?);
    Ok(rows)
}

/// Row 14b: 1,000 `read_file` calls of 4 KiB pages made by a script against the same 1,000
/// made from outside.
fn inner_calls(bench: &Bench, root: &Path) -> anyhow::Result<Row> {
    let calls = if bench.quick { 100 } else { 1_000 };
    // Pages of 4 KiB: half of an 8 KiB cap.
    let cap = 8_192;
    let path = root.join("pages.txt");
    // Lines of 100 bytes of log text (a run of base64-like characters would be key body).
    let line = format!(
        "{:<99}\n",
        "2026-11-30T01:00:00Z INFO  worker-7 processed batch 1234 in 87 ms"
    );
    std::fs::write(&path, line.repeat(calls * 41))?;
    let toolbox = toolbox(bench, root, cap)?;
    let direct = time_median(3, || {
        let mut offset = 0u64;
        for _ in 0..calls {
            let r = bench.call(
                &toolbox,
                "read_file",
                &json!({"path": "pages.txt", "offset": offset}),
                cap,
            )?;
            offset = r["nextOffset"].as_u64().unwrap_or(0);
        }
        Ok(())
    })?;
    let script = format!(
        r#"let offset = 0; for (let i = 0; i < {calls}; i++) {{ const r = tools.call("read_file", {{path: "pages.txt", offset}}); if (!r.ok) return r; offset = r.result.nextOffset || 0; }} return {calls};"#
    );
    let args = json!({ "script": script }).to_string();
    let scripted = time_median(3, || {
        let obs = bench
            .runtime
            .block_on(toolbox.call("run_script", &args, 65_536));
        anyhow::ensure!(obs.text().starts_with("{\"ok\":true"), "{}", obs.text());
        Ok(())
    })?;
    Ok(Row {
        what: format!("14b. {calls} read_file calls of 4 KiB pages: from a script vs from outside"),
        sluice: format!(
            "{} ({:.1} µs a call)",
            millis(scripted),
            scripted.as_secs_f64() * 1e6 / calls as f64
        ),
        baseline: format!(
            "{} ({:.1} µs a call)",
            millis(direct),
            direct.as_secs_f64() * 1e6 / calls as f64
        ),
        ratio: format!("{:.2}×", scripted.as_secs_f64() / direct.as_secs_f64()),
        target: "≤ 1.5×".into(),
    })
}
