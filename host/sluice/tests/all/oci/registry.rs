//! Components from a real registry: pulled by tag and by digest, pinned in `sluice.lock`,
//! served offline from the cache, refused when the registry serves other bytes for a
//! pinned digest, and refused unless signed by a configured key.

use sluice_registry::sha256_digest;
use sluice_tests::registry::{SigningKey, TestRegistry};
use sluice_tests::versioned;

use super::{Workspace, failure};

/// `sluice call version` prints this for version `v`.
fn says(v: &str) -> String {
    format!("{{\"ok\":true,\"result\":\"{v}\"}}\n")
}

fn call_version(w: &Workspace, config: &std::path::Path) -> String {
    let out = w.run(&["--config", config.to_str().unwrap(), "call", "version"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn pull_by_tag_and_digest_then_start_offline_from_the_lock() {
    let Some(mut registry) = TestRegistry::start() else {
        return;
    };
    let w = Workspace::new();
    let v1 = versioned("v1");
    let d1 = registry.push("tools/versioned:1.0", &v1);
    let by_tag = format!("oci://{}/tools/versioned:1.0", registry.addr());
    let by_digest = format!("oci://{}/tools/versioned@{d1}", registry.addr());
    let config = w.config(&format!(
        "builtins = []\n[tools.versioned]\ncomponent = \"{by_tag}\"\n"
    ));
    let c = config.to_str().unwrap();

    // By tag: resolved at the registry, pinned in the lock beside sluice.toml.
    let pulled = w.json(&["--config", c, "tools", "pull", &by_tag]);
    assert_eq!(pulled["digest"], d1.as_str());
    assert_eq!(pulled["pinned"], by_digest.as_str());
    assert_eq!(pulled["component"], sha256_digest(&v1).as_str());
    assert_eq!(pulled["bytes"], v1.len());
    assert_eq!(pulled["fromCache"], false);
    assert_eq!(pulled["signature"]["status"], "notChecked");
    assert_eq!(pulled["lock"], w.path("sluice.lock").display().to_string());
    eprintln!(
        "pull by tag from the registry: {:.1} ms for {} bytes",
        pulled["pullMs"].as_f64().unwrap(),
        v1.len()
    );
    let lock = std::fs::read_to_string(w.path("sluice.lock")).unwrap();
    assert!(
        lock.contains(&format!(
            "reference = \"{by_tag}\"\ndigest = \"{d1}\"\ncomponent = \"{}\"",
            sha256_digest(&v1)
        )),
        "{lock}"
    );
    // By digest: the same component, now from the cache.
    let pulled = w.json(&["--config", c, "tools", "pull", &by_digest]);
    assert_eq!(pulled["digest"], d1.as_str());
    assert_eq!(pulled["fromCache"], true);
    eprintln!(
        "pull by digest from the cache: {:.2} ms",
        pulled["pullMs"].as_f64().unwrap()
    );

    // A start runs the component; the tag moving on does not change what the lock pins.
    assert_eq!(call_version(&w, &config), says("v1"));
    let v2 = versioned("v2");
    let d2 = registry.push("tools/versioned:1.0", &v2);
    assert_ne!(d1, d2);
    assert_eq!(call_version(&w, &config), says("v1"), "the lock pins v1");

    // `tools update` resolves the tag again and rewrites the lock.
    let updated = w.json(&["--config", c, "tools", "update"]);
    let component = &updated["components"][0];
    assert_eq!(component["digest"], d2.as_str());
    assert_eq!(component["previous"], d1.as_str());
    assert_eq!(component["changed"], true);
    assert_eq!(call_version(&w, &config), says("v2"));

    // Registry gone: the next start runs from the cache through the lock.
    registry.stop();
    assert_eq!(
        call_version(&w, &config),
        says("v2"),
        "offline from the cache"
    );
    let e = failure(&w.run(&["--config", c, "tools", "update"]));
    assert!(e.contains(&format!("failed to fetch {by_tag}")), "{e}");
    assert!(
        std::fs::read_to_string(w.path("sluice.lock"))
            .unwrap()
            .contains(&d2),
        "a failed update leaves the lock as it was"
    );
}

#[test]
fn a_registry_serving_other_bytes_for_a_pinned_digest_is_refused_and_nothing_is_compiled() {
    let Some(registry) = TestRegistry::start() else {
        return;
    };
    // The component layer: the registry's storage holds other bytes (of the same length)
    // under the digest the manifest names.
    let v1 = versioned("v1");
    let d1 = registry.push("tools/versioned:1.0", &v1);
    let layer = sha256_digest(&v1);
    let evil = versioned("evil");
    std::fs::write(registry.blob_path(&layer), &evil).unwrap();
    let w = Workspace::new();
    let reference = format!("oci://{}/tools/versioned@{d1}", registry.addr());
    let config = w.config(&format!(
        "builtins = []\n[tools.versioned]\ncomponent = \"{reference}\"\n"
    ));
    let why = format!(
        "refusing {reference}: the registry served the component layer whose digest is {}, not {layer}; nothing was loaded",
        sha256_digest(&evil)
    );
    // By default the start goes on without it, and `sluice tools` says why.
    let listed = w.json(&["--config", config.to_str().unwrap(), "tools"]);
    assert_eq!(
        listed,
        serde_json::json!([{"source": reference, "unavailable": true, "reason": why}])
    );
    // With --strict, the start stops.
    let e = failure(&w.run(&["--strict", "--config", config.to_str().unwrap(), "tools"]));
    assert!(e.contains(&why), "{e}");
    assert_eq!(
        w.compiled(),
        Vec::<std::path::PathBuf>::new(),
        "nothing was compiled"
    );
    assert!(!w.path("cache/oci/blobs/sha256").join(&layer[7..]).exists());

    // The manifest: the registry serves another manifest (naming the evil layer) for the
    // pinned digest.
    let v3 = versioned("v3");
    let d3 = registry.push("tools/other:1.0", &v3);
    let path = registry.blob_path(&d3);
    let manifest = std::fs::read_to_string(&path).unwrap();
    let swapped = manifest.replace(&sha256_digest(&v3), &sha256_digest(&evil));
    assert_ne!(manifest, swapped);
    std::fs::write(&path, swapped.as_bytes()).unwrap();
    let reference = format!("oci://{}/tools/other@{d3}", registry.addr());
    let config = w.config(&format!(
        "builtins = []\n[tools.other]\ncomponent = \"{reference}\"\n"
    ));
    let e = failure(&w.run(&["--strict", "--config", config.to_str().unwrap(), "tools"]));
    assert!(e.contains(&format!("refusing {reference}")), "{e}");
    assert!(e.contains(&sha256_digest(swapped.as_bytes())), "{e}");
    assert!(e.contains(&format!("not {d3}")), "{e}");
    assert_eq!(
        w.compiled(),
        Vec::<std::path::PathBuf>::new(),
        "nothing was compiled"
    );
}

#[test]
fn only_a_signature_by_a_configured_key_over_the_digest_lets_a_component_load() {
    let Some(registry) = TestRegistry::start() else {
        return;
    };
    let w = Workspace::new();
    let key = SigningKey::generate();
    let other = SigningKey::generate();
    key.write_public(&w.path("cosign.pub"));
    other.write_public(&w.path("other.pub"));
    let repo = |name: &str| format!("{}/tools/{name}", registry.addr());

    // Signed by the configured key: loads.
    let d1 = registry.push("tools/signed:1", &versioned("v1"));
    let signed_by_key = key.sign(&repo("signed"), &d1);
    let sig = registry.push_signatures("tools/signed", &d1, std::slice::from_ref(&signed_by_key));
    let config_for = |name: &str| {
        w.config(&format!(
            "builtins = []\n[tools.t]\ncomponent = \"oci://{}:1\"\nverify.key = \"cosign.pub\"\n",
            repo(name)
        ))
    };
    let config = config_for("signed");
    // Pulled first, with a fresh lock: the signature comes from the registry.
    let pulled = w.json(&[
        "tools",
        "pull",
        &format!("oci://{}:1", repo("signed")),
        "--key",
        "cosign.pub",
    ]);
    assert_eq!(pulled["signature"]["status"], "verified");
    assert_eq!(pulled["signature"]["key"], "cosign.pub");
    assert_eq!(pulled["signature"]["signature"], sig.as_str());
    assert_eq!(pulled["fromCache"], false);
    eprintln!(
        "verify (signature manifest and payload fetched from the registry, then checked): {:.1} ms",
        pulled["verifyMs"].as_f64().unwrap()
    );
    // A start through the lock: the cached signature is checked again, with no request.
    assert_eq!(call_version(&w, &config), says("v1"));
    let lock = std::fs::read_to_string(w.path("sluice.lock")).unwrap();
    assert!(lock.contains(&format!("signature = \"{sig}\"")), "{lock}");
    let again = w.json(&[
        "--config",
        config.to_str().unwrap(),
        "tools",
        "pull",
        &format!("oci://{}:1", repo("signed")),
        "--key",
        "cosign.pub",
    ]);
    assert_eq!(again["digest"], d1.as_str());
    assert_eq!(again["signature"]["signature"], sig.as_str());
    eprintln!(
        "verify (the lock's signature from the cache, checked again): {:.2} ms",
        again["verifyMs"].as_f64().unwrap()
    );
    let compiled = w.compiled().len();

    let refused = |name: &str| {
        let config = config_for(name);
        let e = failure(&w.run(&["--strict", "--config", config.to_str().unwrap(), "tools"]));
        assert_eq!(
            w.compiled().len(),
            compiled,
            "nothing more was compiled: {e}"
        );
        e
    };
    // Unsigned.
    let d2 = registry.push("tools/unsigned:1", &versioned("v2"));
    let e = refused("unsigned");
    assert!(
        e.contains(&format!(
            "refusing oci://{}:1 ({d2}): signature check failed: it is not signed: the registry has no cosign signature for it (looked for the tag sha256-{}.sig); sign it with `sluice tools sign REF --key FILE` (docs/components.md#publishing)",
            repo("unsigned"),
            &d2[7..]
        )),
        "{e}"
    );
    // Signed by another key.
    let d3 = registry.push("tools/otherkey:1", &versioned("v3"));
    registry.push_signatures("tools/otherkey", &d3, &[other.sign(&repo("otherkey"), &d3)]);
    let e = refused("otherkey");
    assert!(
        e.contains(&format!(
            "refusing oci://{}:1 ({d3}): signature check failed: none of its 1 cosign signature(s) verifies with the configured key(s) {}: it was signed by another key",
            repo("otherkey"),
            w.path("cosign.pub").display()
        )),
        "{e}"
    );
    // A signature by the right key, but over another digest (copied from `signed`).
    let d4 = registry.push("tools/copied:1", &versioned("v4"));
    registry.push_signatures("tools/copied", &d4, &[signed_by_key]);
    let e = refused("copied");
    assert!(
        e.contains(&format!(
            "refusing oci://{}:1 ({d4}): signature check failed: the cosign signature that verifies with {} signs {d1}, not this digest",
            repo("copied"),
            w.path("cosign.pub").display()
        )),
        "{e}"
    );
}

#[test]
fn inspect_shows_the_digest_the_signature_status_and_what_the_component_asks_for() {
    let Some(registry) = TestRegistry::start() else {
        return;
    };
    let w = Workspace::new();
    let key = SigningKey::generate();
    key.write_public(&w.path("cosign.pub"));
    let v1 = versioned("v1");
    let d1 = registry.push("tools/versioned:1.0", &v1);
    let repo = format!("{}/tools/versioned", registry.addr());
    let sig = registry.push_signatures("tools/versioned", &d1, &[key.sign(&repo, &d1)]);
    let reference = format!("oci://{repo}:1.0");

    let shown = w.json(&["tools", "inspect", &reference]);
    assert_eq!(shown["digest"], d1.as_str());
    assert_eq!(shown["component"], sha256_digest(&v1).as_str());
    assert_eq!(
        shown["signature"],
        serde_json::json!({"status": "notChecked", "signatures": 1, "signature": sig, "note": "give --key FILE to verify them"})
    );
    let tools: Vec<&str> = shown["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["version", "wait_for"]);
    assert!(
        shown["imports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["name"].as_str().unwrap().starts_with("wasi:filesystem/")),
        "{shown}"
    );
    let shown = w.json(&["tools", "inspect", &reference, "--key", "cosign.pub"]);
    assert_eq!(
        shown["signature"],
        serde_json::json!({"status": "verified", "key": "cosign.pub", "signature": sig})
    );
    assert!(!w.path("sluice.lock").exists(), "inspect pins nothing");
}
