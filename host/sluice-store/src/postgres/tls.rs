//! TLS to PostgreSQL: libpq's `sslmode` and `sslrootcert` read from the URL, and a
//! tokio-postgres connector over rustls on ring (docs/replicas.md#tls-to-postgresql).
//!
//! | `sslmode` | encrypted | certificate checked |
//! |---|---|---|
//! | `disable` | no | no |
//! | `prefer` (default) | when the server offers TLS | no |
//! | `require` | yes | no (with `sslrootcert`: as `verify-ca`, as libpq does) |
//! | `verify-ca` | yes | chained to a root of `sslrootcert` |
//! | `verify-full` | yes | chained to a root, and issued for the host name (or IP) the URL names |
//!
//! `sslrootcert=FILE` is a PEM file of CA certificates; without it (or with
//! `sslrootcert=system`) the roots are the Mozilla roots (`webpki-roots`). Connections also
//! offer ALPN `postgresql` (for `sslnegotiation=direct`), and give SCRAM the server
//! certificate's `tls-server-end-point` channel binding (RFC 5929), so a server asking for
//! `SCRAM-SHA-256-PLUS` binds the password exchange to the TLS session.

use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};

/// The largest `sslrootcert` file read, in bytes (1 MiB).
const MAX_ROOT_FILE_BYTES: u64 = 1 << 20;

/// What `sslmode` may be, as messages say it.
pub(crate) const SSLMODE_RULE: &str = "disable, prefer, require, verify-ca or verify-full";

/// libpq's `sslmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Option<SslMode> {
        Some(match value {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    /// As the URL writes it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// Why the URL's TLS settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsSetupError {
    /// `sslmode` is not one libpq knows.
    #[error("sslmode={0:?} is not a mode: it must be {SSLMODE_RULE}")]
    Mode(String),
    /// The `sslrootcert` file cannot be read.
    #[error("sslrootcert={path} (sslmode={mode}) cannot be read: {reason}")]
    RootFile {
        path: PathBuf,
        mode: &'static str,
        reason: String,
    },
    /// The `sslrootcert` file holds no usable CA certificate.
    #[error(
        "sslrootcert={path} (sslmode={mode}) holds no usable CA certificate: {reason}; it must be a PEM file of `-----BEGIN CERTIFICATE-----` blocks"
    )]
    NoRoots {
        path: PathBuf,
        mode: &'static str,
        reason: String,
    },
    /// The URL does not parse (tokio-postgres's words, which may quote it: pass them
    /// through the store's redaction).
    #[error("not a valid PostgreSQL URL: {0}")]
    Url(String),
    /// rustls refused the configuration.
    #[error("cannot set up TLS (sslmode={mode}): {reason}")]
    Setup { mode: &'static str, reason: String },
}

/// The connector of one store's connections: rustls configured for `mode`.
#[derive(Clone)]
pub(crate) struct MakeRustls {
    mode: SslMode,
    config: Arc<rustls::ClientConfig>,
    /// Where the roots came from, for messages.
    roots: Arc<str>,
}

impl std::fmt::Debug for MakeRustls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MakeRustls")
            .field("mode", &self.mode)
            .field("roots", &self.roots)
            .finish_non_exhaustive()
    }
}

impl MakeRustls {
    /// The `sslmode` in force.
    pub(crate) fn mode(&self) -> SslMode {
        self.mode
    }
}

/// `url` as tokio-postgres's configuration, without the parameters it does not know
/// (`sslrootcert`, and `sslmode=verify-ca|verify-full`, which it reads as `require`), and
/// the connector for its `sslmode`.
///
/// # Errors
/// [`TlsSetupError`] naming the `sslmode` and why.
pub(crate) fn configure(url: &str) -> Result<(tokio_postgres::Config, MakeRustls), TlsSetupError> {
    // The query alone is read and rewritten: the rest (several hosts, a socket directory)
    // is tokio-postgres's to parse.
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut mode = SslMode::Prefer;
    let mut root_file = None;
    let mut others = url::form_urlencoded::Serializer::new(String::new());
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match &*key {
            "sslmode" => {
                mode =
                    SslMode::parse(&value).ok_or_else(|| TlsSetupError::Mode(value.to_string()))?;
            }
            "sslrootcert" => root_file = Some(value.to_string()),
            _ => {
                others.append_pair(&key, &value);
            }
        }
    }
    let others = others.finish();
    let url = if others.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{others}")
    };
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|e: tokio_postgres::Error| TlsSetupError::Url(e.to_string()))?;
    config.ssl_mode(match mode {
        SslMode::Disable => tokio_postgres::config::SslMode::Disable,
        SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
        _ => tokio_postgres::config::SslMode::Require,
    });
    let root_file = root_file.filter(|f| f != "system");
    // libpq: `require` with a root file checks the chain, as `verify-ca`.
    let checked = match mode {
        SslMode::Require if root_file.is_some() => SslMode::VerifyCa,
        other => other,
    };
    let (roots, shown) = match &root_file {
        Some(path) => (
            read_roots(path.into(), mode)?,
            format!("sslrootcert={path}"),
        ),
        None => (
            RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            },
            "the Mozilla roots (no sslrootcert)".to_string(),
        ),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let setup = |e: &dyn std::fmt::Display| TlsSetupError::Setup {
        mode: mode.name(),
        reason: e.to_string(),
    };
    let verifier: Arc<dyn ServerCertVerifier> = match checked {
        SslMode::Disable | SslMode::Prefer | SslMode::Require => Arc::new(Unchecked {
            provider: provider.clone(),
        }),
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots),
                provider.clone(),
            )
            .build()
            .map_err(|e| setup(&e))?;
            if checked == SslMode::VerifyCa {
                Arc::new(ChainOnly(webpki))
            } else {
                webpki
            }
        }
    };
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| setup(&e))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok((
        config,
        MakeRustls {
            mode,
            config: Arc::new(tls),
            roots: shown.into(),
        },
    ))
}

/// The CA certificates of `path` (PEM).
fn read_roots(path: PathBuf, mode: SslMode) -> Result<RootCertStore, TlsSetupError> {
    let bytes = sluice_operator_files::read_regular(&path, MAX_ROOT_FILE_BYTES).map_err(|e| {
        TlsSetupError::RootFile {
            path: path.clone(),
            mode: mode.name(),
            reason: e.to_string(),
        }
    })?;
    let no_roots = |reason: String| TlsSetupError::NoRoots {
        path: path.clone(),
        mode: mode.name(),
        reason,
    };
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| no_roots(e.to_string()))?;
    let mut roots = RootCertStore::empty();
    let (added, ignored) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(no_roots(if ignored == 0 {
            "no certificate in it".into()
        } else {
            format!("none of its {ignored} certificates parses")
        }));
    }
    Ok(roots)
}

/// `require` and `prefer` (as libpq): any certificate, but the handshake's signatures are
/// still checked against the one presented.
#[derive(Debug)]
struct Unchecked {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// `verify-ca`: the chain is checked, the host name is not (webpki checks the name last,
/// so a name error means the chain passed).
#[derive(Debug)]
struct ChainOnly(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

impl<S> MakeTlsConnect<S> for MakeRustls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = io::Error;

    /// `host` is empty for a Unix socket (where the server declines TLS, so `prefer`
    /// goes on without it); a handshake without a name TLS can check fails when it starts.
    fn make_tls_connect(&mut self, host: &str) -> io::Result<RustlsConnect> {
        Ok(RustlsConnect {
            make: self.clone(),
            name: ServerName::try_from(host.to_string()).map_err(|source| NoServerName {
                mode: self.mode.name(),
                host: host.to_string(),
                source,
            }),
        })
    }
}

/// One connection's handshake: the name the certificate must hold, or the host that is
/// none.
pub(crate) struct RustlsConnect {
    make: MakeRustls,
    name: Result<ServerName<'static>, NoServerName>,
}

/// A host TLS cannot check a certificate against (empty for a Unix socket).
#[derive(Debug, thiserror::Error)]
#[error(
    "TLS with sslmode={mode} needs a host name or IP address to check the certificate against; got {host:?}"
)]
pub(crate) struct NoServerName {
    mode: &'static str,
    host: String,
    source: rustls::pki_types::InvalidDnsNameError,
}

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let name = self.name.map_err(io::Error::other)?;
            let host = name.to_str().into_owned();
            tokio_rustls::TlsConnector::from(self.make.config.clone())
                .connect(name, stream)
                .await
                .map(RustlsStream)
                .map_err(|e| io::Error::other(handshake_failure(&self.make, &host, &e)))
        })
    }
}

/// Why a handshake failed, naming the `sslmode` and what it checks.
fn handshake_failure(make: &MakeRustls, host: &str, e: &io::Error) -> String {
    let mode = make.mode.name();
    let hint = match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)) => format!(
            ": the server's certificate is not signed by a CA of {}",
            make.roots
        ),
        // (Its context says which names the certificate holds.)
        Some(rustls::Error::InvalidCertificate(CertificateError::NotValidForName)) => {
            format!(": the server's certificate is not issued for {host:?}")
        }
        Some(rustls::Error::InvalidCertificate(
            CertificateError::Expired | CertificateError::ExpiredContext { .. },
        )) => ": the server's certificate has expired".to_string(),
        _ => String::new(),
    };
    format!("TLS with sslmode={mode} failed: {e}{hint}")
}

/// A TLS connection to the database.
pub(crate) struct RustlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> tokio_postgres::tls::TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        self.0
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|chain| chain.first())
            .and_then(|cert| tls_server_end_point(cert))
            .map_or_else(ChannelBinding::none, ChannelBinding::tls_server_end_point)
    }
}

/// RFC 5929's `tls-server-end-point` of `cert`: its hash with the hash function of its
/// signature algorithm (SHA-256 for MD5 and SHA-1); `None` for an algorithm without one
/// (Ed25519, RSASSA-PSS), when SCRAM then goes without channel binding.
fn tls_server_end_point(cert: &[u8]) -> Option<Vec<u8>> {
    use sha2::Digest as _;
    // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm SEQUENCE { OID, … }, … }
    let (certificate, _) = der(cert, 0x30)?;
    let (_tbs, rest) = der_any(certificate)?;
    let (algorithm, _) = der(rest, 0x30)?;
    let (oid, _) = der(algorithm, 0x06)?;
    const RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01];
    const ECDSA: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04];
    let hash = match oid {
        // md5WithRSA, sha1WithRSA, sha256WithRSA; ecdsa-with-SHA1, ecdsa-with-SHA256.
        [rsa @ .., 4 | 5 | 11] if rsa == RSA => 256,
        [ecdsa @ .., 1] if ecdsa == ECDSA => 256,
        [ecdsa @ .., 3, 2] if ecdsa == ECDSA => 256,
        [rsa @ .., 12] if rsa == RSA => 384,
        [ecdsa @ .., 3, 3] if ecdsa == ECDSA => 384,
        [rsa @ .., 13] if rsa == RSA => 512,
        [ecdsa @ .., 3, 4] if ecdsa == ECDSA => 512,
        _ => return None,
    };
    Some(match hash {
        256 => sha2::Sha256::digest(cert).to_vec(),
        384 => sha2::Sha384::digest(cert).to_vec(),
        _ => sha2::Sha512::digest(cert).to_vec(),
    })
}

/// The contents of the DER element at the start of `bytes` if its tag is `tag`, and what
/// follows it.
fn der(bytes: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    (bytes.first() == Some(&tag)).then_some(())?;
    der_any(bytes)
}

/// The contents of the DER element at the start of `bytes`, whatever its tag, and what
/// follows it.
fn der_any(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let first = *bytes.get(1)?;
    let (len, head) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let len = bytes
            .get(2..2 + n)?
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, 2 + n)
    };
    let end = head.checked_add(len)?;
    Some((bytes.get(head..end)?, bytes.get(end..)?))
}

#[cfg(test)]
#[path = "tls_tests.rs"]
mod tests;
