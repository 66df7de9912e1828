//! `sluice store migrate`: apply the session store's schema migrations alone.

use std::io::Write;

use sluice_config::Config;
use sluice_store::{PgStore, SqliteStore};

use crate::cli::StoreCommand;

/// Runs a store command; says what it did on stdout, as JSON.
pub(crate) async fn run(config: &Config, command: StoreCommand) -> anyhow::Result<()> {
    match command {
        StoreCommand::Migrate => {
            let (store, from, to) = match &config.store_url {
                Some(url) => {
                    let (from, to) = PgStore::migrate(url).await?;
                    (sluice_store::redact_url(url), from, to)
                }
                None => {
                    let path = match &config.store {
                        Some(p) => p.clone(),
                        None => SqliteStore::default_path().ok_or_else(|| {
                            anyhow::anyhow!(
                                "no place for the session database: set --store FILE, SLUICE_STORE or HOME"
                            )
                        })?,
                    };
                    let (from, to) = SqliteStore::migrate(&path)?;
                    (path.display().to_string(), from, to)
                }
            };
            let mut out = std::io::stdout().lock();
            writeln!(
                out,
                "{}",
                serde_json::json!({"store": store, "fromVersion": from, "toVersion": to})
            )?;
        }
    }
    Ok(())
}
