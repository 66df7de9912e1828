//! What an operator grants a tool, as values: the types both sluice-config (which reads them
//! from files) and sluice-runtime (which enforces them) use.
//!
//! Each type is declared once, here: the configuration's parsers produce them
//! (`sluice_config::ToolConfig`), the wiring clones them into the runtime's policy
//! (`sluice_runtime::ToolPolicy`), and the runtime re-exports them under the paths it always
//! had. What only one side has stays there: the files' raw shapes and their checks in the
//! configuration, `sluice test`'s recorded responses in the runtime.
//!
//! - [`FunctionPolicy`], [`ArgPolicy`]: `[functions.<f>]` and its argument refinements.
//! - [`HttpGrant`], [`HttpAllow`], [`HttpHost`], [`HttpCredential`]: outbound HTTP
//!   (`http`, `http_methods`, `http_private`, `http_max_response_bytes`,
//!   `http_max_connections`, `http_credentials`).
//! - [`SecretSource`]: where a secret is read from (`{ env = … }`, `{ file = … }`).
//! - [`PolicyOrigin`]: where a policy is configured, for messages that name its keys.

mod functions;
mod http;
mod origin;
mod secret_source;

pub use functions::{ArgPolicy, FunctionPolicy};
pub use http::{DEFAULT_HTTP_MAX_RESPONSE_BYTES, HttpAllow, HttpCredential, HttpGrant, HttpHost};
pub use origin::{PolicyOrigin, toml_key};
pub use secret_source::{SecretReadError, SecretSource};
