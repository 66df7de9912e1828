//! What each configured tool is and may do, as `sluice doctor` prints it and the operator
//! API's `GET /tools` answers it: one [`ToolReport`] per tool offered, and one per
//! component that did not load (with why). The one owner of that shape.

use std::sync::{Arc, RwLock};

use serde::Serialize;
use sluice_config::{ToolConfig, ToolSource};
use sluice_registry::SignatureStatus;
use sluice_runtime::call::toolbox::Unavailable;
use sluice_runtime::{HttpAllow, ToolInfo};

/// One tool (or one component that did not load).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolReport {
    /// The tool's name as the model calls it; for a component that did not load, its
    /// configured name (`[tools.NAME]`, the file stem, the built-in's name).
    pub name: String,
    /// Where the component comes from: `built-in`, `file` or `oci`.
    pub source: &'static str,
    /// The component: the built-in's name, the file's path, or the `oci://` reference as
    /// configured.
    pub component: String,
    /// `sha256:` and the 64 hex digits of the component's bytes (for `oci://`, the
    /// manifest digest the reference resolved to); `None` when it did not load.
    pub digest: Option<String>,
    /// The signature check: `built-in` (shipped inside Sluice), `none` (a file: only its
    /// `sha256` pin, if any, is checked), `not checked` (an `oci://` component without
    /// `verify.key`), `verified with KEY`.
    pub signature: String,
    /// What its calls may reach.
    pub grants: Grants,
    /// Its limits.
    pub limits: Limits,
    /// How clients are told to treat it (MCP's tool annotations).
    pub annotations: Annotations,
    /// False for a component that did not load: then [`ToolReport::reason`] says why.
    pub available: bool,
    /// Why it did not load; `None` when it did.
    pub reason: Option<String>,
}

/// What a tool's calls may reach.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Grants {
    /// Roots it may read, as `NAME=DIR`.
    pub read: Vec<String>,
    /// Roots it may write, as `NAME=DIR`.
    pub write: Vec<String>,
    /// Hosts its HTTP requests may go to (`http`), as written (`api.example.com`,
    /// `*.example.com:8443`); empty: none.
    pub http: Vec<String>,
    /// The HTTP methods allowed (`http_methods`); empty: any.
    pub http_methods: Vec<String>,
    /// Whether it may call the other tools (`run_script`).
    pub tool_calls: bool,
}

/// A tool's limits.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Linear memory, in MiB.
    pub memory_mib: u64,
    /// Wall-clock time of one call, in ms.
    pub timeout_ms: u64,
    /// The most body bytes of one HTTP response.
    pub http_max_response_bytes: u64,
}

/// How clients are told to treat a tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Calls wait for approval (a `write` grant, `destructive = true`, or an HTTP method
    /// that may write).
    pub destructive: bool,
    /// It changes nothing: not destructive and no HTTP grant.
    pub read_only: bool,
    /// It may reach hosts outside Sluice (an HTTP grant).
    pub open_world: bool,
}

/// The tool list being served, swapped whole when the tools reload (cheap to clone).
#[derive(Clone, Debug, Default)]
pub struct ToolCatalog(Arc<RwLock<Arc<Vec<ToolReport>>>>);

impl ToolCatalog {
    /// A catalog holding `reports`.
    pub fn new(reports: Vec<ToolReport>) -> ToolCatalog {
        ToolCatalog(Arc::new(RwLock::new(Arc::new(reports))))
    }

    /// The tools now.
    pub fn get(&self) -> Arc<Vec<ToolReport>> {
        match self.0.read() {
            Ok(r) => r.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the tools.
    pub fn set(&self, reports: Vec<ToolReport>) {
        let mut w = match self.0.write() {
            Ok(w) => w,
            Err(poisoned) => poisoned.into_inner(),
        };
        *w = Arc::new(reports);
    }
}

/// A loaded component as reports need it.
pub(crate) struct Entry<'a> {
    /// How the runtime names it ([`sluice_runtime::component::source::Source::describe`]).
    pub(crate) described: String,
    /// Its configuration.
    pub(crate) config: &'a ToolConfig,
    /// `sha256:…` of its bytes, or its manifest digest.
    pub(crate) digest: String,
    /// Its signature check, for `oci://` components.
    pub(crate) signature: Option<SignatureStatus>,
}

fn kind(t: &ToolConfig) -> &'static str {
    match &t.source {
        ToolSource::Builtin(_) => "built-in",
        ToolSource::Component(_) => "file",
        ToolSource::Oci(_) => "oci",
    }
}

fn component(t: &ToolConfig) -> String {
    match &t.source {
        ToolSource::Builtin(name) => name.clone(),
        ToolSource::Component(path) => path.display().to_string(),
        ToolSource::Oci(o) => o.reference.to_string(),
    }
}

fn grants(t: &ToolConfig) -> Grants {
    let root = |r: &sluice_config::RootConfig| format!("{}={}", r.name, r.dir.display());
    Grants {
        read: t
            .read
            .iter()
            .filter(|r| !t.write.iter().any(|w| w.name == r.name))
            .map(root)
            .collect(),
        write: t.write.iter().map(root).collect(),
        http: t.http.allow.iter().map(HttpAllow::as_written).collect(),
        http_methods: t.http.methods.clone(),
        tool_calls: t.tool_calls.is_some(),
    }
}

fn limits(t: &ToolConfig) -> Limits {
    Limits {
        memory_mib: t.memory_mib,
        timeout_ms: t.timeout_ms,
        http_max_response_bytes: t.http.max_response_bytes,
    }
}

fn signature(t: &ToolConfig, status: Option<&SignatureStatus>) -> String {
    match (&t.source, status) {
        (ToolSource::Builtin(_), _) => "built-in".into(),
        (ToolSource::Component(_), _) => "none".into(),
        (ToolSource::Oci(_), Some(SignatureStatus::Verified { key, .. })) => {
            format!("verified with {key}")
        }
        (ToolSource::Oci(o), _) if o.keys.is_empty() => "not checked".into(),
        (ToolSource::Oci(_), _) => "not checked (it did not load)".into(),
    }
}

/// The report of one tool `info` of the loaded component `entry`.
pub(crate) fn offered(info: &ToolInfo, entry: &Entry<'_>) -> ToolReport {
    let t = entry.config;
    ToolReport {
        name: info.name.clone(),
        source: kind(t),
        component: component(t),
        digest: Some(entry.digest.clone()),
        signature: signature(t, entry.signature.as_ref()),
        grants: grants(t),
        limits: limits(t),
        annotations: Annotations {
            destructive: info.destructive,
            read_only: !info.destructive && !info.open_world,
            open_world: info.open_world,
        },
        available: true,
        reason: None,
    }
}

/// The report of a component that did not load: `config` when it was configured (a
/// tools-directory entry refused for its policy has none), named by `u.source` otherwise.
pub(crate) fn unavailable(u: &Unavailable, config: Option<&ToolConfig>) -> ToolReport {
    match config {
        Some(t) => ToolReport {
            name: t.name.clone(),
            source: kind(t),
            component: component(t),
            digest: None,
            signature: signature(t, None),
            grants: grants(t),
            limits: limits(t),
            annotations: Annotations {
                destructive: t.destructive,
                read_only: !t.destructive && t.http.allow.is_empty(),
                open_world: !t.http.allow.is_empty(),
            },
            available: false,
            reason: Some(u.reason.clone()),
        },
        None => ToolReport {
            name: std::path::Path::new(&u.source)
                .file_stem()
                .map_or(u.source.clone(), |s| s.to_string_lossy().into_owned()),
            source: "file",
            component: u.source.clone(),
            digest: None,
            signature: "none".into(),
            grants: Grants::default(),
            limits: Limits::default(),
            annotations: Annotations::default(),
            available: false,
            reason: Some(u.reason.clone()),
        },
    }
}
