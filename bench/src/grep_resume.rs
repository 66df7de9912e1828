//! Row 5's resume rows: what resuming a `grep_files` search costs deep in a 30,000-file tree,
//! seeking to the cursor's entry against walking back to it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::{Bench, Row, median, millis, ratio};

/// Directories at the first level, directories in each, files in each of those.
const SHAPE: (usize, usize, usize) = (30, 20, 50);

/// Where the resumes start, in percent of the walk.
const AT_PERCENT: [usize; 4] = [0, 10, 50, 90];

/// Row 5 (`grep_files`): resume rows first, then the search against ripgrep.
pub(crate) fn rows(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let mut rows = resume(bench)?;
    match crate::grep_vs_rg::grep(bench) {
        Ok(r) => rows.extend(r),
        Err(e) => rows.push(Row {
            what: "5. grep_files vs rg -j1".into(),
            sluice: "—".into(),
            baseline: "—".into(),
            ratio: "—".into(),
            target: format!("not measured: {e:#}"),
        }),
    }
    Ok(rows)
}

/// A 30,000-file tree (30 × 20 directories of 50 small files) where the three files from
/// each of [`AT_PERCENT`] hold a line `needle`; made once.
fn tree(bench: &Bench) -> anyhow::Result<PathBuf> {
    let root = bench.work.join("tree30k");
    if root.exists() {
        return Ok(root);
    }
    let (a, b, c) = SHAPE;
    let total = a * b * c;
    let marked: Vec<usize> = AT_PERCENT
        .iter()
        .flat_map(|p| {
            let k = total * p / 100;
            [k, k + 1, k + 2]
        })
        .collect();
    let mut n = 0;
    for i in 0..a {
        for j in 0..b {
            let dir = root.join(format!("d{i:02}/e{j:02}"));
            std::fs::create_dir_all(&dir)?;
            for f in 0..c {
                let mut body = format!("fn f{n}() {{}}\n// a line of text {n}\n");
                if marked.contains(&n) {
                    body.push_str("// needle\n");
                }
                std::fs::write(dir.join(format!("f{f:02}.rs")), body)?;
                n += 1;
            }
        }
    }
    Ok(root)
}

/// The cursor in `cursor` with its position replaced by one that leads nowhere, so that
/// the resume counts its way back to the entry (what every resume did before seeking).
fn walking_back(cursor: &str) -> String {
    match cursor.split('.').count() {
        5 => format!("{}.0", cursor.rsplit_once('.').map_or(cursor, |(h, _)| h)),
        _ => cursor.to_string(),
    }
}

fn resume(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let root = tree(bench)?;
    let toolbox = bench.toolbox("grep_files", &root, Duration::from_secs(3600))?;
    let args = |cursor: Option<&str>| {
        let mut a = json!({"pattern": "needle", "caseSensitive": true, "maxResults": 1});
        if let Some(c) = cursor {
            a["cursor"] = json!(c);
        }
        a
    };
    // Follow the whole search once: the cursor after the first file of each group.
    let mut cursors = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = bench.call(&toolbox, "grep_files", &args(cursor.as_deref()), 1_048_576)?;
        cursor = page["nextCursor"].as_str().map(str::to_string);
        let path = page["results"][0]["path"]
            .as_str()
            .unwrap_or("")
            .to_string();
        match &cursor {
            Some(c) if cursors.len() < AT_PERCENT.len() && starts_group(&path) => {
                cursors.push(c.clone());
            }
            Some(_) => {}
            None => break,
        }
    }
    anyhow::ensure!(
        cursors.len() == AT_PERCENT.len(),
        "found {} of the {} needle groups",
        cursors.len(),
        AT_PERCENT.len()
    );
    let timed = |cursor: &str| -> anyhow::Result<(Duration, String)> {
        let t = Instant::now();
        let page = bench.call(&toolbox, "grep_files", &args(Some(cursor)), 1_048_576)?;
        let took = t.elapsed();
        let path = page["results"][0]["path"]
            .as_str()
            .unwrap_or("")
            .to_string();
        Ok((took, path))
    };
    let runs = if bench.quick { 5 } else { 15 };
    let mut rows = Vec::new();
    for (p, cursor) in AT_PERCENT.iter().zip(&cursors) {
        let back = walking_back(cursor);
        let (mut seek, mut walk) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let (s, seek_path) = timed(cursor)?;
            let (w, walk_path) = timed(&back)?;
            anyhow::ensure!(
                seek_path == walk_path,
                "a seek resumed at {seek_path}, walking back at {walk_path}"
            );
            seek.push(s);
            walk.push(w);
        }
        let (s, w) = (median(seek), median(walk));
        rows.push(Row {
            what: format!(
                "5r. grep_files resume at {p}% of a {}-file tree: seek vs walking back",
                SHAPE.0 * SHAPE.1 * SHAPE.2
            ),
            sluice: millis(s),
            baseline: format!("{} walking back", millis(w)),
            ratio: ratio(s, w),
            target: "the same at 0%, 10%, 50%, 90%".into(),
        });
    }
    Ok(rows)
}

/// True when `path` is the first marked file of its group (its number is a multiple of
/// 1,500 files, 5% of the tree).
fn starts_group(path: &str) -> bool {
    let (a, b, c) = SHAPE;
    let mut parts = Path::new(path).components().map(|p| {
        p.as_os_str()
            .to_string_lossy()
            .trim_start_matches(['d', 'e', 'f'])
            .trim_end_matches(".rs")
            .parse::<usize>()
            .unwrap_or(usize::MAX)
    });
    let (Some(i), Some(j), Some(f)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    (i * b * c + j * c + f) % (a * b * c / 20) == 0
}
