//! The agent loop's metrics (docs/api.md#metrics), counted by a Prometheus recorder local to
//! each test (`metrics::with_local_recorder`: the loop runs on a current-thread runtime, so
//! every count lands in it, and tests running beside it count in none): runs by status,
//! model requests by outcome, context-window rejections and recoveries by outcome, session
//! busy refusals.

use std::sync::Arc;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusRecorder};
use serde_json::json;
use sluice_agent::AgentError;
use sluice_store::{Store as _, StoreError};
use tokio_util::sync::CancellationToken;

use crate::agent_loop::{
    DEFAULT_CAP, FakeTools, agent, answer, anthropic_overflow, block_on, calls, db,
    openai_overflow, run, script,
};

/// The `sluice_*` series `recorder` rendered, sorted, but the times: histograms' sums and
/// the quantiles of this bucketless recorder (counts stay).
fn series(recorder: &PrometheusRecorder) -> Vec<String> {
    let mut lines: Vec<String> = recorder
        .handle()
        .render()
        .lines()
        .filter(|l| l.starts_with("sluice_") && !l.contains("quantile=") && !l.contains("_sum"))
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

/// Runs a session of the replay model answering `turns` with prompt `prompt`, under a recorder
/// of its own; the series it counted.
fn counted(turns: &[serde_json::Value], prompt: &str) -> Vec<String> {
    let recorder = PrometheusBuilder::new().build_recorder();
    metrics::with_local_recorder(&recorder, || {
        let db = db();
        let agent = agent(
            &db.store,
            script(turns),
            Arc::new(FakeTools::default()),
            DEFAULT_CAP,
        );
        let id = block_on(db.store.create_session()).unwrap().id;
        block_on(run(&agent, &id, Some(prompt)));
    });
    series(&recorder)
}

#[test]
fn a_recovered_rejection_counts_the_rejection_the_recovery_and_every_request() {
    let turns = [
        calls(&[("text", json!({"bytes": 30_000}))]),
        openai_overflow(),
        answer("done"),
    ];
    assert_eq!(
        counted(&turns, "go"),
        [
            "sluice_active_runs 0",
            "sluice_context_window_recoveries_total{outcome=\"recovered\"} 1",
            "sluice_context_window_rejections_total{provider=\"replay\",model=\"test.jsonl\"} 1",
            "sluice_model_request_duration_seconds_count{provider=\"replay\",model=\"test.jsonl\"} 3",
            "sluice_model_requests_total{provider=\"replay\",model=\"test.jsonl\",outcome=\"context_window_exceeded\"} 1",
            "sluice_model_requests_total{provider=\"replay\",model=\"test.jsonl\",outcome=\"ok\"} 2",
            "sluice_runs_total{status=\"completed\"} 1",
            "sluice_store_append_duration_seconds_count{store=\"sqlite\"} 3",
        ]
    );
}

#[test]
fn a_retry_rejected_again_is_still_too_long_and_the_run_an_error() {
    let turns = [
        calls(&[("text", json!({"bytes": 30_000}))]),
        anthropic_overflow(),
        anthropic_overflow(),
    ];
    assert_eq!(
        counted(&turns, "go"),
        [
            "sluice_active_runs 0",
            "sluice_context_window_recoveries_total{outcome=\"still_too_long\"} 1",
            "sluice_context_window_rejections_total{provider=\"replay\",model=\"test.jsonl\"} 2",
            "sluice_model_request_duration_seconds_count{provider=\"replay\",model=\"test.jsonl\"} 3",
            "sluice_model_requests_total{provider=\"replay\",model=\"test.jsonl\",outcome=\"context_window_exceeded\"} 2",
            "sluice_model_requests_total{provider=\"replay\",model=\"test.jsonl\",outcome=\"ok\"} 1",
            "sluice_runs_total{status=\"error\"} 1",
            "sluice_store_append_duration_seconds_count{store=\"sqlite\"} 2",
        ]
    );
}

#[test]
fn a_rejection_with_nothing_to_shrink_is_counted_so() {
    let turns = [anthropic_overflow(), answer("never")];
    assert_eq!(
        counted(&turns, &"p".repeat(5000)),
        [
            "sluice_active_runs 0",
            "sluice_context_window_recoveries_total{outcome=\"nothing_to_shrink\"} 1",
            "sluice_context_window_rejections_total{provider=\"replay\",model=\"test.jsonl\"} 1",
            "sluice_model_request_duration_seconds_count{provider=\"replay\",model=\"test.jsonl\"} 1",
            "sluice_model_requests_total{provider=\"replay\",model=\"test.jsonl\",outcome=\"context_window_exceeded\"} 1",
            "sluice_runs_total{status=\"error\"} 1",
        ]
    );
}

#[test]
fn a_claim_of_a_busy_session_is_a_busy_refusal() {
    let recorder = PrometheusBuilder::new().build_recorder();
    metrics::with_local_recorder(&recorder, || {
        let db = db();
        let agent = agent(
            &db.store,
            script(&[answer("done")]),
            Arc::new(FakeTools::default()),
            DEFAULT_CAP,
        );
        let id = block_on(db.store.create_session()).unwrap().id;
        let held = block_on(agent.claim(&id, Some("first"))).unwrap();
        let refused = block_on(agent.claim(&id, Some("second"))).unwrap_err();
        assert!(
            matches!(refused, AgentError::Store(StoreError::Busy(_))),
            "{refused}"
        );
        block_on(agent.run_claimed(held, &CancellationToken::new(), &|_| {})).unwrap();
    });
    assert_eq!(
        series(&recorder),
        [
            "sluice_active_runs 0",
            "sluice_busy_refusals_total{what=\"session\"} 1",
            "sluice_model_request_duration_seconds_count{provider=\"replay\",model=\"test.jsonl\"} 1",
            "sluice_model_requests_total{provider=\"replay\",model=\"test.jsonl\",outcome=\"ok\"} 1",
            "sluice_runs_total{status=\"completed\"} 1",
            "sluice_store_append_duration_seconds_count{store=\"sqlite\"} 1",
        ]
    );
}
