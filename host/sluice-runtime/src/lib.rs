//! Sluice's WebAssembly tool runtime.
//!
//! - [`engine::ToolEngine`]: the wasmtime engine (epoch ticker, pooling allocator with an
//!   on-demand fallback, on-disk cache of compiled components).
//! - [`toolbox::Toolbox`]: components loaded under a [`policy::ToolPolicy`], each exported
//!   function a tool with a JSON schema derived from its WIT types ([`schema`], [`docs`]),
//!   called with a fresh store per call ([`value`] lowers arguments and lifts results) on
//!   the engine's [`pool::CallPool`], within the host's [`limits`], cancellable through
//!   [`toolbox::CallOptions`].
//! - [`live::LiveToolbox`]: a toolbox that is replaced atomically (live reload); a call
//!   keeps the toolbox it started with.
//! - [`observation`]: the observation shapes, the key-material scan and the cap, applied to
//!   every result in one place ([`observation::Draft::finish`]).
//!
//! The built-in tools are input like any other component: the runtime does not embed them
//! (the binary does, through `sluice-builtins`), so it builds without the guests.
//!
//! ```no_run
//! use std::sync::Arc;
//! use sluice_runtime::{ComponentSpec, EngineOptions, Source, ToolEngine, ToolPolicy, Toolbox};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let engine = Arc::new(ToolEngine::new(EngineOptions::default())?);
//! let policy = ToolPolicy::read_only([("logs".to_string(), "/var/log".into())]);
//! let wasm = Arc::new(std::fs::read("read_file.wasm")?);
//! let source = Source::Bytes { name: "read_file.wasm".to_string(), wasm };
//! let spec = ComponentSpec { source, policy };
//! let toolbox = Toolbox::load(engine, &[spec])?;
//! let observation = toolbox.call("read_file", r#"{"path":"syslog"}"#, 65_536).await;
//! assert!(observation.text().len() <= 65_536);
//! # Ok(()) }
//! ```

pub mod address;
mod bindings;
pub mod component;
pub mod docs;
pub mod engine;
pub mod error;
mod failure;
pub mod hint;
pub mod host;
pub mod http;
mod http_open;
pub mod integers;
mod invoke;
pub mod limits;
pub mod listing;
pub mod live;
pub mod logs;
pub mod mounts;
pub mod names;
pub mod observation;
mod open_at;
pub mod policy;
pub mod pool;
mod preopens;
mod refused;
pub mod schema;
pub mod secrets;
mod stderr;
pub mod toolbox;
pub mod value;

pub use engine::{EngineOptions, ToolEngine};
pub use pool::{CallPool, PoolError, PoolOptions};

pub use component::{ImportInfo, Inspection, ToolInfo, inspect};
pub use error::RuntimeError;
pub use live::LiveToolbox;
pub use observation::{CallStatus, Observation};
pub use policy::{
    FunctionPolicy, HttpAllow, HttpGrant, HttpHost, PolicyOrigin, RootGrant, ToolPolicy,
};
pub use secrets::{Secret, SecretSource};
pub use toolbox::{CallOptions, ComponentSpec, Source, Toolbox};
