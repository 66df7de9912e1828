//! Tools that can be replaced while they are used: a [`Toolbox`] behind an atomic pointer.
//!
//! [`LiveToolbox::current`] hands out the toolbox of the moment as an `Arc`, so a call keeps
//! the toolbox (its components, its compiled code) it started with however long it runs,
//! while [`LiveToolbox::replace`] makes the next calls use a new one; the old one is freed
//! when its last call ends. Loading and checking a replacement is the caller's job (with
//! the same checks as at start); this type only swaps and counts revisions, which
//! [`LiveToolbox::subscribe`] announces (for MCP's `notifications/tools/list_changed`).

use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::sync::watch;

use crate::call::toolbox::Toolbox;

/// A toolbox that can be swapped atomically; see the module docs.
pub struct LiveToolbox {
    current: ArcSwap<Toolbox>,
    revision: watch::Sender<u64>,
}

impl std::fmt::Debug for LiveToolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveToolbox")
            .field("revision", &self.revision())
            .field("toolbox", &self.current())
            .finish()
    }
}

impl LiveToolbox {
    /// Serves `toolbox` as revision 0.
    pub fn new(toolbox: Toolbox) -> LiveToolbox {
        LiveToolbox::from_arc(Arc::new(toolbox))
    }

    /// Serves a toolbox already shared.
    pub fn from_arc(toolbox: Arc<Toolbox>) -> LiveToolbox {
        LiveToolbox {
            current: ArcSwap::new(toolbox),
            revision: watch::Sender::new(0),
        }
    }

    /// The toolbox calls that start now use. Hold the `Arc` for the whole call.
    pub fn current(&self) -> Arc<Toolbox> {
        self.current.load_full()
    }

    /// How many times the toolbox was replaced.
    pub fn revision(&self) -> u64 {
        *self.revision.borrow()
    }

    /// Makes `toolbox` the one calls that start from now on use, and returns the new
    /// revision. Calls in flight finish on the toolbox they started with.
    pub fn replace(&self, toolbox: Toolbox) -> u64 {
        self.current.store(Arc::new(toolbox));
        let mut revision = 0;
        self.revision.send_modify(|r| {
            *r += 1;
            revision = *r;
        });
        revision
    }

    /// Announces every replacement: the receiver sees the revision change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.revision.subscribe()
    }
}
