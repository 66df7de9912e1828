//! A hostile registry (a stub on 127.0.0.1) against the fetcher: bodies far longer than
//! anything Sluice reads, a blob longer than its descriptor, an error body built to forge log
//! lines, a manifest sent one byte at a time. Each is refused by name (which limit, its
//! value, the key that changes it), and the stub counts the bytes it got written before the
//! fetcher hung up: what a fetch holds is bounded by that count, so memory is measured
//! there rather than as the process's size. The tests run on several threads: the client's
//! connection tasks must run (and hang up) while a test waits for the stub, synchronously.

// Test code: a panic is the assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The tests print the byte counts they measure (for the report).
#![allow(clippy::print_stderr)]

mod stub;

use std::time::Duration;

use sluice_registry::limits::{
    DEFAULT_MAX_COMPONENT_BYTES, KEY_MAX_MANIFEST_BYTES, MAX_QUOTED_CHARS,
};
use sluice_registry::signing::KeyPair;
use sluice_registry::{
    Fetched, Fetcher, Limits, Lock, OciReference, PublicKey, RegistryError, Request, Resolve,
    sha256_digest,
};
use stub::{Answer, Stub};

/// What the hostile registries send: 600 MB, as the attacker's did.
const HUGE: u64 = 600_000_000;

/// What the socket buffers of a loopback connection may hold beyond what the client read
/// (the stub counts what the kernel took, not what the client read).
const SLACK: u64 = 16 << 20;

/// The manifest limit of these tests (64 KiB; the default is 4 MiB).
const MANIFEST_LIMIT: u64 = 64 << 10;

fn limits() -> Limits {
    Limits {
        max_manifest_bytes: MANIFEST_LIMIT,
        max_component_bytes: DEFAULT_MAX_COMPONENT_BYTES,
        timeout: Duration::from_secs(30),
    }
}

/// A component manifest naming one `application/wasm` layer of `digest` and `size`.
fn manifest(digest: &str, size: u64) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.wasm.config.v0+json",
            "digest": sha256_digest(b"{}"),
            "size": 2
        },
        "layers": [{"mediaType": "application/wasm", "digest": digest, "size": size}]
    }))
    .unwrap()
}

fn ok(body: Vec<u8>) -> Answer {
    Answer::Bytes {
        status: 200,
        headers: vec![],
        body,
    }
}

fn flood(status: u16, prefix: &[u8]) -> Answer {
    Answer::Flood {
        status,
        prefix: prefix.to_vec(),
        total: HUGE,
        content_length: false,
    }
}

/// Fetches `oci://STUB/tools/wc:1` with `limits` and `keys`, into a new cache.
async fn fetch(
    stub: &Stub,
    limits: Limits,
    keys: &[PublicKey],
) -> (Result<Fetched, RegistryError>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let fetcher = Fetcher::new(dir.path().join("oci")).with_limits(limits);
    let reference = OciReference::parse(&format!("oci://{}/tools/wc:1", stub.addr)).unwrap();
    let mut lock = Lock::empty(&dir.path().join("sluice.lock"));
    let request = Request {
        reference: &reference,
        keys,
        insecure: false,
    };
    let result = fetcher.fetch(&request, &mut lock, Resolve::Locked).await;
    (result, dir)
}

/// The files in the cache's blob directory.
fn cached(dir: &tempfile::TempDir) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.path().join("oci/blobs/sha256"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_over_the_limit_is_refused_by_name_and_read_no_further() {
    for content_length in [false, true] {
        let stub = Stub::start(move |_, _| Answer::Flood {
            status: 200,
            prefix: br#"{"schemaVersion":2,"layers":[]}"#.to_vec(),
            total: HUGE,
            content_length,
        });
        let (result, _dir) = fetch(&stub, limits(), &[]).await;
        let e = result.unwrap_err();
        let reference = format!("oci://{}/tools/wc:1", stub.addr);
        assert!(
            matches!(&e, RegistryError::TooLarge { reference: r, what: "its manifest", limit: MANIFEST_LIMIT, key: Some(KEY_MAX_MANIFEST_BYTES) } if *r == reference),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "refusing {reference}: the registry sent its manifest of more than 65536 bytes, the limit registry.max_manifest_bytes sets (raise it in sluice.toml); the rest was not read and nothing was loaded"
            )
        );
        let [served] = <[_; 1]>::try_from(stub.take(1)).unwrap();
        assert_eq!(served.target, "/v2/tools/wc/manifests/1");
        eprintln!(
            "manifest of {HUGE} bytes (Content-Length sent: {content_length}): the stub got {} bytes written before the fetcher hung up",
            served.sent
        );
        assert!(served.sent <= MANIFEST_LIMIT + SLACK, "{}", served.sent);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blob_longer_than_its_descriptor_is_cut_at_the_descriptors_size() {
    let wasm = vec![7u8; 1000];
    let digest = sha256_digest(&wasm);
    let served_manifest = manifest(&digest, 1000);
    let stub = Stub::start(move |target, _| {
        if target.contains("/manifests/") {
            ok(served_manifest.clone())
        } else {
            flood(200, &[7u8; 1000])
        }
    });
    let (result, dir) = fetch(&stub, limits(), &[]).await;
    let e = result.unwrap_err();
    let manifest_digest = sha256_digest(&manifest(&digest, 1000));
    let pinned = format!("oci://{}/tools/wc@{manifest_digest}", stub.addr);
    assert!(
        matches!(&e, RegistryError::TooLarge { reference, what: "the component layer", limit: 1000, key: None } if *reference == pinned),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "refusing {pinned}: the registry sent the component layer of more than 1000 bytes, the size its descriptor in the manifest gives; the rest was not read and nothing was loaded"
        )
    );
    let [manifest_request, served] = <[_; 2]>::try_from(stub.take(2)).unwrap();
    assert_eq!(manifest_request.target, "/v2/tools/wc/manifests/1");
    assert_eq!(served.target, format!("/v2/tools/wc/blobs/{digest}"));
    eprintln!(
        "blob of {HUGE} bytes under a 1000-byte descriptor: the stub got {} bytes written",
        served.sent
    );
    assert!(served.sent <= 1000 + SLACK, "{}", served.sent);
    assert_eq!(
        cached(&dir),
        Vec::<String>::new(),
        "nothing was cached, no partial file was left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blob_within_its_descriptor_is_streamed_into_the_cache_under_its_digest() {
    let wasm = b"\0asm component bytes".to_vec();
    let digest = sha256_digest(&wasm);
    let served_manifest = manifest(&digest, wasm.len() as u64);
    let blob = wasm.clone();
    let stub = Stub::start(move |target, _| {
        if target.contains("/manifests/") {
            ok(served_manifest.clone())
        } else {
            ok(blob.clone())
        }
    });
    let (result, dir) = fetch(&stub, limits(), &[]).await;
    let fetched = result.unwrap();
    assert_eq!(*fetched.wasm, wasm);
    assert_eq!(fetched.component_digest, digest);
    let mut expected = vec![
        digest[7..].to_string(),
        sha256_digest(&manifest(&digest, wasm.len() as u64))[7..].to_string(),
    ];
    expected.sort();
    assert_eq!(cached(&dir), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_manifest_over_the_limit_is_refused_by_name() {
    let wasm = vec![1u8; 100];
    let digest = sha256_digest(&wasm);
    let served_manifest = manifest(&digest, 100);
    let manifest_digest = sha256_digest(&served_manifest);
    let tag = format!("{}.sig", manifest_digest.replace(':', "-"));
    let stub = Stub::start(move |target, _| {
        if target.ends_with(".sig") {
            flood(200, br#"{"schemaVersion":2,"layers":["#)
        } else if target.contains("/manifests/") {
            ok(served_manifest.clone())
        } else {
            ok(wasm.clone())
        }
    });
    let pair = KeyPair::generate().unwrap();
    let key = PublicKey::from_pem("cosign.pub", pair.public_key_pem().as_bytes()).unwrap();
    let (result, _dir) = fetch(&stub, limits(), &[key]).await;
    let e = result.unwrap_err();
    let at = format!("oci://{}/tools/wc:{tag}", stub.addr);
    assert!(
        matches!(&e, RegistryError::TooLarge { reference, what: "its cosign signature manifest", limit: MANIFEST_LIMIT, key: Some(KEY_MAX_MANIFEST_BYTES) } if *reference == at),
        "{e:?}"
    );
    let [m, b, served] = <[_; 3]>::try_from(stub.take(3)).unwrap();
    assert_eq!(m.target, "/v2/tools/wc/manifests/1");
    assert_eq!(b.target, format!("/v2/tools/wc/blobs/{digest}"));
    assert_eq!(served.target, format!("/v2/tools/wc/manifests/{tag}"));
    eprintln!(
        "signature manifest of {HUGE} bytes: the stub got {} bytes written",
        served.sent
    );
    assert!(served.sent <= MANIFEST_LIMIT + SLACK, "{}", served.sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_body_is_read_only_in_part_and_shown_escaped_and_cut() {
    let stub = Stub::start(|_, _| flood(500, b"oops\nERROR forged line"));
    let (result, _dir) = fetch(&stub, limits(), &[]).await;
    let e = result.unwrap_err();
    let shown = format!(
        "\"oops\\nERROR forged line{}…\"",
        " ".repeat(MAX_QUOTED_CHARS - "oops\nERROR forged line".len())
    );
    let reference = format!("oci://{}/tools/wc:1", stub.addr);
    assert_eq!(
        e.to_string(),
        format!(
            "failed to fetch {reference}: its manifest: http://{}/v2/tools/wc/manifests/1 answered 500 Internal Server Error: {shown}",
            stub.addr
        )
    );
    assert!(!e.to_string().contains('\n'), "one line: {e}");
    let [served] = <[_; 1]>::try_from(stub.take(1)).unwrap();
    eprintln!(
        "500 with a {HUGE}-byte body: the stub got {} bytes written",
        served.sent
    );
    assert!(served.sent <= (4 << 10) + SLACK, "{}", served.sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_sent_a_byte_at_a_time_ends_at_the_deadline() {
    let stub = Stub::start(|_, _| Answer::Trickle {
        every: Duration::from_millis(250),
        total: 1000,
    });
    let deadline = Limits {
        timeout: Duration::from_secs(1),
        ..limits()
    };
    let (result, _dir) = fetch(&stub, deadline, &[]).await;
    let e = result.unwrap_err();
    let reference = format!("oci://{}/tools/wc:1", stub.addr);
    assert!(
        matches!(&e, RegistryError::Deadline { reference: r, what: "its manifest", after } if *r == reference && *after == Duration::from_secs(1)),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "failed to fetch {reference}: its manifest did not arrive within 1 s, the deadline of every registry request (raise it with registry.timeout_secs in sluice.toml)"
        )
    );
    // The stub sends a byte every 250 ms: about 4 before the deadline, a few more before it
    // sees the connection gone; without a deadline it would send all 1000 (250 s).
    let [served] = <[_; 1]>::try_from(stub.take(1)).unwrap();
    eprintln!(
        "a byte every 250 ms, deadline 1 s: the stub sent {} of 1000 bytes",
        served.sent
    );
    assert!(served.sent < 100, "{}", served.sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_challenge_is_answered_with_a_token_from_its_realm() {
    let wasm = b"\0asm".to_vec();
    let digest = sha256_digest(&wasm);
    let served_manifest = manifest(&digest, wasm.len() as u64);
    let blob = wasm.clone();
    let realm = std::sync::Arc::new(std::sync::OnceLock::<String>::new());
    let realm_in = realm.clone();
    let stub = Stub::start(move |target, head| {
        if target.starts_with("/token?") {
            ok(br#"{"token":"t0k"}"#.to_vec())
        } else if !head.contains("authorization: Bearer t0k\r\n") {
            Answer::Bytes {
                status: 401,
                headers: vec![(
                    "WWW-Authenticate",
                    format!(
                        "Bearer realm=\"{}\",service=\"stub\"",
                        realm_in.get().unwrap()
                    ),
                )],
                body: br#"{"errors":[{"code":"UNAUTHORIZED"}]}"#.to_vec(),
            }
        } else if target.contains("/manifests/") {
            ok(served_manifest.clone())
        } else {
            ok(blob.clone())
        }
    });
    realm.set(format!("http://{}/token", stub.addr)).unwrap();
    let (result, _dir) = fetch(&stub, limits(), &[]).await;
    assert_eq!(*result.unwrap().wasm, wasm);
    let [first, token, retried, blob_request] = <[_; 4]>::try_from(stub.take(4)).unwrap();
    assert_eq!(first.target, "/v2/tools/wc/manifests/1");
    assert!(!first.head.contains("authorization:"), "{}", first.head);
    assert_eq!(
        token.target,
        "/token?scope=repository%3Atools%2Fwc%3Apull&service=stub"
    );
    assert_eq!(retried.target, "/v2/tools/wc/manifests/1");
    assert!(
        retried.head.contains("authorization: Bearer t0k"),
        "{}",
        retried.head
    );
    // The token is kept: the blob is asked for with it at once.
    assert_eq!(blob_request.target, format!("/v2/tools/wc/blobs/{digest}"));
    assert!(blob_request.head.contains("authorization: Bearer t0k"));
}
