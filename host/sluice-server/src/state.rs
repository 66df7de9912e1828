//! What the handlers share: the store, the model, the tools, the settings at boot, the runs
//! this server executes, and the server's own options.
//!
//! Run-time configuration (`PUT /agent/config`) lives in the store
//! (docs/replicas.md#running-several-replicas), so every replica and every restart sees it:
//! a run starts with the boot settings overlaid with the stored values.

use std::sync::Arc;

use serde_json::{Value, json};
use sluice_agent::{Agent, AgentError, Claim, Settings, Tools};
use sluice_config::RuntimeSetting;
use sluice_models::Backend;
use sluice_protocol::ToolCall;
use sluice_store::{Decision, RunEnd as StoreRunEnd, Store, StoreError, Topic};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use crate::Services;
use crate::error::ApiError;
use crate::runs::{LocalRun, RunEnd, Runs, event_fields};

/// The shared state (cheap to clone).
#[derive(Clone)]
pub(crate) struct AppState(Arc<Inner>);

struct Inner {
    store: Arc<dyn Store>,
    backend: Arc<dyn Backend>,
    tools: Arc<dyn Tools>,
    /// The settings at boot; the stored run-time values override them.
    settings: Settings,
    runs: Runs,
    max_body_bytes: usize,
    /// Every run's task, so shutdown can wait for them.
    tasks: TaskTracker,
    /// Fires when the server shuts down.
    shutdown: CancellationToken,
    /// One permit per event stream that may be open (`server.max_event_streams`).
    streams: Arc<tokio::sync::Semaphore>,
    /// `server.max_event_streams`, for messages.
    max_streams: usize,
    /// The store's last health check (`GET /healthz`).
    health: crate::health::Health,
}

/// A call that waits for (or has) the operator's decision.
pub(crate) struct PendingCall {
    pub(crate) call: ToolCall,
    pub(crate) decision: Option<Decision>,
}

/// A run-time setting as stored: its key and JSON value.
pub(crate) fn setting_pair(setting: &RuntimeSetting) -> (String, Value) {
    match *setting {
        RuntimeSetting::MaxToolResultBytes(n) => ("max_tool_result_bytes".into(), json!(n)),
        RuntimeSetting::MaxTurns(n) => ("max_turns".into(), json!(n)),
        RuntimeSetting::AutoApprove(b) => ("auto_approve".into(), json!(b)),
    }
}

impl AppState {
    pub(crate) fn new(
        services: Services,
        max_body_bytes: usize,
        limits: &sluice_config::ServerLimits,
    ) -> Self {
        AppState(Arc::new(Inner {
            store: services.store,
            backend: services.backend,
            tools: services.tools,
            settings: services.settings,
            runs: Runs::default(),
            max_body_bytes,
            tasks: TaskTracker::new(),
            shutdown: CancellationToken::new(),
            streams: Arc::new(tokio::sync::Semaphore::new(limits.max_event_streams)),
            max_streams: limits.max_event_streams,
            health: crate::health::Health::default(),
        }))
    }

    /// A place for one more event stream, held until the stream is dropped.
    ///
    /// # Errors
    /// 429 when `server.max_event_streams` streams are open, naming the limit and the key.
    pub(crate) fn stream_permit(&self) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
        self.0.streams.clone().try_acquire_owned().map_err(|_| {
            let limit = self.0.max_streams;
            ApiError::new(
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "too many event streams open: at most {limit} at once (server.max_event_streams in sluice.toml); close one, or raise the limit"
                ),
            )
            .with("limit", limit)
            .with("key", "server.max_event_streams")
        })
    }

    /// Event streams open now: each holds its place until it is dropped (it ended, or its
    /// client went away).
    pub(crate) fn open_streams(&self) -> usize {
        self.0
            .max_streams
            .saturating_sub(self.0.streams.available_permits())
    }

    /// The model's name for `GET /models` (`scripted`, `openai:gpt-4.1-mini`).
    pub(crate) fn model_name(&self) -> String {
        self.0.backend.name()
    }

    pub(crate) fn store(&self) -> &dyn Store {
        self.0.store.as_ref()
    }

    pub(crate) fn health(&self) -> &crate::health::Health {
        &self.0.health
    }

    pub(crate) fn runs(&self) -> &Runs {
        &self.0.runs
    }

    pub(crate) fn max_body_bytes(&self) -> usize {
        self.0.max_body_bytes
    }

    pub(crate) fn shutdown_token(&self) -> &CancellationToken {
        &self.0.shutdown
    }

    /// The settings runs start with now: those at boot, overlaid with the stored run-time
    /// values. A stored value this build does not accept (a key it does not know, a value
    /// out of range) is skipped with a warning.
    pub(crate) async fn settings(&self) -> Result<Settings, ApiError> {
        let mut s = self.0.settings.clone();
        for (key, value) in self.store().config().await? {
            match sluice_config::runtime_value(&key, &value) {
                Ok(RuntimeSetting::MaxToolResultBytes(n)) => s.max_tool_result_bytes = n,
                Ok(RuntimeSetting::MaxTurns(n)) => s.max_turns = n,
                Ok(RuntimeSetting::AutoApprove(b)) => s.auto_approve = b,
                Err(e) => tracing::warn!("ignoring the stored run-time value of {key}: {e}"),
            }
        }
        Ok(s)
    }

    /// The run-time keys and their values, as `GET /agent/config` shows them.
    pub(crate) async fn config_json(&self) -> Result<Value, ApiError> {
        let s = self.settings().await?;
        Ok(json!({
            "max_tool_result_bytes": s.max_tool_result_bytes,
            "max_turns": s.max_turns,
            "auto_approve": s.auto_approve,
        }))
    }

    /// Stores checked run-time values, all at once, for every replica.
    pub(crate) async fn apply(&self, changes: &[RuntimeSetting]) -> Result<(), ApiError> {
        let pairs: Vec<(String, Value)> = changes.iter().map(setting_pair).collect();
        Ok(self.store().set_config(&pairs).await?)
    }

    /// The calls of session `id` that wait for the operator: calls of destructive tools in
    /// the last assistant message that have no observation yet, with any decision made.
    pub(crate) async fn pending_approvals(&self, id: &str) -> Result<Vec<PendingCall>, ApiError> {
        let messages = self.store().messages(id).await?;
        let mut out = Vec::new();
        for call in sluice_agent::recovery::pending_calls(&messages)
            .into_iter()
            .filter(|c| self.0.tools.is_destructive(&c.name))
        {
            let decision = self.store().decision(id, &call.id).await?;
            out.push(PendingCall { call, decision });
        }
        Ok(out)
    }

    /// The calls of session `id` without an observation (whatever their tool).
    pub(crate) async fn pending_calls(&self, id: &str) -> Result<Vec<ToolCall>, ApiError> {
        Ok(sluice_agent::recovery::pending_calls(
            &self.store().messages(id).await?,
        ))
    }

    /// Starts a run of session `id` with `prompt` (if any). The store claims the run and
    /// accepts the prompt in one transaction before this returns, so a 202 means the prompt
    /// is stored; the run goes on in its own task.
    ///
    /// # Errors
    /// 404 for an unknown session; 409 when the session has a run in progress (here, in
    /// another process or on another replica sharing the store: nothing is stored), or when
    /// a prompt is given while a destructive call waits for a decision; 503 while shutting
    /// down.
    pub(crate) async fn start_run(
        &self,
        id: &str,
        prompt: Option<String>,
    ) -> Result<Arc<LocalRun>, ApiError> {
        if self.0.shutdown.is_cancelled() {
            return Err(shutting_down());
        }
        let settings = self.settings().await?;
        let agent = Agent::new(
            self.0.store.clone(),
            self.0.backend.clone(),
            self.0.tools.clone(),
            settings,
        );
        let claim = match agent.claim(id, prompt.as_deref()).await {
            Ok(claim) => claim,
            Err(AgentError::Store(StoreError::Busy(_))) => {
                return Err(match self.0.runs.current(id) {
                    Some(run) => ApiError::busy(id, Some(&run.id)),
                    None => ApiError::busy_elsewhere(id),
                });
            }
            Err(e) => return Err(e.into()),
        };
        let run = self.0.runs.begin(id, claim.run_id());
        let state = self.clone();
        let task_run = run.clone();
        // The run continues the trace of the request that started it (its span is current).
        self.0
            .tasks
            .spawn(async move { state.drive(task_run, agent, claim).await }.in_current_span());
        if self.0.shutdown.is_cancelled() {
            run.cancel.cancel();
        }
        Ok(run)
    }

    /// Runs the agent loop for `run`, storing its events, watching for a cancellation
    /// requested anywhere, and records how it ended.
    async fn drive(self, run: Arc<LocalRun>, agent: Agent, claim: Claim) {
        let cancel = run.cancel.clone();
        let watcher = tokio::spawn(watch_cancel(
            self.0.store.clone(),
            run.id.clone(),
            cancel.clone(),
        ));
        let store = self.0.store.clone();
        let run_id = run.id.clone();
        // Its own task, so that a panic in the loop ends this run with an error instead of
        // leaving the session running for ever.
        let loop_task = tokio::spawn(
            async move {
                let events = move |e: sluice_agent::RunEvent| {
                    if let Some((kind, fields)) = event_fields(&e) {
                        store.push_event(&run_id, &kind, fields);
                    }
                };
                agent.run_claimed(claim, &cancel, &events).await
            }
            .in_current_span(),
        );
        let end = match loop_task.await {
            Ok(result) => RunEnd::from_result(result),
            Err(e) => {
                let message = format!("the run stopped unexpectedly: {e}");
                tracing::error!(session = %run.session, run = %run.id, "{message}");
                let end =
                    StoreRunEnd::status(sluice_protocol::SessionStatus::Error, Some(&message));
                if let Err(e) = self.store().end_run(&run.session, &end).await {
                    tracing::error!(session = %run.session, "cannot record the run's end: {e}");
                }
                RunEnd::failed(message)
            }
        };
        watcher.abort();
        run.finish(end);
        self.0.runs.ended(&run);
    }

    /// Shuts down: refuses new runs, cancels every run in progress here and waits for them
    /// to end (each ends `aborted`, with nothing half-stored).
    pub(crate) async fn shut_down(&self) {
        self.0.shutdown.cancel();
        for run in self.0.runs.all() {
            run.cancel.cancel();
        }
        self.0.tasks.close();
        self.0.tasks.wait().await;
    }
}

/// Cancels `cancel` once a cancellation of run `run_id` is requested through the store
/// (from any replica): at once through a notification, within the store's poll interval
/// otherwise.
async fn watch_cancel(store: Arc<dyn Store>, run_id: String, cancel: CancellationToken) {
    let mut changes = store.subscribe(Topic::Cancel(run_id.clone()));
    loop {
        match store.run(&run_id).await {
            Ok(run) if run.cancel_requested => {
                cancel.cancel();
                return;
            }
            Ok(run) if run.ended_at.is_some() => return,
            Ok(_) => {}
            Err(e) => tracing::warn!(run = %run_id, "cannot read the run's cancellation: {e}"),
        }
        tokio::select! {
            _ = changes.changed() => {}
            () = cancel.cancelled() => return,
        }
    }
}

/// 503 while the server shuts down.
fn shutting_down() -> ApiError {
    ApiError::new(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        "the server is shutting down",
    )
}
