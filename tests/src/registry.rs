//! A real OCI registry for tests: the distribution's `docker-registry` (CNCF distribution
//! 2.8, the Debian package), started on 127.0.0.1 with a temporary storage root and config
//! file, and stopped on drop; and cosign key pairs made at test time (never committed).

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sluice_registry::signing::KeyPair;
use sluice_registry::{Credentials, OciReference, SignatureLayer};

/// The registry binary.
pub const REGISTRY_BINARY: &str = "docker-registry";

/// A running registry.
pub struct TestRegistry {
    child: Option<Child>,
    dir: tempfile::TempDir,
    addr: String,
    log: Arc<Mutex<String>>,
}

impl TestRegistry {
    /// Starts a registry on a free port of 127.0.0.1, or, when `docker-registry` is not
    /// installed, prints why and returns `None` (under `CI=true` that is a failure).
    pub fn start() -> Option<TestRegistry> {
        let found = Command::new(REGISTRY_BINARY)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            let reason =
                format!("{REGISTRY_BINARY} is not installed (apt-get install docker-registry)");
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "under CI=true: {reason}"
            );
            #[allow(clippy::print_stderr)]
            {
                eprintln!("skipped: {reason}");
            }
            return None;
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let addr = format!("127.0.0.1:{port}");
        let storage = dir.path().join("storage");
        std::fs::create_dir(&storage).expect("the storage directory");
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
                storage.display()
            ),
        )
        .expect("the registry config");
        let mut child = Command::new(REGISTRY_BINARY)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("docker-registry starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut ready = Some(ready_tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("listening on")
                    && let Some(tx) = ready.take()
                {
                    let _ = tx.send(());
                }
                let mut log = sink.lock().expect("the log");
                log.push_str(&line);
                log.push('\n');
            }
        });
        let mut registry = TestRegistry {
            child: Some(child),
            dir,
            addr,
            log,
        };
        if ready_rx.recv_timeout(Duration::from_secs(30)).is_err() {
            let log = registry.log();
            registry.stop();
            panic!("docker-registry did not start listening within 30 s; its log:\n{log}");
        }
        Some(registry)
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// `oci://127.0.0.1:PORT/<path>` (`path` is `repo:tag` or `repo@digest`).
    pub fn reference(&self, path: &str) -> OciReference {
        OciReference::parse(&format!("oci://{}/{path}", self.addr)).expect("a valid reference")
    }

    /// The file in the registry's storage that holds the blob (or manifest) `digest`.
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        self.dir
            .path()
            .join("storage/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// What the registry logged so far.
    pub fn log(&self) -> String {
        self.log.lock().expect("the log").clone()
    }

    /// Stops the registry (and waits for it to exit); later requests find nothing there.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Pushes `wasm` as a component at `path` (`repo:tag`); returns the manifest digest.
    pub fn push(&self, path: &str, wasm: &[u8]) -> String {
        let reference = self.reference(path);
        block_on(sluice_registry::push_component(
            &reference,
            wasm,
            false,
            &Credentials::Anonymous,
        ))
        .expect("the push succeeds")
    }

    /// Stores `layers` as the cosign signatures of `digest` in `repository`; returns the
    /// signature manifest's digest.
    pub fn push_signatures(
        &self,
        repository: &str,
        digest: &str,
        layers: &[SignatureLayer],
    ) -> String {
        let reference = self.reference(&format!("{repository}:any"));
        block_on(sluice_registry::push_signature(
            &reference,
            digest,
            layers,
            false,
            &Credentials::Anonymous,
        ))
        .expect("the signature push succeeds")
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `future` on a fresh current-thread runtime.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

/// A cosign-style key pair (ECDSA P-256, cosign's default), made at test time.
pub struct SigningKey {
    pair: KeyPair,
    /// The public key, PEM (`-----BEGIN PUBLIC KEY-----`), as `cosign.pub` holds it.
    pub public_pem: String,
}

impl SigningKey {
    /// A new key pair.
    pub fn generate() -> SigningKey {
        let pair = KeyPair::generate().expect("a key pair");
        let public_pem = pair.public_key_pem();
        SigningKey { pair, public_pem }
    }

    /// Writes the public key to `path`.
    pub fn write_public(&self, path: &Path) {
        std::fs::write(path, &self.public_pem).expect("write the public key");
    }

    /// The cosign signature layer for `digest` of `repository` (`REGISTRY/REPOSITORY`).
    pub fn sign(&self, repository: &str, digest: &str) -> SignatureLayer {
        self.pair.sign(repository, digest).expect("signing works")
    }
}

/// Waits until `condition` holds, checking every 10 ms, for at most `limit`; panics with
/// `what` otherwise. For conditions no event announces (a process's log line read by
/// another thread).
pub fn wait_until(limit: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
