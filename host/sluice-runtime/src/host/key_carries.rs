//! `sluice:tools/key-carries`: what a page of `read_file` knew of the key rules where it
//! ended, kept for the page that starts there in the same version of the file
//! (docs/keys.md#sequential-pages), so that a page read in sequence does not re-read the
//! 128 KiB look-back of the page before it.
//!
//! Each loaded component has its own `KeyCarries` (so no other component can leave a carry
//! that `read_file` would believe), at most [`MAX_CARRIES`] of them, the least recently used
//! dropped first. A carry for a file modified or changed less than [`RACY_SECONDS`] before it
//! is left is not kept: a write within the same timestamp tick would leave the file's version
//! as it was. The component computes the carries; the host only keeps them.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use hashlink::LruCache;

use crate::host::bindings::key_carries::{FileVersion, Host, KeyCarry};
use crate::host::state::CallState;

/// The most carries one component keeps.
pub const MAX_CARRIES: usize = 256;

/// A carry for a file modified or changed less than this many seconds before is not kept.
pub const RACY_SECONDS: u64 = 2;

/// What identifies a carry: the file version (identity, size, modification and change times
/// in ns) and the offset.
type Key = ((u64, u64), u64, u64, u64, u64);

/// One component's carries.
#[derive(Debug)]
pub(crate) struct KeyCarries {
    kept: Mutex<LruCache<Key, Option<u64>>>,
}

impl Default for KeyCarries {
    fn default() -> Self {
        KeyCarries {
            kept: Mutex::new(LruCache::new(MAX_CARRIES)),
        }
    }
}

impl KeyCarries {
    fn recall(&self, file: &FileVersion, offset: u64) -> Option<KeyCarry> {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.get(&key(file, offset)).map(|&line| KeyCarry { line })
    }

    fn remember(&self, file: &FileVersion, offset: u64, carry: KeyCarry, now: SystemTime) {
        let now_ns = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let settled_before = now_ns.saturating_sub(RACY_SECONDS * 1_000_000_000);
        if file.modified_ns > settled_before || file.changed_ns > settled_before {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.insert(key(file, offset), carry.line);
    }
}

fn key(file: &FileVersion, offset: u64) -> Key {
    (
        file.identity,
        file.size,
        file.modified_ns,
        file.changed_ns,
        offset,
    )
}

impl Host for CallState {
    fn recall(&mut self, file: FileVersion, offset: u64) -> Option<KeyCarry> {
        self.key_carries.recall(&file, offset)
    }

    fn remember(&mut self, file: FileVersion, offset: u64, carry: KeyCarry) {
        self.key_carries
            .remember(&file, offset, carry, SystemTime::now());
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn version(modified_s: u64, size: u64) -> FileVersion {
        FileVersion {
            identity: (7, 42),
            size,
            modified_ns: modified_s * 1_000_000_000,
            changed_ns: modified_s * 1_000_000_000,
        }
    }

    #[test]
    fn carries_are_kept_per_version_and_offset_and_not_for_racy_files() {
        let carries = KeyCarries::default();
        let now = UNIX_EPOCH + Duration::from_secs(1_000);
        let old = version(990, 5_000);
        carries.remember(&old, 4_096, KeyCarry { line: Some(80) }, now);
        assert_eq!(
            carries.recall(&old, 4_096),
            Some(KeyCarry { line: Some(80) })
        );
        assert_eq!(carries.recall(&old, 4_097), None);
        assert_eq!(carries.recall(&version(990, 5_001), 4_096), None);
        assert_eq!(carries.recall(&version(991, 5_000), 4_096), None);
        // Changed 1.5 s before: not kept.
        let racy = FileVersion {
            changed_ns: 998_500_000_000,
            ..version(990, 6_000)
        };
        carries.remember(&racy, 4_096, KeyCarry { line: None }, now);
        assert_eq!(carries.recall(&racy, 4_096), None);
    }

    #[test]
    fn the_least_recently_used_carry_goes_first() {
        let carries = KeyCarries::default();
        let now = UNIX_EPOCH + Duration::from_secs(1_000);
        let file = version(10, 1 << 30);
        for offset in 0..MAX_CARRIES as u64 {
            carries.remember(&file, offset, KeyCarry { line: None }, now);
        }
        // Offset 0 is used again, so offset 1 is the oldest when one more comes.
        assert!(carries.recall(&file, 0).is_some());
        carries.remember(&file, 1_000, KeyCarry { line: None }, now);
        assert!(carries.recall(&file, 0).is_some());
        assert_eq!(carries.recall(&file, 1), None);
        assert!(carries.recall(&file, 1_000).is_some());
    }
}
