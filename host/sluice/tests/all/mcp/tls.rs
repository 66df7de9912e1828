//! HTTPS as the binary starts it (docs/configuration.md#servertls): `[server.tls]` in
//! sluice.toml (paths relative to the file) for `sluice serve` and its metrics listener,
//! `--tls-cert`/`--tls-key` for `sluice mcp --listen`; the start lines say `https://`; files
//! that cannot be served stop the start naming the file and why; plain HTTP beyond loopback
//! warns. The certificates come from a test CA made here (rcgen; no key is committed).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

use super::{command, root_flag};

/// A CA certificate (PEM), and a certificate for `localhost` and 127.0.0.1 it signed with
/// its key (PEM), written to `dir/tls/server.{crt,key}`.
fn certificates(dir: &Path) -> String {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "Sluice binary test CA");
    let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    std::fs::create_dir_all(dir.join("tls")).unwrap();
    std::fs::write(dir.join("tls/server.crt"), server.pem()).unwrap();
    std::fs::write(dir.join("tls/server.key"), key.serialize_pem()).unwrap();
    ca_pem
}

/// reqwest trusting only `ca`.
fn client(ca: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).unwrap())
        .build()
        .unwrap()
}

/// Starts `sluice ARGS…` in `dir` and returns it with the stderr lines it printed up to and
/// including the `count`-th line naming a URL; the rest is drained.
async fn start(dir: &Path, args: &[&str], count: usize) -> (Child, Vec<String>) {
    let mut child = command(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), async {
        let mut urls = 0;
        while urls < count {
            let Some(line) = lines.next_line().await.unwrap() else {
                panic!("the server exited: {said:?}");
            };
            urls += usize::from(line.contains("://"));
            said.push(line);
        }
    })
    .await
    .expect("the server starts");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, said)
}

/// The URL in `line` from its scheme to the next space (a trailing `/` or `,` dropped).
fn url_in(line: &str) -> String {
    let at = line
        .find("https://")
        .or_else(|| line.find("http://"))
        .unwrap();
    line[at..]
        .split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches([',', '/'])
        .to_string()
}

#[tokio::test]
async fn serve_and_its_metrics_listener_speak_https_from_the_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let ca = certificates(dir.path());
    std::fs::write(
        dir.path().join("sluice.toml"),
        "[server.tls]\ncert_file = \"tls/server.crt\"\nkey_file = \"tls/server.key\"\n\n[telemetry]\nmetrics_listen = \"127.0.0.1:0\"\n",
    )
    .unwrap();
    let config = dir.path().join("sluice.toml").display().to_string();
    let root = root_flag(dir.path());
    let store = dir.path().join("sessions.db").display().to_string();
    let (_child, said) = start(
        dir.path(),
        &[
            "--config",
            &config,
            "--root",
            &root,
            "--store",
            &store,
            "serve",
            "--listen",
            "127.0.0.1:0",
        ],
        2,
    )
    .await;
    let metrics = said
        .iter()
        .find(|l| l.starts_with("sluice: serving metrics on "))
        .unwrap();
    assert!(metrics.contains(" on https://127.0.0.1:"), "{metrics}");
    let api = said
        .iter()
        .find(|l| l.starts_with("sluice: serving the operator API on "))
        .unwrap();
    assert!(api.contains(" on https://127.0.0.1:"), "{api}");
    assert!(api.contains("the console at https://127.0.0.1:"), "{api}");
    let client = client(&ca);
    let health = client
        .get(format!("{}/healthz", url_in(api)))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let scraped = client
        .get(format!(
            "{}/metrics",
            url_in(metrics).trim_end_matches("/metrics")
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(scraped.status(), 200);
    assert_eq!(
        scraped.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
}

#[tokio::test]
async fn mcp_listen_takes_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let ca = certificates(dir.path());
    let root = root_flag(dir.path());
    let (_child, said) = start(
        dir.path(),
        &[
            "--root",
            &root,
            "mcp",
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            "tls/server.crt",
            "--tls-key",
            "tls/server.key",
        ],
        1,
    )
    .await;
    let line = said.last().unwrap();
    assert!(
        line.starts_with("sluice: serving MCP on https://127.0.0.1:") && line.contains("/mcp "),
        "{line}"
    );
    let listed: Value = client(&ca)
        .post(url_in(line))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["result"]["tools"][0]["name"], "read_file");
}

/// `sluice ARGS…` in `dir` to its end: (exit code, stderr).
async fn fails(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = command(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[tokio::test]
async fn files_that_cannot_be_served_stop_the_start() {
    let dir = tempfile::tempdir().unwrap();
    certificates(dir.path());
    let root = root_flag(dir.path());
    let (code, stderr) = fails(
        dir.path(),
        &[
            "--root",
            &root,
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            "missing.crt",
            "--tls-key",
            "tls/server.key",
        ],
    )
    .await;
    assert_ne!(code, 0);
    assert!(
        stderr.contains(
            "cannot read the TLS certificate missing.crt (server.tls.cert_file or --tls-cert): No such file or directory (os error 2)"
        ),
        "{stderr}"
    );
    // The key where the certificate belongs.
    let (code, stderr) = fails(
        dir.path(),
        &[
            "--root",
            &root,
            "mcp",
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            "tls/server.key",
            "--tls-key",
            "tls/server.key",
        ],
    )
    .await;
    assert_ne!(code, 0);
    assert!(
        stderr.contains("the TLS certificate file tls/server.key (server.tls.cert_file or --tls-cert) is not a PEM certificate chain"),
        "{stderr}"
    );
    // One flag without the other: a usage error.
    let (code, stderr) = fails(dir.path(), &["serve", "--tls-cert", "tls/server.crt"]).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--tls-key <FILE>"), "{stderr}");
    // stdio has no listener.
    let (code, stderr) = fails(
        dir.path(),
        &[
            "--root",
            &root,
            "mcp",
            "--tls-cert",
            "tls/server.crt",
            "--tls-key",
            "tls/server.key",
        ],
    )
    .await;
    assert_ne!(code, 0);
    assert!(
        stderr.contains(
            "--tls-cert and --tls-key apply to `sluice mcp --listen IP:PORT` only (stdio has no listener)"
        ),
        "{stderr}"
    );
}

#[tokio::test]
async fn plain_http_beyond_loopback_warns() {
    let dir = tempfile::tempdir().unwrap();
    let root = root_flag(dir.path());
    let store = dir.path().join("sessions.db").display().to_string();
    let mut child = command(&[
        "--root",
        &root,
        "--store",
        &store,
        "serve",
        "--listen",
        "0.0.0.0:0",
    ])
    .current_dir(dir.path())
    .env("SLUICE_SERVER_TOKEN", "t0ken")
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = Vec::new();
    // The warning comes once the listener serves, after the start line.
    let warning = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("bearer tokens cross the network in clear text") {
                return line;
            }
            said.push(line);
        }
        panic!("the server exited without the warning: {said:?}");
    })
    .await
    .expect("the server warns");
    assert!(
        said.iter()
            .any(|l| l.starts_with("sluice: serving the operator API on http://0.0.0.0:")),
        "{said:?}"
    );
    assert!(
        warning.contains("WARN")
            && warning.contains("serving plain HTTP on 0.0.0.0:")
            && warning.contains(
                "serve HTTPS with [server.tls] cert_file and key_file in sluice.toml (or --tls-cert FILE --tls-key FILE)"
            ),
        "{warning}"
    );
    child.kill().await.unwrap();
}
