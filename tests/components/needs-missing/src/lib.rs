//! A component that imports `acme:missing/clock`, which no Sluice host provides: loading it
//! must fail with an error that names the interface.

#![allow(unsafe_code)] // The generated import and export glue is unsafe.

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({
        world: "needs-missing",
        path: "wit",
        generate_all,
    });
}

struct NeedsMissing;

impl bindings::Guest for NeedsMissing {
    fn now() -> u64 {
        bindings::acme::missing::clock::now()
    }
}

bindings::export!(NeedsMissing with_types_in bindings);
