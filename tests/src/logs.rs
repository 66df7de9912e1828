//! A log of a known shape for the code-mode tests (tests/all/code_mode.rs and the binary's
//! host/sluice/tests/mcp/code_mode.rs), and the script that counts its levels.

/// `lines` log lines, about 70 bytes each: ERROR on every tenth line, WARN on the next two,
/// INFO on the other seven; worker `i % 16`. Returns the text and the lines of each level
/// (ERROR, WARN, INFO). The level is the five characters at byte 21, padded with a space.
pub fn levelled_log(lines: usize) -> (String, [usize; 3]) {
    let mut text = String::with_capacity(lines * 70);
    let mut counts = [0; 3];
    for i in 0..lines {
        let level = match i % 10 {
            0 => 0,
            1 | 2 => 1,
            _ => 2,
        };
        counts[level] += 1;
        text.push_str(&format!(
            "2026-11-30T01:{:02}:{:02}Z {} worker-{} processed batch {i} in 87 ms\n",
            (i / 60) % 60,
            i % 60,
            ["ERROR", "WARN ", "INFO "][level],
            i % 16
        ));
    }
    (text, counts)
}

/// A `run_script` program that pages `app.log` with read_file and returns
/// `{counts: {LEVEL: lines}, pages}` for a [`levelled_log`].
pub const COUNT_LEVELS: &str = r#"
const counts = {};
let offset = 0, pages = 0;
for (;;) {
  const page = tools.call("read_file", {path: "app.log", offset});
  if (!page.ok) return page;
  pages++;
  for (const line of page.result.content.split("\n")) {
    if (line === "") continue;
    const level = line.substring(21, 26).trim();
    counts[level] = (counts[level] || 0) + 1;
  }
  if (page.result.nextOffset == null) return {counts, pages};
  offset = page.result.nextOffset;
}
"#;
