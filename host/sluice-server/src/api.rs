//! The routes and their handlers. [`crate::ROUTES`] lists them and `/openapi.json`
//! describes them.

use axum::Router;
use axum::extract::{Extension, Path, RawQuery, State};
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sluice_store::{Action, Decision};
use sluice_wiring::report::ToolCatalog;

use crate::error::ApiError;
use crate::events::{self, Follow};
use crate::listing::{SessionWindow, TranscriptWindow};
use crate::principal::Principal;
use crate::request::{JsonBody, flag, param};
use crate::runs::{LocalRun, RunEnd};
use crate::state::AppState;
use crate::tenancy::{owned, record};

/// The router over `state`: every route of [`crate::ROUTES`], JSON 404 and 405 answers.
/// [`crate::Server::router`] puts it behind the guard; `mcp` says whether it serves
/// [`crate::MCP_ROUTES`] beside it (for `/openapi.json`); `GET /tools` answers from `tools`.
pub(crate) fn router(state: AppState, mcp: bool, tools: ToolCatalog) -> Router {
    let document = axum::Json(crate::openapi::document(mcp));
    Router::new()
        .route("/healthz", get(healthz))
        .route(
            "/openapi.json",
            get(move || std::future::ready(document.clone())),
        )
        .route("/sessions", post(create_session).get(list_sessions))
        .route("/sessions/{id}", get(get_session))
        .route("/sessions/{id}/prompts", post(post_prompt))
        .route("/sessions/{id}/resume", post(resume))
        .route("/sessions/{id}/events", get(run_events))
        .route("/sessions/{id}/cancel", post(cancel))
        .route("/sessions/{id}/approvals", get(list_approvals))
        .route("/sessions/{id}/approvals/{call_id}", post(decide))
        .route("/sessions/{id}/audit", get(audit))
        .route(
            "/tools",
            get(move || std::future::ready(list_tools(&tools))),
        )
        .route("/agent/config", get(get_config).put(put_config))
        .route("/agent/config/changes", get(config_changes))
        .route("/models", get(list_models))
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .with_state(state)
}

type ApiResult = Result<Response, ApiError>;

fn ok(value: Value) -> ApiResult {
    Ok(axum::Json(value).into_response())
}

async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError::not_found(format!(
        "no route {method} {}; the routes are listed at /openapi.json",
        uri.path()
    ))
}

async fn wrong_method(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{} does not take {method}; see /openapi.json", uri.path()),
    )
}

async fn healthz(State(state): State<AppState>) -> ApiResult {
    let store = state.health().store(state.store()).await;
    let load = crate::health::Load {
        runs: state.runs().all().len(),
        streams: state.open_streams(),
    };
    let (healthy, body) = crate::health::body(state.store().location(), store, &load);
    let status = if healthy {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    Ok((status, axum::Json(body)).into_response())
}

async fn create_session(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
) -> ApiResult {
    let session = state.store().create_owned_session(principal.name()).await?;
    record(&state, &principal, Some(&session.id), Action::Create, None).await?;
    let location = format!("/sessions/{}", session.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        axum::Json(json!(session)),
    )
        .into_response())
}

async fn list_sessions(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let window = SessionWindow::parse(query.as_deref())?;
    let owner = (!principal.is_admin()).then(|| principal.name());
    ok(window.answer(state.store().list_owned_sessions(owner).await?))
}

/// The session's latest run, as `GET /sessions/{id}` shows it (`running` while it is in
/// progress, on any replica).
fn run_json(run: Option<&sluice_store::RunRecord>) -> Value {
    match run {
        Some(r) => json!({"runId": r.id, "running": r.live}),
        None => Value::Null,
    }
}

async fn get_session(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let window = TranscriptWindow::parse(query.as_deref())?;
    let session = owned(&state, &principal, &id).await?;
    let (messages, next_from) = window.cut(state.store().messages(&id).await?);
    let run = state.store().latest_run(&id).await?;
    ok(json!({
        "session": session,
        "messages": messages,
        "run": run_json(run.as_ref()),
        "nextFrom": next_from,
    }))
}

/// `{"models": [{"name", "default"}]}`: the models a prompt may name, the one of
/// `[model]` today (its [`Backend::name`](sluice_models::Backend::name), `scripted` or
/// `PROVIDER:MODEL`).
async fn list_models(State(state): State<AppState>) -> ApiResult {
    ok(json!({"models": [{"name": state.model_name(), "default": true}]}))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PromptBody {
    prompt: String,
    /// One of `GET /models`; absent: the default.
    #[serde(default)]
    model: Option<String>,
}

async fn post_prompt(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    JsonBody(body): JsonBody<PromptBody>,
) -> ApiResult {
    let wait = flag(query.as_deref(), "wait")?;
    owned(&state, &principal, &id).await?;
    if body.prompt.trim().is_empty() {
        return Err(ApiError::bad_request(
            "prompt must be a non-empty string; to continue a session without a new prompt, POST /sessions/{id}/resume",
        ));
    }
    if let Some(model) = body.model {
        let configured = state.model_name();
        if model != configured {
            return Err(ApiError::bad_request(format!(
                "model {model:?} is not configured: this server runs {configured:?} (GET /models lists the models a prompt may name; [model] in sluice.toml or --model chooses it at start)"
            ))
            .with("model", model)
            .with("allowed", vec![configured]));
        }
    }
    start(&state, &principal, &id, Some(body.prompt), wait).await
}

async fn resume(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let wait = flag(query.as_deref(), "wait")?;
    owned(&state, &principal, &id).await?;
    start(&state, &principal, &id, None, wait).await
}

/// Starts a run for `principal` (recorded as a prompt, or a resume without one); with
/// `wait`, answers 200 with how it ended, else 202 at once.
async fn start(
    state: &AppState,
    principal: &Principal,
    id: &str,
    prompt: Option<String>,
    wait: bool,
) -> ApiResult {
    let action = if prompt.is_some() {
        Action::Prompt
    } else {
        Action::Resume
    };
    let run = state.start_run(id, prompt).await?;
    record(state, principal, Some(id), action, Some(&run.id)).await?;
    if wait {
        let end = run.wait().await;
        return ok(ended(&run.id, &run.session, &end));
    }
    Ok((
        StatusCode::ACCEPTED,
        [(header::LOCATION, events_url(&run))],
        axum::Json(json!({
            "runId": run.id,
            "session": run.session,
            "status": "running",
            "events": events_url(&run),
        })),
    )
        .into_response())
}

fn events_url(run: &LocalRun) -> String {
    format!("/sessions/{}/events?runId={}", run.session, run.id)
}

/// `{runId, session, status, lastError, answer, requests}` of a run that ended.
fn ended(run_id: &str, session: &str, end: &RunEnd) -> Value {
    let mut out = Map::new();
    out.insert("runId".into(), json!(run_id));
    out.insert("session".into(), json!(session));
    out.insert("status".into(), json!(end.status));
    out.insert("lastError".into(), json!(end.last_error));
    out.insert("answer".into(), json!(end.answer));
    out.insert("requests".into(), json!(end.requests));
    Value::Object(out)
}

async fn run_events(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    owned(&state, &principal, &id).await?;
    let permit = state.stream_permit()?;
    let follow = match param(query.as_deref(), "runId") {
        Some(run_id) => match state.store().run(&run_id).await {
            Ok(run) if run.session_id == id => Follow::Run(run.id),
            Ok(_) | Err(sluice_store::StoreError::NoRun(_)) => {
                return Err(ApiError::not_found(format!(
                    "session {id} has no run {run_id:?} to follow"
                ))
                .with("session", id)
                .with("runId", run_id));
            }
            Err(e) => return Err(e.into()),
        },
        None => match state.store().latest_run(&id).await? {
            Some(run) if run.live => Follow::Run(run.id),
            latest => Follow::Next(latest.map(|r| r.id)),
        },
    };
    Ok(events::stream(state, id, follow, permit).into_response())
}

async fn cancel(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let wait = flag(query.as_deref(), "wait")?;
    owned(&state, &principal, &id).await?;
    // Recorded in the store, so the replica running it (this one or another) sees it.
    let requested = state.store().request_cancel(&id).await?;
    let Some(run) = requested.filter(|r| r.live) else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("session {id} has no run in progress to cancel"),
        )
        .with("session", id));
    };
    record(&state, &principal, Some(&id), Action::Cancel, Some(&run.id)).await?;
    let local = state.runs().current(&id).filter(|r| r.id == run.id);
    if let Some(local) = &local {
        local.cancel.cancel();
    }
    if wait {
        let end = match local {
            Some(local) => local.wait().await,
            None => crate::wait::finished(&state, &run.id).await?,
        };
        return ok(ended(&run.id, &id, &end));
    }
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(json!({"runId": run.id, "session": id, "status": "cancelling"})),
    )
        .into_response())
}

async fn list_approvals(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult {
    owned(&state, &principal, &id).await?;
    let approvals: Vec<Value> = state
        .pending_approvals(&id)
        .await?
        .into_iter()
        .map(|p| {
            json!({
                "callId": p.call.id,
                "tool": p.call.name,
                "arguments": p.call.arguments,
                "decision": p.decision,
            })
        })
        .collect();
    ok(json!({"session": id, "approvals": approvals}))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DecisionBody {
    decision: DecisionWord,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum DecisionWord {
    Approve,
    Deny,
}

async fn decide(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((id, call_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<DecisionBody>,
) -> ApiResult {
    owned(&state, &principal, &id).await?;
    if let Some(run) = state.store().latest_run(&id).await?.filter(|r| r.live) {
        return Err(ApiError::busy(&id, Some(&run.id)));
    }
    let pending = state.pending_calls(&id).await?;
    let Some(call) = pending.iter().find(|c| c.id == call_id) else {
        let waiting: Vec<&str> = pending.iter().map(|c| c.id.as_str()).collect();
        return Err(ApiError::not_found(format!(
            "session {id} has no call {call_id:?} waiting; calls waiting: {}",
            if waiting.is_empty() {
                "none".to_string()
            } else {
                waiting.join(", ")
            }
        ))
        .with("session", id.as_str())
        .with("callId", call_id.as_str()));
    };
    let decision = match body.decision {
        DecisionWord::Approve => Decision::Approve,
        DecisionWord::Deny => Decision::Deny,
    };
    state.store().decide(&id, &call_id, decision).await?;
    let action = match decision {
        Decision::Approve => Action::Approve,
        Decision::Deny => Action::Deny,
    };
    record(&state, &principal, Some(&id), action, Some(&call_id)).await?;
    ok(json!({
        "session": id,
        "callId": call_id,
        "tool": call.name,
        "decision": decision,
        "next": format!("POST /sessions/{id}/resume runs the session on"),
    }))
}

async fn audit(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult {
    owned(&state, &principal, &id).await?;
    let audit = sluice_store::SessionAudit::read(state.store(), &id).await?;
    Ok(axum::Json(audit).into_response())
}

/// `{"tools": [ToolReport…]}`: the tools being served now, as `sluice doctor` lists them.
fn list_tools(tools: &ToolCatalog) -> Response {
    axum::Json(json!({"tools": *tools.get()})).into_response()
}

async fn get_config(State(state): State<AppState>) -> ApiResult {
    ok(state.config_json().await?)
}

/// `{"changes": [ActionRecord…]}`: every change of the run-time configuration, oldest first,
/// with its actor and the values it set.
async fn config_changes(State(state): State<AppState>) -> ApiResult {
    ok(json!({"changes": state.store().actions(None).await?}))
}

/// Checks every key first; applies all of them, or none.
async fn put_config(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    JsonBody(body): JsonBody<Value>,
) -> ApiResult {
    let Value::Object(changes) = body else {
        return Err(ApiError::bad_request(
            "the body must be a JSON object of run-time keys, like {\"max_tool_result_bytes\": 8192}",
        ));
    };
    let mut checked = Vec::new();
    let mut errors = Vec::new();
    for (key, value) in &changes {
        match sluice_config::runtime_value(key, value) {
            Ok(setting) => checked.push(setting),
            Err(e) => errors.push(ApiError::config(key, value, &e)),
        }
    }
    let mut errors = errors.into_iter();
    if let Some(first) = errors.next() {
        let rest: Vec<Value> = errors.map(|e| Value::Object(e.body)).collect();
        return Err(if rest.is_empty() {
            first
        } else {
            first.with("more", Value::Array(rest))
        });
    }
    state.apply(&checked).await?;
    let applied = Value::Object(changes).to_string();
    record(&state, &principal, None, Action::Config, Some(&applied)).await?;
    ok(state.config_json().await?)
}
