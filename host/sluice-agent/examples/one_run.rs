//! One run of the agent loop, offline: the scripted model (`sluice_models::ScriptedModel`,
//! a fixed sequence of tool calls, not an LLM), a SQLite session store in a temporary
//! directory, and the built-in file tools (`read_file`, `tail_file`, `grep_files`,
//! `list_dir`) read-only over a root holding one small file. One prompt, one run; it prints
//! the transcript's messages and how the run ended.
//!
//! ```text
//! cargo run -p sluice-agent --example one_run
//! ```
//!
//! No network, no API key. Each run compiles the tools' components (Winch, a few seconds; nothing
//! is cached).

#![allow(clippy::print_stdout)] // An example prints what it did.

use std::sync::Arc;

use sluice_agent::{Agent, CancellationToken, Settings};
use sluice_models::ScriptedModel;
use sluice_runtime::{
    Compilers, ComponentSpec, EngineOptions, Source, ToolEngine, ToolPolicy, Toolbox,
};
use sluice_store::{SqliteStore, Store};

/// The built-in tools the example loads: the file tools (`run_script`, code mode, needs a
/// policy of its own and is left out).
const FILE_TOOLS: [&str; 4] = ["read_file", "tail_file", "grep_files", "list_dir"];

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;

    // The root the tools may read: one directory, one small file.
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("logs"))?;
    std::fs::write(
        root.join("logs/build.log"),
        "step 1 ok\nstep 2 ERROR disk full\nstep 3 ok\n",
    )?;

    // The built-in file tools, read-only over the root, on a tool engine of their own. Winch
    // alone compiles them about four times faster than Cranelift, which suits one short run.
    let policy = ToolPolicy::read_only([("root".to_string(), root)]);
    let specs: Vec<ComponentSpec> = sluice_builtins::BUILTINS
        .iter()
        .filter(|(name, _)| FILE_TOOLS.contains(name))
        .map(|&(name, wasm)| ComponentSpec {
            source: Source::Builtin { name, wasm },
            policy: policy.clone(),
        })
        .collect();
    let engine = Arc::new(ToolEngine::new(EngineOptions {
        compilers: Compilers::BaselineOnly,
        ..EngineOptions::default()
    })?);
    let tools = Arc::new(Toolbox::load(engine, &specs)?);

    // The session store and the agent.
    let store = Arc::new(SqliteStore::open(&dir.path().join("sessions.db"))?);
    let agent = Agent::new(
        store.clone(),
        Arc::new(ScriptedModel::new()),
        tools,
        Settings::default(),
    );

    // One session, one prompt, one run (never cancelled; events ignored).
    let session = store.create_session().await?;
    let outcome = agent
        .run(
            &session.id,
            Some("What failed in logs/?"),
            &CancellationToken::new(),
            &|_event| {},
        )
        .await?;

    for stored in store.messages(&session.id).await? {
        let m = &stored.message;
        println!("#{} {}: {}", stored.seq, m.role.as_str(), m.content);
        for call in &m.tool_calls {
            println!("    calls {} {} {}", call.id, call.name, call.arguments);
        }
    }
    println!("status: {}", outcome.status.as_str());
    println!("requests: {}", outcome.requests);
    println!("answer: {}", outcome.answer.unwrap_or_default());
    Ok(())
}
