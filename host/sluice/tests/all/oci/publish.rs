//! A tool published with Sluice alone: `sluice tools keygen`, `push` and `sign` against a
//! real registry, then loaded by `oci://` with `verify.key` and called; signing adds beside
//! what is there and never twice; what cannot be published is refused before anything is
//! sent.

use sluice_registry::sha256_digest;
use sluice_tests::registry::{SigningKey, TestRegistry};
use sluice_tests::versioned;

use super::{Workspace, failure};

#[test]
fn keygen_push_sign_then_a_verified_load_calls_the_tool() {
    let Some(registry) = TestRegistry::start() else {
        return;
    };
    let w = Workspace::new();
    let keys = w.json(&["tools", "keygen", "--output-key-prefix", "release"]);
    assert_eq!(keys["privateKey"], "release.key");
    assert_eq!(keys["publicKey"], "release.pub");
    assert_eq!(keys["kind"], "ECDSA P-256");
    let e = failure(&w.run(&["tools", "keygen", "--output-key-prefix", "release"]));
    assert!(
        e.contains("cannot use the signing key release.key: it already exists, and a key is never overwritten"),
        "{e}"
    );

    let wasm = versioned("v1");
    std::fs::write(w.path("tool.wasm"), &wasm).unwrap();
    let tag = format!("oci://{}/tools/published:1.0", registry.addr());
    let pushed = w.json(&["tools", "push", "tool.wasm", &tag]);
    let digest = pushed["digest"].as_str().unwrap().to_string();
    assert_eq!(pushed["reference"], tag.as_str());
    assert_eq!(
        pushed["pinned"],
        format!("oci://{}/tools/published@{digest}", registry.addr()).as_str()
    );
    assert_eq!(pushed["component"], sha256_digest(&wasm).as_str());
    assert_eq!(pushed["bytes"], wasm.len());

    // Unsigned, a load that asks for the key refuses it.
    let config = w.config(&format!(
        "builtins = []\n[tools.t]\ncomponent = \"{tag}\"\nverify.key = \"release.pub\"\n"
    ));
    let c = config.to_str().unwrap();
    let e = failure(&w.run(&["--strict", "--config", c, "call", "version"]));
    assert!(
        e.contains("signature check failed: it is not signed"),
        "{e}"
    );

    let signed = w.json(&["tools", "sign", &tag, "--key", "release.key"]);
    assert_eq!(signed["digest"], digest.as_str());
    assert_eq!(signed["signatures"], 1);
    assert_eq!(signed["added"], true);
    let out = w.run(&["--config", c, "call", "version"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\"ok\":true,\"result\":\"v1\"}\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pulled = w.json(&["tools", "inspect", &tag, "--key", "release.pub"]);
    assert_eq!(pulled["signature"]["status"], "verified");
    assert_eq!(pulled["signature"]["signature"], signed["signature"]);

    // The same key again: nothing is pushed. Another key: added beside the first, and both
    // keys verify.
    let again = w.json(&["tools", "sign", &tag, "--key", "release.key"]);
    assert_eq!(again["added"], false);
    assert_eq!(again["signatures"], 1);
    assert_eq!(again["signature"], signed["signature"]);
    w.json(&["tools", "keygen", "--output-key-prefix", "second"]);
    let both = w.json(&[
        "tools",
        "sign",
        &digest_reference(&registry, &digest),
        "--key",
        "second.key",
    ]);
    assert_eq!(both["added"], true);
    assert_eq!(both["signatures"], 2);
    for public in ["release.pub", "second.pub"] {
        let inspected = w.json(&["tools", "inspect", &tag, "--key", public]);
        assert_eq!(inspected["signature"]["status"], "verified", "{public}");
        assert_eq!(inspected["signature"]["key"], public);
    }

    // A signature made by Sluice is the one the test suite's cosign-format signer makes:
    // a key pair of the test suite verifies only its own.
    let outsider = SigningKey::generate();
    outsider.write_public(&w.path("outsider.pub"));
    let e = failure(&w.run(&["tools", "inspect", &tag, "--key", "outsider.pub"]));
    assert!(
        e.contains(
            "none of its 2 cosign signature(s) verifies with the configured key(s) outsider.pub"
        ),
        "{e}"
    );
}

fn digest_reference(registry: &TestRegistry, digest: &str) -> String {
    format!("oci://{}/tools/published@{digest}", registry.addr())
}

#[test]
fn what_cannot_be_published_is_refused_before_anything_is_sent() {
    let Some(registry) = TestRegistry::start() else {
        return;
    };
    let w = Workspace::new();
    let tag = format!("oci://{}/tools/refused:1", registry.addr());
    // A core module, and a file that is not WebAssembly.
    std::fs::write(w.path("core.wasm"), b"\0asm\x01\x00\x00\x00").unwrap();
    let e = failure(&w.run(&["tools", "push", "core.wasm", &tag]));
    assert!(
        e.contains(&format!("did not publish to {tag}: it is a core WebAssembly module, not a component: build it for wasm32-wasip2, or wrap it with `wasm-tools component new`")),
        "{e}"
    );
    std::fs::write(w.path("notes.txt"), b"hello").unwrap();
    let e = failure(&w.run(&["tools", "push", "notes.txt", &tag]));
    assert!(
        e.contains("it is not a WebAssembly component (a component starts with `\\0asm` and the component layer)"),
        "{e}"
    );
    // A digest instead of a tag.
    std::fs::write(w.path("tool.wasm"), versioned("v1")).unwrap();
    let by_digest = format!(
        "oci://{}/tools/refused@sha256:{}",
        registry.addr(),
        "1".repeat(64)
    );
    let e = failure(&w.run(&["tools", "push", "tool.wasm", &by_digest]));
    assert!(
        e.contains("a push names a tag (oci://REGISTRY/REPOSITORY:TAG), not a digest"),
        "{e}"
    );
    // A registry nobody listens at: the push says so, with the cause.
    let nowhere = "oci://127.0.0.1:1/tools/refused:1";
    let e = failure(&w.run(&["tools", "push", "tool.wasm", nowhere]));
    assert!(
        e.contains(&format!(
            "did not publish to {nowhere}: the registry did not take the push: "
        )) && e.contains("Connection refused"),
        "{e}"
    );
    // Nothing reached the registry.
    assert!(
        !registry.log().contains("/v2/tools/refused/blobs/uploads"),
        "{}",
        registry.log()
    );
    // Signing needs the private key, and a component that exists.
    w.json(&["tools", "keygen"]);
    let e = failure(&w.run(&["tools", "sign", &tag, "--key", "sluice.pub"]));
    assert!(
        e.contains("cannot use the signing key sluice.pub: it is a public key; signing needs the private key"),
        "{e}"
    );
    let e = failure(&w.run(&["tools", "sign", &tag, "--key", "sluice.key"]));
    assert!(e.contains(&format!("failed to fetch {tag}")), "{e}");
    // The registry logs each request's path: the sign's look-up is there, no upload is.
    sluice_tests::registry::wait_until(
        std::time::Duration::from_secs(10),
        "the registry logs the manifest request",
        || registry.log().contains("/v2/tools/refused/manifests/1"),
    );
    assert!(!registry.log().contains("/v2/tools/refused/blobs/uploads"));
}
