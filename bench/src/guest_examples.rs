//! Row 9: a call of each guest example against the built-in `read_file`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::{Bench, Row, micros, millis, ratio, time_median};

use crate::read_file::page_root;

/// Row 9: one call of each guest example (Python, JavaScript, C, and `head` in all four
/// languages with Rust; built by `guest-examples/build.sh`) on its sample, against the built-in `read_file` (Rust) on a
/// 4 KiB page: what a tool's language costs per call. Fresh instance, call, lift and cap,
/// like every call; the component is loaded from the warm cache first.
pub(crate) fn guest_examples(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let examples = [
        (
            "Python",
            "python-csv-summary",
            "csv_summary",
            "summarize_table",
            json!({"path": "sales.csv"}),
            128,
        ),
        (
            "JavaScript",
            "js-json-query",
            "json_query",
            "query_json",
            json!({"path": "shop.json", "query": "$..name"}),
            256,
        ),
        (
            "C",
            "c-wc",
            "wc",
            "wc",
            json!({"paths": ["poem.txt", "notes.txt"]}),
            16,
        ),
        (
            "Python",
            "py-head",
            "py_head",
            "head",
            json!({"path": "/data/poem.txt"}),
            128,
        ),
        (
            "JavaScript",
            "js-head",
            "js_head",
            "head",
            json!({"path": "/data/poem.txt"}),
            64,
        ),
        (
            "C",
            "c-head",
            "c_head",
            "head",
            json!({"path": "/data/poem.txt"}),
            16,
        ),
        (
            "Rust",
            "rust-head",
            "rust_head",
            "head",
            json!({"path": "/data/poem.txt"}),
            16,
        ),
    ];
    let calls = if bench.quick { 10 } else { 50 };
    let root = page_root(bench)?;
    let builtin = bench.toolbox("read_file", &root, Duration::from_secs(10))?;
    let page = json!({"path": "page.log"}).to_string();
    let rust = time_median(calls, || {
        std::hint::black_box(
            bench
                .runtime
                .block_on(builtin.call("read_file", &page, 65_536)),
        );
        Ok(())
    })?;
    let mut rows = Vec::new();
    for (language, example, stem, tool, args, memory_mib) in examples {
        let what = format!("9. {tool} ({language} guest example), per call");
        let wasm_path = repo
            .join("target/guest-examples")
            .join(format!("{stem}.wasm"));
        let Ok(wasm) = std::fs::read(&wasm_path) else {
            rows.push(Row {
                what,
                sluice: "—".into(),
                baseline: "—".into(),
                ratio: "—".into(),
                target: "not measured: build it with guest-examples/install-toolchains.sh && guest-examples/build.sh".into(),
            });
            continue;
        };
        let mut policy = sluice_runtime::ToolPolicy::read_only([(
            "data".to_string(),
            repo.join("guest-examples").join(example).join("sample"),
        )]);
        policy.memory_bytes = memory_mib << 20;
        let spec = sluice_runtime::ComponentSpec {
            source: sluice_runtime::Source::Bytes {
                name: wasm_path.display().to_string(),
                wasm: Arc::new(wasm),
            },
            policy,
        };
        // The first load compiles and caches; the second is what a restart costs.
        sluice_runtime::Toolbox::load(bench.engine.clone(), std::slice::from_ref(&spec))?;
        let t = Instant::now();
        let toolbox = sluice_runtime::Toolbox::load(bench.engine.clone(), &[spec])?;
        let load = t.elapsed();
        let args = args.to_string();
        let first = bench.runtime.block_on(toolbox.call(tool, &args, 65_536));
        anyhow::ensure!(
            first.text().starts_with(r#"{"ok":true"#),
            "{tool} failed: {}",
            first.text()
        );
        let took = time_median(calls, || {
            std::hint::black_box(bench.runtime.block_on(toolbox.call(tool, &args, 65_536)));
            Ok(())
        })?;
        rows.push(Row {
            what,
            sluice: micros(took),
            baseline: format!("{} read_file (Rust)", micros(rust)),
            ratio: ratio(took, rust),
            target: format!("none (load from cache {})", millis(load)),
        });
    }
    Ok(rows)
}
