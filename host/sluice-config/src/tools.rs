//! Which tools run and what each may use: the built-in tools, `[tools.NAME]` tables of
//! `sluice.toml`, and a tools directory of `*.wasm` components with sibling `*.toml`
//! policies. Deny by default: a component without a policy gets no roots, no environment,
//! and the default limits.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sluice_grants::{FunctionPolicy, HttpGrant, PolicyOrigin, SecretSource};
use sluice_protocol::limits::{DEFAULT_HTTP_MAX_CONNECTIONS, MAX_OPEN_DESCRIPTORS};

use crate::file::Raw;
use crate::http::{
    DEFAULT_HTTP_MAX_RESPONSE_BYTES, HTTP_ENTRY_RULE, MAX_HTTP_MAX_RESPONSE_BYTES, may_write,
};
use crate::http_credentials::credentials;
use crate::policy_file::{KeyList, Policy, PolicyFile, VerifyFile};
use crate::secrets::config_and_secrets;
use crate::{ConfigError, RootConfig};

/// The built-in tools, in the order they are offered: the four file tools and `run_script`
/// (code mode, [`crate::SCRIPT_TOOL`]).
pub const BUILTIN_TOOLS: [&str; 5] = [
    "read_file",
    "tail_file",
    "grep_files",
    "list_dir",
    "run_script",
];

pub use sluice_protocol::limits::{
    DEFAULT_TOOL_MEMORY_MIB as DEFAULT_MEMORY_MIB, DEFAULT_TOOL_TIMEOUT_MS as DEFAULT_TIMEOUT_MS,
    MAX_TOOL_MEMORY_MIB as MAX_MEMORY_MIB, MAX_TOOL_TIMEOUT_MS as MAX_TIMEOUT_MS,
};

/// Where a tool's component comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolSource {
    /// A built-in tool, by name.
    Builtin(String),
    /// A component file.
    Component(PathBuf),
    /// A component in an OCI registry (`component = "oci://…"`).
    Oci(OciSource),
}

/// A component in an OCI registry and how to trust it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OciSource {
    /// The reference (`oci://REGISTRY/REPOSITORY:TAG` or `…@sha256:…`).
    pub reference: sluice_registry_terms::OciReference,
    /// `verify.key`: public keys (PEM files, relative to the configuration file), any of
    /// which must have signed the component's digest with cosign; empty: no signature check.
    pub keys: Vec<PathBuf>,
    /// `insecure`: plain HTTP to a registry that is not loopback (loopback registries are
    /// always spoken to over plain HTTP). Default false.
    pub insecure: bool,
}

/// One component and what its tools may use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolConfig {
    /// The entry's name: the `[tools.NAME]` key, or the file stem in a tools directory.
    pub name: String,
    /// Where the component comes from.
    pub source: ToolSource,
    /// Roots the tools may read (read-only), in order; the first is their default root.
    pub read: Vec<RootConfig>,
    /// Roots the tools may write.
    pub write: Vec<RootConfig>,
    /// Linear memory limit, in MiB (1 to 4,096; default 256).
    pub memory_mib: u64,
    /// Wall-clock limit of one call, in ms (1 to 3,600,000; default 10,000).
    pub timeout_ms: u64,
    /// Environment variables the guest sees: the allowed keys that are set on the host.
    pub env: Vec<(String, String)>,
    /// The component's expected SHA-256, 64 lowercase hex digits.
    pub sha256: Option<String>,
    /// Calls need the operator's approval (also implied by any `write` root): `destructive`
    /// as the policy sets it, else true when its HTTP grant allows a method that may write
    /// ([`may_write`](crate::http::may_write)).
    pub destructive: bool,
    /// Description for tools whose WIT has no doc comment.
    pub description: Option<String>,
    /// `prefix`: put before each tool name of the component, with `_` between
    /// (`fs` → `fs_read_file`); [`PREFIX_RULE`].
    pub prefix: Option<String>,
    /// `[functions.<f>]` tables: settings of single functions, by the function's name as
    /// exported (`read-file`) or the tool name it would get (`read_file`).
    pub functions: BTreeMap<String, FunctionPolicy>,
    /// Outbound HTTP through `wasi:http`: `http`, `http_methods`, `http_private`,
    /// `http_max_response_bytes`, `http_max_connections` ([`crate::http`]) and
    /// `http_credentials` ([`crate::http_credentials`]); the default grants no host.
    pub http: HttpGrant,
    /// `[config]`: plain values of the component's `wasi:config/store`, by config key
    /// ([`CONFIG_KEY_RULE`](crate::CONFIG_KEY_RULE)).
    pub config: BTreeMap<String, String>,
    /// `[secrets]`: secret values of its `wasi:config/store`, by config key, and where each
    /// is read from when the component loads.
    pub secrets: BTreeMap<String, SecretSource>,
    /// Where this entry is configured, so that messages can name the key to change: its
    /// `[tools.NAME]` table, `builtins` (a built-in without a table), or the sibling `*.toml`
    /// of a component of the tools directory.
    pub origin: PolicyOrigin,
    /// Where this entry was configured, as messages name it: the configuration file and the
    /// table (`sluice.toml [tools.fs]`), the configuration file (a built-in without a
    /// table), or the sibling policy (the component when it has none).
    pub configured_in: String,
    /// Its calls may call the other tools, within these limits: the built-in `run_script`
    /// only (`[code_mode]`); `None` for every other tool.
    pub tool_calls: Option<crate::CodeModeConfig>,
}

/// What a tool name may be: [`sluice_protocol::TOOL_NAME_RULE`].
pub const TOOL_NAME_RULE: &str = sluice_protocol::TOOL_NAME_RULE;

/// What a `prefix` may be: what a tool name may be, at most 32 characters.
pub const PREFIX_RULE: &str = "1 to 32 characters of A-Z, a-z, 0-9, `_` and `-`";

/// True when `name` is a valid tool name ([`sluice_protocol::valid_tool_name`]) of at most
/// `max` bytes.
pub(crate) fn valid_tool_name(name: &str, max: usize) -> bool {
    name.len() <= max && sluice_protocol::valid_tool_name(name)
}

/// What the resolver knows when it turns a [`PolicyFile`] into a [`ToolConfig`].
pub(crate) struct Resolver<'a> {
    pub(crate) roots: &'a [RootConfig],
    pub(crate) env: &'a dyn Fn(&str) -> Option<String>,
}

impl Resolver<'_> {
    /// The tools configured by `[tools.*]` (relative paths against `base`) and the built-ins
    /// in `builtins` that have no table of their own.
    pub(crate) fn tables(
        &self,
        tables: &BTreeMap<String, PolicyFile>,
        builtins: &[String],
        base: &Path,
        origin: &str,
    ) -> Result<Vec<ToolConfig>, ConfigError> {
        for b in builtins {
            if !BUILTIN_TOOLS.contains(&b.as_str()) {
                return Err(ConfigError::Value {
                    key: "builtins".into(),
                    value: format!("{b:?}"),
                    allowed: format!(
                        "a list of built-in tool names ({})",
                        BUILTIN_TOOLS.join(", ")
                    ),
                    origin: origin.to_string(),
                });
            }
        }
        let mut out = Vec::new();
        for b in builtins {
            if !tables.contains_key(b) {
                out.push(self.entry(
                    b,
                    ToolSource::Builtin(b.clone()),
                    &Policy::default(),
                    (PolicyOrigin::Builtins(b.clone()), base),
                    origin,
                )?);
            }
        }
        for (name, table) in tables {
            let key = format!("tools.{name}");
            let source = match (&table.component, &table.builtin) {
                (Some(path), None)
                    if path.starts_with(sluice_registry_terms::reference::SCHEME) =>
                {
                    ToolSource::Oci(oci_source(name, path, table, base, origin)?)
                }
                (Some(path), None) => ToolSource::Component(base.join(path)),
                (None, Some(b)) => ToolSource::Builtin(b.clone()),
                (None, None) if BUILTIN_TOOLS.contains(&name.as_str()) => {
                    ToolSource::Builtin(name.clone())
                }
                _ => {
                    return Err(ConfigError::Value {
                        key,
                        value: if table.component.is_some() { "both".into() } else { "neither".into() },
                        allowed: "a table with either `component = \"path.wasm\"` or `builtin = \"read_file\"` (or named after a built-in tool)".into(),
                        origin: origin.to_string(),
                    });
                }
            };
            if let ToolSource::Builtin(b) = &source
                && !BUILTIN_TOOLS.contains(&b.as_str())
            {
                return Err(ConfigError::Value {
                    key: format!("{key}.builtin"),
                    value: format!("{b:?}"),
                    allowed: format!("one of {}", BUILTIN_TOOLS.join(", ")),
                    origin: origin.to_string(),
                });
            }
            if !matches!(source, ToolSource::Oci(_)) {
                only_for_oci(name, table, origin)?;
            }
            out.push(self.entry(
                name,
                source,
                &table.policy(),
                (PolicyOrigin::Table(name.clone()), base),
                &format!("{origin} [{key}]"),
            )?);
        }
        Ok(out)
    }

    /// Checks one policy, configured at `policy_origin` in a file in directory `base` (the
    /// base of its secret files). Built-ins read every root unless `read` says otherwise;
    /// other components read only what `read` names.
    pub(crate) fn entry(
        &self,
        name: &str,
        source: ToolSource,
        p: &Policy,
        (policy_origin, base): (PolicyOrigin, &Path),
        origin: &str,
    ) -> Result<ToolConfig, ConfigError> {
        let builtin = matches!(source, ToolSource::Builtin(_));
        // run_script reads nothing itself (its scripts read through the other tools), and
        // a script's pages add up: a longer default timeout.
        let script = matches!(&source, ToolSource::Builtin(b) if b == crate::SCRIPT_TOOL);
        let value_error = |field: &str, value: String, allowed: &str| ConfigError::Value {
            key: format!("tools.{name}.{field}"),
            value,
            allowed: allowed.to_string(),
            origin: origin.to_string(),
        };
        let pick = |field: &str, names: &[String]| -> Result<Vec<RootConfig>, ConfigError> {
            names
                .iter()
                .map(|n| {
                    self.roots
                        .iter()
                        .find(|r| &r.name == n)
                        .cloned()
                        .ok_or_else(|| {
                            let defined: Vec<&str> =
                                self.roots.iter().map(|r| r.name.as_str()).collect();
                            value_error(
                                field,
                                format!("{n:?}"),
                                &format!("names of defined roots ({})", defined.join(", ")),
                            )
                        })
                })
                .collect()
        };
        let read = match &p.read {
            Some(names) => pick("read", names)?,
            None if builtin && !script => self.roots.to_vec(),
            None => Vec::new(),
        };
        let write = pick("write", &p.write)?;
        let memory_mib = bounded(p.memory_mib.as_ref(), DEFAULT_MEMORY_MIB, 1, MAX_MEMORY_MIB)
            .map_err(|v| {
                value_error(
                    "memory_mib",
                    v.shown(),
                    &format!("an integer from 1 to {MAX_MEMORY_MIB} (MiB)"),
                )
            })?;
        let default_timeout = if script {
            sluice_protocol::limits::DEFAULT_SCRIPT_TIMEOUT_MS
        } else {
            DEFAULT_TIMEOUT_MS
        };
        let timeout_ms = bounded(p.timeout_ms.as_ref(), default_timeout, 1, MAX_TIMEOUT_MS)
            .map_err(|v| {
                value_error(
                    "timeout_ms",
                    v.shown(),
                    &format!("an integer from 1 to {MAX_TIMEOUT_MS} (ms)"),
                )
            })?;
        for key in &p.env {
            let ok = !key.is_empty() && !key.contains('=') && !key.contains('\0');
            if !ok {
                return Err(value_error(
                    "env",
                    format!("{key:?}"),
                    "names of environment variables",
                ));
            }
        }
        let env = p
            .env
            .iter()
            .filter_map(|k| (self.env)(k).map(|v| (k.clone(), v)))
            .collect();
        let sha256 = match &p.sha256 {
            Some(h) if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
                Some(h.to_ascii_lowercase())
            }
            Some(h) => {
                return Err(value_error(
                    "sha256",
                    format!("{h:?}"),
                    "64 hexadecimal digits",
                ));
            }
            None => None,
        };
        if let Some(prefix) = &p.prefix
            && !valid_tool_name(prefix, 32)
        {
            return Err(value_error("prefix", format!("{prefix:?}"), PREFIX_RULE));
        }
        let functions = crate::functions::functions(&p.functions, &value_error)?;
        let mut http =
            http_grant(p).map_err(|(field, v, allowed)| value_error(field, v, &allowed))?;
        let (config, secrets) = config_and_secrets(&p.config, &p.secrets, base, &value_error)?;
        let given = (p.env.as_slice(), &secrets);
        http.credentials =
            credentials(&p.http_credentials, &http.allow, given, base, &value_error)?;
        Ok(ToolConfig {
            name: name.to_string(),
            source,
            read,
            write,
            memory_mib,
            timeout_ms,
            env,
            sha256,
            destructive: p.destructive.unwrap_or_else(|| may_write(&http)),
            description: p.description.clone(),
            prefix: p.prefix.clone(),
            functions,
            http,
            config,
            secrets,
            origin: policy_origin,
            configured_in: origin.to_string(),
            tool_calls: None,
        })
    }
}

/// The HTTP keys of `p`; the error is (key, value as written, what is allowed).
fn http_grant(p: &Policy) -> Result<HttpGrant, (&'static str, String, String)> {
    let allow = p
        .http
        .iter()
        .map(|e| {
            crate::http::parse_entry(e).map_err(|why| {
                (
                    "http",
                    format!("{e:?}"),
                    format!("{HTTP_ENTRY_RULE} ({why})"),
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let methods = p
        .http_methods
        .iter()
        .map(|m| {
            crate::http::parse_method(m).map_err(|why| {
                (
                    "http_methods",
                    format!("{m:?}"),
                    format!(
                        "a list of HTTP methods, each one of {} ({why})",
                        crate::http::HTTP_METHODS.join(", ")
                    ),
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let max_response_bytes = bounded(
        p.http_max_response_bytes.as_ref(),
        DEFAULT_HTTP_MAX_RESPONSE_BYTES,
        1,
        MAX_HTTP_MAX_RESPONSE_BYTES,
    )
    .map_err(|v| {
        (
            "http_max_response_bytes",
            v.shown(),
            format!("an integer from 1 to {MAX_HTTP_MAX_RESPONSE_BYTES} (bytes)"),
        )
    })?;
    let max_connections = bounded(
        p.http_max_connections.as_ref(),
        DEFAULT_HTTP_MAX_CONNECTIONS as u64,
        1,
        MAX_OPEN_DESCRIPTORS as u64,
    )
    .map_err(|v| {
        (
            "http_max_connections",
            v.shown(),
            format!("an integer from 1 to {MAX_OPEN_DESCRIPTORS} (requests open at once)"),
        )
    })?;
    Ok(HttpGrant {
        allow,
        methods,
        private: p.http_private,
        max_response_bytes,
        max_connections: max_connections as usize,
        credentials: Vec::new(),
    })
}

/// The `oci://` source of `[tools.NAME]`: its reference, `verify.key` (relative to `base`)
/// and `insecure`.
fn oci_source(
    name: &str,
    reference: &str,
    table: &PolicyFile,
    base: &Path,
    origin: &str,
) -> Result<OciSource, ConfigError> {
    let reference =
        sluice_registry_terms::OciReference::parse(reference).map_err(|e| ConfigError::Value {
            key: format!("tools.{name}.component"),
            value: format!("{reference:?}"),
            allowed: format!(
                "a path to a .wasm file, or {} ({})",
                sluice_registry_terms::reference::REFERENCE_RULE,
                e.reason
            ),
            origin: origin.to_string(),
        })?;
    let keys = match &table.verify {
        None => Vec::new(),
        Some(VerifyFile { key }) => {
            let keys = match key {
                KeyList::One(k) => vec![k.clone()],
                KeyList::Many(ks) => ks.clone(),
            };
            if keys.is_empty() || keys.iter().any(|k| k.trim().is_empty()) {
                return Err(ConfigError::Value {
                    key: format!("tools.{name}.verify.key"),
                    value: format!("{keys:?}"),
                    allowed: "a public key file (\"cosign.pub\") or a non-empty list of them"
                        .into(),
                    origin: origin.to_string(),
                });
            }
            keys.iter().map(|k| base.join(k)).collect()
        }
    };
    Ok(OciSource {
        reference,
        keys,
        insecure: table.insecure.unwrap_or(false),
    })
}

/// Refuses `verify` and `insecure` on a policy whose component is not `oci://`.
fn only_for_oci(name: &str, p: &PolicyFile, origin: &str) -> Result<(), ConfigError> {
    let field = match (&p.verify, p.insecure) {
        (Some(_), _) => "verify",
        (None, Some(_)) => "insecure",
        (None, None) => return Ok(()),
    };
    Err(ConfigError::Value {
        key: format!("tools.{name}.{field}"),
        value: "set".into(),
        allowed: "set only for a component from a registry (component = \"oci://…\"): a signature is checked, and plain HTTP allowed, only there".into(),
        origin: origin.to_string(),
    })
}

/// An integer setting between `min` and `max` (inclusive), or `default` when absent; the
/// error is the value that is not such an integer, as the file has it ([`Raw::shown`] for
/// the message).
fn bounded(value: Option<&Raw>, default: u64, min: u64, max: u64) -> Result<u64, &Raw> {
    match value {
        None => Ok(default),
        Some(raw @ Raw::Integer(digits)) => digits
            .parse::<u64>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or(raw),
        Some(other) => Err(other),
    }
}
