//! What of rmcp's own logging an operator sees. rmcp logs every Streamable HTTP request's
//! session at info (`Service initialized as server peer_info=…`, the whole client info), a
//! client that leaves mid-answer at error (`failed to send pending response during
//! drain`) and an ordinary cancellation at warn: detail of the SDK, not events of the
//! server, which logs what matters itself. So rmcp's lines count as debug: they show only
//! when `SLUICE_LOG` enables debug (or trace) for everything, or names rmcp itself
//! (`SLUICE_LOG=warn,rmcp=info`).

/// The tracing target of rmcp's log lines (and of its modules, `rmcp::…`).
pub const RMCP_TARGET: &str = "rmcp";

/// The log filter `spec` (tracing's `EnvFilter` directives, comma-separated, as in
/// `SLUICE_LOG`) with `rmcp=off` added unless it names rmcp or enables debug or trace for
/// every target: `"info"` → `"info,rmcp=off"`; `"debug"`, `"warn,rmcp=info"` unchanged.
pub fn quiet_rmcp(spec: &str) -> String {
    let directives = spec.split(',').map(str::trim).filter(|d| !d.is_empty());
    let mut keep = false;
    for directive in directives {
        let (target, level) = match directive.split_once('=') {
            Some((target, level)) => (target.trim(), Some(level.trim())),
            // A bare level applies to every target; a bare target enables it at trace.
            None if is_level(directive) => ("", Some(directive)),
            None => (directive, None),
        };
        let target = target.split('[').next().unwrap_or_default();
        let names_rmcp = target == RMCP_TARGET || target.starts_with("rmcp::");
        let everything_verbose = target.is_empty()
            && level.is_some_and(|l| {
                l.eq_ignore_ascii_case("debug") || l.eq_ignore_ascii_case("trace")
            });
        keep |= names_rmcp || everything_verbose;
    }
    if keep {
        spec.to_string()
    } else if spec.trim().is_empty() {
        format!("{RMCP_TARGET}=off")
    } else {
        format!("{spec},{RMCP_TARGET}=off")
    }
}

/// True for a level name (or `off`), as a bare directive.
fn is_level(word: &str) -> bool {
    ["off", "error", "warn", "info", "debug", "trace"]
        .iter()
        .any(|l| word.eq_ignore_ascii_case(l))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmcp_shows_only_when_asked_for() {
        assert_eq!(quiet_rmcp("warn"), "warn,rmcp=off");
        assert_eq!(quiet_rmcp("info"), "info,rmcp=off");
        assert_eq!(quiet_rmcp("INFO"), "INFO,rmcp=off");
        assert_eq!(
            quiet_rmcp("info,sluice_mcp=debug"),
            "info,sluice_mcp=debug,rmcp=off"
        );
        assert_eq!(quiet_rmcp(""), "rmcp=off");
        assert_eq!(quiet_rmcp("debug"), "debug");
        assert_eq!(quiet_rmcp("warn,trace"), "warn,trace");
        assert_eq!(quiet_rmcp("warn,rmcp=info"), "warn,rmcp=info");
        assert_eq!(quiet_rmcp("rmcp::service=debug"), "rmcp::service=debug");
        assert_eq!(quiet_rmcp("rmcp"), "rmcp");
        assert_eq!(
            quiet_rmcp("rmcp[serve_inner]=debug"),
            "rmcp[serve_inner]=debug"
        );
        // Another crate whose name starts alike is not rmcp.
        assert_eq!(quiet_rmcp("rmcpx=debug"), "rmcpx=debug,rmcp=off");
    }
}
