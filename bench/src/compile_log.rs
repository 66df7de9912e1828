//! What the `sluice` binary logs about compiles, read from its stderr (rows 15 and 16): with
//! [`COMPILE_LOG`], `sluice_runtime` logs a line for each compile, `… sluice_runtime::engine:
//! MESSAGE component="…" bytes=N ms=N`. The message says which compiler (`compiled` for the
//! code that is kept and cached; the baseline compiler's first code has a message of its
//! own), so the rows print each message as it comes rather than assume an engine.

use std::path::Path;
use std::time::Duration;

/// The log filter that makes the binary log each compile.
pub(crate) const COMPILE_LOG: &str = "warn,sluice_runtime=info";

/// The message of the compile whose code is kept and cached (Cranelift's).
pub(crate) const KEPT: &str = "compiled";

/// One line of the log: when it came (since the process started), its message and fields.
#[derive(Debug, Clone)]
pub(crate) struct LogLine {
    pub(crate) at: Duration,
    pub(crate) message: String,
    pub(crate) fields: Vec<(String, String)>,
}

impl LogLine {
    /// Parses a line of tracing's default format (`TIME LEVEL TARGET: MESSAGE k=v …`).
    pub(crate) fn parse(at: Duration, line: &str) -> Option<LogLine> {
        let (_, rest) = line.split_once(": ")?;
        let start = field_start(rest, 0).unwrap_or(rest.len());
        Some(LogLine {
            at,
            message: rest[..start].trim().to_string(),
            fields: fields(&rest[start..]),
        })
    }

    pub(crate) fn field(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The `component` field's file name (or the built-in's name, `built-in read_file`).
    pub(crate) fn component_name(&self) -> Option<String> {
        let c = self.field("component")?;
        Some(
            Path::new(c)
                .file_name()
                .map_or_else(|| c.to_string(), |n| n.to_string_lossy().into()),
        )
    }

    /// A compile line: the component's name and size, and the compile's time.
    pub(crate) fn compile(&self) -> Option<(String, Duration)> {
        let bytes: u64 = self.field("bytes")?.parse().ok()?;
        let ms: u64 = self.field("ms")?.parse().ok()?;
        let name = self.component_name()?;
        Some((
            format!("{name} ({:.1} MB)", bytes as f64 / 1e6),
            Duration::from_millis(ms),
        ))
    }
}

/// The lines of `log` (each with when it came) that parse.
pub(crate) fn parse_all(log: &[(Duration, String)]) -> Vec<LogLine> {
    log.iter()
        .filter_map(|(at, line)| LogLine::parse(*at, line))
        .collect()
}

/// Where the next field (`key=`, after a space or at `from`) starts in `text`.
fn field_start(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = from;
    while i < bytes.len() {
        if i == from || bytes[i - 1] == b' ' {
            let key = bytes[i..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b == b'.')
                .count();
            if key > 0 && bytes.get(i + key) == Some(&b'=') {
                return Some(i);
            }
        }
        i += 1;
    }
    None
}

/// The `key=value` fields of `text`: a value in quotes (a string's `Debug`) may hold spaces
/// and `\"`; one without (a `Display`) runs to the next field.
fn fields(mut text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    while let Some((key, rest)) = text.trim_start().split_once('=') {
        let value;
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut end = quoted.len();
            let mut escaped = false;
            for (i, c) in quoted.char_indices() {
                match c {
                    '\\' if !escaped => escaped = true,
                    '"' if !escaped => {
                        end = i;
                        break;
                    }
                    _ => escaped = false,
                }
            }
            value = quoted[..end].replace("\\\"", "\"").replace("\\\\", "\\");
            text = quoted.get(end + 1..).unwrap_or("");
        } else {
            let end = field_start(rest, 1).unwrap_or(rest.len());
            value = rest[..end].trim_end().to_string();
            text = &rest[end..];
        }
        out.push((key.to_string(), value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compile_line_and_a_swap_line() {
        let line = LogLine::parse(
            Duration::ZERO,
            r#"2026-12-06T12:27:20.160608Z  INFO sluice_runtime::engine: compiled by the baseline compiler (Winch); Cranelift's code follows component="/a b/csv_summary.wasm" bytes=18433180 ms=2100"#,
        )
        .unwrap();
        assert_eq!(
            line.message,
            "compiled by the baseline compiler (Winch); Cranelift's code follows"
        );
        assert_eq!(
            line.compile(),
            Some((
                "csv_summary.wasm (18.4 MB)".to_string(),
                Duration::from_millis(2100)
            ))
        );
        let swap = LogLine::parse(
            Duration::ZERO,
            "2026-12-06T12:27:20Z  INFO sluice_runtime::call::load: Cranelift's code swapped in for Winch's component=built-in read_file",
        )
        .unwrap();
        assert_eq!(swap.message, "Cranelift's code swapped in for Winch's");
        assert_eq!(swap.field("component"), Some("built-in read_file"));
        assert_eq!(swap.compile(), None);
    }
}
