//! TLS to PostgreSQL: the URL's `sslmode` and `sslrootcert`, and connections to a
//! PostgreSQL this test starts with `ssl = on` and a certificate from a test CA made here
//! (rcgen; no key is committed). The server binaries come from the distribution
//! (`/usr/lib/postgresql/*/bin`, as `.ci/run` installs them); without them the test skips,
//! but fails under `CI=true`.

use std::path::{Path, PathBuf};
use std::process::Command;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

use super::*;
use crate::Store as _;
use crate::postgres::PgStore;

#[test]
fn sslmode_and_sslrootcert_are_read_and_taken_out_of_the_url() {
    use tokio_postgres::config::SslMode as Pg;
    let (config, tls) = configure("postgres://u:pw@db:5433/s?sslmode=verify-full").unwrap();
    assert_eq!(tls.mode(), SslMode::VerifyFull);
    // tokio-postgres knows `require` only: the connector checks the rest.
    assert_eq!(config.get_ssl_mode(), Pg::Require);
    assert_eq!(config.get_dbname(), Some("s"));
    assert_eq!(&*tls.roots, "the Mozilla roots (no sslrootcert)");
    let (config, tls) =
        configure("postgres://u@db/s?application_name=x&sslmode=disable&connect_timeout=3")
            .unwrap();
    assert_eq!(tls.mode(), SslMode::Disable);
    assert_eq!(config.get_ssl_mode(), Pg::Disable);
    assert_eq!(config.get_application_name(), Some("x"));
    assert_eq!(
        config.get_connect_timeout(),
        Some(&std::time::Duration::from_secs(3))
    );
    // The default is libpq's: `prefer`.
    let (config, tls) = configure("postgres://u@db/s").unwrap();
    assert_eq!(
        (tls.mode(), config.get_ssl_mode()),
        (SslMode::Prefer, Pg::Prefer)
    );
    assert_eq!(
        configure("postgres://u@db/s?sslmode=verify")
            .unwrap_err()
            .to_string(),
        "sslmode=\"verify\" is not a mode: it must be disable, prefer, require, verify-ca or verify-full"
    );
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("ca.pem");
    let e = configure(&format!(
        "postgres://u@db/s?sslmode=verify-ca&sslrootcert={}",
        missing.display()
    ))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "sslrootcert={} (sslmode=verify-ca) cannot be read: No such file or directory (os error 2)",
            missing.display()
        )
    );
    std::fs::write(&missing, "not PEM\n").unwrap();
    let e = configure(&format!(
        "postgres://u@db/s?sslmode=verify-full&sslrootcert={}",
        missing.display()
    ))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "sslrootcert={} (sslmode=verify-full) holds no usable CA certificate: no certificate in it; it must be a PEM file of `-----BEGIN CERTIFICATE-----` blocks",
            missing.display()
        )
    );
}

#[test]
fn the_channel_binding_hashes_the_certificate_with_its_signature_hash() {
    use sha2::Digest as _;
    let ca = Ca::new("Sluice test CA");
    let (_, _, der) = ca.server(&["localhost"]);
    // rcgen signs with ECDSA P-256 and SHA-256.
    assert_eq!(
        tls_server_end_point(&der).unwrap(),
        sha2::Sha256::digest(&der).to_vec()
    );
    assert_eq!(tls_server_end_point(b"\x30\x03\x02\x01"), None);
    assert_eq!(tls_server_end_point(b""), None);
}

/// A test CA.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        Ca {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A server certificate for `names`: (certificate PEM, key PEM, certificate DER).
    fn server(&self, names: &[&str]) -> (String, String, Vec<u8>) {
        let key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "sluice-postgres");
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem(), cert.der().to_vec())
    }
}

/// The newest PostgreSQL server's binaries of the distribution.
fn pg_bin() -> Option<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("pg_ctl").is_file().then_some((version, bin))
        })
        .collect();
    dirs.sort();
    dirs.pop().map(|(_, bin)| bin)
}

/// A PostgreSQL with `ssl = on` on 127.0.0.1 and 127.0.0.2, run by the `postgres` user when
/// this test runs as root (`initdb` refuses root); stopped when dropped.
struct Cluster {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    password: String,
    _dir: tempfile::TempDir,
}

/// `program` of `bin` with `args`, as the `postgres` user when this process is root.
fn as_server_user(bin: &Path, program: &str, args: &[&str]) -> Command {
    let path = bin.join(program);
    if rustix::process::geteuid().is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(path).args(args);
        c
    } else {
        let mut c = Command::new(path);
        c.args(args);
        c
    }
}

fn run(mut command: Command, what: &str) {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Cluster {
    fn start(bin: PathBuf, cert: &str, key: &str) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let password = format!("tls-{}", &crate::ids::new_id('x').unwrap()[2..]);
        std::fs::write(root.join("pw"), &password).unwrap();
        std::fs::write(root.join("server.crt"), cert).unwrap();
        std::fs::write(root.join("server.key"), key).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(
            root.join("server.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        if rustix::process::geteuid().is_root() {
            let mut chown = Command::new("chown");
            chown.args(["-R", "postgres"]).arg(root);
            run(chown, "chown");
        }
        let data = root.join("data");
        let text = |p: &Path| p.to_str().unwrap().to_string();
        run(
            as_server_user(
                &bin,
                "initdb",
                &[
                    "-D",
                    &text(&data),
                    "-U",
                    "postgres",
                    "--auth-local=trust",
                    "--auth-host=scram-sha-256",
                    &format!("--pwfile={}", text(&root.join("pw"))),
                    "--no-sync",
                ],
            ),
            "initdb",
        );
        // 127.0.0.2 as well: the address the certificate does not name.
        let mut hba = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("pg_hba.conf"))
            .unwrap();
        std::io::Write::write_all(&mut hba, b"host all all 127.0.0.0/8 scram-sha-256\n").unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let options = format!(
            "-k {sock} -h 127.0.0.1,127.0.0.2 -p {port} -c ssl=on -c ssl_cert_file={cert} -c ssl_key_file={key} -c fsync=off",
            sock = text(root),
            cert = text(&root.join("server.crt")),
            key = text(&root.join("server.key")),
        );
        run(
            as_server_user(
                &bin,
                "pg_ctl",
                &[
                    "-D",
                    &text(&data),
                    "-l",
                    &text(&root.join("server.log")),
                    "-w",
                    "-o",
                    &options,
                    "start",
                ],
            ),
            "pg_ctl start",
        );
        Cluster {
            bin,
            data,
            port,
            password,
            _dir: dir,
        }
    }

    /// The URL of the Unix socket, as the `postgres` user (trusted there).
    fn socket_url(&self) -> String {
        let dir = self
            .data
            .parent()
            .unwrap()
            .to_str()
            .unwrap()
            .replace('/', "%2F");
        format!("postgres://postgres@{dir}:{}/postgres", self.port)
    }

    fn url(&self, host: &str, query: &str) -> String {
        format!(
            "postgres://postgres:{}@{host}:{}/postgres?{query}",
            self.password, self.port
        )
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.data.to_str().unwrap().to_string();
        let _ = as_server_user(
            &self.bin,
            "pg_ctl",
            &["-D", &data, "-m", "immediate", "stop"],
        )
        .output();
    }
}

/// Whether the store's connections are encrypted, as the server sees one of them.
async fn encrypted(store: &PgStore) -> bool {
    let conn = store.inner.pool.get().await.unwrap();
    conn.query_one(
        "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

/// The error of a store connecting to `url`.
async fn refused(url: &str) -> String {
    PgStore::connect(url).await.unwrap_err().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_connects_over_tls_as_its_sslmode_says() {
    let Some(bin) = pg_bin() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "no PostgreSQL server in /usr/lib/postgresql/*/bin, and CI=true"
        );
        #[allow(clippy::print_stderr)]
        {
            eprintln!("skipped: no PostgreSQL server in /usr/lib/postgresql/*/bin");
        }
        return;
    };
    let ca = Ca::new("Sluice PostgreSQL test CA");
    let (cert, key, _) = ca.server(&["localhost", "127.0.0.1"]);
    let cluster = Cluster::start(bin, &cert, &key);
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca.pem).unwrap();
    let root = format!("sslrootcert={}", ca_file.display());

    // verify-full: the chain and the name, with the password exchange bound to the TLS
    // session (SCRAM-SHA-256-PLUS: the server checks the channel binding Sluice sends).
    let store = PgStore::connect(&cluster.url(
        "localhost",
        &format!("sslmode=verify-full&{root}&channel_binding=require"),
    ))
    .await
    .unwrap();
    assert!(encrypted(&store).await);
    let id = store.create_session().await.unwrap().id;
    assert_eq!(store.session(&id).await.unwrap().id, id);
    drop(store);
    let ip = PgStore::connect(&cluster.url("127.0.0.1", &format!("sslmode=verify-full&{root}")))
        .await
        .unwrap();
    assert!(encrypted(&ip).await);
    drop(ip);

    // require: encrypted, the certificate unchecked.
    let store = PgStore::connect(&cluster.url("127.0.0.1", "sslmode=require"))
        .await
        .unwrap();
    assert!(encrypted(&store).await);
    drop(store);
    // prefer (the default) encrypts when the server offers it; disable does not.
    let store = PgStore::connect(&cluster.url("127.0.0.1", "application_name=t"))
        .await
        .unwrap();
    assert!(encrypted(&store).await);
    drop(store);
    let store = PgStore::connect(&cluster.url("127.0.0.1", "sslmode=disable"))
        .await
        .unwrap();
    assert!(!encrypted(&store).await);
    drop(store);
    // Over a Unix socket the server declines TLS: `prefer` goes on without it.
    let store = PgStore::connect(&cluster.socket_url()).await.unwrap();
    assert!(!encrypted(&store).await);
    drop(store);

    // verify-ca accepts a name the certificate does not hold; verify-full does not.
    let store = PgStore::connect(&cluster.url("127.0.0.2", &format!("sslmode=verify-ca&{root}")))
        .await
        .unwrap();
    assert!(encrypted(&store).await);
    drop(store);
    let e = refused(&cluster.url("127.0.0.2", &format!("sslmode=verify-full&{root}"))).await;
    assert!(
        e.contains("cannot connect to the database (sslmode=verify-full): ")
            && e.contains("TLS with sslmode=verify-full failed: ")
            && e.contains(
                "invalid peer certificate: certificate not valid for name \"127.0.0.2\"; certificate is only valid for DnsName(\"localhost\") or IpAddress(127.0.0.1)"
            ),
        "{e}"
    );
    assert!(!e.contains(&cluster.password), "{e}");

    // A CA that did not sign the server's certificate: refused, with verify-ca too, and
    // with require given that root file (libpq's rule).
    let other = Ca::new("Another test CA");
    let other_file = dir.path().join("other.pem");
    std::fs::write(&other_file, &other.pem).unwrap();
    for mode in ["verify-full", "verify-ca", "require"] {
        let e = refused(&cluster.url(
            "localhost",
            &format!("sslmode={mode}&sslrootcert={}", other_file.display()),
        ))
        .await;
        assert!(
            e.contains(&format!("TLS with sslmode={mode} failed: "))
                && e.contains(&format!(
                    "the server's certificate is not signed by a CA of sslrootcert={}",
                    other_file.display()
                )),
            "{mode}: {e}"
        );
    }
}
