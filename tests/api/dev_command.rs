//! `regent dev`, the quick start's first command, as a user runs it: a private PostgreSQL,
//! a serving broker, and a clean stop on SIGTERM that takes the private PostgreSQL with it.
//! Encrypted queues work out of the box: with no key configured, dev keeps one with its data.

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const PG_URL_PREFIX: &str = "postgres://postgres@127.0.0.1:";

/// A running `regent dev`, its start-up lines (stderr) read up to "Regent is serving".
pub(crate) struct Dev {
    child: Child,
    pub(crate) base: String,
    pg_url: String,
    startup: Vec<String>,
    /// The line that says where it serves.
    serving: String,
}

impl Dev {
    pub(crate) async fn start(extra: &[&str]) -> Dev {
        Dev::start_with(extra, &[]).await
    }

    /// [`Dev::start`] with extra environment.
    pub(crate) async fn start_with(extra: &[&str], env: &[(&str, &str)]) -> Dev {
        Dev::start_on(extra, env, Some("127.0.0.1")).await
    }

    /// [`Dev::start_with`], binding `HOST` if given, else leaving it unset (`dev`'s default).
    async fn start_on(extra: &[&str], env: &[(&str, &str)], host: Option<&str>) -> Dev {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let mut command = Command::new(env!("CARGO_BIN_EXE_regent"));
        match host {
            Some(h) => command.env("HOST", h),
            None => command.env_remove("HOST"),
        };
        let mut child = command
            .args(["dev", "--port", &port.to_string()])
            .args(extra)
            .env_remove("DATABASE_URL")
            .env_remove("PG_HOST")
            .env_remove("PG_DB")
            .env_remove("QUEEN_ENCRYPTION_KEY")
            // Unset: the log goes to a pipe, so it must carry no colour codes by itself.
            .env_remove("NO_COLOR")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("regent dev starts");
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
        let (serving, startup) = tokio::time::timeout(Duration::from_secs(60), async {
            let mut startup = Vec::new();
            loop {
                tokio::select! {
                    Ok(Some(line)) = err.next_line() => startup.push(line),
                    Ok(Some(line)) = out.next_line() => {
                        if line.contains("Regent is serving on") {
                            return (line, startup);
                        }
                    }
                }
            }
        })
        .await
        .expect("regent dev prints its URL within 60 s");
        assert!(serving.contains(&format!(":{port}")), "{serving}");
        // Later log lines must not fill the pipe and block the broker.
        tokio::spawn(async move { while let Ok(Some(_)) = err.next_line().await {} });
        let pg_url = startup
            .iter()
            .find_map(|l| {
                let i = l.find(PG_URL_PREFIX)?;
                Some(
                    l[i..]
                        .split_whitespace()
                        .next()?
                        .trim_matches('"')
                        .to_string(),
                )
            })
            .expect("the private PostgreSQL URL is logged");
        Dev {
            child,
            base: format!("http://127.0.0.1:{port}"),
            pg_url,
            startup,
            serving,
        }
    }

    fn said(&self, text: &str) -> bool {
        self.startup.iter().any(|l| l.contains(text))
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = reqwest::Client::new()
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    async fn pop(&self, queue: &str) -> Value {
        let url = format!("{}/api/v1/pop/queue/{queue}?wait=false", self.base);
        reqwest::get(url).await.unwrap().json().await.unwrap()
    }

    /// SIGTERM, then the exit status within 20 s.
    pub(crate) async fn stop(mut self) {
        let pid = self.child.id().unwrap() as i32;
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let status = tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("regent dev exits within 20 s of SIGTERM")
            .unwrap();
        assert!(status.success(), "{status:?}");
    }
}

fn pg_port(url: &str) -> u16 {
    url[PG_URL_PREFIX.len()..]
        .split('/')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port in the PostgreSQL URL")
}

/// Configures an encrypted queue and pushes one message to it.
async fn push_encrypted(dev: &Dev, queue: &str, secret: &str) {
    let body = json!({"queue": queue, "options": {"encryptionEnabled": true}});
    let (s, v) = dev.post("/api/v1/configure", body).await;
    assert_eq!(s, 200, "configure encryptionEnabled under regent dev: {v}");
    let item = json!({"queue": queue, "transactionId": "t1", "payload": {"secret": secret}});
    let (s, v) = dev.post("/api/v1/push", json!({"items": [item]})).await;
    assert_eq!(s, 201, "{v}");
}

/// Whether any stored segment holds these bytes as they are.
async fn stored_in_clear(pg_url: &str, text: &str) -> bool {
    let (db, conn) = tokio_postgres::connect(pg_url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let row = db
        .query_one(
            "SELECT count(*) AS n FROM segments WHERE position($1::bytea IN frames) > 0",
            &[&text.as_bytes()],
        )
        .await
        .unwrap();
    row.get::<_, i64>("n") > 0
}

#[tokio::test]
async fn dev_serves_with_a_private_postgres_and_stops_cleanly() {
    let dev = Dev::start(&[]).await;
    let pg_port = pg_port(&dev.pg_url);
    let http = reqwest::Client::new();
    let health: Value = http
        .get(format!("{}/health", dev.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["status"], "healthy");
    // A log written to a pipe has no ANSI colour codes, and the migrations are one line.
    assert!(
        dev.startup.iter().all(|l| !l.contains('\x1b')),
        "{:#?}",
        dev.startup
    );
    let migrations: Vec<&String> = dev
        .startup
        .iter()
        .filter(|l| l.contains("migration"))
        .collect();
    assert_eq!(migrations.len(), 1, "{migrations:#?}");
    assert!(migrations[0].contains("applied 2"), "{migrations:#?}");
    let pushed = http
        .post(format!("{}/api/v1/push", dev.base))
        .body(r#"{"items":[{"queue":"q","payload":1}]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(pushed.status(), 201);

    // The quick start can make an encrypted queue: a temporary cluster, a temporary key.
    assert!(
        dev.said("encrypting with a temporary key"),
        "{:#?}",
        dev.startup
    );
    push_encrypted(&dev, "sealed", "quick-start-secret").await;
    let v = dev.pop("sealed").await;
    assert_eq!(
        v["messages"][0]["data"]["secret"], "quick-start-secret",
        "{v}"
    );
    assert!(!stored_in_clear(&dev.pg_url, "quick-start-secret").await);

    // A parked long-poll must not hold the shutdown for its whole timeout.
    let parked = tokio::spawn({
        let url = format!(
            "{}/api/v1/pop/queue/empty?wait=true&timeout=30000",
            dev.base
        );
        async move { http.get(url).send().await.map(|r| r.status()) }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;

    dev.stop().await;
    let parked = tokio::time::timeout(Duration::from_secs(5), parked)
        .await
        .expect("the parked long-poll was answered")
        .unwrap();
    assert_eq!(parked.unwrap(), 200);
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", pg_port))
            .await
            .is_err(),
        "the private PostgreSQL is stopped with regent dev"
    );
}

/// A persistent cluster keeps its key beside its data (mode 0600), and the next start
/// opens what the first one sealed.
#[tokio::test]
async fn dev_keeps_its_encryption_key_with_a_persistent_cluster() {
    let dir = std::env::temp_dir().join(format!("regent-dev-key-{}", uuid::Uuid::now_v7()));
    let arg = dir.to_str().unwrap().to_string();
    let first = Dev::start(&["--data-dir", &arg]).await;
    assert!(
        first.said("created an encryption key"),
        "{:#?}",
        first.startup
    );
    push_encrypted(&first, "vault", "kept-secret").await;
    assert!(!stored_in_clear(&first.pg_url, "kept-secret").await);
    first.stop().await;

    let key = dir.join(regent::private_pg::key::KEY_FILE);
    let mode = std::fs::metadata(&key)
        .expect("the key file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{}", key.display());

    let second = Dev::start(&["--data-dir", &arg]).await;
    assert!(
        second.said("the key kept in the data directory"),
        "{:#?}",
        second.startup
    );
    let v = second.pop("vault").await;
    assert_eq!(v["messages"][0]["data"]["secret"], "kept-secret", "{v}");
    second.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// With authentication off, `regent dev` must not serve the laptop's network: it binds
/// loopback unless `HOST` says otherwise (`serve` keeps `0.0.0.0`, which containers need).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_listens_on_loopback_unless_host_says_otherwise() {
    let dev = Dev::start_on(&[], &[], None).await;
    assert!(dev.serving.contains("http://127.0.0.1:"), "{}", dev.serving);
    dev.stop().await;
    let dev = Dev::start_on(&[], &[], Some("0.0.0.0")).await;
    assert!(
        dev.serving.contains("http://localhost:"),
        "every interface: {}",
        dev.serving
    );
    dev.stop().await;
}

/// `regent dev --citus 2`: the broker serves on a coordinator with two workers registered,
/// its tables laid out over them (the log distributed, queues copied to every node), and a
/// stop takes every node with it.
#[tokio::test]
async fn dev_on_citus_serves_on_the_coordinator_and_stops_every_node() {
    if !regent::private_pg::citus::installed() {
        eprintln!("skipped: Citus is not installed (scripts/citus)");
        return;
    }
    let dev = Dev::start(&["--citus", "2"]).await;
    let started = dev
        .startup
        .iter()
        .find(|l| l.contains("private Citus cluster started"))
        .expect("the Citus cluster's start is logged")
        .clone();
    let worker_ports: Vec<u16> = started
        .match_indices(PG_URL_PREFIX)
        .skip(1)
        .map(|(i, _)| pg_port(&started[i..]))
        .collect();
    assert_eq!(worker_ports.len(), 2, "{started}");

    let (db, conn) = tokio_postgres::connect(&dev.pg_url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let workers: i64 = db
        .query_one("SELECT count(*) FROM citus_get_active_worker_nodes()", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(workers, 2);
    let placed: Vec<(String, String)> = db
        .query(
            "SELECT table_name::text, citus_table_type FROM citus_tables
              WHERE table_name::text IN ('segments', 'queues') ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        placed,
        [
            ("queues".to_string(), "reference".to_string()),
            ("segments".to_string(), "distributed".to_string())
        ]
    );

    let item = json!({"queue": "q", "transactionId": "t1", "payload": {"n": 1}});
    let (s, v) = dev.post("/api/v1/push", json!({"items": [item]})).await;
    assert_eq!(s, 201, "{v}");
    let v = dev.pop("q").await;
    assert_eq!(v["messages"][0]["data"]["n"], 1, "{v}");

    let coordinator = pg_port(&dev.pg_url);
    dev.stop().await;
    for port in std::iter::once(coordinator).chain(worker_ports) {
        assert!(
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_err(),
            "node on port {port} is stopped with regent dev"
        );
    }
}

/// `--citus` starts a cluster of its own: with a database configured it is refused, not
/// ignored in favour of that database.
#[tokio::test]
async fn dev_refuses_citus_beside_a_configured_database() {
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        Command::new(env!("CARGO_BIN_EXE_regent"))
            .args(["dev", "--port", "0", "--citus", "2"])
            .env("DATABASE_URL", "postgres://postgres@127.0.0.1:1/postgres")
            .env("NO_COLOR", "1")
            .output(),
    )
    .await
    .expect("regent dev answers at once")
    .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--citus") && err.contains("DATABASE_URL"),
        "{err}"
    );
}

/// A port already taken is found before a PostgreSQL cluster is made for nothing: `regent
/// dev` says so and exits 1 at once.
#[tokio::test]
async fn dev_on_a_port_in_use_fails_before_starting_postgres() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_regent"))
        .args(["dev", "--port", &port])
        .env("HOST", "127.0.0.1")
        .env_remove("DATABASE_URL")
        .env_remove("PG_HOST")
        .env_remove("PG_DB")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("ends")
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("port {port} is in use")), "{err}");
    assert!(
        !err.contains(PG_URL_PREFIX),
        "no cluster was started: {err}"
    );
}
