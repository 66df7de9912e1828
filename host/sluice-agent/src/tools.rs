//! The tools an agent can call.

use sluice_protocol::ToolSpec;
use sluice_runtime::{CallOptions, LiveToolbox, Observation, Toolbox};

/// Tools as the loop sees them. [`Toolbox`] is the real implementation; tests may provide
/// others, but an observation must always come out of
/// [`sluice_runtime::call::observation::Draft::finish`] so it is key-scanned and capped.
#[async_trait::async_trait]
pub trait Tools: Send + Sync {
    /// What the model is told about each tool.
    fn specs(&self) -> Vec<ToolSpec>;

    /// True when calls of tool `name` wait for approval.
    fn is_destructive(&self, name: &str) -> bool;

    /// Calls tool `name` with the JSON text `args` and returns the observation, capped at
    /// `options.cap` bytes (an unknown name gives the unknown-tool observation). When
    /// `options.cancel` fires the call stops and its observation has status
    /// [`sluice_runtime::CallStatus::Cancelled`].
    async fn call(&self, name: &str, args: &str, options: &CallOptions) -> Observation;
}

#[async_trait::async_trait]
impl Tools for Toolbox {
    fn specs(&self) -> Vec<ToolSpec> {
        self.tools()
            .map(|t| ToolSpec {
                name: t.name.clone(),
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
            })
            .collect()
    }

    fn is_destructive(&self, name: &str) -> bool {
        self.tools().any(|t| t.name == name && t.destructive)
    }

    async fn call(&self, name: &str, args: &str, options: &CallOptions) -> Observation {
        Toolbox::call_with(self, name, args, options).await
    }
}

/// The toolbox of the moment: each call runs on the toolbox that was current when it
/// started, whatever replaces it meanwhile.
#[async_trait::async_trait]
impl Tools for LiveToolbox {
    fn specs(&self) -> Vec<ToolSpec> {
        Tools::specs(self.current().as_ref())
    }

    fn is_destructive(&self, name: &str) -> bool {
        Tools::is_destructive(self.current().as_ref(), name)
    }

    /// The call holds the toolbox it started on (its `Arc`) until it ends, and
    /// `options.cancel` reaches it there as on any toolbox.
    async fn call(&self, name: &str, args: &str, options: &CallOptions) -> Observation {
        let toolbox = self.current();
        toolbox.call_with(name, args, options).await
    }
}
