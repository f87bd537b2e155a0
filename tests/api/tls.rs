//! TLS end to end: the broker serving HTTPS (a Rust client and the official Python client
//! trusting only a test CA), and the broker reaching PostgreSQL over TLS, checked from the
//! server's side in `pg_stat_ssl`.
//!
//! Every key and certificate here is made at test time by rcgen, for this run only: a root
//! CA, an intermediate, and leaves for the broker and for PostgreSQL. PostgreSQL with TLS is a
//! private cluster of its own, so the shared test cluster keeps running without TLS.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use regent::private_pg::PrivateCluster;
use regent::config::Config;
use regent::server;
use regent::store::Store;
use reqwest::StatusCode;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::OnceCell;
use tokio_postgres::NoTls;
use uuid::Uuid;

use crate::support::{fresh_database, Broker};

/// The broker's certificate names this host; clients resolve it to the loopback.
const BROKER_HOST: &str = "regent.test";
/// PostgreSQL's certificate names only this host, so a check of the name can fail.
const PG_HOST: &str = "db.regent.test";

/// A throwaway PKI in its own directory: `ca.pem` (the root), `chain.pem` (leaf, then the
/// intermediate that signed it), `key.pem` (the leaf's key).
struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn new(names: &[&str]) -> Pki {
        let dir = std::env::temp_dir().join(format!("regent-tls-test-{}", Uuid::now_v7()));
        std::fs::create_dir_all(&dir).unwrap();

        // Names of its own: another Pki's CA must be a stranger, not a namesake.
        let id = Uuid::now_v7().simple().to_string();
        let ca = CertifiedIssuer::self_signed(ca_params(&format!("Regent test root {id}")), key())
            .unwrap();
        let intermediate = CertifiedIssuer::signed_by(
            ca_params(&format!("Regent test intermediate {id}")),
            key(),
            &ca,
        )
        .unwrap();
        let leaf_key = key();
        let mut leaf =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        leaf.distinguished_name.push(DnType::CommonName, names[0]);
        let leaf = leaf.signed_by(&leaf_key, &intermediate).unwrap();

        std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
        std::fs::write(
            dir.join("chain.pem"),
            format!("{}{}", leaf.pem(), intermediate.pem()),
        )
        .unwrap();
        std::fs::write(dir.join("key.pem"), leaf_key.serialize_pem()).unwrap();
        Pki { dir }
    }

    fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }
    fn chain(&self) -> PathBuf {
        self.dir.join("chain.pem")
    }
    fn key(&self) -> PathBuf {
        self.dir.join("key.pem")
    }
    fn ca_pem(&self) -> Vec<u8> {
        std::fs::read(self.ca()).unwrap()
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn key() -> KeyPair {
    KeyPair::generate().unwrap()
}

fn ca_params(name: &str) -> CertificateParams {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    p
}

/// An HTTPS client that trusts only `ca_pem` and finds `BROKER_HOST` at `addr`.
fn client_trusting(ca_pem: &[u8], addr: std::net::SocketAddr) -> reqwest::Client {
    reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(ca_pem).unwrap())
        .resolve(BROKER_HOST, addr)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// A broker serving HTTPS with `pki`'s certificate, reached through a client trusting its CA.
async fn https_broker(pki: &Pki) -> Broker {
    let db_url = fresh_database().await;
    let mut config = Config::defaults();
    config.db_pool_size = 4;
    config.tls_cert_file = Some(pki.chain());
    config.tls_key_file = Some(pki.key());
    // The Python client flow makes an encrypted queue and one whose messages expire.
    config.queen_encryption_key = Some(crate::python_client::FLOW_KEY.into());
    config.retention_interval = 200;
    config.implicit_retention = true;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let srv = server::start(config, &db_url, listener)
        .await
        .expect("broker starts with TLS");
    assert!(srv.tls);
    Broker {
        url: format!("https://{BROKER_HOST}:{}", srv.addr.port()),
        db_url,
        http: client_trusting(&pki.ca_pem(), srv.addr),
        server: Some(srv),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_and_pop_over_https_trusting_only_the_test_ca() {
    let pki = Pki::new(&[BROKER_HOST, "localhost", "127.0.0.1"]);
    let b = https_broker(&pki).await;

    let (s, health) = b.get("/health").await;
    assert_eq!(s, StatusCode::OK, "{health}");
    b.push("orders", "p", &["o-1", "o-2"]).await;
    let popped = b.pop("orders", "batch=10").await;
    assert_eq!(Broker::txids(&popped), ["o-1", "o-2"]);
    b.ack_all(None, &popped).await;
    assert_eq!(
        Broker::txids(&b.pop("orders", "batch=10").await),
        [] as [&str; 0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_and_untrusting_clients_are_refused() {
    let pki = Pki::new(&[BROKER_HOST]);
    let b = https_broker(&pki).await;
    let addr = b.server.as_ref().unwrap().addr;

    let plain = reqwest::Client::new()
        .get(format!("http://{addr}/health"))
        .timeout(Duration::from_secs(10))
        .send()
        .await;
    assert!(plain.is_err(), "plain HTTP answered: {plain:?}");

    // Same names, another CA: the handshake fails on the client's side.
    let stranger = Pki::new(&[BROKER_HOST]);
    let refused = client_trusting(&stranger.ca_pem(), addr)
        .get(format!("{}/health", b.url))
        .send()
        .await
        .expect_err("a client that does not trust the CA must not get an answer");
    let chain = format!("{refused:?}");
    assert!(chain.contains("UnknownIssuer"), "{chain}");

    // The broker is unharmed by both.
    let (s, _) = b.get("/health").await;
    assert_eq!(s, StatusCode::OK);
}

/// Handshakes run beside each other: clients that connect and then stall (or send half a
/// hello) do not hold up the next one, nor the shutdown; a parked long-poll answers at once
/// when the broker stops, and the port closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_handshakes_block_no_one_and_shutdown_stays_graceful() {
    let pki = Pki::new(&[BROKER_HOST]);
    let mut b = https_broker(&pki).await;
    let addr = b.server.as_ref().unwrap().addr;

    let mut silent = Vec::new();
    for _ in 0..3 {
        silent.push(TcpStream::connect(addr).await.unwrap());
    }
    let mut half_hello = TcpStream::connect(addr).await.unwrap();
    half_hello
        .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .await
        .unwrap();

    let started = std::time::Instant::now();
    let (s, _) = b.get("/health").await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "a request waited {:?} behind stalled handshakes",
        started.elapsed()
    );

    let parked = tokio::spawn({
        let http = b.http.clone();
        let url = format!("{}/api/v1/pop/queue/empty?wait=true&timeout=30000", b.url);
        async move { http.get(url).send().await.map(|r| r.status()) }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let srv = b.server.take().unwrap();
    tokio::time::timeout(Duration::from_secs(10), srv.shutdown())
        .await
        .expect("shutdown is not held by stalled handshakes")
        .unwrap();
    let parked = tokio::time::timeout(Duration::from_secs(5), parked)
        .await
        .expect("the parked long-poll was answered")
        .unwrap();
    assert_eq!(parked.unwrap(), StatusCode::OK);
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "the port is closed after shutdown"
    );
    drop((silent, half_hello));
}

/// The official client over HTTPS: httpx trusts the test CA through `SSL_CERT_FILE`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_over_https() {
    let pki = Pki::new(&[BROKER_HOST, "localhost", "127.0.0.1"]);
    let b = https_broker(&pki).await;
    let url = format!(
        "https://127.0.0.1:{}",
        b.server.as_ref().unwrap().addr.port()
    );
    let ca = pki.ca();
    crate::python_client::run_flow_with(&url, None, &[("SSL_CERT_FILE", ca.to_str().unwrap())])
        .await;
}

/// A private PostgreSQL with `ssl=on`, its certificate naming only `PG_HOST`; shared by the
/// tests below. Beside its data directory: `ca.pem`, the root of its certificate, and
/// `stranger.pem`, a CA that signed nothing it holds (both go with the cluster's directory).
struct TlsPostgres {
    port: u16,
    dir: PathBuf,
}

static TLS_POSTGRES: OnceCell<TlsPostgres> = OnceCell::const_new();

async fn tls_postgres() -> &'static TlsPostgres {
    TLS_POSTGRES
        .get_or_init(|| async {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            let cluster = PrivateCluster::start(None).await.expect("private cluster");
            let data = cluster.data_dir().to_path_buf();
            let dir = data.parent().unwrap().to_path_buf();
            let pki = Pki::new(&[PG_HOST]);
            let stranger = Pki::new(&[PG_HOST]);
            std::fs::copy(pki.ca(), dir.join("ca.pem")).unwrap();
            std::fs::copy(stranger.ca(), dir.join("stranger.pem")).unwrap();
            // PostgreSQL reads its key and certificate as the user it runs as, and refuses a
            // key that others can read.
            let owner = std::fs::metadata(&data).unwrap();
            for (from, to, mode) in [
                (pki.chain(), "server.crt", 0o644),
                (pki.key(), "server.key", 0o600),
            ] {
                let dest = data.join(to);
                std::fs::copy(&from, &dest).unwrap();
                std::os::unix::fs::chown(&dest, Some(owner.uid()), Some(owner.gid())).unwrap();
                std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(mode)).unwrap();
            }
            let (c, conn) = tokio_postgres::connect(&cluster.url(), NoTls)
                .await
                .unwrap();
            tokio::spawn(conn);
            // One statement at a time: ALTER SYSTEM refuses to run in a transaction block.
            for sql in [
                "ALTER SYSTEM SET ssl_cert_file = 'server.crt'",
                "ALTER SYSTEM SET ssl_key_file = 'server.key'",
                "ALTER SYSTEM SET ssl = on",
                "SELECT pg_reload_conf()",
            ] {
                c.batch_execute(sql).await.unwrap();
            }
            drop(c);
            wait_for_ssl(&cluster.url(), &dir).await;
            let port = cluster.port();
            // The postmaster dies with this process (PDEATHSIG), like the shared cluster's.
            std::mem::forget(cluster);
            TlsPostgres { port, dir }
        })
        .await
}

/// A reload applies in the background; new connections see it.
async fn wait_for_ssl(url: &str, dir: &Path) {
    for _ in 0..100 {
        let (c, conn) = tokio_postgres::connect(url, NoTls).await.unwrap();
        tokio::spawn(conn);
        let on: String = c.query_one("SHOW ssl", &[]).await.unwrap().get(0);
        if on == "on" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "PostgreSQL did not turn ssl on; see {}",
        dir.join("regent-postgres.log").display()
    );
}

impl TlsPostgres {
    /// A URL of database `db` at 127.0.0.1 with extra query parameters.
    fn url(&self, db: &str, params: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}?{params}", self.port)
    }

    /// A CA file as an `sslrootcert` value.
    fn root(&self, file: &str) -> String {
        self.dir.join(file).to_str().unwrap().replace('/', "%2F")
    }

    async fn create_database(&self) -> String {
        let name = format!("t_{}", Uuid::now_v7().simple());
        let (c, conn) = tokio_postgres::connect(&self.url("postgres", ""), NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        c.batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        name
    }

    /// (connections, how many of them use TLS) of one application name, seen by the server.
    async fn encrypted(&self, application: &str) -> (i64, i64) {
        let (c, conn) = tokio_postgres::connect(&self.url("postgres", ""), NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let row = c
            .query_one(
                "SELECT count(*), count(*) FILTER (WHERE s.ssl)
                   FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
                  WHERE a.application_name = $1",
                &[&application],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1))
    }
}

/// The broker with `sslmode=require` and a root certificate: every request goes through the
/// HTTP API, and every connection of its pool is encrypted, as the server sees it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_reaches_postgres_over_tls() {
    let pg = tls_postgres().await;
    let db = pg.create_database().await;
    let app = format!("regent-{}", Uuid::now_v7().simple());
    let db_url = pg.url(
        &db,
        &format!(
            "sslmode=require&sslrootcert={}&application_name={app}",
            pg.root("ca.pem")
        ),
    );
    let mut config = Config::defaults();
    config.db_pool_size = 4;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let srv = server::start(config, &db_url, listener)
        .await
        .expect("broker starts against PostgreSQL over TLS");
    let b = Broker {
        url: format!("http://{}", srv.addr),
        db_url: db_url.clone(),
        http: reqwest::Client::new(),
        server: Some(srv),
    };

    b.push("q", "p", &["t-1", "t-2", "t-3"]).await;
    let popped = b.pop("q", "batch=10").await;
    assert_eq!(Broker::txids(&popped), ["t-1", "t-2", "t-3"]);
    let (s, v) = b.get("/api/v1/resources/queues").await;
    assert_eq!(s, StatusCode::OK, "{v}");

    let (connections, encrypted) = pg.encrypted(&app).await;
    assert!(connections > 0, "the broker holds no connection");
    assert_eq!(
        encrypted, connections,
        "a broker connection is not encrypted"
    );
}

/// Encrypted, as the server sees this very connection; Err is the connect error's text.
async fn connect(url: &str) -> Result<bool, String> {
    let store =
        Store::connect(url, 2, regent::store::Layout::Single).map_err(|e| format!("{e:#}"))?;
    let c = store.client().await.map_err(|e| format!("{e:?}"))?;
    let row = c
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .map_err(|e| format!("{e:?}"))?;
    Ok(row.get(0))
}

/// libpq's meanings: no mode (or prefer) stays plain even where TLS is offered; `require`
/// encrypts and checks the chain only against a given root; `verify-ca` checks the chain;
/// `verify-full` the chain and the name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmodes_verify_what_libpq_verifies() {
    let pg = tls_postgres().await;
    let root = pg.root("ca.pem");
    let stranger = pg.root("stranger.pem");
    let by_name = |params: &str| {
        format!(
            "postgres://postgres@{PG_HOST}:{}/postgres?hostaddr=127.0.0.1&{params}",
            pg.port
        )
    };

    assert_eq!(connect(&pg.url("postgres", "")).await, Ok(false));
    assert_eq!(
        connect(&pg.url("postgres", "sslmode=prefer")).await,
        Ok(false)
    );
    assert_eq!(
        connect(&pg.url("postgres", "sslmode=require")).await,
        Ok(true),
        "require without a root encrypts without checking"
    );
    assert_eq!(
        connect(&pg.url("postgres", &format!("sslmode=require&sslrootcert={root}"))).await,
        Ok(true)
    );
    let e = connect(&pg.url(
        "postgres",
        &format!("sslmode=require&sslrootcert={stranger}"),
    ))
    .await
    .unwrap_err();
    assert!(e.contains("UnknownIssuer"), "{e}");
    assert_eq!(
        connect(&pg.url("postgres", &format!("sslmode=verify-ca&sslrootcert={root}"))).await,
        Ok(true),
        "verify-ca does not check the name"
    );
    let e = connect(&pg.url(
        "postgres",
        &format!("sslmode=verify-full&sslrootcert={root}"),
    ))
    .await
    .unwrap_err();
    assert!(e.contains("NotValidForName"), "{e}");
    assert_eq!(
        connect(&by_name(&format!("sslmode=verify-full&sslrootcert={root}"))).await,
        Ok(true)
    );
    let e = connect(&by_name(&format!(
        "sslmode=verify-full&sslrootcert={stranger}"
    )))
    .await
    .unwrap_err();
    assert!(e.contains("UnknownIssuer"), "{e}");
}

/// `require` is a requirement: a server without TLS (the shared test cluster, unless
/// DATABASE_URL names one that has it) is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_refuses_a_server_without_tls() {
    let plain = fresh_database().await;
    let (c, conn) = tokio_postgres::connect(&plain, NoTls).await.unwrap();
    tokio::spawn(conn);
    let ssl: String = c.query_one("SHOW ssl", &[]).await.unwrap().get(0);
    let required = connect(&format!("{plain}?sslmode=require")).await;
    if ssl == "on" {
        assert_eq!(required, Ok(true));
    } else {
        let e = required.unwrap_err();
        assert!(e.contains("server does not support TLS"), "{e}");
    }
}
