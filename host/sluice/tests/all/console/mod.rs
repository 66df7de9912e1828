//! The operator console (`GET /` of `sluice serve`) in a real browser: Debian's headless
//! `chromium`, driven through its `chromedriver` by Selenium (`flows.py` beside this file, in
//! the venv of host/sluice-mcp/clients/install.sh). Each test starts a `sluice serve` of its
//! own (a token, a root, a store, sometimes seeded), runs flows of `flows.py`, each of which
//! prints the facts the page showed as JSON, and asserts them exactly here, against the API
//! where it can. Each flow saves a screenshot, `$CARGO_TARGET_TMPDIR/console-screenshots/
//! <flow>.png`.
//!
//! Without `chromium`, `chromedriver` or the venv's `selenium` a test prints `skipped: …` and
//! passes, except under `CI=true`, where it fails (`.ci/run` installs all three). The tests
//! run one at a time (a browser takes both of CI's cores).

mod approvals; // Approve one destructive call, deny another.
mod assets; // The assets over plain HTTP: headers, caching, size.
mod browser; // chromedriver, chromium and flows.py; one flow at a time.
mod runs; // Sign in, a run watched live, its paged reads, cancel, a refused token.
mod server; // A `sluice serve` of each test's own, and its API.
mod transcripts; // A shrunk observation, an XSS payload, 10,000 messages.
