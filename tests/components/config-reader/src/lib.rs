//! A component that reads values and secrets from `wasi:config/store` and returns them, so
//! that tests can check that the host withholds the secrets from every observation.

#![allow(unsafe_code)] // The generated import and export glue is unsafe.

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({
        world: "config-reader",
        path: "wit",
        generate_all,
    });
}

use bindings::wasi::config::store;

struct ConfigReader;

/// The store's error as text.
fn describe(e: store::Error) -> String {
    match e {
        store::Error::Upstream(m) => format!("upstream: {m}"),
        store::Error::Io(m) => format!("io: {m}"),
    }
}

impl bindings::Guest for ConfigReader {
    fn get(key: String) -> Result<String, String> {
        match store::get(&key).map_err(describe)? {
            Some(value) => Ok(value),
            None => Err(format!("{key} is not set")),
        }
    }

    fn echo_all() -> Vec<bindings::Entry> {
        let mut all = store::get_all().unwrap_or_default();
        all.sort();
        all.into_iter()
            .map(|(key, value)| bindings::Entry { key, value })
            .collect()
    }

    fn fail_with(key: String) -> Result<String, String> {
        let value = Self::get(key.clone())?;
        Err(format!("cannot use {key}={value}"))
    }
}

bindings::export!(ConfigReader with_types_in bindings);
