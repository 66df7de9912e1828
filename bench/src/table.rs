//! The table a run prints (the machine lines, a blank line, the Markdown table) and
//! `--markdown FILE`: that text written into a page between its markers, in place of the
//! table there before.

use std::path::Path;

use anyhow::Context as _;

use crate::Row;

/// The line before the table in a page `--markdown` writes to.
pub(crate) const BEGIN: &str = "<!-- bench:table:begin -->";
/// The line after it.
pub(crate) const END: &str = "<!-- bench:table:end -->";

/// What a run prints: the `machine` lines, a blank line, then the rows as a Markdown table;
/// every line ends in `\n`.
pub(crate) fn render(machine: &[String], rows: &[Row]) -> String {
    let mut out = String::new();
    for line in machine {
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    out.push_str("| measurement | Sluice | baseline | ratio | target |\n");
    out.push_str("|---|---|---|---|---|\n");
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            r.what, r.sluice, r.baseline, r.ratio, r.target
        ));
    }
    out
}

/// `page` with what lies between its [`BEGIN`] and [`END`] lines replaced by `table`; the
/// marker lines stay. `name` names the page in the error when a marker is missing.
pub(crate) fn splice(page: &str, table: &str, name: &str) -> anyhow::Result<String> {
    let line_at = |marker: &str, from: usize| {
        page[from..]
            .match_indices(marker)
            .map(|(i, _)| from + i)
            .find(|&i| {
                (i == 0 || page[..i].ends_with('\n'))
                    && page[i + marker.len()..]
                        .chars()
                        .next()
                        .is_none_or(|c| c == '\n' || c == '\r')
            })
    };
    let begin = line_at(BEGIN, 0)
        .with_context(|| format!("{name} has no line {BEGIN} (where the table begins)"))?;
    let body = page[begin..]
        .find('\n')
        .map_or(page.len(), |i| begin + i + 1);
    let end = line_at(END, body).with_context(|| {
        format!("{name} has no line {END} after its {BEGIN} (where the table ends)")
    })?;
    let mut out = String::with_capacity(page.len() + table.len());
    out.push_str(&page[..body]);
    out.push_str(table);
    if !table.is_empty() && !table.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&page[end..]);
    Ok(out)
}

/// Writes `table` into the page at `path` between its markers: the new page is written
/// beside it and renamed over it, so a reader sees the old page or the new one, never part.
pub(crate) fn write_into(path: &Path, table: &str) -> anyhow::Result<()> {
    let name = path.display().to_string();
    let page = std::fs::read_to_string(path).with_context(|| format!("reading {name}"))?;
    let new = splice(&page, table, &name)?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut beside = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a file beside {name}"))?;
    std::io::Write::write_all(&mut beside, new.as_bytes())
        .with_context(|| format!("writing the new {name}"))?;
    // The page keeps its permissions (a temporary file is made 0600).
    let permissions = std::fs::metadata(path)?.permissions();
    std::fs::set_permissions(beside.path(), permissions)?;
    beside
        .persist(path)
        .with_context(|| format!("renaming the new page over {name}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(what: &str, sluice: &str) -> Row {
        Row {
            what: what.into(),
            sluice: sluice.into(),
            baseline: "1.0 µs native".into(),
            ratio: "2.00×".into(),
            target: "≤ 2×".into(),
        }
    }

    #[test]
    fn render_prints_the_machine_lines_then_the_table() {
        let text = render(
            &["- machine: 2 cores".into()],
            &[row("1. a call", "2.0 µs"), row("2. a page", "3.0 µs")],
        );
        assert_eq!(
            text,
            "- machine: 2 cores\n\
             \n\
             | measurement | Sluice | baseline | ratio | target |\n\
             |---|---|---|---|---|\n\
             | 1. a call | 2.0 µs | 1.0 µs native | 2.00× | ≤ 2× |\n\
             | 2. a page | 3.0 µs | 1.0 µs native | 2.00× | ≤ 2× |\n"
        );
    }

    #[test]
    fn splice_replaces_only_what_lies_between_the_markers() {
        let page = "# Benchmarks\n\nintro\n\n<!-- bench:table:begin -->\n| old | table |\n|---|---|\n\
                    | 1 | 2 |\n<!-- bench:table:end -->\n\nRows explained.\n";
        let table = render(&["- machine: 1 core".into()], &[row("1. a call", "2.0 µs")]);
        assert_eq!(
            splice(page, &table, "docs/benchmarks.md").unwrap(),
            "# Benchmarks\n\nintro\n\n<!-- bench:table:begin -->\n- machine: 1 core\n\n\
             | measurement | Sluice | baseline | ratio | target |\n|---|---|---|---|---|\n\
             | 1. a call | 2.0 µs | 1.0 µs native | 2.00× | ≤ 2× |\n\
             <!-- bench:table:end -->\n\nRows explained.\n"
        );
        // Splicing the same table again changes nothing.
        let once = splice(page, &table, "p").unwrap();
        assert_eq!(splice(&once, &table, "p").unwrap(), once);
    }

    #[test]
    fn a_missing_marker_is_an_error_naming_the_file() {
        let no_begin = "| a |\n<!-- bench:table:end -->\n";
        assert_eq!(
            splice(no_begin, "t\n", "docs/benchmarks.md")
                .unwrap_err()
                .to_string(),
            "docs/benchmarks.md has no line <!-- bench:table:begin --> (where the table begins)"
        );
        let no_end = "<!-- bench:table:begin -->\n| a |\n";
        assert_eq!(
            splice(no_end, "t\n", "docs/benchmarks.md")
                .unwrap_err()
                .to_string(),
            "docs/benchmarks.md has no line <!-- bench:table:end --> after its \
             <!-- bench:table:begin --> (where the table ends)"
        );
        // A marker quoted inside a line is not the marker.
        let quoted = "see `<!-- bench:table:begin -->`\n<!-- bench:table:end -->\n";
        assert!(splice(quoted, "t\n", "p").is_err());
    }

    #[test]
    fn write_into_replaces_the_page_and_leaves_nothing_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let page = dir.path().join("benchmarks.md");
        std::fs::write(
            &page,
            "a\n<!-- bench:table:begin -->\nold\n<!-- bench:table:end -->\nb\n",
        )
        .unwrap();
        write_into(&page, "new\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&page).unwrap(),
            "a\n<!-- bench:table:begin -->\nnew\n<!-- bench:table:end -->\nb\n"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["benchmarks.md"]);

        let missing = dir.path().join("missing.md");
        std::fs::write(&missing, "no markers\n").unwrap();
        let err = write_into(&missing, "new\n").unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{} has no line <!-- bench:table:begin --> (where the table begins)",
                missing.display()
            )
        );
        assert_eq!(std::fs::read_to_string(&missing).unwrap(), "no markers\n");
    }
}
