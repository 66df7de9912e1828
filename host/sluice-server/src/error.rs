//! Errors as the API answers them: a status code and a JSON body `{"error": "<what was wrong
//! and what to do>", …}` with more fields where they help (`key`, `value`, `allowed` for a
//! configuration value; `callId` for a pending approval; `limitBytes` for a body too large).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use sluice_agent::AgentError;
use sluice_config::ConfigError;
use sluice_store::StoreError;

/// The `Retry-After` of a 409 for a session with a run in progress: 1 s. A run ends when it
/// ends, so this is how often to ask again, not a promise. After the replica running it was
/// killed on a live host, the session is free once that process has exited, which took well
/// under a second in every trial measured (docs/replicas.md#failover).
pub(crate) const BUSY_RETRY_AFTER_SECONDS: u64 = 1;

/// An error answer.
#[derive(Debug)]
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) body: Map<String, Value>,
    /// Headers of the answer (`Retry-After` when asking again later can succeed,
    /// `WWW-Authenticate` on a 401 or a 403 for a scope). A 401 without one gets
    /// `Bearer realm="sluice"`.
    pub(crate) headers: Vec<(header::HeaderName, HeaderValue)>,
}

impl ApiError {
    /// `status` with `{"error": message}`.
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        let mut body = Map::new();
        body.insert("error".into(), Value::String(message.into()));
        ApiError {
            status,
            body,
            headers: Vec::new(),
        }
    }

    /// Adds a header to the answer.
    pub(crate) fn with_header(mut self, name: header::HeaderName, value: HeaderValue) -> ApiError {
        self.headers.push((name, value));
        self
    }

    /// Adds a field to the body.
    pub(crate) fn with(mut self, key: &str, value: impl Into<Value>) -> ApiError {
        self.body.insert(key.into(), value.into());
        self
    }

    /// 400.
    pub(crate) fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404.
    pub(crate) fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    /// 409: session `session` has a run in progress (`Retry-After`: 1 s).
    pub(crate) fn busy(session: &str, run_id: Option<&str>) -> ApiError {
        let e = ApiError::new(
            StatusCode::CONFLICT,
            format!(
                "session {session} already has a run in progress (one run per session): wait for it to end, or cancel it with POST /sessions/{session}/cancel"
            ),
        )
        .with("session", session)
        .with_header(header::RETRY_AFTER, HeaderValue::from(BUSY_RETRY_AFTER_SECONDS));
        match run_id {
            Some(id) => e.with("runId", id),
            None => e,
        }
    }

    /// 409: session `session` has a run in progress that no run of this server knows: another
    /// process sharing the store runs it (`Retry-After`: 1 s).
    pub(crate) fn busy_elsewhere(session: &str) -> ApiError {
        ApiError::new(
            StatusCode::CONFLICT,
            format!(
                "session {session} already has a run in progress in another Sluice process using the same session store (one run per session): nothing was added; wait for that run to end, or cancel it where it runs"
            ),
        )
        .with("session", session)
        .with_header(header::RETRY_AFTER, HeaderValue::from(BUSY_RETRY_AFTER_SECONDS))
    }

    /// 500.
    pub(crate) fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    /// 400 for a configuration value, naming the key as given, the value and what is
    /// allowed.
    pub(crate) fn config(key: &str, value: &Value, e: &ConfigError) -> ApiError {
        let base = ApiError::bad_request(e.to_string()).with("key", key);
        match e {
            ConfigError::Value { allowed, .. } => {
                let e = base
                    .with("value", value.clone())
                    .with("allowed", allowed.as_str());
                match sluice_config::runtime_key(key).map(|k| k.allowed) {
                    Some(sluice_config::Allowed::Integer { min, max, .. }) => {
                        e.with("min", min).with("max", max)
                    }
                    _ => e,
                }
            }
            ConfigError::BootOnly { allowed, .. } | ConfigError::UnknownKey { allowed, .. } => {
                base.with("value", value.clone()).with(
                    "runtimeKeys",
                    Value::Array(
                        allowed
                            .split(", ")
                            .map(|k| Value::String(k.to_string()))
                            .collect(),
                    ),
                )
            }
            _ => base,
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        match &e {
            StoreError::NoSession(id) => {
                ApiError::not_found(e.to_string()).with("session", id.as_str())
            }
            StoreError::Busy(id) => ApiError::busy_elsewhere(id),
            StoreError::NoMessage { .. } => ApiError::not_found(e.to_string()),
            _ => ApiError::internal(e.to_string()),
        }
    }
}

impl From<AgentError> for ApiError {
    fn from(e: AgentError) -> ApiError {
        match e {
            AgentError::Store(e) => e.into(),
            AgentError::AwaitingApproval {
                ref session,
                ref call_id,
                ref tool,
            } => awaiting_approval(session, call_id, tool),
            e => ApiError::internal(e.to_string()),
        }
    }
}

/// 409: a destructive call of `session` waits for a decision, so a new prompt cannot be added.
pub(crate) fn awaiting_approval(session: &str, call_id: &str, tool: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        format!(
            "session {session} waits for approval of call {call_id} ({tool}): POST /sessions/{session}/approvals/{call_id} with {{\"decision\":\"approve\"}} or {{\"decision\":\"deny\"}}, then POST /sessions/{session}/resume"
        ),
    )
    .with("session", session)
    .with("callId", call_id)
    .with("tool", tool)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(Value::Object(self.body))).into_response();
        let headers = response.headers_mut();
        for (name, value) in self.headers {
            headers.insert(name, value);
        }
        if self.status == StatusCode::UNAUTHORIZED
            && !headers.contains_key(header::WWW_AUTHENTICATE)
        {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"sluice\""),
            );
        }
        response
    }
}

/// `{"error": …}` for a JSON body that cannot be used.
pub(crate) fn bad_json(e: &serde_json::Error) -> ApiError {
    ApiError::bad_request(format!("the request body is not the JSON expected: {e}"))
        .with("expected", json!("see /openapi.json"))
}
