//! A larger stack for the component: Boa's parser and its calls back into JavaScript (a
//! `map` callback, a getter) recurse on the Rust stack, over 10 KiB a level of nested
//! parentheses. With the wasm32 targets' default (1 MiB) a script of 100 nested parentheses
//! trapped; with 4 MiB wasmtime's own limit on the native stack of wasm code (about 140 such
//! levels) is what stops it.

#[allow(clippy::print_stdout)] // Cargo reads build-script instructions from stdout.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg-cdylib=-zstack-size={}", 4 << 20);
    }
}
