//! Sluice's WebAssembly tool runtime.
//!
//! The crate is three wings over a floor:
//!
//! - [`component`]: a component before it runs: its [`Source`], its imports, its exports
//!   reflected as tools ([`ToolInfo`]: names, JSON schemas, descriptions);
//! - [`host`]: what a running component's imports reach, one module per interface, over the
//!   call's store data ([`host::state::CallState`]);
//! - [`call`]: the [`Toolbox`] (tool name → component), one call from JSON arguments to an
//!   [`Observation`] (the key scan and the cap, applied in one place), and the
//!   [`LiveToolbox`] that live reload swaps;
//! - the floor: the [`engine`] (epoch ticker, pooling allocator, compiled-component cache),
//!   the call [`pool`] (threads, slots, deadlines, cancellation), the [`policy`], the host's
//!   [`limits`], the [`secrets`], [`error`]s, [`address`]es `wasi:http` may not reach, and
//!   what may be [`logs`]ged.
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
pub mod call;
pub mod component;
pub mod engine;
pub mod error;
pub mod host;
pub mod limits;
pub mod logs;
pub mod policy;
pub mod pool;
pub mod secrets;

pub use engine::{CacheUsage, Compilers, EngineOptions, Pruned, ToolEngine};
pub use pool::{CallPool, PoolError, PoolOptions};

pub use call::live::LiveToolbox;
pub use call::observation::Observation;
pub use call::status::CallStatus;
pub use call::toolbox::{CallOptions, Toolbox};
pub use component::imports::ImportInfo;
pub use component::inspect::{Inspection, inspect};
pub use component::reflect::ToolInfo;
pub use component::source::{ComponentSpec, Source};
pub use error::RuntimeError;
pub use policy::{
    ArgPolicy, FunctionPolicy, HttpAllow, HttpCredential, HttpGrant, HttpHost, PolicyOrigin,
    RootGrant, ToolCallLimits, ToolPolicy,
};
pub use secrets::{Secret, SecretSource};
