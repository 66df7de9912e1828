//! The host's `sluice:tools/key-carries` as the pager's [`KeyCarries`]: `read_file` keeps what
//! a page knew of the key rules where it ended with the host, since the component instance
//! serves one call only.

use sluice_file_tools::{FileVersion, KeyCarries, KeyCarry};

use crate::key_carries;

/// Carries kept by the host, for this component only.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostKeyCarries;

impl KeyCarries for HostKeyCarries {
    fn recall(&self, file: &FileVersion, offset: u64) -> Option<KeyCarry> {
        key_carries::recall(version(file), offset).map(|c| KeyCarry { line: c.line })
    }

    fn remember(&self, file: &FileVersion, offset: u64, carry: KeyCarry) {
        key_carries::remember(
            version(file),
            offset,
            key_carries::KeyCarry { line: carry.line },
        );
    }
}

fn version(file: &FileVersion) -> key_carries::FileVersion {
    key_carries::FileVersion {
        identity: file.identity,
        size: file.size,
        modified_ns: file.modified_ns,
        changed_ns: file.changed_ns,
    }
}
