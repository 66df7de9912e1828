//! The `log` crate's records (Cranelift's and wasmtime's) reach the subscriber that
//! [`install`] sets up, and the `log` crate's maximum level is the filter's most verbose
//! one: a record no filter passes is dropped by one comparison in the `log` macro, not
//! carried through the subscriber (which made every `log::trace!` of a component's compile
//! cost a trip through the filters). One test: the subscriber is the process's.

use sluice_telemetry::{LogFormat, Logging, Traces, install};

#[test]
fn the_log_crates_maximum_is_the_filters_most_verbose_level() {
    let logging = Logging {
        format: LogFormat::Text,
        filter: Some("warn,sluice_server::reload=info".into()),
        colour: false,
        quiet_targets: Vec::new(),
        may_log: |_| true,
    };
    let _telemetry = install(&logging, &Traces::default()).expect("the first install");
    assert_eq!(log::max_level(), log::LevelFilter::Info);
    assert!(!log::log_enabled!(target: "cranelift_codegen::context", log::Level::Debug));
    assert!(log::log_enabled!(target: "sluice_server::reload", log::Level::Info));
    assert!(log::log_enabled!(target: "wasmtime", log::Level::Warn));
}
