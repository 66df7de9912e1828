//! Which spans and events reach the log and the exporter.
//!
//! The log takes `SLUICE_LOG`'s directives (tracing's `EnvFilter`; default `warn`), with
//! some targets quiet unless named: rmcp's own lines (detail of the SDK) and
//! [`CONTENT_TARGET`](crate::CONTENT_TARGET) (prompts and observations), off unless the
//! directives name them or (rmcp only, as the binary passes it) enable debug for everything.
//! The exporter takes Sluice's own spans and events at `info` and above, whatever
//! `SLUICE_LOG` says, and the content target only with `telemetry.capture_content`.

use tracing::Metadata;

/// The log filter `spec` (tracing's `EnvFilter` directives, comma-separated, as in
/// `SLUICE_LOG`) with `{target}=off` added unless it names `target` (or one of its modules,
/// `target::…`) or, when `verbose_shows` is true, enables debug or trace for every target:
/// `quiet("info", "rmcp", true)` → `"info,rmcp=off"`; `quiet("debug", "rmcp", true)` and
/// `quiet("warn,rmcp=info", "rmcp", true)` unchanged; `quiet("debug", "x", false)` →
/// `"debug,x=off"`.
pub fn quiet(spec: &str, target: &str, verbose_shows: bool) -> String {
    let directives = spec.split(',').map(str::trim).filter(|d| !d.is_empty());
    let mut keep = false;
    for directive in directives {
        let (named, level) = match directive.split_once('=') {
            Some((named, level)) => (named.trim(), Some(level.trim())),
            // A bare level applies to every target; a bare target enables it at trace.
            None if is_level(directive) => ("", Some(directive)),
            None => (directive, None),
        };
        let named = named.split('[').next().unwrap_or_default();
        let names_target = named == target
            || named
                .strip_prefix(target)
                .is_some_and(|rest| rest.starts_with("::"));
        let everything_verbose = verbose_shows
            && named.is_empty()
            && level.is_some_and(|l| {
                l.eq_ignore_ascii_case("debug") || l.eq_ignore_ascii_case("trace")
            });
        keep |= names_target || everything_verbose;
    }
    if keep {
        spec.to_string()
    } else if spec.trim().is_empty() {
        format!("{target}=off")
    } else {
        format!("{spec},{target}=off")
    }
}

/// True for a level name (or `off`), as a bare directive.
fn is_level(word: &str) -> bool {
    ["off", "error", "warn", "info", "debug", "trace"]
        .iter()
        .any(|l| word.eq_ignore_ascii_case(l))
}

/// The most verbose level the exporter takes: `info`.
pub(crate) const EXPORTED_LEVEL: tracing::level_filters::LevelFilter =
    tracing::level_filters::LevelFilter::INFO;

/// True when the exporter takes a span or event of `meta`: Sluice's own (a target starting
/// `sluice`) at [`EXPORTED_LEVEL`] or above, the content target only when `capture_content`.
pub(crate) fn exported(meta: &Metadata<'_>, capture_content: bool) -> bool {
    let target = meta.target();
    EXPORTED_LEVEL >= *meta.level()
        && target.starts_with("sluice")
        && (capture_content || !is_content(target))
}

/// True for [`CONTENT_TARGET`](crate::CONTENT_TARGET) and its sub-targets.
fn is_content(target: &str) -> bool {
    target
        .strip_prefix(crate::CONTENT_TARGET)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_shows_only_when_asked_for() {
        let rmcp = |s: &str| quiet(s, "rmcp", true);
        assert_eq!(rmcp("warn"), "warn,rmcp=off");
        assert_eq!(rmcp("info"), "info,rmcp=off");
        assert_eq!(rmcp("INFO"), "INFO,rmcp=off");
        assert_eq!(
            rmcp("info,sluice_mcp=debug"),
            "info,sluice_mcp=debug,rmcp=off"
        );
        assert_eq!(rmcp(""), "rmcp=off");
        assert_eq!(rmcp("debug"), "debug");
        assert_eq!(rmcp("warn,trace"), "warn,trace");
        assert_eq!(rmcp("warn,rmcp=info"), "warn,rmcp=info");
        assert_eq!(rmcp("rmcp::service=debug"), "rmcp::service=debug");
        assert_eq!(rmcp("rmcp"), "rmcp");
        assert_eq!(rmcp("rmcp[serve_inner]=debug"), "rmcp[serve_inner]=debug");
        // Another crate whose name starts alike is not rmcp.
        assert_eq!(rmcp("rmcpx=debug"), "rmcpx=debug,rmcp=off");
        // Content shows only when named, never through a bare level.
        let content = |s: &str| quiet(s, "sluice::content", false);
        assert_eq!(content("trace"), "trace,sluice::content=off");
        assert_eq!(
            content("warn,sluice::content=info"),
            "warn,sluice::content=info"
        );
    }

    #[test]
    fn content_is_exported_only_with_capture() {
        assert!(is_content("sluice::content"));
        assert!(is_content("sluice::content::prompt"));
        assert!(!is_content("sluice::contents"));
        assert!(!is_content("sluice_agent"));
    }
}
