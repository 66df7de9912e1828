//! How many `wasi:http` requests a call has open, and whether it may open one more
//! (docs/configuration.md#outbound-http): the count the host's `handle`
//! ([`crate::host::http_open`]) checks and the tasks holding connections share.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::limits::{HostLimit, MAX_OPEN_DESCRIPTORS};

/// The number of requests a call has open, shared by its hooks and the tasks that hold
/// its connections.
#[derive(Clone, Debug, Default)]
pub(crate) struct OpenRequests(Arc<AtomicUsize>);

impl OpenRequests {
    /// How many are open now.
    pub(crate) fn count(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }

    /// Counts one more open request until the returned guard is dropped.
    pub(crate) fn hold(&self) -> Held {
        self.0.fetch_add(1, Ordering::AcqRel);
        Held(self.0.clone())
    }
}

/// One open request: dropped when the host is done with its connection.
#[derive(Debug)]
pub(crate) struct Held(Arc<AtomicUsize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Why the call may not open one more request now, if it may not: `max` is the policy's
/// `http_max_connections`, `files` the files and directories the call holds open.
pub(crate) fn refuse(open: usize, max: usize, files: usize) -> Option<HostLimit> {
    if open >= max {
        Some(HostLimit::Connections { max })
    } else if open + files >= MAX_OPEN_DESCRIPTORS {
        Some(HostLimit::Descriptors)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_count_until_their_guards_drop_and_both_bounds_hold() {
        let open = OpenRequests::default();
        let a = open.hold();
        let b = open.clone().hold();
        assert_eq!(open.count(), 2);
        drop(a);
        assert_eq!(open.count(), 1);
        drop(b);
        assert_eq!(open.count(), 0);
        assert_eq!(refuse(15, 16, 0), None);
        assert_eq!(refuse(16, 16, 0), Some(HostLimit::Connections { max: 16 }));
        assert_eq!(
            refuse(16, 256, MAX_OPEN_DESCRIPTORS - 16),
            Some(HostLimit::Descriptors)
        );
        assert_eq!(refuse(16, 256, MAX_OPEN_DESCRIPTORS - 17), None);
        assert_eq!(
            HostLimit::Connections { max: 16 }.to_string(),
            "the tool had 16 HTTP requests open at once and started another; one call may have at most 16 open at once (policy key http_max_connections, at most 256); a request is open until its response has been read to the end or dropped"
        );
    }
}
