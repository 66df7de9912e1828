//! A server's cold start with the baseline compiler
//! (docs/components.md#compiled-components). A component the cache does not hold answers
//! from Winch's code first, under the same deadline and memory limit; Cranelift's code is
//! compiled behind it, swapped in for later calls and cached (Winch's never is).

use std::path::Path;
use std::sync::{Arc, mpsc};
use std::time::Duration;

use serde_json::{Value, json};
use sluice_runtime::{
    CallOptions, CallStatus, Compilers, ComponentSpec, EngineOptions, ToolEngine, ToolPolicy,
    Toolbox,
};
use sluice_tests::{HOSTILE_WASM, builtin, component_spec};

/// A server's engine over the cache `cache`: baseline compiler first, one compile thread
/// (so compiles run in the order queued).
fn serving_engine(cache: &Path) -> Arc<ToolEngine> {
    engine_compiling_with(cache, Compilers::BaselineFirst)
}

fn engine_compiling_with(cache: &Path, compilers: Compilers) -> Arc<ToolEngine> {
    Arc::new(
        ToolEngine::new(EngineOptions {
            cache_dir: Some(cache.to_path_buf()),
            compile_threads: Some(1),
            on_demand_allocation: true,
            compilers,
            ..EngineOptions::default()
        })
        .unwrap(),
    )
}

/// Waits until every compile queued on `engine`'s one compile thread (both tiers) has
/// finished.
fn wait_for_queued_compiles(engine: &ToolEngine) {
    let (done, finished) = mpsc::channel();
    engine.compile_after_first_tiers(move || done.send(()).unwrap());
    finished.recv_timeout(Duration::from_secs(600)).unwrap();
}

/// Holds `engine`'s one compile thread until the returned sender sends or drops.
fn hold_compiles(engine: &ToolEngine) -> mpsc::Sender<()> {
    let (release, held) = mpsc::channel::<()>();
    engine.compile_in_background(move || {
        let _ = held.recv();
    });
    release
}

fn call(toolbox: &Toolbox, tool: &str, args: Value) -> (CallStatus, Value) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let obs = rt.block_on(toolbox.call_with(tool, &args.to_string(), &CallOptions::new(65_536)));
    (obs.status(), serde_json::from_str(obs.text()).unwrap())
}

fn read_file_over(root: &Path) -> ComponentSpec {
    ComponentSpec {
        source: builtin("read_file"),
        policy: ToolPolicy::read_only([("root".to_string(), root.to_path_buf())]),
    }
}

#[test]
fn a_cold_server_answers_from_winch_code_then_swaps_in_cranelift_and_caches_only_it() {
    let cache = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f.txt"), "one\ntwo\n").unwrap();
    let engine = serving_engine(cache.path());
    assert_eq!(engine.compilers(), Compilers::BaselineFirst);
    let release = winch_only(&engine, || {
        Toolbox::load_available(engine.clone(), &[read_file_over(root.path())]).unwrap()
    });
    let (toolbox, release) = release;

    let (status, first) = call(&toolbox, "read_file", json!({"path": "f.txt"}));
    assert_eq!(status, CallStatus::Ok, "{first}");
    assert_eq!(first["result"]["content"], "one\ntwo\n");
    assert_eq!(engine.baseline_compiles(), 1);
    assert_eq!(engine.compile_counts(), (0, 0), "Cranelift's compile waits");
    assert!(toolbox.compiling().is_empty(), "Winch's code is the code");
    assert_eq!(engine.cache_usage().unwrap().artifacts, 0);

    release.send(()).unwrap();
    wait_for_queued_compiles(&engine);
    assert_eq!(engine.compile_counts(), (0, 1));
    let (status, second) = call(&toolbox, "read_file", json!({"path": "f.txt"}));
    assert_eq!((status, &second), (CallStatus::Ok, &first));
    assert_eq!(engine.cache_usage().unwrap().artifacts, 1);

    // The next server finds Cranelift's code in the cache: no compile at all.
    let warm = serving_engine(cache.path());
    let _held = hold_compiles(&warm);
    let toolbox = Toolbox::load_available(warm.clone(), &[read_file_over(root.path())]).unwrap();
    assert!(toolbox.compiling().is_empty());
    assert_eq!(
        (warm.compile_counts(), warm.baseline_compiles()),
        ((1, 0), 0)
    );
    assert_eq!(
        call(&toolbox, "read_file", json!({"path": "f.txt"})).1,
        first
    );
}

/// Loads a toolbox with `load` so that its Winch compiles run and its Cranelift compiles
/// wait: the compile queue is [hold, the toolbox's first compiles, hold]; the first hold is
/// released, so Cranelift's compiles (queued when Winch's finish) wait behind the second,
/// released by the sender returned.
fn winch_only(engine: &ToolEngine, load: impl FnOnce() -> Toolbox) -> (Toolbox, mpsc::Sender<()>) {
    let first = hold_compiles(engine);
    let toolbox = load();
    let second = hold_compiles(engine);
    first.send(()).unwrap();
    (toolbox, second)
}

#[test]
fn the_authors_loop_compiles_with_winch_only_and_caches_nothing() {
    let cache = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f.txt"), "one\ntwo\n").unwrap();
    let engine = engine_compiling_with(cache.path(), Compilers::BaselineOnly);
    assert_eq!(engine.compilers(), Compilers::BaselineOnly);
    // Strict, as `sluice test` loads: the load returns once Winch's code is there.
    let toolbox = Toolbox::load(engine.clone(), &[read_file_over(root.path())]).unwrap();
    assert!(toolbox.compiling().is_empty());
    let (status, obs) = call(&toolbox, "read_file", json!({"path": "f.txt"}));
    assert_eq!(status, CallStatus::Ok, "{obs}");
    assert_eq!(obs["result"]["content"], "one\ntwo\n");
    wait_for_queued_compiles(&engine);
    assert_eq!(
        (engine.baseline_compiles(), engine.compile_counts()),
        (1, (0, 0))
    );
    assert_eq!(engine.cache_usage().unwrap().artifacts, 0);
}

#[test]
fn winch_code_keeps_the_deadline_and_the_memory_limit() {
    let cache = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let engine = serving_engine(cache.path());
    let mut policy = ToolPolicy::read_only([("root".to_string(), root.path().to_path_buf())]);
    policy.timeout = Duration::from_millis(1000);
    policy.memory_bytes = 64 << 20;
    // Every call below runs Winch's code.
    let (toolbox, _held) = winch_only(&engine, || {
        Toolbox::load_available(engine.clone(), &[component_spec(HOSTILE_WASM, policy)]).unwrap()
    });
    let (status, spun) = call(&toolbox, "spin", json!({}));
    assert_eq!(status, CallStatus::ToolError);
    assert_eq!(
        (spun["kind"].as_str(), spun["error"].as_str()),
        (
            Some("timeout"),
            Some(
                "the tool ran past its timeout of 1000 ms and was stopped; raise timeout_ms in its policy (1 to 3600000 ms) if it needs longer"
            )
        )
    );
    let (status, grown) = call(&toolbox, "grow", json!({}));
    assert_eq!(status, CallStatus::ToolError, "{grown}");
    assert_eq!(grown["kind"], "memory-limit", "{grown}");
    let message = grown["error"].as_str().unwrap();
    assert!(
        message.starts_with("the tool hit its memory limit of 64 MiB (it asked for 65 MiB)"),
        "{message}"
    );
    assert_eq!(engine.baseline_compiles(), 1);
    assert_eq!(
        engine.compile_counts(),
        (0, 0),
        "no call ran Cranelift's code"
    );
}
