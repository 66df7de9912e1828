//! Which tools the caller of an MCP request may list and call (docs/api.md#principals-and-scopes).
//!
//! The HTTP layer in front (sluice-server's guard) puts a [`ToolGrant`] in the extensions of
//! each request whose principal holds `tools:call:<tool>` grants rather than `tools:call`. A
//! request without one (stdio; a principal with `tools:call` or `admin`; a server without
//! principals) may use every served tool.

use std::collections::BTreeSet;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::RequestContext;

/// The tools one principal may use over MCP, by name. Cheap to clone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolGrant {
    principal: Arc<str>,
    tools: Arc<BTreeSet<String>>,
}

impl ToolGrant {
    /// Only `tools`, for principal `principal` (named in the refusal of any other).
    pub fn only(principal: &str, tools: impl IntoIterator<Item = String>) -> ToolGrant {
        ToolGrant {
            principal: principal.into(),
            tools: Arc::new(tools.into_iter().collect()),
        }
    }

    /// Whether tool `name` may be listed and called.
    pub fn allows(&self, name: &str) -> bool {
        self.tools.contains(name)
    }

    /// The refusal of a call of `name`, as the observation's message.
    pub(crate) fn refusal(&self, name: &str) -> String {
        format!(
            "tool {name:?} is not granted to {:?}: calling it needs scope tools:call:{name} (or tools:call); this principal may call {}",
            self.principal,
            if self.tools.is_empty() {
                "no tool".to_string()
            } else {
                self.tools.iter().cloned().collect::<Vec<_>>().join(", ")
            }
        )
    }

    /// The grant in `context`'s HTTP request, if any.
    pub(crate) fn of(context: &RequestContext<RoleServer>) -> Option<&ToolGrant> {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<ToolGrant>())
            .or_else(|| context.extensions.get::<ToolGrant>())
    }
}
