//! `GET /tools`: the reports of the tools being served, as `sluice doctor` prints them
//! (one shape, `sluice_wiring::report::ToolReport`), behind the token, and the list a live
//! reload swaps in with the tools (a failed reload changes neither).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use sluice_config::{Config, Overrides};
use sluice_runtime::LiveToolbox;
use sluice_runtime::component::source::sha256_hex;
use sluice_server::reload::{self, ReloadOptions, Reloader, Served};
use sluice_wiring::ToolLoader;
use sluice_wiring::report::ToolCatalog;

use super::{Setup, TestServer, engine};

const TOKEN: &str = "t0ken-for-tests";

/// How long one reload may take on a loaded 2-core machine (it compiles components).
const RELOAD_LIMIT: Duration = Duration::from_secs(120);

/// Loads the tools of `dir/sluice.toml` as `sluice serve` does (on the tests' engine).
async fn load(dir: &Path) -> (Config, ToolLoader, sluice_wiring::Loaded) {
    let file = dir.join("sluice.toml");
    let config = Config::resolve(Some(&file), &|_| None, &Overrides::default()).unwrap();
    let loader = ToolLoader::with(engine(), sluice_wiring::fetcher_for(&config));
    let loaded = loader.load_checked(&config, None).await.unwrap();
    (config, loader, loaded)
}

fn names(tools: &Value) -> Vec<&str> {
    tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

/// The five built-ins over one root: every field of every report, exactly; the fields are
/// those the OpenAPI document names; 401 without the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_builtins_are_listed_with_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("logs");
    std::fs::create_dir(&root).unwrap();
    let root = root.canonicalize().unwrap();
    std::fs::write(
        dir.path().join("sluice.toml"),
        format!("[roots]\nlogs = {:?}\n", root.display().to_string()),
    )
    .unwrap();
    let (_, _, loaded) = load(dir.path()).await;
    let catalog = ToolCatalog::new(loaded.report);
    let server = TestServer::start(Setup {
        token: Some(TOKEN.into()),
        loaded: Some((
            Arc::new(loaded.toolbox) as Arc<dyn sluice_agent::Tools>,
            catalog,
        )),
        ..Setup::default()
    })
    .await;

    let (status, body) = server.get("/tools").await;
    assert_eq!(status, 200, "{body}");
    let expected: Vec<Value> = sluice_builtins::BUILTINS
        .iter()
        .map(|&(name, wasm)| {
            let script = name == "run_script";
            json!({
                "name": name,
                "source": "built-in",
                "component": name,
                "digest": format!("sha256:{}", sha256_hex(wasm)),
                "signature": "built-in",
                "grants": {
                    "read": if script { json!([]) } else { json!([format!("logs={}", root.display())]) },
                    "write": [],
                    "http": [],
                    "httpMethods": [],
                    "toolCalls": script
                },
                "limits": {
                    "memoryMib": 256,
                    "timeoutMs": if script { 30_000 } else { 10_000 },
                    "httpMaxResponseBytes": 10_485_760
                },
                "annotations": {"destructive": false, "readOnly": true, "openWorld": false},
                "available": true,
                "reason": null
            })
        })
        .collect();
    assert_eq!(
        names(&body),
        [
            "read_file",
            "tail_file",
            "grep_files",
            "list_dir",
            "run_script"
        ]
    );
    assert_eq!(body, json!({ "tools": expected }));
    for tool in body["tools"].as_array().unwrap() {
        let digest = tool["digest"].as_str().unwrap();
        assert!(digest.starts_with("sha256:"), "{digest}");
        assert_eq!(digest.len(), 71, "{digest}");
    }
    // One shape: the document's ToolReport names exactly the fields served.
    let document = sluice_server::openapi_document(false);
    let mut required: Vec<&str> = document["components"]["schemas"]["ToolReport"]["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    let mut served: Vec<&str> = body["tools"][0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    required.sort_unstable();
    served.sort_unstable();
    assert_eq!(required, served);

    let anonymous = reqwest::Client::new()
        .get(server.url("/tools"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
    server.stop().await;
}

/// The built-in `list_dir` component, to copy into the tools directory.
fn list_dir_wasm() -> &'static [u8] {
    sluice_builtins::BUILTINS
        .iter()
        .find(|(name, _)| *name == "list_dir")
        .map(|(_, wasm)| *wasm)
        .unwrap()
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

fn live_names(live: &LiveToolbox) -> Vec<String> {
    live.current().tools().map(|t| t.name.clone()).collect()
}

/// A component added to the tools directory of a running server is listed once it is
/// served; a reload that fails (two tools named alike) changes neither the list nor the
/// tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_live_reload_swaps_the_list_with_the_tools() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["work", "tools"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    std::fs::write(
        dir.path().join("sluice.toml"),
        "builtins = []\ntools_dir = \"tools\"\n[roots]\nwork = \"work\"\n",
    )
    .unwrap();
    // tools/NAME.wasm, a copy of list_dir offered as `PREFIX_list_dir`: its policy first,
    // then the component in one rename, so no reload sees it without its policy.
    let component = |name: &str, prefix: &str| {
        let tools = dir.path().join("tools");
        std::fs::write(
            tools.join(format!("{name}.toml")),
            format!("prefix = \"{prefix}\"\nread = [\"work\"]\n"),
        )
        .unwrap();
        let staged = dir.path().join(format!("{name}.staged"));
        std::fs::write(&staged, list_dir_wasm()).unwrap();
        std::fs::rename(&staged, tools.join(format!("{name}.wasm"))).unwrap();
    };
    component("x", "x");
    let (config, loader, loaded) = load(dir.path()).await;
    let served = Served::of(&loaded);
    let catalog = served.catalog.clone();
    let live = Arc::new(LiveToolbox::new(loaded.toolbox));
    let options = ReloadOptions {
        config_file: Some(dir.path().join("sluice.toml")),
        overrides: Overrides::default(),
    };
    let reloader = reload::watch(config, options, loader, live.clone(), served).unwrap();
    let server = TestServer::start(Setup {
        loaded: Some((live.clone() as Arc<dyn sluice_agent::Tools>, catalog)),
        ..Setup::default()
    })
    .await;
    let (status, body) = server.get("/tools").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(names(&body), ["x_list_dir"]);

    component("y", "y");
    let deadline = tokio::time::Instant::now() + RELOAD_LIMIT;
    loop {
        let (_, body) = server.get("/tools").await;
        if names(&body) == ["x_list_dir", "y_list_dir"] {
            assert_eq!(
                body["tools"][1]["component"],
                dir.path().join("tools/y.wasm").display().to_string()
            );
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The catalog is set just before the swap: the tools follow at once.
    let deadline = tokio::time::Instant::now() + RELOAD_LIMIT;
    while live_names(&live) != ["x_list_dir", "y_list_dir"] {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            live_names(&live)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(live.revision(), 1);

    // z's tool named like x's: the reload that sees it fails, and nothing changes.
    let n = reloader.reloads();
    std::fs::write(dir.path().join("tools/z.toml"), "prefix = \"x\"\n").unwrap();
    reloads_reach(&reloader, n + 1).await;
    let staged = dir.path().join("z.staged");
    std::fs::write(&staged, list_dir_wasm()).unwrap();
    std::fs::rename(&staged, dir.path().join("tools/z.wasm")).unwrap();
    reloads_reach(&reloader, n + 2).await;
    let (_, body) = server.get("/tools").await;
    assert_eq!(names(&body), ["x_list_dir", "y_list_dir"]);
    assert_eq!(live_names(&live), ["x_list_dir", "y_list_dir"]);
    assert_eq!(live.revision(), 1);
    server.stop().await;
}
