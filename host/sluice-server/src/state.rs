//! What the handlers share: the store, the model, the tools, the run-time settings, the
//! runs, and the server's own options.

use std::sync::{Arc, PoisonError, RwLock};

use serde_json::{Map, Value, json};
use sluice_agent::{Agent, AgentError, Claim, Settings, Tools};
use sluice_backends::Backend;
use sluice_config::RuntimeSetting;
use sluice_protocol::{SessionStatus, ToolCall};
use sluice_store::{Decision, Store, StoreError};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::Services;
use crate::error::ApiError;
use crate::runs::{Run, RunEnd, Runs, new_run_id};

/// The shared state (cheap to clone).
#[derive(Clone)]
pub(crate) struct AppState(Arc<Inner>);

struct Inner {
    store: Arc<dyn Store>,
    backend: Arc<dyn Backend>,
    tools: Arc<dyn Tools>,
    /// Applied to runs that start after a change; a run keeps the settings it started with.
    settings: RwLock<Settings>,
    runs: Runs,
    max_body_bytes: usize,
    /// Every run's task, so shutdown can wait for them.
    tasks: TaskTracker,
    /// Fires when the server shuts down.
    shutdown: CancellationToken,
}

/// A call that waits for (or has) the operator's decision.
pub(crate) struct PendingCall {
    pub(crate) call: ToolCall,
    pub(crate) decision: Option<Decision>,
}

impl AppState {
    pub(crate) fn new(services: Services, max_body_bytes: usize) -> Self {
        AppState(Arc::new(Inner {
            store: services.store,
            backend: services.backend,
            tools: services.tools,
            settings: RwLock::new(services.settings),
            runs: Runs::new(),
            max_body_bytes,
            tasks: TaskTracker::new(),
            shutdown: CancellationToken::new(),
        }))
    }

    pub(crate) fn store(&self) -> &dyn Store {
        self.0.store.as_ref()
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

    /// The settings runs start with now.
    pub(crate) fn settings(&self) -> Settings {
        self.0
            .settings
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The run-time keys and their values, as `GET /agent/config` shows them.
    pub(crate) fn config_json(&self) -> Value {
        let s = self.settings();
        json!({
            "max_tool_result_bytes": s.max_tool_result_bytes,
            "max_turns": s.max_turns,
            "auto_approve": s.auto_approve,
        })
    }

    /// Applies checked run-time values, all at once.
    pub(crate) fn apply(&self, changes: &[RuntimeSetting]) {
        let mut s = self
            .0
            .settings
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        for change in changes {
            match *change {
                RuntimeSetting::MaxToolResultBytes(n) => s.max_tool_result_bytes = n,
                RuntimeSetting::MaxTurns(n) => s.max_turns = n,
                RuntimeSetting::AutoApprove(b) => s.auto_approve = b,
            }
        }
    }

    /// The calls of session `id` that wait for the operator: calls of destructive tools in
    /// the last assistant message that have no observation yet, with any decision made.
    pub(crate) fn pending_approvals(&self, id: &str) -> Result<Vec<PendingCall>, ApiError> {
        let messages = self.store().messages(id)?;
        sluice_agent::recovery::pending_calls(&messages)
            .into_iter()
            .filter(|c| self.0.tools.is_destructive(&c.name))
            .map(|call| {
                let decision = self.store().decision(id, &call.id)?;
                Ok(PendingCall { call, decision })
            })
            .collect()
    }

    /// The calls of session `id` without an observation (whatever their tool).
    pub(crate) fn pending_calls(&self, id: &str) -> Result<Vec<ToolCall>, ApiError> {
        Ok(sluice_agent::recovery::pending_calls(
            &self.store().messages(id)?,
        ))
    }

    /// Starts a run of session `id` with `prompt` (if any). The store claims the run and
    /// accepts the prompt in one transaction before this returns, so a 202 means the prompt
    /// is stored; the run goes on in its own task and logs its events.
    ///
    /// # Errors
    /// 404 for an unknown session; 409 when the session has a run in progress (in this or
    /// another process sharing the store: nothing is stored), or when a prompt is given
    /// while a destructive call waits for a decision; 503 while shutting down.
    pub(crate) fn start_run(&self, id: &str, prompt: Option<String>) -> Result<Arc<Run>, ApiError> {
        if self.0.shutdown.is_cancelled() {
            return Err(shutting_down());
        }
        let settings = self.settings();
        let agent = Agent::new(
            self.0.store.clone(),
            self.0.backend.clone(),
            self.0.tools.clone(),
            settings,
        );
        let run_id = new_run_id()?;
        let claim = match agent.claim(id, prompt.as_deref()) {
            Ok(claim) => claim,
            Err(AgentError::Store(StoreError::Busy(_))) => {
                return Err(match self.0.runs.current(id) {
                    Some(run) => ApiError::busy(id, Some(&run.id)),
                    None => ApiError::busy_elsewhere(id),
                });
            }
            Err(e) => return Err(e.into()),
        };
        let run = self.0.runs.begin(id, run_id);
        let mut fields = Map::new();
        fields.insert("session".into(), json!(id));
        fields.insert("prompt".into(), json!(prompt));
        run.push("started", fields);
        let state = self.clone();
        let task_run = run.clone();
        self.0
            .tasks
            .spawn(async move { state.drive(task_run, agent, claim).await });
        if self.0.shutdown.is_cancelled() {
            run.cancel.cancel();
        }
        Ok(run)
    }

    /// Runs the agent loop for `run` and logs how it ended.
    async fn drive(self, run: Arc<Run>, agent: Agent, claim: Claim) {
        let events = run.clone();
        let cancel = run.cancel.clone();
        // Its own task, so that a panic in the loop ends this run with an error instead of
        // leaving the session running for ever.
        let loop_task = tokio::spawn(async move {
            agent
                .run_claimed(claim, &cancel, &move |e| events.push_run_event(&e))
                .await
        });
        let end = match loop_task.await {
            Ok(result) => RunEnd::from_result(result),
            Err(e) => {
                let message = format!("the run stopped unexpectedly: {e}");
                tracing::error!(session = %run.session, run = %run.id, "{message}");
                if let Err(e) =
                    self.store()
                        .end_run(&run.session, SessionStatus::Error, Some(&message))
                {
                    tracing::error!(session = %run.session, "cannot record the run's end: {e}");
                }
                RunEnd::failed(message)
            }
        };
        run.finish(&end);
        self.0.runs.ended(&run);
    }

    /// Shuts down: refuses new runs, cancels every run in progress and waits for them to
    /// end (each ends `aborted`, with nothing half-stored).
    pub(crate) async fn shut_down(&self) {
        self.0.shutdown.cancel();
        for run in self.0.runs.all_running() {
            run.cancel.cancel();
        }
        self.0.tasks.close();
        self.0.tasks.wait().await;
    }
}

/// 503 while the server shuts down.
fn shutting_down() -> ApiError {
    ApiError::new(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        "the server is shutting down",
    )
}
