//! [`Store`] for [`PgStore`]: each call in `sessions.rs`, `runs.rs` or `actions.rs`.

use serde_json::{Map, Value};
use sluice_protocol::Message;

use super::{POLL, PgStore};
use crate::queue::PendingEvent;
use crate::{
    Action, ActionRecord, AuditEntry, CallRecord, Decision, RunEnd, RunRecord, SessionRecord,
    Store, StoreError, StoredEvent, StoredMessage, Subscription, Topic,
};

#[async_trait::async_trait]
impl Store for PgStore {
    fn location(&self) -> String {
        self.inner.shown.clone()
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let what = "check the database";
        let conn = self
            .inner
            .conn()
            .await
            .map_err(|e| self.inner.error(what, "", e))?;
        conn.simple_query("SELECT 1")
            .await
            .map_err(|e| self.inner.error(what, "", e.into()))?;
        Ok(())
    }

    async fn create_owned_session(&self, owner: &str) -> Result<SessionRecord, StoreError> {
        self.inner.create_session(None, owner).await
    }

    async fn create_named_session(&self, name: &str) -> Result<SessionRecord, StoreError> {
        self.inner
            .create_session(Some(name), crate::DEFAULT_OWNER)
            .await
    }

    async fn session(&self, id: &str) -> Result<SessionRecord, StoreError> {
        self.inner.session(id).await
    }

    async fn list_owned_sessions(
        &self,
        owner: Option<&str>,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        self.inner.list_sessions(owner).await
    }

    async fn messages(&self, id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        self.inner.messages(id).await
    }

    async fn append(&self, id: &str, message: &Message) -> Result<u64, StoreError> {
        crate::metrics::timed_append("postgres", self.inner.append(id, message)).await
    }

    async fn replace_content(
        &self,
        id: &str,
        seq: u64,
        content: &str,
        reason: &str,
    ) -> Result<(), StoreError> {
        self.inner.replace_content(id, seq, content, reason).await
    }

    async fn annotate(
        &self,
        id: &str,
        seq: u64,
        reason: &str,
        note: &str,
    ) -> Result<(), StoreError> {
        self.inner.annotate(id, seq, reason, note).await
    }

    async fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError> {
        self.inner.audit(id).await
    }

    async fn record_call(
        &self,
        id: &str,
        seq: u64,
        tool: &str,
        facts: &serde_json::Value,
    ) -> Result<(), StoreError> {
        self.inner
            .record_call(id, seq, tool, &facts.to_string())
            .await
    }

    async fn calls(&self, id: &str) -> Result<Vec<CallRecord>, StoreError> {
        self.inner.calls(id).await
    }

    async fn begin_run(&self, id: &str, prompt: Option<&str>) -> Result<String, StoreError> {
        self.inner.begin_run(id, prompt).await
    }

    async fn append_queued_prompts(&self, id: &str) -> Result<Vec<u64>, StoreError> {
        self.inner.append_queued_prompts(id).await
    }

    async fn end_run(&self, id: &str, end: &RunEnd) -> Result<(), StoreError> {
        self.queue.flush().await;
        self.inner.end_run(id, end).await
    }

    fn push_event(&self, run_id: &str, kind: &str, data: Map<String, Value>) {
        self.queue.push(PendingEvent {
            run_id: run_id.to_owned(),
            kind: kind.to_owned(),
            data,
        });
    }

    async fn flush_events(&self) {
        self.queue.flush().await;
    }

    async fn run(&self, run_id: &str) -> Result<RunRecord, StoreError> {
        self.inner.run(run_id).await
    }

    async fn latest_run(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        self.inner.latest_run(id).await
    }

    async fn events(&self, run_id: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
        self.inner.events(run_id, after).await
    }

    async fn request_cancel(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        self.inner.request_cancel(id).await
    }

    fn subscribe(&self, topic: Topic) -> Subscription {
        self.inner.signals.subscribe(topic, POLL)
    }

    fn subscriptions(&self) -> usize {
        self.inner.signals.subscriptions()
    }

    async fn config(&self) -> Result<Vec<(String, Value)>, StoreError> {
        self.inner.config().await
    }

    async fn set_config(&self, values: &[(String, Value)]) -> Result<(), StoreError> {
        self.inner.set_config(values).await
    }

    async fn decide(&self, id: &str, call_id: &str, decision: Decision) -> Result<(), StoreError> {
        self.inner.decide(id, call_id, decision).await
    }

    async fn decision(&self, id: &str, call_id: &str) -> Result<Option<Decision>, StoreError> {
        self.inner.decision(id, call_id).await
    }

    async fn record_action(
        &self,
        session: Option<&str>,
        actor: &str,
        action: Action,
        detail: Option<&str>,
    ) -> Result<(), StoreError> {
        self.inner
            .record_action(session, actor, action, detail)
            .await
    }

    async fn actions(&self, session: Option<&str>) -> Result<Vec<ActionRecord>, StoreError> {
        self.inner.actions(session).await
    }
}
