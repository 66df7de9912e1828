//! The `[telemetry]` table: where traces go (OTLP), whether they carry content, and the
//! Prometheus `/metrics` endpoint (docs/telemetry.md). The log format (`--log-format`) is
//! not here: it is known before the file is read.

use std::net::SocketAddr;

use serde::Deserialize;

use crate::ConfigError;
use crate::file::Raw;
use crate::keys::{
    Layers, TELEMETRY_CAPTURE_CONTENT, TELEMETRY_METRICS, TELEMETRY_METRICS_LISTEN,
    TELEMETRY_OTLP_ENDPOINT,
};

/// What `telemetry.otlp_endpoint` may be, as messages say it.
pub const OTLP_ENDPOINT_RULE: &str = "an http:// or https:// URL of an OTLP/HTTP receiver (its base, e.g. http://127.0.0.1:4318; /v1/traces is added), without credentials";

/// What `telemetry.metrics_listen` may be, as messages say it.
pub const METRICS_LISTEN_RULE: &str =
    "ADDR:PORT, an IP address and a port (127.0.0.1:9464, [::1]:9464)";

/// The `[telemetry]` table, resolved. Default: nothing exported, no content, no metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TelemetryConfig {
    /// `telemetry.otlp_endpoint`: the base URL of an OTLP/HTTP (protobuf) receiver the
    /// spans are sent to (`/v1/traces` is appended). `None` when unset: then the standard
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` decide, and
    /// without them nothing is exported. From `SLUICE_TELEMETRY_OTLP_ENDPOINT`, else the file.
    pub otlp_endpoint: Option<String>,
    /// `telemetry.capture_content` (default false): exported spans carry the prompts, the
    /// model's text, tool arguments and observations. Off, no content leaves the process.
    pub capture_content: bool,
    /// `telemetry.metrics` (default false; true when `metrics_listen` is set): `GET
    /// /metrics` (Prometheus text) behind the API guard of `sluice serve` and `sluice mcp
    /// --listen`.
    pub metrics: bool,
    /// `telemetry.metrics_listen`: `/metrics` on a listener of its own at this address,
    /// without a token. Default none.
    pub metrics_listen: Option<SocketAddr>,
}

/// `[telemetry]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileTelemetry {
    otlp_endpoint: Option<Raw>,
    capture_content: Option<Raw>,
    metrics: Option<Raw>,
    metrics_listen: Option<Raw>,
}

/// A string setting as [`crate::keys::Key::given`] should hand it over: a TOML string as written, without
/// the quotes [`Raw::shown`] adds (carried as the one variant shown unquoted); anything
/// else as it is, for the key's check to refuse by name.
fn unquoted(raw: &Raw) -> Raw {
    match raw {
        Raw::String(s) => Raw::Integer(s.clone()),
        other => other.clone(),
    }
}

impl FileTelemetry {
    /// Resolves `[telemetry]` with the environment above the file.
    pub(crate) fn resolve(&self, layers: &Layers<'_>) -> Result<TelemetryConfig, ConfigError> {
        let endpoint_raw = self.otlp_endpoint.as_ref().map(unquoted);
        let otlp_endpoint = TELEMETRY_OTLP_ENDPOINT
            .given(None, endpoint_raw.as_ref(), layers)
            .map(|(v, origin)| endpoint(v, origin))
            .transpose()?;
        let capture_content =
            TELEMETRY_CAPTURE_CONTENT.boolean(false, self.capture_content.as_ref(), layers)?;
        let listen_raw = self.metrics_listen.as_ref().map(unquoted);
        let metrics_listen = TELEMETRY_METRICS_LISTEN
            .given(None, listen_raw.as_ref(), layers)
            .map(|(v, origin)| {
                v.trim()
                    .parse::<SocketAddr>()
                    .map_err(|_| ConfigError::Value {
                        key: TELEMETRY_METRICS_LISTEN.name.into(),
                        value: format!("{v:?}"),
                        allowed: METRICS_LISTEN_RULE.into(),
                        origin,
                    })
            })
            .transpose()?;
        let metrics = TELEMETRY_METRICS.boolean(false, self.metrics.as_ref(), layers)?
            || metrics_listen.is_some();
        Ok(TelemetryConfig {
            otlp_endpoint,
            capture_content,
            metrics,
            metrics_listen,
        })
    }
}

/// `telemetry.otlp_endpoint` checked: an `http` or `https` URL with a host and no
/// credentials, without a trailing `/`.
fn endpoint(value: String, origin: String) -> Result<String, ConfigError> {
    let refuse = |value: String| ConfigError::Value {
        key: TELEMETRY_OTLP_ENDPOINT.name.into(),
        value,
        allowed: OTLP_ENDPOINT_RULE.into(),
        origin: origin.clone(),
    };
    let Ok(url) = url::Url::parse(value.trim()) else {
        return Err(refuse(format!("{value:?}")));
    };
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(refuse(format!("{value:?}")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refuse(
            "a URL with credentials (not shown: use OTEL_EXPORTER_OTLP_HEADERS)".into(),
        ));
    }
    Ok(value.trim().trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, Overrides};

    fn resolve(
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<TelemetryConfig, String> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sluice.toml");
        std::fs::write(&file, text).unwrap();
        let overrides = Overrides {
            roots: vec![dir.path().display().to_string()],
            ..Overrides::default()
        };
        Config::resolve(Some(&file), env, &overrides)
            .map(|c| c.telemetry)
            .map_err(|e| e.to_string().replace(&file.display().to_string(), "<file>"))
    }

    #[test]
    fn defaults_file_and_environment() {
        assert_eq!(resolve("", &|_| None).unwrap(), TelemetryConfig::default());
        let file = "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318/\"\ncapture_content = true\nmetrics_listen = \"127.0.0.1:9464\"\n";
        assert_eq!(
            resolve(file, &|_| None).unwrap(),
            TelemetryConfig {
                otlp_endpoint: Some("http://127.0.0.1:4318".into()),
                capture_content: true,
                metrics: true,
                metrics_listen: Some("127.0.0.1:9464".parse().unwrap()),
            }
        );
        let env = |k: &str| match k {
            "SLUICE_TELEMETRY_OTLP_ENDPOINT" => Some("https://collector.example:4318".to_string()),
            "SLUICE_TELEMETRY_CAPTURE_CONTENT" => Some("false".to_string()),
            "SLUICE_TELEMETRY_METRICS" => Some("1".to_string()),
            _ => None,
        };
        let c = resolve(file, &env).unwrap();
        assert_eq!(
            c.otlp_endpoint.as_deref(),
            Some("https://collector.example:4318")
        );
        assert!(!c.capture_content);
        assert!(c.metrics);
        let c = resolve("[telemetry]\nmetrics = true\n", &|_| None).unwrap();
        assert!(c.metrics);
        assert_eq!(c.metrics_listen, None);
    }

    #[test]
    fn bad_values_name_the_key() {
        assert_eq!(
            resolve("[telemetry]\notlp_endpoint = \"grpc://x:4317\"\n", &|_| {
                None
            })
            .unwrap_err(),
            format!(
                "telemetry.otlp_endpoint must be {OTLP_ENDPOINT_RULE}; got \"grpc://x:4317\" (from <file> line 2)"
            )
        );
        assert_eq!(
            resolve("[telemetry]\notlp_endpoint = 4318\n", &|_| None).unwrap_err(),
            format!(
                "telemetry.otlp_endpoint must be {OTLP_ENDPOINT_RULE}; got \"4318\" (from <file> line 2)"
            )
        );
        let secret = |k: &str| {
            (k == "SLUICE_TELEMETRY_OTLP_ENDPOINT")
                .then(|| "http://user:pw@127.0.0.1:4318".to_string())
        };
        let e = resolve("", &secret).unwrap_err();
        assert!(!e.contains("pw"), "{e}");
        assert!(e.ends_with("(from SLUICE_TELEMETRY_OTLP_ENDPOINT)"), "{e}");
        assert_eq!(
            resolve("[telemetry]\ncapture_content = \"yes\"\n", &|_| None).unwrap_err(),
            "telemetry.capture_content must be true or false; got \"yes\" (from <file> line 2)"
        );
        assert_eq!(
            resolve("[telemetry]\nmetrics_listen = \"localhost\"\n", &|_| None).unwrap_err(),
            format!(
                "telemetry.metrics_listen must be {METRICS_LISTEN_RULE}; got \"localhost\" (from <file> line 2)"
            )
        );
        let e = resolve("[telemetry]\nendpoint = \"x\"\n", &|_| None).unwrap_err();
        assert!(e.contains("unknown field `endpoint`"), "{e}");
    }
}
