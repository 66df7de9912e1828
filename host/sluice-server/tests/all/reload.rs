//! Live reload in process: the reloader of `sluice serve` and `sluice mcp` over a tools
//! directory of copies of a built-in component, counting its reloads
//! ([`Reloader::reloads`]) and reading its log lines.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use sluice_config::{Config, Overrides};
use sluice_runtime::LiveToolbox;
use sluice_server::reload::{self, DEBOUNCE, ReloadOptions, Reloader, Served};
use sluice_wiring::ToolLoader;

/// How long one reload may take on a loaded 2-core machine (it compiles components).
const RELOAD_LIMIT: Duration = Duration::from_secs(120);

/// The quiet period after a reload in which no other may start: 20 times [`DEBOUNCE`] (3 s).
const QUIET: Duration = DEBOUNCE.saturating_mul(20);

/// The built-in `list_dir` component, to copy into the tools directory.
fn list_dir_wasm() -> &'static [u8] {
    sluice_builtins::BUILTINS
        .iter()
        .find(|(name, _)| *name == "list_dir")
        .map(|(_, wasm)| *wasm)
        .unwrap()
}

/// A directory with `sluice.toml` (no built-ins, root `work`, tools directory `tools`)
/// and `tools/x.wasm` (a copy of `list_dir`, offered as `x_list_dir`).
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["work", "tools"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        std::fs::write(
            dir.path().join("sluice.toml"),
            "builtins = []\ntools_dir = \"tools\"\n[roots]\nwork = \"work\"\n",
        )
        .unwrap();
        let s = Setup { dir };
        s.component("x");
        s
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `tools/NAME.wasm`, a copy of `list_dir` offered as `NAME_list_dir` (its policy is
    /// written first, so no reload sees the component without it).
    fn component(&self, name: &str) {
        std::fs::write(
            self.path(&format!("tools/{name}.toml")),
            format!("prefix = \"{name}\"\nread = [\"work\"]\n"),
        )
        .unwrap();
        std::fs::write(self.path(&format!("tools/{name}.wasm")), list_dir_wasm()).unwrap();
    }

    /// Loads the tools as `sluice serve` does and starts watching them.
    async fn serve(&self) -> (Arc<LiveToolbox>, Reloader) {
        let file = self.path("sluice.toml");
        let config = Config::resolve(Some(&file), &|_| None, &Overrides::default()).unwrap();
        let loader = ToolLoader::new(&config).unwrap();
        let loaded = loader.load_checked(&config, None).await.unwrap();
        let served = Served::of(&loaded);
        let live = Arc::new(LiveToolbox::new(loaded.toolbox));
        let options = ReloadOptions {
            config_file: Some(file),
            overrides: Overrides::default(),
        };
        let reloader = reload::watch(config, options, loader, live.clone(), served).unwrap();
        (live, reloader)
    }
}

/// What `touch PATH` does to a file that exists: opens it for writing, sets its times,
/// closes it. Its content stays.
fn touch(path: &Path) {
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now()).unwrap();
}

/// Waits until `reloader` has finished `n` reloads.
async fn reloads_reach(reloader: &Reloader, n: u64) {
    let deadline = tokio::time::Instant::now() + RELOAD_LIMIT;
    while reloader.reloads() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} reload(s) within {RELOAD_LIMIT:?}, not {n}",
            reloader.reloads()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn names(live: &LiveToolbox) -> Vec<String> {
    live.current().tools().map(|t| t.name.clone()).collect()
}

/// One `touch tools/x.toml` is one reload; the reload's own reads of every component and
/// policy start none, so the count stays 1 over a quiet period (it grew without end, at
/// 16-77% of a core, when opens and reads counted as changes).
#[tokio::test]
async fn one_touch_is_one_reload_and_then_quiet() {
    let s = Setup::new();
    let (live, reloader) = s.serve().await;
    assert_eq!(names(&live), ["x_list_dir"]);
    tokio::time::sleep(QUIET).await;
    assert_eq!(reloader.reloads(), 0, "nothing changed yet");

    touch(&s.path("tools/x.toml"));
    reloads_reach(&reloader, 1).await;
    tokio::time::sleep(QUIET).await;
    assert_eq!(reloader.reloads(), 1, "the reload started another");
    assert_eq!(live.revision(), 0, "the same bytes: nothing swapped");

    // A change of content (one write of the policy) is one reload and one swap.
    std::fs::write(
        s.path("tools/x.toml"),
        "prefix = \"x\"\nread = [\"work\"]\ntimeout_ms = 5000\n",
    )
    .unwrap();
    reloads_reach(&reloader, 2).await;
    tokio::time::sleep(QUIET).await;
    assert_eq!(reloader.reloads(), 2);
    assert_eq!(live.revision(), 1);
    assert_eq!(names(&live), ["x_list_dir"]);
}

/// A log sink for one test: every line the subscriber writes.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Lines {
    fn count(&self, needle: &str) -> usize {
        let bytes = self.0.lock().unwrap();
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|l| l.contains(needle))
            .count()
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A process-wide subscriber that keeps every call site's interest open ("sometimes") and
/// enables nothing itself, so that a subscriber set for one thread (`set_default`) sees the
/// events of the call sites other tests reached first: with a single subscriber in the
/// process, tracing-core caches a call site as never wanted when a thread without one
/// reaches it first (tokio-rs/tracing#3611).
fn keep_call_sites_open() {
    use tracing::subscriber::Interest;
    use tracing::{Event, Metadata, span};
    struct Undecided;
    impl tracing::Subscriber for Undecided {
        fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
            Interest::sometimes()
        }
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            false
        }
        fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
            span::Id::from_u64(1)
        }
        fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
        fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
        fn event(&self, _: &Event<'_>) {}
        fn enter(&self, _: &span::Id) {}
        fn exit(&self, _: &span::Id) {}
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = tracing::subscriber::set_global_default(Undecided);
    });
}

/// A name collision that persists (a second component whose tool is named like the first
/// one's) is logged once, however many changes it outlives, and its fix once.
#[tokio::test(flavor = "current_thread")]
async fn a_persisting_failure_is_logged_once_and_its_fix_once() {
    keep_call_sites_open();
    let lines = Lines::default();
    let sink = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .with_env_filter("sluice_server::reload=debug,sluice_wiring=warn")
        .finish();
    // The reloader's task runs on this thread (a current-thread runtime).
    let _guard = tracing::subscriber::set_default(subscriber);
    let s = Setup::new();
    let (live, reloader) = s.serve().await;

    // tools/y.wasm whose policy says prefix = "x": a second tool named x_list_dir.
    std::fs::write(s.path("tools/y.toml"), "prefix = \"x\"\n").unwrap();
    std::fs::write(s.path("tools/y.wasm"), list_dir_wasm()).unwrap();
    let failed = "reloading the tools failed, so the current tools stay (revision 0): two tools are named \"x_list_dir\"";
    let deadline = tokio::time::Instant::now() + RELOAD_LIMIT;
    while lines.count(failed) == 0 {
        assert!(tokio::time::Instant::now() < deadline, "{}", lines.text());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let n = reloader.reloads();
    // The same failure after later changes: not logged again (at warn).
    touch(&s.path("tools/y.wasm"));
    reloads_reach(&reloader, n + 1).await;
    touch(&s.path("tools/y.toml"));
    reloads_reach(&reloader, n + 2).await;
    tokio::time::sleep(QUIET).await;
    assert_eq!(lines.count(failed), 1, "{}", lines.text());
    assert_eq!(
        lines.count("reloading the tools still fails"),
        2,
        "{}",
        lines.text()
    );
    assert_eq!(lines.count("works again"), 0, "{}", lines.text());
    assert_eq!(reloader.reloads(), n + 2, "retried without a change");

    // The fix: y's tools get their own name.
    std::fs::write(s.path("tools/y.toml"), "prefix = \"y\"\n").unwrap();
    reloads_reach(&reloader, n + 3).await;
    tokio::time::sleep(QUIET).await;
    let fixed =
        "reloading the tools works again (it failed before: two tools are named \"x_list_dir\"";
    assert_eq!(lines.count(fixed), 1, "{}", lines.text());
    assert_eq!(lines.count(failed), 1, "{}", lines.text());
    assert_eq!(names(&live), ["x_list_dir", "y_list_dir"]);
    assert_eq!(live.revision(), 1);
}

/// A FIFO, a directory and a sparse 2 GiB file named `*.wasm`, dropped where the tools
/// are, are each left out with their reason; the reload goes on with the others, and
/// the next change reloads again.
#[tokio::test]
async fn special_and_oversized_entries_are_skipped_and_reload_goes_on() {
    let s = Setup::new();
    let (live, reloader) = s.serve().await;
    sluice_operator_files::make_fifo(&s.path("tools/fifo.wasm")).unwrap();
    std::fs::create_dir(s.path("tools/dir.wasm")).unwrap();
    std::fs::File::create(s.path("tools/big.wasm"))
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    reloads_reach(&reloader, 1).await;
    s.component("z");
    let n = reloader.reloads();
    reloads_reach(&reloader, n + 1).await;
    let deadline = tokio::time::Instant::now() + RELOAD_LIMIT;
    while names(&live) != ["x_list_dir", "z_list_dir"] {
        assert!(tokio::time::Instant::now() < deadline, "{:?}", names(&live));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let current = live.current();
    let unavailable: Vec<String> = current
        .unavailable()
        .iter()
        .map(|u| u.to_string())
        .collect();
    let tools = s.path("tools");
    let why = |name: &str, reason: &str| {
        format!(
            "{0}/{name} is unavailable, its tools are not offered: failed to read the component {0}/{name}: {reason}",
            tools.display()
        )
    };
    assert_eq!(
        unavailable,
        [
            why(
                "big.wasm",
                "it is larger than 1073741824 bytes, the most read from such a file"
            ),
            why(
                "dir.wasm",
                "not a regular file (it is a directory); name a regular file"
            ),
            why(
                "fifo.wasm",
                "not a regular file (it is a FIFO); name a regular file"
            ),
        ]
    );
}

/// A new component whose policy has a typo is unavailable with the reason (and the key
/// it was probably meant to be); the reload goes on.
#[tokio::test]
async fn a_new_component_with_a_bad_policy_is_left_out_with_the_reason() {
    let s = Setup::new();
    let (live, reloader) = s.serve().await;
    let mut policy = std::fs::File::create(s.path("tools/w.toml")).unwrap();
    writeln!(policy, "prefix = \"w\"\nmemroy_mib = 64").unwrap();
    drop(policy);
    std::fs::write(s.path("tools/w.wasm"), list_dir_wasm()).unwrap();
    s.component("v");
    let deadline = tokio::time::Instant::now() + RELOAD_LIMIT;
    while names(&live) != ["v_list_dir", "x_list_dir"] {
        assert!(tokio::time::Instant::now() < deadline, "{:?}", names(&live));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(reloader.reloads() >= 1);
    let current = live.current();
    let u = &current.unavailable()[0];
    assert_eq!(u.source, s.path("tools/w.wasm").display().to_string());
    assert!(
        u.reason.ends_with("; did you mean `memory_mib`?"),
        "{}",
        u.reason
    );
}
