//! `sluice token create`: a bearer token for a named principal (docs/api.md#principals-and-scopes).

use std::io::Write as _;

use crate::cli::TokenCommand;

/// Makes the token: the entry to stdout, the token (once) to stderr.
pub(crate) fn run(command: TokenCommand) -> anyhow::Result<()> {
    let TokenCommand::Create { name, scopes } = command;
    let minted = sluice_server::principal::mint_token(&name, &scopes)?;
    let mut out = std::io::stdout().lock();
    out.write_all(minted.entry.as_bytes())?;
    out.flush()?;
    let mut err = std::io::stderr().lock();
    writeln!(
        err,
        "sluice: the token of {name:?}, shown once (Sluice keeps only its SHA-256; give it to {name:?}, then add the entry on stdout to sluice.toml and restart the server):\n{}",
        minted.token
    )?;
    Ok(())
}
