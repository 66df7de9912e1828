//! Live reload (docs/components.md#live-reload) at the level of the call path: a [`LiveToolbox`] replaced while a call
//! runs. The call keeps the toolbox it started on (which is freed when it ends, not
//! before), the next call uses the new one, and cancellation still reaches the call in
//! flight on the replaced toolbox.

use std::sync::Arc;
use std::time::Duration;

use sluice_agent::Tools;
use sluice_runtime::{
    CallOptions, CallStatus, ComponentSpec, LiveToolbox, RootGrant, Source, ToolPolicy, Toolbox,
};
use sluice_tests::registry::wait_until;
use sluice_tests::{engine, versioned};
use tokio_util::sync::CancellationToken;

use crate::cache;

const CAP: u32 = 8192;

/// The versioned component reporting `version`, writable over `work` (which the guest sees
/// as `/work`), with a timeout no test reaches: only a cancellation ends `wait_for`.
fn load(version: &str, work: &std::path::Path) -> Toolbox {
    let policy = ToolPolicy {
        roots: vec![RootGrant {
            name: "work".into(),
            dir: work.to_path_buf(),
            write: true,
        }],
        timeout: Duration::from_secs(120),
        ..ToolPolicy::default()
    };
    let spec = ComponentSpec {
        source: Source::Bytes {
            name: format!("versioned-{version}.wasm"),
            wasm: Arc::new(versioned(version)),
        },
        policy,
    };
    Toolbox::load(engine(cache()), &[spec]).expect("the versioned component loads")
}

#[test]
fn a_call_on_a_replaced_toolbox_keeps_it_and_can_still_be_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let live = Arc::new(LiveToolbox::new(load("v1", dir.path())));
    let old = Arc::downgrade(&live.current());

    let cancel = CancellationToken::new();
    let in_flight = {
        let (live, cancel) = (live.clone(), cancel.clone());
        runtime.spawn(async move {
            let options = CallOptions::new(CAP).with_cancel(cancel);
            Tools::call(
                live.as_ref(),
                "wait_for",
                r#"{"path":"/work/go"}"#,
                &options,
            )
            .await
        })
    };
    let waiting = dir.path().join("go.waiting");
    // The guest creates the file, then writes its version into it.
    wait_until(Duration::from_secs(60), "the call to start", || {
        std::fs::read(&waiting).is_ok_and(|v| !v.is_empty())
    });
    assert_eq!(std::fs::read_to_string(&waiting).unwrap(), "v1");

    assert_eq!(live.replace(load("v2", dir.path())), 1);
    let next = runtime.block_on(Tools::call(
        live.as_ref(),
        "version",
        "{}",
        &CallOptions::new(CAP),
    ));
    assert_eq!(
        next.text(),
        r#"{"ok":true,"result":"v2"}"#,
        "the next call uses v2"
    );
    assert!(
        old.upgrade().is_some(),
        "the call in flight still holds the toolbox it started on"
    );

    cancel.cancel();
    let observation = runtime.block_on(in_flight).unwrap();
    assert_eq!(
        observation.status(),
        CallStatus::Cancelled,
        "{}",
        observation.text()
    );
    assert!(
        observation.text().starts_with(r#"{"ok":false,"error":"#)
            && observation.text().ends_with(r#","kind":"cancelled"}"#),
        "{}",
        observation.text()
    );
    assert!(
        old.upgrade().is_none(),
        "the replaced toolbox is freed when its last call ends"
    );
}
