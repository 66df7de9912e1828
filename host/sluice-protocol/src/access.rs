//! Who may do what on a server: the scopes a principal holds (docs/api.md#principals-and-scopes).
//!
//! A token (`[[server.tokens]]`), the single token of `SLUICE_SERVER_TOKEN` and an OAuth
//! access token each grant a list of scope strings. Each string is one [`Grant`]: a
//! [`Scope`] (`sessions:read`, …, `admin`), or `tools:call:<tool>`, which lets its holder
//! call that one tool over MCP.

use std::fmt;

/// A scope a request may need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// `sessions:read`: list one's sessions, read their transcripts, runs' events,
    /// approvals waiting and audits.
    SessionsRead,
    /// `sessions:write`: create sessions, post prompts, resume and cancel runs.
    SessionsWrite,
    /// `approvals`: approve or deny a tool call waiting for the operator.
    Approvals,
    /// `config`: read and change the run-time configuration (`/agent/config`).
    Config,
    /// `tools:call`: every tool over MCP (`/mcp`).
    ToolsCall,
    /// `metrics`: `GET /metrics`.
    Metrics,
    /// `admin`: every scope, and every principal's sessions.
    Admin,
}

impl Scope {
    /// Every scope, in the order messages list them.
    pub const ALL: [Scope; 7] = [
        Scope::SessionsRead,
        Scope::SessionsWrite,
        Scope::Approvals,
        Scope::Config,
        Scope::ToolsCall,
        Scope::Metrics,
        Scope::Admin,
    ];

    /// Its name on the wire: `sessions:read`, `sessions:write`, `approvals`, `config`,
    /// `tools:call`, `metrics` or `admin`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::SessionsRead => "sessions:read",
            Scope::SessionsWrite => "sessions:write",
            Scope::Approvals => "approvals",
            Scope::Config => "config",
            Scope::ToolsCall => "tools:call",
            Scope::Metrics => "metrics",
            Scope::Admin => "admin",
        }
    }

    /// The scope called `name`, if any.
    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The prefix of a grant of one tool: `tools:call:<tool>`.
pub const TOOL_GRANT_PREFIX: &str = "tools:call:";

/// What one scope string grants.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Grant {
    /// A scope.
    Scope(Scope),
    /// `tools:call:<tool>`: calls of this one tool over MCP.
    Tool(String),
}

impl Grant {
    /// The grant written `text`: a scope's name or `tools:call:<tool>` (a tool name of 1 to
    /// 64 characters of A-Z, a-z, 0-9, `_` and `-`).
    ///
    /// # Errors
    /// [`UnknownScope`] (its message lists what is allowed) for anything else.
    pub fn parse(text: &str) -> Result<Grant, UnknownScope> {
        if let Some(scope) = Scope::parse(text) {
            return Ok(Grant::Scope(scope));
        }
        match text.strip_prefix(TOOL_GRANT_PREFIX) {
            Some(tool)
                if (1..=64).contains(&tool.len())
                    && tool
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') =>
            {
                Ok(Grant::Tool(tool.to_string()))
            }
            _ => Err(UnknownScope(text.to_string())),
        }
    }
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Grant::Scope(s) => f.write_str(s.as_str()),
            Grant::Tool(t) => write!(f, "{TOOL_GRANT_PREFIX}{t}"),
        }
    }
}

/// What a scope string may be, as messages say it.
pub fn scope_rule() -> String {
    let names: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
    format!(
        "one of {}, or {TOOL_GRANT_PREFIX}<tool> for one tool",
        names.join(", ")
    )
}

/// A scope string that is none of the scopes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownScope(pub String);

impl fmt::Display for UnknownScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown scope {:?}: a scope is {}", self.0, scope_rule())
    }
}

impl std::error::Error for UnknownScope {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_and_tool_grants_parse_and_print_back() {
        for scope in Scope::ALL {
            assert_eq!(Grant::parse(scope.as_str()), Ok(Grant::Scope(scope)));
        }
        assert_eq!(
            Grant::parse("tools:call:read_file"),
            Ok(Grant::Tool("read_file".into()))
        );
        assert_eq!(
            Grant::Tool("grep_files".into()).to_string(),
            "tools:call:grep_files"
        );
        for bad in [
            "",
            "Admin",
            "tools:call:",
            "tools:call:a b",
            "sessions",
            "*",
        ] {
            assert_eq!(Grant::parse(bad), Err(UnknownScope(bad.into())), "{bad}");
        }
        assert_eq!(
            UnknownScope("root".into()).to_string(),
            "unknown scope \"root\": a scope is one of sessions:read, sessions:write, approvals, config, tools:call, metrics, admin, or tools:call:<tool> for one tool"
        );
    }
}
