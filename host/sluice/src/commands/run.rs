//! `sluice run`: the agent loop from the command line, with progress on stderr.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use sluice_agent::{Agent, RunEvent};
use sluice_config::Config;
use sluice_models::Backend;
use sluice_protocol::SessionStatus;
use sluice_store::{Store, StoreError};
use tokio_util::sync::CancellationToken;

use crate::cli::RunArgs;

/// Runs the agent; the answer (or `--json`) on stdout.
pub(crate) async fn run(config: &Config, args: RunArgs) -> anyhow::Result<()> {
    let store: Arc<dyn Store> = sluice_wiring::open_store(config).await?;
    let session_id = match &args.session {
        Some(name) => session_named(store.as_ref(), name, args.prompt.is_some()).await?,
        None => {
            anyhow::ensure!(
                args.prompt.is_some(),
                "give a prompt, or --session ID to resume a session"
            );
            store.create_session().await?.id
        }
    };
    let backend = backend(config, &args)?;
    let tools = Arc::new(sluice_wiring::load_tools(config, None).await?);
    let settings = sluice_wiring::settings(config);
    let agent = Agent::new(store.clone(), backend, tools, settings);

    let cancel = CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let before = store.session(&session_id).await?.message_count;
    let progress = Progress::new(&session_id);
    let outcome = agent
        .run(&session_id, args.prompt.as_deref(), &cancel, &|e| {
            progress.event(&e)
        })
        .await?;
    progress.finish(&outcome);

    let mut out = std::io::stdout().lock();
    if args.json {
        let added: Vec<_> = store
            .messages(&session_id)
            .await?
            .into_iter()
            .filter(|m| m.seq > before)
            .collect();
        let shown = serde_json::json!({
            "session": outcome.session_id,
            "status": outcome.status,
            "lastError": outcome.last_error,
            "answer": outcome.answer,
            "requests": outcome.requests,
            "usage": outcome.usage,
            "messages": added,
        });
        serde_json::to_writer_pretty(&mut out, &shown)?;
        writeln!(out)?;
    } else if let Some(answer) = &outcome.answer {
        writeln!(out, "{answer}")?;
    }
    out.flush()?;
    match outcome.status {
        SessionStatus::Completed | SessionStatus::AwaitingApproval => Ok(()),
        SessionStatus::Aborted => Err(RunEnded(130, "the run was cancelled".into()).into()),
        _ => Err(RunEnded(
            1,
            outcome
                .last_error
                .unwrap_or_else(|| "the run failed".into()),
        )
        .into()),
    }
}

/// The session `name`: the existing one, or, when there is none and a prompt starts it, a
/// new session under that name (said on stderr). Without a prompt a missing session is an
/// error: there is nothing to resume.
async fn session_named(store: &dyn Store, name: &str, has_prompt: bool) -> anyhow::Result<String> {
    match store.session(name).await {
        Ok(s) => Ok(s.id),
        Err(StoreError::NoSession(_)) if has_prompt => match store.create_named_session(name).await
        {
            Ok(s) => {
                #[allow(clippy::print_stderr)]
                {
                    eprintln!("sluice: no session {name:?} yet: created it");
                }
                Ok(s.id)
            }
            // Another process created it meanwhile: continue that one.
            Err(StoreError::SessionExists(_)) => Ok(store.session(name).await?.id),
            Err(e) => Err(e.into()),
        },
        Err(StoreError::NoSession(_)) => Err(anyhow::anyhow!(
            "no session {name:?}: give a prompt to start a session under that name (`sluice run --session {name} \"…\"`), or see `sluice session list`"
        )),
        Err(e) => Err(e.into()),
    }
}

/// A run that ended without an answer: the exit code and why.
#[derive(Debug, thiserror::Error)]
#[error("{1}")]
pub(crate) struct RunEnded(pub(crate) u8, pub(crate) String);

/// The configured model (`[model]`, `--model`), wrapped in a simulated context window if
/// asked.
fn backend(config: &Config, args: &RunArgs) -> anyhow::Result<Arc<dyn Backend>> {
    let inner = sluice_wiring::backend(config)?;
    Ok(match args.context_window_bytes {
        Some(bytes) => Arc::new(sluice_models::window::ContextWindow::new(inner, bytes)),
        None => inner,
    })
}

/// Progress on stderr: one line per tool call and per recovery, with a spinner while the
/// model thinks when stderr is a terminal.
struct Progress {
    spinner: Option<indicatif::ProgressBar>,
    session: String,
}

impl Progress {
    fn new(session: &str) -> Progress {
        let spinner = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        Progress {
            spinner,
            session: session.to_string(),
        }
    }

    fn line(&self, text: String) {
        match &self.spinner {
            Some(bar) => bar.println(text),
            #[allow(clippy::print_stderr)]
            None => eprintln!("{text}"),
        }
    }

    fn event(&self, e: &RunEvent) {
        match e {
            RunEvent::ModelRequest { bytes } => {
                if let Some(bar) = &self.spinner {
                    bar.set_message(format!("asking the model ({bytes} bytes)"));
                }
            }
            RunEvent::ModelReply { .. } => {}
            RunEvent::ToolStarted { name, .. } => {
                if let Some(bar) = &self.spinner {
                    bar.set_message(format!("running {name}"));
                }
            }
            RunEvent::ToolFinished {
                name,
                bytes,
                full_bytes,
                truncated,
                paged,
                error,
                ..
            } => {
                let how = match (error, truncated, paged) {
                    (true, _, _) => "error".to_string(),
                    (_, true, _) => format!("cut from {full_bytes} bytes"),
                    (_, _, true) => "paged".to_string(),
                    _ => "whole".to_string(),
                };
                self.line(format!("  {name}: {bytes} bytes ({how})"));
            }
            RunEvent::Shrunk {
                seqs,
                from_bytes,
                to_bytes,
            } => self.line(format!(
                "  the request exceeded the model's context window: shrank {} tool result(s) from {from_bytes} to {to_bytes} bytes; retrying once",
                seqs.len()
            )),
            RunEvent::AwaitingApproval { call_id, name } => self.line(format!(
                "  call {call_id} of {name} waits for approval: sluice session approve {} {call_id} (or deny), then sluice run --session {}",
                self.session, self.session
            )),
        }
    }

    fn finish(&self, outcome: &sluice_agent::Outcome) {
        if let Some(bar) = &self.spinner {
            bar.finish_and_clear();
        }
        let mut line = format!(
            "session {}: {}",
            outcome.session_id,
            outcome.status.as_str()
        );
        if let Some(e) = &outcome.last_error {
            line.push_str(&format!(" ({e})"));
        }
        self.line(line);
    }
}
