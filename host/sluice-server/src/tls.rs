//! HTTPS on the listeners (`[server.tls]`, `--tls-cert FILE --tls-key FILE`;
//! docs/configuration.md#servertls): rustls on ring, TLS 1.2 and 1.3, ALPN `h2` and
//! `http/1.1`.
//!
//! - [`ServerTls::load`] reads the certificate chain and its private key (PEM) at start, and
//!   refuses to start with an error naming the file and why: missing or unreadable, not
//!   PEM, no certificate or key in it, a key rustls cannot sign with, a key that does not
//!   match the certificate.
//! - **Reload**: once serving, the files' identity, size and modification time are checked
//!   every [`RELOAD_CHECK`]; once a change has held still for one check (so a certificate
//!   and key written one after the other are read together), both files are read again.
//!   New connections get the new certificate; open ones keep theirs. A reload that fails
//!   keeps the old certificate and logs an error naming the file and why (once per change).
//! - The accept loop ([`crate::listen`]) runs the handshake within
//!   `server.header_read_timeout_ms` and counts it against the connection limits.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::{Duration, SystemTime};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject as _};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use sluice_config::TlsFiles;

/// How often the certificate and key files are checked for a change: 1 s.
pub const RELOAD_CHECK: Duration = Duration::from_secs(1);

/// The protocols offered by ALPN, in the server's order of preference.
pub const ALPN_PROTOCOLS: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// The largest certificate file read, in bytes (1 MiB; a chain is a few KiB).
pub const MAX_CERT_FILE_BYTES: u64 = 1 << 20;

/// Where a file came from, as messages say it.
const CERT_KEY: &str = "server.tls.cert_file or --tls-cert";
const KEY_KEY: &str = "server.tls.key_file or --tls-key";

/// Why the certificate or key cannot be served. Each names the file and what it must hold;
/// none quotes a key's contents.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A file cannot be read.
    #[error("cannot read the TLS {what} {path} ({key}): {reason}")]
    Read {
        /// `certificate` or `private key`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The key or flag that names it.
        key: &'static str,
        /// Why, in the operating system's words.
        reason: String,
    },
    /// The certificate file holds no certificate (or is not PEM).
    #[error(
        "the TLS certificate file {path} ({CERT_KEY}) is not a PEM certificate chain: {reason}; it must hold `-----BEGIN CERTIFICATE-----` blocks, the server's own certificate first"
    )]
    NoCertificate {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The key file holds no private key (or is not PEM).
    #[error(
        "the TLS key file {path} ({KEY_KEY}) is not a PEM private key: {reason}; it must hold one `-----BEGIN PRIVATE KEY-----` (PKCS#8), `RSA PRIVATE KEY` or `EC PRIVATE KEY` block"
    )]
    NoKey {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The key is of a kind rustls cannot sign with.
    #[error(
        "the TLS key file {path} ({KEY_KEY}) holds a key that cannot sign: {reason}; use an ECDSA (P-256, P-384), Ed25519 or RSA (2048 bits or more) key"
    )]
    UnsupportedKey {
        /// The file.
        path: PathBuf,
        /// rustls's words.
        reason: String,
    },
    /// The key is not the one the certificate was issued for.
    #[error(
        "the TLS key file {key} does not match the certificate in {cert}: its public key is not the certificate's; name the key the certificate was issued for"
    )]
    Mismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// The first certificate cannot be parsed.
    #[error(
        "the first certificate in {path} ({CERT_KEY}) is not a valid X.509 certificate: {reason}"
    )]
    BadCertificate {
        /// The file.
        path: PathBuf,
        /// rustls's words.
        reason: String,
    },
    /// rustls refused the configuration.
    #[error("cannot set up TLS: {0}")]
    Setup(String),
}

/// The certificate and key a listener serves, reloaded when their files change. Cheap to
/// clone: clones share the certificate and its reloads.
#[derive(Clone)]
pub struct ServerTls(Arc<Inner>);

struct Inner {
    files: TlsFiles,
    current: Arc<Current>,
    config: Arc<rustls::ServerConfig>,
    /// The files as last read (or tried): a reload is tried once per change.
    tried: Mutex<Option<[Stamp; 2]>>,
    watching: AtomicBool,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("cert_file", &self.0.files.cert_file)
            .field("key_file", &self.0.files.key_file)
            .finish_non_exhaustive()
    }
}

/// The certificate new handshakes get.
#[derive(Debug)]
struct Current(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for Current {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.0
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        )
    }
}

/// What tells a changed file apart: its device and inode (a file renamed over it), size and
/// modification time; `None` when it cannot be read.
type Stamp = Option<(u64, u64, u64, SystemTime)>;

fn stamp(path: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.dev(), meta.ino(), meta.len(), meta.modified().ok()?))
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl ServerTls {
    /// Reads `files` and makes the TLS configuration: TLS 1.2 and 1.3 on ring, ALPN
    /// [`ALPN_PROTOCOLS`], no client certificates.
    ///
    /// # Errors
    /// [`TlsError`] naming the file and why it cannot be served.
    pub fn load(files: &TlsFiles) -> Result<ServerTls, TlsError> {
        let stamps = [stamp(&files.cert_file), stamp(&files.key_file)];
        let key = read(files)?;
        let current = Arc::new(Current(RwLock::new(Arc::new(key))));
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Setup(e.to_string()))?
            .with_no_client_auth()
            .with_cert_resolver(current.clone());
        config.alpn_protocols = ALPN_PROTOCOLS.iter().map(|p| p.to_vec()).collect();
        Ok(ServerTls(Arc::new(Inner {
            files: files.clone(),
            current,
            config: Arc::new(config),
            tried: Mutex::new(Some(stamps)),
            watching: AtomicBool::new(false),
        })))
    }

    /// The files it serves.
    pub fn files(&self) -> &TlsFiles {
        &self.0.files
    }

    /// The certificate chain new connections get (DER, the server's own first).
    pub fn certificate_chain(&self) -> Vec<CertificateDer<'static>> {
        self.0
            .current
            .0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .cert
            .clone()
    }

    /// The acceptor of new connections.
    pub(crate) fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.0.config.clone())
    }

    /// Reads the files again if they changed since they were last read (or tried) and
    /// `settled` (their stamps as the previous check saw them) shows the change has held
    /// still. Returns the stamps seen now, for the next check.
    fn check(&self, settled: &[Stamp; 2]) -> [Stamp; 2] {
        let files = &self.0.files;
        let now = [stamp(&files.cert_file), stamp(&files.key_file)];
        let mut tried = self.0.tried.lock().unwrap_or_else(PoisonError::into_inner);
        if now != *settled || tried.as_ref() == Some(&now) {
            return now;
        }
        *tried = Some(now);
        drop(tried);
        match read(files) {
            Ok(key) => {
                *self
                    .0
                    .current
                    .0
                    .write()
                    .unwrap_or_else(PoisonError::into_inner) = Arc::new(key);
                tracing::info!(
                    cert_file = %files.cert_file.display(),
                    key_file = %files.key_file.display(),
                    "reloaded the TLS certificate: new connections get it"
                );
            }
            Err(e) => tracing::error!("{e}; still serving the previous certificate"),
        }
        now
    }

    /// Starts checking the files for changes every [`RELOAD_CHECK`] (once per
    /// certificate, however many listeners serve it); the task ends when the last clone is
    /// dropped.
    pub(crate) fn watch(&self) {
        if self.0.watching.swap(true, Ordering::SeqCst) {
            return;
        }
        let weak: Weak<Inner> = Arc::downgrade(&self.0);
        tokio::spawn(async move {
            let mut seen = None;
            loop {
                tokio::time::sleep(RELOAD_CHECK).await;
                let Some(inner) = weak.upgrade() else { return };
                let tls = ServerTls(inner);
                let settled = seen.take().unwrap_or_else(|| {
                    let files = &tls.0.files;
                    [stamp(&files.cert_file), stamp(&files.key_file)]
                });
                seen = Some(tls.check(&settled));
            }
        });
    }
}

/// Reads and checks the certificate chain and key of `files`.
fn read(files: &TlsFiles) -> Result<CertifiedKey, TlsError> {
    let cert_path = &files.cert_file;
    let key_path = &files.key_file;
    let cert_bytes =
        sluice_operator_files::read_regular(cert_path, MAX_CERT_FILE_BYTES).map_err(|e| {
            TlsError::Read {
                what: "certificate",
                path: cert_path.clone(),
                key: CERT_KEY,
                reason: e.to_string(),
            }
        })?;
    let key_bytes =
        sluice_operator_files::read_regular(key_path, sluice_operator_files::MAX_SECRET_FILE_BYTES)
            .map_err(|e| TlsError::Read {
                what: "private key",
                path: key_path.clone(),
                key: KEY_KEY,
                reason: e.to_string(),
            })?;
    let chain = CertificateDer::pem_slice_iter(&cert_bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::NoCertificate {
            path: cert_path.clone(),
            reason: pem_problem(&e),
        })?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: cert_path.clone(),
            reason: pem_problem(&pem::Error::NoItemsFound),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(&key_bytes).map_err(|e| TlsError::NoKey {
        path: key_path.clone(),
        reason: pem_problem(&e),
    })?;
    CertifiedKey::from_der(chain, key, &provider()).map_err(|e| match e {
        rustls::Error::InconsistentKeys(_) => TlsError::Mismatch {
            cert: cert_path.clone(),
            key: key_path.clone(),
        },
        rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented => {
            TlsError::BadCertificate {
                path: cert_path.clone(),
                reason: e.to_string(),
            }
        }
        other => TlsError::UnsupportedKey {
            path: key_path.clone(),
            reason: other.to_string(),
        },
    })
}

/// What was wrong with a PEM file, in words that never quote it.
fn pem_problem(e: &pem::Error) -> String {
    match e {
        pem::Error::NoItemsFound => "it holds no such block (is it DER, or the other file?)",
        pem::Error::MissingSectionEnd { .. } => "a block has no `-----END …-----` line",
        pem::Error::IllegalSectionStart { .. } => "a `-----BEGIN …-----` line is malformed",
        pem::Error::Base64Decode(_) => "a block is not valid base64",
        pem::Error::SectionTooLarge => "a block is too large",
        _ => "it cannot be read as PEM",
    }
    .to_string()
}

/// `https` with TLS, `http` without: the scheme of a listener's URLs.
pub fn scheme(tls: Option<&ServerTls>) -> &'static str {
    if tls.is_some() { "https" } else { "http" }
}

/// The warning a listener on `addr` that takes bearer tokens logs at start when it serves
/// plain HTTP beyond loopback: `None` on loopback or with TLS.
pub fn clear_text_warning(addr: SocketAddr, tls: Option<&ServerTls>) -> Option<String> {
    (tls.is_none() && !addr.ip().is_loopback()).then(|| {
        format!(
            "serving plain HTTP on {addr}, beyond loopback: bearer tokens cross the network in clear text, readable by anyone on the path; serve HTTPS with [server.tls] cert_file and key_file in sluice.toml (or --tls-cert FILE --tls-key FILE), or put a TLS-terminating proxy in front and listen on 127.0.0.1"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warning_is_for_plain_http_beyond_loopback() {
        assert_eq!(
            clear_text_warning("127.0.0.1:8080".parse().unwrap(), None),
            None
        );
        assert_eq!(
            clear_text_warning("[::1]:8080".parse().unwrap(), None),
            None
        );
        let warning = clear_text_warning("0.0.0.0:8080".parse().unwrap(), None).unwrap();
        assert!(
            warning.starts_with("serving plain HTTP on 0.0.0.0:8080, beyond loopback: bearer tokens cross the network in clear text"),
            "{warning}"
        );
        assert_eq!(scheme(None), "http");
    }

    /// A certificate for `localhost` signed by a fresh CA named `cn`, and its key: PEM.
    fn pair(cn: &str) -> (String, String) {
        use rcgen::{CertificateParams, DnType, KeyPair};
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn files(dir: &Path) -> TlsFiles {
        TlsFiles {
            cert_file: dir.join("server.crt"),
            key_file: dir.join("server.key"),
        }
    }

    fn write(files: &TlsFiles, cert: &str, key: &str) {
        std::fs::write(&files.cert_file, cert).unwrap();
        std::fs::write(&files.key_file, key).unwrap();
    }

    #[test]
    fn start_up_errors_name_the_file_and_why() {
        let dir = tempfile::tempdir().unwrap();
        let files = files(dir.path());
        let cert = files.cert_file.display();
        let key = files.key_file.display();
        let error = |files: &TlsFiles| ServerTls::load(files).unwrap_err().to_string();
        assert_eq!(
            error(&files),
            format!(
                "cannot read the TLS certificate {cert} ({CERT_KEY}): No such file or directory (os error 2)"
            )
        );
        let (one, one_key) = pair("one");
        let (two, _) = pair("two");
        write(&files, "not a certificate\n", &one_key);
        assert_eq!(
            error(&files),
            format!(
                "the TLS certificate file {cert} ({CERT_KEY}) is not a PEM certificate chain: it holds no such block (is it DER, or the other file?); it must hold `-----BEGIN CERTIFICATE-----` blocks, the server's own certificate first"
            )
        );
        // The certificate where the key belongs.
        write(&files, &one, &one);
        assert_eq!(
            error(&files),
            format!(
                "the TLS key file {key} ({KEY_KEY}) is not a PEM private key: it holds no such block (is it DER, or the other file?); it must hold one `-----BEGIN PRIVATE KEY-----` (PKCS#8), `RSA PRIVATE KEY` or `EC PRIVATE KEY` block"
            )
        );
        write(&files, &two, &one_key);
        assert_eq!(
            error(&files),
            format!(
                "the TLS key file {key} does not match the certificate in {cert}: its public key is not the certificate's; name the key the certificate was issued for"
            )
        );
        write(&files, &one, &one_key);
        let tls = ServerTls::load(&files).unwrap();
        assert_eq!(tls.certificate_chain().len(), 1);
        assert_eq!(scheme(Some(&tls)), "https");
        assert_eq!(
            clear_text_warning("0.0.0.0:1".parse().unwrap(), Some(&tls)),
            None
        );
    }

    #[test]
    fn a_reload_waits_for_the_files_to_settle_and_a_failed_one_keeps_the_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let files = files(dir.path());
        let (one, one_key) = pair("one");
        write(&files, &one, &one_key);
        let tls = ServerTls::load(&files).unwrap();
        let first = tls.certificate_chain();
        let stamps = |f: &TlsFiles| [stamp(&f.cert_file), stamp(&f.key_file)];
        // Unchanged: nothing is read.
        let seen = tls.check(&stamps(&files));
        assert_eq!(tls.certificate_chain(), first);
        // A new certificate with the old key: not read while it is changing, then refused
        // when it has settled, and the old certificate stays.
        let (two, two_key) = pair("two");
        std::fs::write(&files.cert_file, &two).unwrap();
        let seen = tls.check(&seen);
        assert_eq!(tls.certificate_chain(), first);
        let seen = tls.check(&seen);
        assert_eq!(tls.certificate_chain(), first);
        // Its key arrives: read once settled.
        std::fs::write(&files.key_file, &two_key).unwrap();
        let seen = tls.check(&seen);
        assert_eq!(tls.certificate_chain(), first);
        tls.check(&seen);
        let second = tls.certificate_chain();
        assert_ne!(second, first);
        assert_eq!(
            second[0].as_ref(),
            CertificateDer::from_pem_slice(two.as_bytes())
                .unwrap()
                .as_ref()
        );
        // A file that vanishes keeps the certificate too.
        std::fs::remove_file(&files.key_file).unwrap();
        let seen = tls.check(&stamps(&files));
        tls.check(&seen);
        assert_eq!(tls.certificate_chain(), second);
    }

    #[test]
    fn pem_problems_never_quote_the_file() {
        let e =
            PrivateKeyDer::from_pem_slice(b"-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n").unwrap_err();
        assert_eq!(pem_problem(&e), "a block has no `-----END …-----` line");
    }
}
