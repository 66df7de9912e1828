//! A cold start (docs/components.md#compiled-components): with an empty cache, tools are
//! listed at once from a stand-in of each component's types, the code compiles in the
//! background, and a call waits for it (its timeout counted from when it runs); the cache
//! trusts only the artifacts it recorded, so an artifact swapped in under another
//! component's name is compiled again instead of run.

use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use serde_json::{Value, json};
use sluice_runtime::component::source::sha256_hex;
use sluice_runtime::{
    CallOptions, CallStatus, ComponentSpec, EngineOptions, ToolEngine, ToolInfo, ToolPolicy,
    Toolbox,
};
use sluice_tests::{
    CONFIG_READER_WASM, FS_LIKE_WASM, HOSTILE_WASM, HTTP_FETCH_WASM, JSON_SUMMARY_WASM,
    OUTSIDER_WASM, VERSIONED_WASM, builtin, component_spec,
};
use tokio_util::sync::CancellationToken;

/// An engine of its own over the cache `cache`, with one compile thread.
fn cold_engine(cache: Option<&Path>) -> Arc<ToolEngine> {
    Arc::new(
        ToolEngine::new(EngineOptions {
            cache_dir: cache.map(Path::to_path_buf),
            compile_threads: Some(1),
            on_demand_allocation: true,
            ..EngineOptions::default()
        })
        .unwrap(),
    )
}

/// Takes `engine`'s only compile thread until the returned sender sends or drops, so the
/// compiles queued behind it wait for the test.
fn hold_compiles(engine: &ToolEngine) -> mpsc::Sender<()> {
    let (release, held) = mpsc::channel::<()>();
    engine.compile_in_background(move || {
        let _ = held.recv();
    });
    release
}

/// A root with one file, and `name` loaded over it under `policy` (which `adjust` may
/// change).
fn spec_over(root: &Path, name: &str, adjust: impl FnOnce(&mut ToolPolicy)) -> ComponentSpec {
    let mut policy = ToolPolicy::read_only([("root".to_string(), root.to_path_buf())]);
    adjust(&mut policy);
    ComponentSpec {
        source: builtin(name),
        policy,
    }
}

fn root_with_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("f.txt"), "one\ntwo\n").unwrap();
    (dir, root)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Calls `tool` of `toolbox` on a thread of `rt`; the observation's JSON arrives on the
/// receiver.
fn call_in_background(
    rt: &tokio::runtime::Runtime,
    toolbox: &Arc<Toolbox>,
    tool: &'static str,
    args: Value,
    cancel: Option<CancellationToken>,
) -> mpsc::Receiver<(CallStatus, Value)> {
    let (tx, rx) = mpsc::channel();
    let toolbox = toolbox.clone();
    rt.spawn(async move {
        let mut options = CallOptions::new(65_536);
        if let Some(cancel) = cancel {
            options = options.with_cancel(cancel);
        }
        let obs = toolbox.call_with(tool, &args.to_string(), &options).await;
        let _ = tx.send((obs.status(), serde_json::from_str(obs.text()).unwrap()));
    });
    rx
}

#[test]
fn a_cold_load_lists_the_tools_at_once_and_a_call_waits_for_the_code() {
    let cache = tempfile::tempdir().unwrap();
    let (_dir, root) = root_with_file();
    let engine = cold_engine(Some(cache.path()));
    let release = hold_compiles(&engine);
    let toolbox = Arc::new(
        Toolbox::load_available(engine.clone(), &[spec_over(&root, "read_file", |_| {})]).unwrap(),
    );
    assert_eq!(toolbox.compiling(), ["built-in read_file"]);
    assert_eq!(engine.compile_counts(), (0, 0));
    // The tools of the stand-in are those of the compiled component.
    let warm = Toolbox::load(
        sluice_tests::engine(super::cache()),
        &[spec_over(&root, "read_file", |_| {})],
    )
    .unwrap();
    assert_eq!(
        toolbox.tools().collect::<Vec<_>>(),
        warm.tools().collect::<Vec<_>>()
    );

    let rt = runtime();
    let answer = call_in_background(&rt, &toolbox, "read_file", json!({"path": "f.txt"}), None);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        answer.try_recv().is_err(),
        "the call waits while its component compiles"
    );
    release.send(()).unwrap();
    let (status, obs) = answer.recv_timeout(Duration::from_secs(120)).unwrap();
    assert_eq!(status, CallStatus::Ok, "{obs}");
    assert_eq!(obs["result"]["content"], "one\ntwo\n");
    assert_eq!(engine.compile_counts(), (0, 1));
    assert!(toolbox.compiling().is_empty());
    assert_eq!(engine.cache_usage().unwrap().artifacts, 1);

    // A second engine on the same cache finds the code at once.
    let warm_engine = cold_engine(Some(cache.path()));
    let _held = hold_compiles(&warm_engine);
    let toolbox = Toolbox::load_available(
        warm_engine.clone(),
        &[spec_over(&root, "read_file", |_| {})],
    )
    .unwrap();
    assert!(toolbox.compiling().is_empty());
    assert_eq!(warm_engine.compile_counts(), (1, 0));
}

#[test]
fn a_tool_timeout_counts_from_when_its_code_runs_not_from_the_compile() {
    let (_dir, root) = root_with_file();
    let engine = cold_engine(None);
    let release = hold_compiles(&engine);
    let spec = spec_over(&root, "read_file", |p| {
        p.timeout = Duration::from_millis(300)
    });
    let toolbox = Arc::new(Toolbox::load_available(engine, &[spec]).unwrap());
    let rt = runtime();
    let answer = call_in_background(&rt, &toolbox, "read_file", json!({"path": "f.txt"}), None);
    // The compile waits for longer than the tool's timeout.
    std::thread::sleep(Duration::from_millis(800));
    release.send(()).unwrap();
    let (status, obs) = answer.recv_timeout(Duration::from_secs(120)).unwrap();
    assert_eq!(status, CallStatus::Ok, "{obs}");
    assert_eq!(obs["result"]["content"], "one\ntwo\n");
}

#[test]
fn a_call_cancelled_while_its_component_compiles_is_cancelled_saying_so() {
    let (_dir, root) = root_with_file();
    let engine = cold_engine(None);
    let release = hold_compiles(&engine);
    let toolbox = Arc::new(
        Toolbox::load_available(engine, &[spec_over(&root, "read_file", |_| {})]).unwrap(),
    );
    let rt = runtime();
    let cancel = CancellationToken::new();
    let answer = call_in_background(
        &rt,
        &toolbox,
        "read_file",
        json!({"path": "f.txt"}),
        Some(cancel.clone()),
    );
    std::thread::sleep(Duration::from_millis(100));
    cancel.cancel();
    let (status, obs) = answer.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(status, CallStatus::Cancelled, "{obs}");
    let message = obs["error"].as_str().unwrap();
    assert!(
        message
            .starts_with("the call was cancelled while its component was still being compiled ("),
        "{message}"
    );
    drop(release);
}

#[test]
fn a_strict_load_returns_once_every_component_compiled() {
    let (_dir, root) = root_with_file();
    let engine = cold_engine(None);
    let release = hold_compiles(&engine);
    let specs = [
        spec_over(&root, "read_file", |_| {}),
        spec_over(&root, "list_dir", |_| {}),
    ];
    let (tx, loaded) = mpsc::channel();
    let loader = engine.clone();
    std::thread::spawn(move || tx.send(Toolbox::load(loader, &specs).map(|t| t.compiling().len())));
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        loaded.try_recv().is_err(),
        "a strict load waits for the compiles"
    );
    release.send(()).unwrap();
    let still_compiling = loaded
        .recv_timeout(Duration::from_secs(120))
        .unwrap()
        .unwrap();
    assert_eq!(still_compiling, 0);
    assert_eq!(engine.compile_counts(), (0, 2));
}

/// The stand-in of every kind of component the tests have offers exactly the tools its
/// compiled code does (names, descriptions, schemas, destructive), and a component whose
/// imports the host lacks is refused at once, with the same error.
#[test]
fn the_stand_in_offers_the_same_tools_as_the_code() {
    let mut specs: Vec<ComponentSpec> = ["read_file", "tail_file", "grep_files", "list_dir"]
        .into_iter()
        .map(|name| ComponentSpec {
            source: builtin(name),
            policy: ToolPolicy::read_only([("root".to_string(), PathBuf::from("/"))]),
        })
        .collect();
    for wasm in [
        OUTSIDER_WASM,
        HOSTILE_WASM,
        VERSIONED_WASM,
        FS_LIKE_WASM,
        HTTP_FETCH_WASM,
        JSON_SUMMARY_WASM,
        CONFIG_READER_WASM,
    ] {
        specs.push(component_spec(wasm, ToolPolicy::default()));
    }
    for spec in &specs {
        let engine = cold_engine(None);
        let _held = hold_compiles(&engine);
        let cold = Toolbox::load_available(engine, std::slice::from_ref(spec)).unwrap();
        assert_eq!(
            cold.compiling(),
            [spec.source.describe()],
            "{} has a stand-in",
            spec.source.describe()
        );
        let warm = Toolbox::load(
            sluice_tests::engine(super::cache()),
            std::slice::from_ref(spec),
        )
        .unwrap();
        let cold: Vec<&ToolInfo> = cold.tools().collect();
        let warm: Vec<&ToolInfo> = warm.tools().collect();
        assert!(!cold.is_empty());
        assert_eq!(cold, warm, "{}", spec.source.describe());
    }

    let engine = cold_engine(None);
    let _held = hold_compiles(&engine);
    let missing = component_spec(sluice_tests::NEEDS_MISSING_WASM, ToolPolicy::default());
    let err = Toolbox::load(engine, &[missing]).unwrap_err().to_string();
    assert!(
        err.contains("it imports interfaces the host does not provide: acme:missing/clock"),
        "{err}"
    );
}

/// Another component's compiled code put in the cache under a pinned component's name is
/// not run: the artifact does not match the digest the cache recorded for it, so it is
/// removed and the pinned component is compiled again (the attack of a planted `.cwasm`).
#[test]
fn an_artifact_swapped_in_under_a_pinned_components_name_is_compiled_again() {
    let cache = tempfile::tempdir().unwrap();
    let (_dir, root) = root_with_file();
    let pinned = |name: &str| {
        let source = builtin(name);
        let sha = sha256_hex(source.bytes());
        spec_over(&root, name, |p| p.sha256 = Some(sha))
    };
    let engine = cold_engine(Some(cache.path()));
    Toolbox::load(engine.clone(), &[pinned("read_file"), pinned("list_dir")]).unwrap();
    let artifact = |name: &str| -> PathBuf {
        let sha = sha256_hex(builtin(name).bytes());
        std::fs::read_dir(cache.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                let file = p.file_name().unwrap().to_string_lossy();
                file.starts_with(&sha) && file.ends_with(".cwasm")
            })
            .unwrap_or_else(|| panic!("the artifact of {name}"))
    };
    let (read_file, list_dir) = (artifact("read_file"), artifact("list_dir"));
    std::fs::copy(&list_dir, &read_file).unwrap();

    let engine = cold_engine(Some(cache.path()));
    let toolbox = Arc::new(Toolbox::load(engine.clone(), &[pinned("read_file")]).unwrap());
    assert_eq!(
        toolbox.tools().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["read_file"]
    );
    assert_eq!(
        engine.compile_counts(),
        (0, 1),
        "read_file was compiled again"
    );
    let rt = runtime();
    let (status, obs) =
        call_in_background(&rt, &toolbox, "read_file", json!({"path": "f.txt"}), None)
            .recv_timeout(Duration::from_secs(60))
            .unwrap();
    assert_eq!(status, CallStatus::Ok, "{obs}");
    assert_eq!(obs["result"]["content"], "one\ntwo\n");
    // The recompiled artifact is the cache's own again, and the next engine uses it.
    let engine = cold_engine(Some(cache.path()));
    Toolbox::load(engine.clone(), &[pinned("read_file")]).unwrap();
    assert_eq!(engine.compile_counts(), (1, 0));
}

/// A cache directory other users may write into is not used (its artifacts may not be
/// Sluice's); tools load and run without it.
#[test]
fn a_cache_directory_others_may_write_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let engine = cold_engine(Some(&shared));
    assert!(engine.cache_usage().is_none());
    let (_dir, root) = root_with_file();
    let toolbox =
        Arc::new(Toolbox::load(engine, &[spec_over(&root, "read_file", |_| {})]).unwrap());
    let rt = runtime();
    let (status, _) =
        call_in_background(&rt, &toolbox, "read_file", json!({"path": "f.txt"}), None)
            .recv_timeout(Duration::from_secs(60))
            .unwrap();
    assert_eq!(status, CallStatus::Ok);
    assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 0);
}
