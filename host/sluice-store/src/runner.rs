//! Who runs a session: the process id (to tell a live runner from one that has died) and a
//! token drawn once per process (to tell this process's runs from a stale row that an
//! earlier process with the same id left, as happens in containers, where the host is often
//! pid 1). Both are stored with the run, so any process that opens the store can decide.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// This process's runner token: 16 hex digits from the OS's randomness, drawn once (the
/// clock and the process id if randomness is unavailable).
pub(crate) fn process_token() -> &'static str {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN.get_or_init(|| {
        let mut bytes = [0u8; 8];
        let value = match getrandom::fill(&mut bytes) {
            Ok(()) => u64::from_le_bytes(bytes),
            Err(_) => {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
                nanos ^ (u64::from(std::process::id()) << 32)
            }
        };
        format!("{value:016x}")
    })
}

/// Whether process `pid` exists. Linux: `/proc/<pid>` exists and is not a zombie (a
/// killed process its parent has not reaped yet). Elsewhere, or without `/proc`, every
/// process counts as live: a stale session then needs `Store::end_run` to be freed.
pub(crate) fn process_is_live(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        if !Path::new("/proc/self").exists() {
            return true;
        }
        let dir = PathBuf::from(format!("/proc/{pid}"));
        match std::fs::read_to_string(dir.join("stat")) {
            // `pid (comm) state …`: comm may hold spaces and parentheses, so read after
            // the last `)`.
            Ok(stat) => !matches!(
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.trim_start().chars().next()),
                Some('Z' | 'X')
            ),
            Err(_) => dir.exists(),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn liveness_of_processes() {
        assert!(process_is_live(std::process::id()));
        assert!(!process_is_live(u32::MAX - 1));
    }

    #[test]
    fn the_token_is_drawn_once() {
        let t = process_token();
        assert_eq!(t.len(), 16);
        assert!(t.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(process_token(), t);
    }
}
