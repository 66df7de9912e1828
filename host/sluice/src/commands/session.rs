//! `sluice session …`: inspect sessions and resolve approvals.

use std::io::Write;

use sluice_config::Config;
use sluice_store::{Decision, Store};

use crate::cli::SessionCommand;

/// Runs a session command; output is JSON on stdout.
pub(crate) async fn run(config: &Config, command: SessionCommand) -> anyhow::Result<()> {
    let reads_only = matches!(
        command,
        SessionCommand::List | SessionCommand::Show { .. } | SessionCommand::Audit { .. }
    );
    let store = if reads_only {
        sluice_wiring::open_store_for_reading(config).await?
    } else {
        sluice_wiring::open_store(config).await?
    };
    let mut out = std::io::stdout();
    match command {
        SessionCommand::List => {
            serde_json::to_writer_pretty(&mut out, &store.list_sessions().await?)?;
        }
        SessionCommand::Show { id } => {
            let session = store.session(&id).await?;
            let messages = store.messages(&id).await?;
            let shown = serde_json::json!({"session": session, "messages": messages});
            serde_json::to_writer_pretty(&mut out, &shown)?;
        }
        SessionCommand::Audit { id } => {
            let audit = sluice_store::SessionAudit::read(store.as_ref(), &id).await?;
            serde_json::to_writer_pretty(&mut out, &audit)?;
        }
        SessionCommand::Approve { id, call_id } => {
            decide(store.as_ref(), &id, &call_id, Decision::Approve, &mut out).await?
        }
        SessionCommand::Deny { id, call_id } => {
            decide(store.as_ref(), &id, &call_id, Decision::Deny, &mut out).await?
        }
    }
    writeln!(out)?;
    Ok(())
}

async fn decide(
    store: &dyn Store,
    id: &str,
    call_id: &str,
    decision: Decision,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let messages = store.messages(id).await?;
    let pending = sluice_agent::recovery::pending_calls(&messages);
    let Some(call) = pending.iter().find(|c| c.id == call_id) else {
        let ids: Vec<&str> = pending.iter().map(|c| c.id.as_str()).collect();
        anyhow::bail!(
            "session {id} has no call {call_id:?} waiting; calls waiting: {}",
            if ids.is_empty() {
                "none".to_string()
            } else {
                ids.join(", ")
            }
        );
    };
    store.decide(id, call_id, decision).await?;
    let verb = match decision {
        Decision::Approve => "approved",
        Decision::Deny => "denied",
    };
    write!(
        out,
        "{}",
        serde_json::json!({"session": id, "callId": call_id, "tool": call.name, "decision": verb})
    )?;
    Ok(())
}
