//! The declarations of [`KEYS`](super::KEYS): one `const` per scalar key, each written once.

use sluice_protocol::limits::{
    DEFAULT_INNER_MAX_RESULT_BYTES, DEFAULT_MAX_INNER_BYTES, DEFAULT_MAX_INNER_CALLS,
    DEFAULT_MAX_TOOL_RESULT_BYTES, DEFAULT_MAX_TURNS, DEFAULT_MCP_TOOLS_PER_PAGE,
    DEFAULT_QUEUE_TIMEOUT_MS, MAX_INNER_MAX_RESULT_BYTES, MAX_MAX_TOOL_RESULT_BYTES,
    MIN_MAX_TOOL_RESULT_BYTES,
};

use sluice_registry_terms::limits as registry_limits;

use super::{Fallback, Flag, Key, Kind};

/// A key with nothing set but its name and kind: the base of the declarations below.
const fn key(name: &'static str, kind: Kind, default: Fallback) -> Key {
    Key {
        name,
        env: None,
        env_note: "",
        empty_env_is_unset: false,
        flag: None,
        kind,
        default,
        live: false,
        doc: "",
    }
}

/// A flag without a value name or note.
const fn flag(name: &'static str) -> Option<Flag> {
    Some(Flag {
        name,
        value: "",
        note: "",
    })
}

/// `agent.max_tool_result_bytes`: the cap on every observation.
pub const AGENT_MAX_TOOL_RESULT_BYTES: Key = Key {
    env: Some("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES"),
    flag: flag("--max-tool-result-bytes"),
    live: true,
    ..key(
        "agent.max_tool_result_bytes",
        Kind::Integer {
            min: MIN_MAX_TOOL_RESULT_BYTES as u64,
            max: MAX_MAX_TOOL_RESULT_BYTES as u64,
            unit: "bytes",
        },
        Fallback::Integer(DEFAULT_MAX_TOOL_RESULT_BYTES as u64),
    )
};

/// `agent.max_turns`: the most model requests of one run.
pub const AGENT_MAX_TURNS: Key = Key {
    env: Some("SLUICE_AGENT_MAX_TURNS"),
    flag: flag("--max-turns"),
    live: true,
    ..key(
        "agent.max_turns",
        Kind::Integer {
            min: 1,
            max: crate::MAX_MAX_TURNS as u64,
            unit: "",
        },
        Fallback::Integer(DEFAULT_MAX_TURNS as u64),
    )
};

/// `agent.auto_approve`: run destructive tools without waiting for approval.
pub const AGENT_AUTO_APPROVE: Key = Key {
    env: Some("SLUICE_AGENT_AUTO_APPROVE"),
    flag: flag("--auto-approve"),
    live: true,
    ..key(
        "agent.auto_approve",
        Kind::Boolean,
        Fallback::Boolean(false),
    )
};

/// `agent.system_prompt`: replaces the built-in system prompt.
pub const AGENT_SYSTEM_PROMPT: Key = key(
    "agent.system_prompt",
    Kind::Text { shown: "" },
    Fallback::Described("a short prompt about paging"),
);

/// `tools_dir`: a directory of components with sibling policies.
pub const TOOLS_DIR: Key = Key {
    flag: Some(Flag {
        name: "--tools",
        value: "DIR",
        note: "",
    }),
    ..key(
        "tools_dir",
        Kind::Text { shown: "" },
        Fallback::Described("none"),
    )
};

/// `strict`: a component that fails to load stops the start.
pub const STRICT: Key = Key {
    flag: flag("--strict"),
    ..key("strict", Kind::Boolean, Fallback::Boolean(false))
};

/// `store.path`: the SQLite session database.
pub const STORE_PATH: Key = Key {
    env: Some("SLUICE_STORE"),
    flag: Some(Flag {
        name: "--store",
        value: "FILE",
        note: "",
    }),
    ..key(
        "store.path",
        Kind::Text { shown: "" },
        Fallback::Described("[storage.md](storage.md#location)"),
    )
};

/// `store.url`: the PostgreSQL session database.
pub const STORE_URL: Key = Key {
    env: Some("SLUICE_STORE_URL"),
    empty_env_is_unset: true,
    flag: Some(Flag {
        name: "--store-url",
        value: "URL",
        note: "",
    }),
    ..key(
        "store.url",
        Kind::Text {
            shown: "PostgreSQL, instead of `store.path`",
        },
        Fallback::Described("none ([replicas.md](replicas.md))"),
    )
};

/// `runtime.max_concurrent_calls`: tool calls that may run at once.
pub const RUNTIME_MAX_CONCURRENT_CALLS: Key = Key {
    env: Some("SLUICE_RUNTIME_MAX_CONCURRENT_CALLS"),
    flag: flag("--max-concurrent-calls"),
    doc: "tool calls at once",
    ..key(
        "runtime.max_concurrent_calls",
        Kind::Integer {
            min: 1,
            max: crate::MAX_MAX_CONCURRENT_CALLS as u64,
            unit: "calls",
        },
        Fallback::Described("2 × the cores"),
    )
};

/// `runtime.queue_timeout_ms`: how long a call waits for a free slot.
pub const RUNTIME_QUEUE_TIMEOUT_MS: Key = Key {
    env: Some("SLUICE_RUNTIME_QUEUE_TIMEOUT_MS"),
    doc: "the wait for a free call slot",
    ..key(
        "runtime.queue_timeout_ms",
        Kind::Integer {
            min: 0,
            max: crate::MAX_QUEUE_TIMEOUT_MS,
            unit: "ms",
        },
        Fallback::Integer(DEFAULT_QUEUE_TIMEOUT_MS),
    )
};

/// `runtime.baseline_compiler`: compile an uncached component with Winch first.
pub const RUNTIME_BASELINE_COMPILER: Key = Key {
    env: Some("SLUICE_RUNTIME_BASELINE_COMPILER"),
    doc: "`serve` and `mcp` (not `--strict`) compile an uncached component with Winch first, Cranelift's code swapped in when ready; `test` and `dev` with Winch only ([components.md](components.md#compiled-components))",
    ..key(
        "runtime.baseline_compiler",
        Kind::Boolean,
        Fallback::Boolean(true),
    )
};

/// `server.allowed_hosts`: the host names `sluice serve` answers to.
pub const SERVER_ALLOWED_HOSTS: Key = Key {
    env: Some("SLUICE_SERVER_ALLOWED_HOSTS"),
    env_note: " (comma-separated)",
    flag: Some(Flag {
        name: "--allowed-host",
        value: "NAME",
        note: " (repeatable)",
    }),
    ..key(
        "server.allowed_hosts",
        Kind::Text {
            shown: "host names `sluice serve` answers to",
        },
        Fallback::Described("none"),
    )
};

/// `mcp.allow_destructive`: serve destructive tools over MCP.
pub const MCP_ALLOW_DESTRUCTIVE: Key = Key {
    env: Some("SLUICE_MCP_ALLOW_DESTRUCTIVE"),
    flag: Some(Flag {
        name: "--allow-destructive",
        value: "",
        note: " (`mcp`, `serve`)",
    }),
    ..key(
        "mcp.allow_destructive",
        Kind::Boolean,
        Fallback::Boolean(false),
    )
};

/// `mcp.tools_per_page`: tools in one `tools/list` page.
pub const MCP_TOOLS_PER_PAGE: Key = key(
    "mcp.tools_per_page",
    Kind::Integer {
        min: 1,
        max: crate::MAX_TOOLS_PER_PAGE as u64,
        unit: "",
    },
    Fallback::Integer(DEFAULT_MCP_TOOLS_PER_PAGE as u64),
);

/// `code_mode.inner_max_result_bytes`: the cap of a script's tool calls.
pub const CODE_MODE_INNER_MAX_RESULT_BYTES: Key = Key {
    doc: "the cap of a script's tool calls",
    ..key(
        "code_mode.inner_max_result_bytes",
        Kind::Integer {
            min: crate::code_mode::MIN_INNER_MAX_RESULT_BYTES,
            max: MAX_INNER_MAX_RESULT_BYTES as u64,
            unit: "bytes",
        },
        Fallback::Integer(DEFAULT_INNER_MAX_RESULT_BYTES as u64),
    )
};

/// `code_mode.max_inner_calls`: tool calls per script.
pub const CODE_MODE_MAX_INNER_CALLS: Key = Key {
    doc: "tool calls per script",
    ..key(
        "code_mode.max_inner_calls",
        Kind::Integer {
            min: 1,
            max: crate::code_mode::MAX_MAX_INNER_CALLS,
            unit: "calls",
        },
        Fallback::Integer(DEFAULT_MAX_INNER_CALLS as u64),
    )
};

/// `code_mode.max_inner_bytes`: bytes a script's calls return in all.
pub const CODE_MODE_MAX_INNER_BYTES: Key = Key {
    doc: "bytes a script's calls return in all",
    ..key(
        "code_mode.max_inner_bytes",
        Kind::Integer {
            min: 1_024,
            max: crate::code_mode::MAX_MAX_INNER_BYTES,
            unit: "bytes",
        },
        Fallback::Integer(DEFAULT_MAX_INNER_BYTES),
    )
};

/// `telemetry.otlp_endpoint`: where traces go.
pub const TELEMETRY_OTLP_ENDPOINT: Key = Key {
    env: Some("SLUICE_TELEMETRY_OTLP_ENDPOINT"),
    env_note: " (or the standard `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)",
    empty_env_is_unset: true,
    doc: "send traces over OTLP/HTTP ([telemetry.md](telemetry.md))",
    ..key(
        "telemetry.otlp_endpoint",
        Kind::Text {
            shown: "an `http://` or `https://` URL",
        },
        Fallback::Described("none: no export"),
    )
};

/// `telemetry.capture_content`: exported spans carry content.
pub const TELEMETRY_CAPTURE_CONTENT: Key = Key {
    env: Some("SLUICE_TELEMETRY_CAPTURE_CONTENT"),
    doc: "exported spans carry prompts, model text, arguments and observations",
    ..key(
        "telemetry.capture_content",
        Kind::Boolean,
        Fallback::Boolean(false),
    )
};

/// `telemetry.metrics`: `GET /metrics` behind the API guard.
pub const TELEMETRY_METRICS: Key = Key {
    env: Some("SLUICE_TELEMETRY_METRICS"),
    doc: "`GET /metrics` behind the API guard of `serve` and `mcp --listen`",
    ..key("telemetry.metrics", Kind::Boolean, Fallback::Boolean(false))
};

/// `telemetry.metrics_listen`: `/metrics` on a listener of its own.
pub const TELEMETRY_METRICS_LISTEN: Key = Key {
    env: Some("SLUICE_TELEMETRY_METRICS_LISTEN"),
    empty_env_is_unset: true,
    doc: "`/metrics` on a listener of its own, no token (implies `telemetry.metrics`)",
    ..key(
        "telemetry.metrics_listen",
        Kind::Text { shown: "ADDR:PORT" },
        Fallback::Described("none"),
    )
};

/// An integer key only `sluice.toml` sets ([`FILE_KEYS`]): its name, range, unit and default.
const fn file_integer(
    name: &'static str,
    range: std::ops::RangeInclusive<u64>,
    unit: &'static str,
    default: Fallback,
) -> Key {
    key(
        name,
        Kind::Integer {
            min: *range.start(),
            max: *range.end(),
            unit,
        },
        default,
    )
}

/// `server.header_read_timeout_ms`: how long a connection may take to send a request head.
pub const SERVER_HEADER_READ_TIMEOUT_MS: Key = file_integer(
    "server.header_read_timeout_ms",
    100..=600_000,
    "ms",
    Fallback::Integer(crate::server::DEFAULT_HEADER_READ_TIMEOUT_MS),
);

/// `server.max_connections`: connections open at once.
pub const SERVER_MAX_CONNECTIONS: Key = file_integer(
    "server.max_connections",
    1..=1_000_000,
    "",
    Fallback::Integer(crate::server::DEFAULT_MAX_CONNECTIONS as u64),
);

/// `server.max_unauthenticated_connections`: connections open at once before a request of
/// theirs has passed the token check.
pub const SERVER_MAX_UNAUTHENTICATED_CONNECTIONS: Key = file_integer(
    "server.max_unauthenticated_connections",
    1..=1_000_000,
    "",
    Fallback::Integer(crate::server::DEFAULT_MAX_UNAUTHENTICATED_CONNECTIONS as u64),
);

/// `server.max_event_streams`: session event streams open at once.
pub const SERVER_MAX_EVENT_STREAMS: Key = file_integer(
    "server.max_event_streams",
    1..=100_000,
    "",
    Fallback::Integer(crate::server::DEFAULT_MAX_EVENT_STREAMS as u64),
);

/// `server.oauth.leeway_secs`: the clock skew allowed on an access token's times.
pub const SERVER_OAUTH_LEEWAY_SECS: Key = file_integer(
    "server.oauth.leeway_secs",
    0..=crate::server_oauth::MAX_LEEWAY_SECS,
    "seconds",
    Fallback::Integer(crate::server_oauth::DEFAULT_LEEWAY_SECS),
);

/// `cache.max_bytes`: the compiled components the cache keeps.
pub const CACHE_MAX_BYTES: Key = file_integer(
    crate::cache::KEY_CACHE_MAX_BYTES,
    0..=crate::cache::MAX_CACHE_BYTES,
    "bytes",
    Fallback::Described("512 MiB, the cache's own"),
);

/// `registry.max_manifest_bytes`: the largest manifest a fetch reads.
pub const REGISTRY_MAX_MANIFEST_BYTES: Key = file_integer(
    registry_limits::KEY_MAX_MANIFEST_BYTES,
    1024..=crate::registry::MAX_MANIFEST_BYTES,
    "bytes",
    Fallback::Integer(registry_limits::DEFAULT_MAX_MANIFEST_BYTES),
);

/// `registry.max_component_bytes`: the largest component layer a fetch reads.
pub const REGISTRY_MAX_COMPONENT_BYTES: Key = file_integer(
    registry_limits::KEY_MAX_COMPONENT_BYTES,
    1024..=crate::registry::MAX_COMPONENT_BYTES,
    "bytes",
    Fallback::Integer(registry_limits::DEFAULT_MAX_COMPONENT_BYTES),
);

/// `registry.timeout_secs`: every request to a registry, its body included.
pub const REGISTRY_TIMEOUT_SECS: Key = file_integer(
    registry_limits::KEY_TIMEOUT_SECS,
    1..=crate::registry::MAX_TIMEOUT_SECS,
    "seconds",
    Fallback::Integer(registry_limits::DEFAULT_TIMEOUT.as_secs()),
);

/// The integer keys only `sluice.toml` sets (no variable, no flag), each read with
/// `Key::file_integer`; their rows are in their tables' sections of docs/configuration.md.
pub const FILE_KEYS: &[Key] = &[
    SERVER_HEADER_READ_TIMEOUT_MS,
    SERVER_MAX_CONNECTIONS,
    SERVER_MAX_UNAUTHENTICATED_CONNECTIONS,
    SERVER_MAX_EVENT_STREAMS,
    SERVER_OAUTH_LEEWAY_SECS,
    CACHE_MAX_BYTES,
    REGISTRY_MAX_MANIFEST_BYTES,
    REGISTRY_MAX_COMPONENT_BYTES,
    REGISTRY_TIMEOUT_SECS,
];

/// Every scalar key, in the order of docs/configuration.md#precedence.
pub const KEYS: &[Key] = &[
    AGENT_MAX_TOOL_RESULT_BYTES,
    AGENT_MAX_TURNS,
    AGENT_AUTO_APPROVE,
    AGENT_SYSTEM_PROMPT,
    TOOLS_DIR,
    STRICT,
    STORE_PATH,
    STORE_URL,
    RUNTIME_MAX_CONCURRENT_CALLS,
    RUNTIME_QUEUE_TIMEOUT_MS,
    RUNTIME_BASELINE_COMPILER,
    SERVER_ALLOWED_HOSTS,
    MCP_ALLOW_DESTRUCTIVE,
    MCP_TOOLS_PER_PAGE,
    CODE_MODE_INNER_MAX_RESULT_BYTES,
    CODE_MODE_MAX_INNER_CALLS,
    CODE_MODE_MAX_INNER_BYTES,
    TELEMETRY_OTLP_ENDPOINT,
    TELEMETRY_CAPTURE_CONTENT,
    TELEMETRY_METRICS,
    TELEMETRY_METRICS_LISTEN,
];
