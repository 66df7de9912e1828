//! What is compiling, on stderr, once a compile has taken a second
//! (docs/components.md#compiled-components): a line kept up to date on a terminal, else one
//! line when it starts to take long and one when it ends. Fast compiles (the built-ins, a
//! cached component) show nothing.

use std::collections::BTreeMap;
use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, Instant};

use sluice_runtime::engine::progress::{Compiling, compiling, wait_for_a_compile};

/// How long a compile runs before it is shown.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// How often the display looks while a compile runs (it sleeps while none does).
const EVERY: Duration = Duration::from_millis(250);

/// Starts the display on a thread of its own, for the life of the process.
pub(crate) fn start() {
    let terminal = std::io::stderr().is_terminal();
    let _ = std::thread::Builder::new()
        .name("sluice-progress".into())
        .spawn(move || {
            let mut display = Display::default();
            loop {
                // Nothing shown and nothing to finish: sleep until a compile starts.
                if display.announced.is_empty() && !display.line {
                    wait_for_a_compile();
                }
                std::thread::sleep(EVERY);
                let text = display.next(&compiling(), terminal);
                if !text.is_empty() {
                    let mut err = std::io::stderr().lock();
                    let _ = err.write_all(text.as_bytes());
                    let _ = err.flush();
                }
            }
        });
}

/// What has been shown.
#[derive(Default)]
struct Display {
    /// The compiles announced (not on a terminal): when each started, and what it is.
    announced: BTreeMap<u64, (Instant, String)>,
    /// A progress line is on the terminal.
    line: bool,
}

impl Display {
    /// What to write now, given the compiles in progress.
    fn next(&mut self, now: &[Compiling], terminal: bool) -> String {
        let slow: Vec<&Compiling> = now.iter().filter(|c| c.elapsed >= SHOW_AFTER).collect();
        if terminal {
            let text = if slow.is_empty() {
                if self.line {
                    "\r\x1b[K".to_string()
                } else {
                    String::new()
                }
            } else {
                let list: Vec<String> = slow
                    .iter()
                    .map(|c| {
                        format!(
                            "{} ({}, {:.0} s)",
                            c.component,
                            mb(c.bytes),
                            c.elapsed.as_secs_f64()
                        )
                    })
                    .collect();
                format!("\r\x1b[Kcompiling {}", list.join(", "))
            };
            self.line = !slow.is_empty();
            return text;
        }
        let mut text = String::new();
        for c in &slow {
            if let std::collections::btree_map::Entry::Vacant(entry) = self.announced.entry(c.id) {
                text.push_str(&format!(
                    "compiling {} ({}); the first compile of a component is cached for the next start\n",
                    c.component,
                    mb(c.bytes)
                ));
                entry.insert((Instant::now() - c.elapsed, c.component.clone()));
            }
        }
        let running: Vec<u64> = now.iter().map(|c| c.id).collect();
        let ended: Vec<u64> = self
            .announced
            .keys()
            .filter(|id| !running.contains(id))
            .copied()
            .collect();
        for id in ended {
            if let Some((started, component)) = self.announced.remove(&id) {
                text.push_str(&format!(
                    "compiled {component} in {:.1} s\n",
                    started.elapsed().as_secs_f64()
                ));
            }
        }
        text
    }
}

/// `18.4 MB`.
fn mb(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compiling(id: u64, component: &str, secs: u64) -> Compiling {
        Compiling {
            id,
            component: component.into(),
            bytes: 18_433_180,
            elapsed: Duration::from_secs(secs),
        }
    }

    #[test]
    fn a_slow_compile_is_one_line_when_it_starts_to_take_long_and_one_when_it_ends() {
        let mut d = Display::default();
        assert_eq!(d.next(&[compiling(1, "fast.wasm", 0)], false), "");
        assert_eq!(
            d.next(&[compiling(2, "py.wasm", 1)], false),
            "compiling py.wasm (18.4 MB); the first compile of a component is cached for the next start\n"
        );
        assert_eq!(d.next(&[compiling(2, "py.wasm", 3)], false), "");
        let ended = d.next(&[], false);
        assert!(ended.starts_with("compiled py.wasm in "), "{ended}");
        assert!(ended.ends_with(" s\n"), "{ended}");
        assert_eq!(d.next(&[], false), "");
    }

    #[test]
    fn on_a_terminal_one_line_is_kept_up_to_date_then_cleared() {
        let mut d = Display::default();
        assert_eq!(d.next(&[compiling(1, "a.wasm", 0)], true), "");
        assert_eq!(
            d.next(
                &[compiling(1, "a.wasm", 2), compiling(2, "b.wasm", 1)],
                true
            ),
            "\r\x1b[Kcompiling a.wasm (18.4 MB, 2 s), b.wasm (18.4 MB, 1 s)"
        );
        assert_eq!(d.next(&[], true), "\r\x1b[K");
        assert_eq!(d.next(&[], true), "");
    }
}
