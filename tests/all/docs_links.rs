//! The documentation holds together: every relative link of the README, CONTRIBUTING.md,
//! `docs/` and the tool author's guides names a file that exists (and, with `#anchor`, a
//! heading of it), every `docs/<page>.md#<anchor>` the code cites is a heading of that
//! page (`docs/README.md#citing-these-pages`), and the book's `docs/SUMMARY.md` lists every
//! page of `docs/` once and nothing else (`docs/README.md#reading-the-docs-as-a-book`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The repository's root (this crate is `tests/`).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A heading's GitHub anchor: lowercase, spaces as `-`, every other character that is not
/// a letter, a digit, `-` or `_` dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The lines of a Markdown text outside its fenced code blocks.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// The anchors of a Markdown file's headings (GitHub's: a repeated heading gets `-1`, `-2`).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for line in prose_lines(text) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let base = anchor(heading);
        let mut name = base.clone();
        let mut n = 0;
        while seen.contains(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        seen.insert(name);
    }
    seen
}

/// The targets of the inline links `[text](target)` of a line, outside code spans.
fn link_targets(line: &str) -> Vec<String> {
    // Drop code spans first: `[a](b)` inside backticks is an example, not a link.
    let mut prose = String::new();
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 0 {
            prose.push_str(part);
        }
    }
    let mut targets = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        targets.push(after[..end].to_string());
        rest = &after[end..];
    }
    targets
}

/// The Markdown files a reader follows links through.
fn markdown_files() -> Vec<PathBuf> {
    let root = repo();
    let mut files = vec![
        root.join("README.md"),
        root.join("CONTRIBUTING.md"),
        root.join("ARCHITECTURE.md"),
        root.join("CHANGELOG.md"),
    ];
    for dir in ["docs", "guest-examples"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            } else if path.is_dir() && path.join("README.md").is_file() {
                files.push(path.join("README.md"));
            }
        }
    }
    files.sort();
    files
}

/// Why `target`, linked from `from`, does not resolve, if it does not.
fn broken(from: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, fragment) = match target.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        from.to_path_buf()
    } else {
        from.parent().unwrap().join(path)
    };
    if !file.exists() {
        return Some(format!("{} does not exist", file.display()));
    }
    let fragment = fragment?;
    if file.extension().is_none_or(|e| e != "md") {
        return None;
    }
    let text = std::fs::read_to_string(&file).unwrap();
    (!anchors(&text).contains(fragment)).then(|| {
        format!(
            "{} has no heading with the anchor #{fragment}",
            file.display()
        )
    })
}

#[test]
fn the_anchor_of_a_heading_is_githubs() {
    assert_eq!(anchor(" The cap"), "the-cap");
    assert_eq!(anchor(" `tools/list`"), "toolslist");
    assert_eq!(
        anchor(" Context-window recovery"),
        "context-window-recovery"
    );
    assert_eq!(anchor(" max_turns and C10"), "max_turns-and-c10");
    let text = "# A\n## Notes\n```\n# not a heading\n```\n## Notes\n";
    assert_eq!(
        anchors(text),
        BTreeSet::from(["a".into(), "notes".into(), "notes-1".into()])
    );
    assert_eq!(
        link_targets("see [x](a.md#b) and `[y](not-a-link)`, [z](#c)"),
        ["a.md#b", "#c"]
    );
}

#[test]
fn every_relative_link_of_the_docs_resolves() {
    let mut problems = Vec::new();
    let files = markdown_files();
    assert!(files.len() >= 10, "found only {files:?}");
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for line in prose_lines(&text) {
            for target in link_targets(line) {
                if let Some(why) = broken(file, &target) {
                    problems.push(format!("{}: [{target}]: {why}", file.display()));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

/// The pages `summary` (a `SUMMARY.md`) lists, in its order, each as written.
fn summary_entries(summary: &str) -> Vec<String> {
    prose_lines(summary)
        .into_iter()
        .flat_map(link_targets)
        .collect()
}

#[test]
fn summary_lists_every_page_of_docs_once_and_only_pages_that_exist() {
    let docs = repo().join("docs");
    let summary = std::fs::read_to_string(docs.join("SUMMARY.md")).unwrap();
    let entries = summary_entries(&summary);
    let mut listed = BTreeSet::new();
    let mut problems = Vec::new();
    for entry in &entries {
        if entry.contains('#') || entry.contains('/') || !entry.ends_with(".md") {
            problems.push(format!("SUMMARY.md lists {entry:?}: not a page of docs/"));
        } else if !docs.join(entry).is_file() {
            problems.push(format!("SUMMARY.md lists {entry}, which does not exist"));
        } else if !listed.insert(entry.clone()) {
            problems.push(format!("SUMMARY.md lists {entry} twice"));
        }
    }
    let mut pages = BTreeSet::new();
    for entry in std::fs::read_dir(&docs).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") && name != "SUMMARY.md" {
            pages.insert(name);
        }
    }
    for page in pages.difference(&listed) {
        problems.push(format!("docs/{page} is missing from SUMMARY.md"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The introduction comes first.
    assert_eq!(entries.first().map(String::as_str), Some("README.md"));
    assert!(pages.len() >= 19, "found only {pages:?}");
    assert_eq!(
        summary_entries("# Summary\n\n[Intro](README.md)\n\n# Part\n\n- [A `b`](a.md)\n"),
        ["README.md", "a.md"]
    );
}

/// The `docs/<page>.md#<anchor>` citations of one source text.
fn citations(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("docs/") {
        let after = &rest[at + 5..];
        let page: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        let tail = &after[page.len()..];
        if let Some(fragment) = tail.strip_prefix(".md#") {
            let anchor: String = fragment
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            found.push((page, anchor));
        }
        rest = after;
    }
    found
}

fn rust_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() {
            if name != "target" && name != "node_modules" && !name.starts_with('.') {
                rust_sources(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_docs_anchor_the_code_cites_is_a_heading() {
    let root = repo();
    let mut sources = Vec::new();
    for dir in ["host", "tools", "tests", "bench"] {
        rust_sources(&root.join(dir), &mut sources);
    }
    let mut problems = Vec::new();
    let mut checked = 0;
    for source in &sources {
        let text = std::fs::read_to_string(source).unwrap();
        for (page, fragment) in citations(&text) {
            let file = root.join("docs").join(format!("{page}.md"));
            checked += 1;
            let Ok(doc) = std::fs::read_to_string(&file) else {
                problems.push(format!(
                    "{}: docs/{page}.md does not exist",
                    source.display()
                ));
                continue;
            };
            if !anchors(&doc).contains(&fragment) {
                problems.push(format!(
                    "{}: docs/{page}.md has no heading with the anchor #{fragment}",
                    source.display()
                ));
            }
        }
    }
    // The code cites the reference in many places: finding none means the scan is broken.
    assert!(checked > 50, "only {checked} citations found");
    assert!(
        problems.is_empty(),
        "broken citations:\n{}",
        problems.join("\n")
    );
}

/// The `file` › `symbol` references of ARCHITECTURE.md.
fn symbol_references(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        while let Some(at) = rest.find("` › `") {
            let file = rest[..at].rsplit('`').next().unwrap_or("");
            let after = &rest[at + "` › `".len()..];
            let symbol: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push((file.to_string(), symbol));
            rest = after;
        }
    }
    out
}

/// True when `source` defines `symbol` (a function, type, trait, constant, static, module
/// or `macro_rules!` macro of that name).
fn defines(source: &str, symbol: &str) -> bool {
    [
        "fn ",
        "struct ",
        "enum ",
        "trait ",
        "const ",
        "static ",
        "type ",
        "mod ",
        "macro_rules! ",
    ]
    .iter()
    .any(|kind| {
        source
            .match_indices(&format!("{kind}{symbol}"))
            .any(|(i, m)| {
                let before = source[..i].chars().next_back();
                let after = source[i + m.len()..].chars().next();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                    && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
    })
}

#[test]
fn every_symbol_the_architecture_map_names_is_defined_in_its_file() {
    let root = repo();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let references = symbol_references(&text);
    assert!(references.len() > 30, "{references:?}");
    let mut broken = Vec::new();
    for (file, symbol) in &references {
        match std::fs::read_to_string(root.join(file)) {
            Ok(source) if defines(&source, symbol) => {}
            Ok(_) => broken.push(format!("{file} defines no {symbol}")),
            Err(e) => broken.push(format!("{file}: {e}")),
        }
    }
    assert!(
        broken.is_empty(),
        "ARCHITECTURE.md names:\n{}",
        broken.join("\n")
    );
    assert!(defines("pub(crate) fn run(", "run"));
    assert!(!defines("fn running()", "run"));
}
