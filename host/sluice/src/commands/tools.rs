//! `sluice tools inspect|pull|update|push|sign|keygen`: components from files and
//! registries, before and after they are granted anything, and publishing them.

use std::path::Path;

use anyhow::Context as _;
use serde_json::{Value, json};
use sluice_config::{Config, ToolSource};
use sluice_registry::{Fetched, KeyPair, Lock, OciReference, Request, Resolve, SignatureStatus};
use sluice_runtime::ToolPolicy;
use sluice_wiring::ToolLoader;

use crate::cli::{RegistryArgs, ToolsCommand};

/// Runs one `sluice tools` subcommand and returns what it prints.
pub(crate) async fn run(config: &Config, command: ToolsCommand) -> anyhow::Result<Value> {
    match command {
        ToolsCommand::Inspect {
            target, registry, ..
        } => inspect(config, &target, &registry).await,
        ToolsCommand::Pull {
            reference,
            registry,
            ..
        } => pull(config, &reference, &registry).await,
        ToolsCommand::Update { .. } => update(config).await,
        ToolsCommand::Push {
            component,
            reference,
            insecure,
            ..
        } => push(config, &component, &reference, insecure).await,
        ToolsCommand::Sign {
            reference,
            key,
            insecure,
            ..
        } => sign(config, &reference, &key, insecure).await,
        ToolsCommand::Keygen { output_key_prefix } => keygen(&output_key_prefix),
    }
}

/// `sluice tools keygen`: the two files written, and what each is for. Reads no
/// configuration.
pub(crate) fn keygen(prefix: &Path) -> anyhow::Result<Value> {
    let pair = KeyPair::generate().map_err(anyhow::Error::msg)?;
    let files = pair.write(prefix)?;
    Ok(json!({
        "privateKey": files.private_key.display().to_string(),
        "publicKey": files.public_key.display().to_string(),
        "kind": "ECDSA P-256",
        "note": "keep the private key secret (sign with --key on `sluice tools sign`); name the public key in verify.key",
    }))
}

/// `sluice tools push FILE REF`.
async fn push(
    config: &Config,
    file: &Path,
    reference: &str,
    insecure: bool,
) -> anyhow::Result<Value> {
    let reference = OciReference::parse(reference)?;
    let source = sluice_wiring::component_source(file)?;
    let pushed = sluice_wiring::fetcher_for(config)
        .push(&reference, source.bytes(), insecure)
        .await?;
    Ok(serde_json::to_value(pushed)?)
}

/// `sluice tools sign REF --key FILE`.
async fn sign(
    config: &Config,
    reference: &str,
    key: &Path,
    insecure: bool,
) -> anyhow::Result<Value> {
    let reference = OciReference::parse(reference)?;
    let pair = KeyPair::load(key)?;
    let signed = sluice_wiring::fetcher_for(config)
        .sign(&reference, &pair, insecure)
        .await?;
    Ok(serde_json::to_value(signed)?)
}

/// A file: its tools and imports. A reference: fetched (and verified with --key) first,
/// then the same, with its digest and signature status; nothing is pinned.
async fn inspect(config: &Config, target: &str, registry: &RegistryArgs) -> anyhow::Result<Value> {
    let loader = ToolLoader::new(config)?;
    if !target.starts_with(sluice_registry::reference::SCHEME) {
        let source = sluice_wiring::component_source(Path::new(target))?;
        let inspection = sluice_runtime::inspect(loader.engine(), &source, &ToolPolicy::default())?;
        return Ok(serde_json::to_value(inspection)?);
    }
    let reference = OciReference::parse(target)?;
    let keys = sluice_wiring::public_keys(&registry.keys)?;
    // A lock of its own: inspecting pins nothing.
    let mut lock = Lock::empty(Path::new(sluice_registry::LOCK_FILE_NAME));
    let request = Request {
        reference: &reference,
        keys: &keys,
        insecure: registry.insecure,
    };
    let fetched = loader
        .fetcher()
        .fetch(&request, &mut lock, Resolve::Update)
        .await?;
    let signature = match &fetched.signature {
        SignatureStatus::NotChecked => {
            let found = loader
                .fetcher()
                .signatures(&reference, &fetched.digest, registry.insecure)
                .await;
            match found {
                Ok(Some((digest, layers))) => {
                    json!({"status": "notChecked", "signatures": layers.len(), "signature": digest, "note": "give --key FILE to verify them"})
                }
                Ok(None) => json!({"status": "notChecked", "signatures": 0}),
                Err(e) => json!({"status": "notChecked", "error": e.to_string()}),
            }
        }
        verified => serde_json::to_value(verified)?,
    };
    let inspection = sluice_runtime::inspect(
        loader.engine(),
        &sluice_wiring::oci_source(&fetched),
        &ToolPolicy::default(),
    )?;
    let mut value = fetched_json(&fetched);
    value["signature"] = signature;
    value["tools"] = serde_json::to_value(&inspection.tools)?;
    value["imports"] = serde_json::to_value(&inspection.imports)?;
    Ok(value)
}

/// Fetches (and verifies) one reference, resolving its tag now, and pins it in the lock.
async fn pull(config: &Config, reference: &str, registry: &RegistryArgs) -> anyhow::Result<Value> {
    let reference = OciReference::parse(reference)?;
    let keys = sluice_wiring::public_keys(&registry.keys)?;
    let loader = ToolLoader::new(config)?;
    let mut lock = Lock::load(&config.lock_file)?;
    let request = Request {
        reference: &reference,
        keys: &keys,
        insecure: registry.insecure,
    };
    let fetched = loader
        .fetcher()
        .fetch(&request, &mut lock, Resolve::Update)
        .await?;
    lock.save()?;
    let mut value = fetched_json(&fetched);
    value["lock"] = json!(config.lock_file.display().to_string());
    Ok(value)
}

/// Resolves every `oci://` component of the configuration again and rewrites the lock
/// with exactly those.
async fn update(config: &Config) -> anyhow::Result<Value> {
    let loader = ToolLoader::new(config)?;
    let before = Lock::load(&config.lock_file)?;
    let tools: Vec<&sluice_config::ToolConfig> = config
        .tools
        .iter()
        .filter(|t| matches!(t.source, ToolSource::Oci(_)))
        .collect();
    // All or none: the lock is written once, after every component was fetched.
    let mut lock = before.clone();
    let fetched = loader
        .fetch(&tools, &mut lock, Resolve::Update)
        .await
        .context("sluice.lock is unchanged")?;
    let keep: Vec<String> = fetched.iter().map(|f| f.reference.to_string()).collect();
    lock.retain(|r| keep.iter().any(|k| k == r));
    if lock != before {
        lock.save()?;
    }
    let components: Vec<Value> = fetched
        .iter()
        .map(|f| {
            let mut v = fetched_json(f);
            let previous = before
                .get(&f.reference.to_string())
                .map(|e| e.digest.clone());
            v["changed"] = json!(previous.as_deref() != Some(f.digest.as_str()));
            v["previous"] = json!(previous);
            v
        })
        .collect();
    Ok(json!({"lock": config.lock_file.display().to_string(), "components": components}))
}

/// What the commands print about a fetched component.
fn fetched_json(f: &Fetched) -> Value {
    json!({
        "reference": f.reference.to_string(),
        "digest": f.digest,
        "pinned": f.reference.pinned(&f.digest).to_string(),
        "component": f.component_digest,
        "bytes": f.wasm.len(),
        "signature": f.signature,
        "fromCache": f.from_cache,
        "pullMs": f.pull_time.as_secs_f64() * 1000.0,
        "verifyMs": f.verify_time.as_secs_f64() * 1000.0,
    })
}
