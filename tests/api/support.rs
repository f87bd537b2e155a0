#![allow(dead_code)]
//! The integration-test harness: one private PostgreSQL per test binary (the same code as
//! `regent dev`), or the server named by `DATABASE_URL`; a fresh database per test, cloned
//! from a migrated template; a real broker on a loopback port; a small HTTP client.

use std::time::Duration;

use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use regent::config::Config;
use regent::private_pg::citus::CitusCluster;
use regent::private_pg::PrivateCluster;
use regent::rules::tx_hash::tx_hash;
use regent::server::{self, RunningServer};
use regent::store::frames;
use regent::store::Layout;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::process::Child;
use tokio::sync::OnceCell;
use tokio_postgres::NoTls;
use uuid::Uuid;

#[path = "../common/mod.rs"]
mod common;
use crate::wire;
pub use common::{acks, free_port};

const TEMPLATE: &str = "regent_template";

/// The PostgreSQL every test of this binary uses.
enum Server {
    /// One PostgreSQL: its admin URL, and that URL without the database name.
    Single { admin: String, base: String },
    /// A Citus coordinator and workers, with `REGENT_TEST_CITUS=<workers>` set: the same tests
    /// against Regent's tables distributed over the workers.
    Citus(CitusCluster),
}

static SERVER: OnceCell<Server> = OnceCell::const_new();

async fn server() -> &'static Server {
    SERVER
        .get_or_init(|| async {
            // `RUST_LOG=...` shows the brokers' logs beside a failing test's output.
            if std::env::var_os("RUST_LOG").is_some() {
                let _ = tracing_subscriber::fmt()
                    .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
                    .with_test_writer()
                    .try_init();
            }
            let server = match citus_workers() {
                Some(workers) => citus_server(workers).await,
                None => single_server().await,
            };
            let template = match &server {
                Server::Single { base, .. } => format!("{base}/{TEMPLATE}"),
                Server::Citus(cluster) => cluster
                    .create_database(TEMPLATE)
                    .await
                    .expect("Citus template database"),
            };
            regent::store::Store::migrate(&template)
                .await
                .expect("migrate template");
            server
        })
        .await
}

/// `REGENT_TEST_CITUS`: how many Citus workers the tests run against (none when unset).
fn citus_workers() -> Option<usize> {
    let v = std::env::var("REGENT_TEST_CITUS").ok()?;
    Some(v.parse().expect("REGENT_TEST_CITUS is a number of workers"))
}

async fn citus_server(workers: usize) -> Server {
    let cluster = CitusCluster::start(workers, None)
        .await
        .expect("private Citus cluster");
    Server::Citus(cluster)
}

async fn single_server() -> Server {
    let admin = match std::env::var("DATABASE_URL") {
        Ok(url) => url,
        Err(_) => {
            let cluster = PrivateCluster::start(None).await.expect("private cluster");
            let url = cluster.url();
            // The postmaster dies with this process (PDEATHSIG); nothing to stop.
            std::mem::forget(cluster);
            url
        }
    };
    let base = admin[..admin.rfind('/').expect("url has a database")].to_string();
    let (c, conn) = tokio_postgres::connect(&admin, NoTls)
        .await
        .expect("connect");
    let h = tokio::spawn(conn);
    c.batch_execute(&format!("DROP DATABASE IF EXISTS {TEMPLATE}"))
        .await
        .expect("drop template");
    c.batch_execute(&format!("CREATE DATABASE {TEMPLATE}"))
        .await
        .expect("create template");
    drop(c);
    let _ = h.await;
    Server::Single { admin, base }
}

/// True, after saying so, when the tests run on Citus and `what` is only one PostgreSQL's:
/// the caller returns early.
pub async fn single_only(what: &str) -> bool {
    let citus = layout().await == Layout::Citus;
    if citus {
        eprintln!("not on Citus: {what}");
    }
    citus
}

/// The layout the tests' databases have.
pub async fn layout() -> Layout {
    match server().await {
        Server::Single { .. } => Layout::Single,
        Server::Citus(_) => Layout::Citus,
    }
}

/// Broker A on a fresh database, and broker B on the same one, as two `regent serve`
/// processes would be: each with its own pool and its own in-memory hints.
pub async fn two_brokers() -> (Broker, Broker) {
    let a = broker().await;
    let b = Broker::attach(&a.db_url).await;
    (a, b)
}

/// `n` requests sent at once, the i-th through `a` when i is even and `b` when it is odd:
/// their answers, in order. How the race tests send the same write together.
pub async fn alternating<'a, T, F, Fut>(a: &'a Broker, b: &'a Broker, n: usize, send: F) -> Vec<T>
where
    F: Fn(&'a Broker, usize) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    futures::future::join_all((0..n).map(|i| send(if i % 2 == 0 { a } else { b }, i))).await
}

/// The push route's body: one message per transaction id to `partition`, each payload
/// `{"tx": <its id>}`.
pub fn push_body(queue: &str, partition: &str, txids: &[&str]) -> Value {
    let items: Vec<Value> = txids
        .iter()
        .map(|t| json!({"queue": queue, "partition": partition, "transactionId": t, "payload": {"tx": t}}))
        .collect();
    json!({ "items": items })
}

/// A broker on its own fresh database.
pub struct Broker {
    pub url: String,
    pub db_url: String,
    pub http: reqwest::Client,
    pub server: Option<RunningServer>,
}

pub async fn broker() -> Broker {
    broker_with(|_| {}).await
}

pub async fn broker_with(tune: impl FnOnce(&mut Config)) -> Broker {
    let db_url = fresh_database().await;
    start_on(test_config(tune), db_url).await
}

/// A broker that verifies tokens (`JWT_ENABLED`): HS256 with [`SECRET`], the tokens
/// [`token`] mints.
pub async fn authed_broker() -> Broker {
    authed_broker_with(|_| {}).await
}

/// [`authed_broker`], then `tune` (another algorithm, keys, an issuer, tenant settings...).
pub async fn authed_broker_with(tune: impl FnOnce(&mut Config)) -> Broker {
    broker_with(|c| {
        c.jwt_enabled = true;
        c.jwt_secret = Some(SECRET.into());
        tune(c);
    })
    .await
}

/// `regent serve` as a child process on `db_url` with extra environment, once it serves (its
/// log dropped); and its port.
pub async fn serve(db_url: &str, env: &[(&str, &str)]) -> (Child, u16) {
    let port = common::free_port();
    (common::serve(db_url, port, env, None).await, port)
}

/// The defaults, but stats rounds only when a test asks for one (`refresh_stats`), so what
/// a test reads does not depend on how fast the machine runs it.
fn test_config(tune: impl FnOnce(&mut Config)) -> Config {
    let mut config = Config::defaults();
    config.db_pool_size = 8;
    config.stats_interval_ms = 3_600_000;
    tune(&mut config);
    config
}

impl Broker {
    /// An in-process broker on a database that already exists (another process's, say).
    pub async fn attach(db_url: &str) -> Broker {
        Broker::attach_with(db_url, |c| c.db_pool_size = 4).await
    }
}

async fn start_on(config: Config, db_url: String) -> Broker {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let srv = server::start(config, &db_url, listener)
        .await
        .expect("broker starts");
    Broker {
        url: format!("http://{}", srv.addr),
        db_url,
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap(),
        server: Some(srv),
    }
}

/// A new database cloned from the migrated template.
pub async fn fresh_database() -> String {
    let name = format!("t_{}", Uuid::now_v7().simple());
    let (admin, base) = match server().await {
        Server::Single { admin, base } => (admin, base),
        Server::Citus(cluster) => {
            return cluster
                .copy_database(TEMPLATE, &name)
                .await
                .expect("create test database");
        }
    };
    let (c, conn) = tokio_postgres::connect(admin, NoTls)
        .await
        .expect("connect");
    let h = tokio::spawn(conn);
    c.batch_execute(&format!("CREATE DATABASE {name} TEMPLATE {TEMPLATE}"))
        .await
        .expect("create test database");
    drop(c);
    let _ = h.await;
    format!("{base}/{name}")
}

impl Broker {
    /// A direct connection to this broker's database, for assertions on stored state and for
    /// holding transactions open.
    /// How many transaction ids the index holds: in all, or of the messages logged in one
    /// partition (the index is keyed by hash alone, so they are found through the log).
    pub async fn indexed(&self, partition: Option<&str>) -> i64 {
        let db = self.db().await;
        let Some(pid) = partition else {
            return db
                .query_one("SELECT count(*) FROM tx_index", &[])
                .await
                .expect("count index entries")
                .get(0);
        };
        let p = Uuid::parse_str(pid).expect("partition id");
        let mut hashes = Vec::new();
        for r in db
            .query("SELECT frames FROM segments WHERE partition_id = $1", &[&p])
            .await
            .expect("read the log")
        {
            for f in frames::iter(r.get(0)) {
                hashes.push(tx_hash(p, &f.expect("frame decodes").transaction_id));
            }
        }
        db.query_one(
            "SELECT count(*) FROM tx_index WHERE hash = ANY ($1)",
            &[&hashes],
        )
        .await
        .expect("count index entries")
        .get(0)
    }

    /// [`Broker::indexed`] summed over the partitions of a queue.
    pub async fn indexed_in_queue(&self, queue: &str) -> i64 {
        let rows = self
            .db()
            .await
            .query(
                "SELECT p.id::text FROM partitions p JOIN queues q ON q.id = p.queue_id
                  WHERE q.name = $1",
                &[&queue],
            )
            .await
            .expect("partitions of the queue");
        let mut n = 0;
        for r in rows {
            n += self.indexed(Some(r.get(0))).await;
        }
        n
    }

    pub async fn db(&self) -> tokio_postgres::Client {
        let (c, conn) = tokio_postgres::connect(&self.db_url, NoTls)
            .await
            .expect("connect to test database");
        tokio::spawn(conn);
        c
    }

    pub async fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&str>,
    ) -> (StatusCode, Value) {
        self.request_as(None, method, path, body).await
    }

    /// A request carrying `token` as a bearer, when given.
    pub async fn request_as(
        &self,
        token: Option<&str>,
        method: reqwest::Method,
        path: &str,
        body: Option<&str>,
    ) -> (StatusCode, Value) {
        let mut req = self.http.request(method, format!("{}{}", self.url, path));
        if let Some(t) = token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let res = req.send().await.expect("request sent");
        let status = res.status();
        let text = res.text().await.expect("body read");
        let v = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, v)
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.request(reqwest::Method::POST, path, Some(&body.to_string()))
            .await
    }

    /// Posts a body exactly as given (malformed JSON included).
    pub async fn post_raw(&self, path: &str, body: &str) -> (StatusCode, Value) {
        self.request(reqwest::Method::POST, path, Some(body)).await
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.request(reqwest::Method::GET, path, None).await
    }

    /// One series of this broker's `/metrics/prometheus`.
    pub async fn metric(&self, series: &str) -> f64 {
        let (s, text) = self.get("/metrics/prometheus").await;
        assert_eq!(s, StatusCode::OK);
        sample(text.as_str().expect("an exposition"), series)
    }

    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.request(reqwest::Method::DELETE, path, None).await
    }

    /// Configures a queue with the given options; panics unless the broker accepts them.
    pub async fn configure(&self, queue: &str, options: Value) -> Value {
        let (s, v) = self
            .post(
                "/api/v1/configure",
                json!({"queue": queue, "options": options}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
        v
    }

    /// Pushes one message per transaction id to a partition; asserts they were queued.
    pub async fn push(&self, queue: &str, partition: &str, txids: &[&str]) -> Vec<Value> {
        self.push_as(None, queue, partition, txids).await
    }

    /// [`Broker::push`], its verdicts read.
    pub async fn pushed(&self, queue: &str, partition: &str, txids: &[&str]) -> Vec<wire::Pushed> {
        wire::read(&Value::from(self.push(queue, partition, txids).await))
    }

    /// [`Broker::push`]: the id of the partition the messages went to.
    pub async fn push_pid(&self, queue: &str, partition: &str, txids: &[&str]) -> String {
        self.pushed(queue, partition, txids).await[0]
            .partition_id
            .clone()
            .expect("push answers partition_id")
    }

    /// [`Broker::push`] with a bearer token.
    pub async fn push_as(
        &self,
        token: Option<&str>,
        queue: &str,
        partition: &str,
        txids: &[&str],
    ) -> Vec<Value> {
        let out = self.push_verdicts_as(token, queue, partition, txids).await;
        for r in &out {
            assert_eq!(wire::read::<wire::Pushed>(r).status, "queued", "{r}");
        }
        out
    }

    /// Pushes one message per transaction id to a partition; asserts the push was answered
    /// 201: the verdicts, whatever they are (`duplicate`, `buffered`, …).
    pub async fn push_verdicts(&self, queue: &str, partition: &str, txids: &[&str]) -> Vec<Value> {
        self.push_verdicts_as(None, queue, partition, txids).await
    }

    async fn push_verdicts_as(
        &self,
        token: Option<&str>,
        queue: &str,
        partition: &str,
        txids: &[&str],
    ) -> Vec<Value> {
        let body = push_body(queue, partition, txids).to_string();
        let (s, v) = self
            .request_as(token, reqwest::Method::POST, "/api/v1/push", Some(&body))
            .await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        let items = v.as_array().expect("push answers an array").clone();
        let read: Vec<wire::Pushed> = wire::read(&v);
        assert_eq!(
            read.iter()
                .map(|p| p.transaction_id.as_str())
                .collect::<Vec<_>>(),
            txids,
            "one answer per item, in order"
        );
        items
    }

    /// A non-waiting pop on the wildcard route with the given extra query.
    pub async fn pop(&self, queue: &str, query: &str) -> Value {
        let (s, v) = self
            .get(&format!("/api/v1/pop/queue/{queue}?wait=false&{query}"))
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
        wire::read::<wire::Popped>(&v);
        v
    }

    /// One message pushed to a fresh queue's partition `p` and popped: (partition id, lease
    /// id, transaction id), for a bundle to ack.
    pub async fn popped(&self, queue: &str) -> (String, String, String) {
        self.push(queue, "p", &[&format!("{queue}-in")]).await;
        let pop: wire::Popped = wire::read(&self.pop(queue, "batch=1").await);
        let m = &pop.messages[0];
        (
            m.partition_id.clone(),
            m.lease_id.clone(),
            m.transaction_id.clone(),
        )
    }

    /// Transaction ids of an answer that lists messages (a pop's, say), in order.
    pub fn txids(pop: &Value) -> Vec<String> {
        let listed: wire::Listed = wire::read(pop);
        listed
            .messages
            .into_iter()
            .map(|m| m.transaction_id)
            .collect()
    }

    /// Payloads (`data`) of an answer that lists messages, in order.
    pub fn data(pop: &Value) -> Vec<Value> {
        let listed: wire::Listed = wire::read(pop);
        listed.messages.into_iter().map(|m| m.data).collect()
    }

    /// Acks every message of a pop answer as completed, each under the lease it was delivered
    /// with; asserts that every one of them was acknowledged.
    pub async fn ack_all(&self, group: Option<&str>, pop: &Value) {
        let messages = pop["messages"].as_array().expect("a pop answer");
        let answers = self
            .ack_batch(group, json!(acks(messages, "completed")))
            .await;
        assert_eq!(answers.len(), messages.len(), "{answers:?}");
        for a in &answers {
            assert!(
                wire::read::<wire::Acked>(a).success,
                "ack of {pop}: {answers:?}"
            );
        }
    }

    /// [`Broker::ack_batch`], its items read.
    pub async fn acked(&self, group: Option<&str>, items: Value) -> Vec<wire::Acked> {
        wire::read(&Value::from(self.ack_batch(group, items).await))
    }

    pub async fn ack_batch(&self, group: Option<&str>, items: Value) -> Vec<Value> {
        let (s, v) = self
            .post(
                "/api/v1/ack/batch",
                json!({"consumerGroup": group, "acknowledgments": items}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
        wire::read::<Vec<wire::Acked>>(&v);
        v.as_array().expect("ack answers an array").clone()
    }

    /// The (committed, lease live, retry count) of a cursor, read from the database.
    pub async fn cursor(&self, partition_id: &str, group: &str) -> Option<(i64, bool, i32)> {
        let db = self.db().await;
        db.query_opt(
            "SELECT committed, lease_id IS NOT NULL AND lease_expires_at > now(), retry_count
               FROM cursor_state WHERE partition_id = $1::text::uuid AND consumer_group = $2",
            &[&partition_id, &group],
        )
        .await
        .unwrap()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
    }
}

impl Broker {
    /// On Citus, a connection to this broker's database on each worker, with each worker's
    /// port (the node Citus names for a shard); none on one PostgreSQL.
    pub async fn workers(&self) -> Vec<(u16, tokio_postgres::Client)> {
        let Server::Citus(cluster) = server().await else {
            return Vec::new();
        };
        let db = &self.db_url[self.db_url.rfind('/').expect("url has a database") + 1..];
        let mut out = Vec::new();
        for w in cluster.workers() {
            let url = w.url();
            let url = format!(
                "{}/{db}",
                &url[..url.rfind('/').expect("url has a database")]
            );
            let (c, conn) = tokio_postgres::connect(&url, NoTls)
                .await
                .expect("connect to a worker");
            tokio::spawn(conn);
            out.push((w.port(), c));
        }
        out
    }
}

impl Broker {
    /// This broker's in-memory state (wakeups, peers, ...), for tests that watch it.
    pub fn runtime(&self) -> &regent::memory::Runtime {
        self.server.as_ref().expect("running").service.runtime()
    }

    /// Writes what this broker counted to the queue series now, rather than at its next
    /// flush (every 5 s).
    pub async fn flush_series(&self) {
        let s = &self.server.as_ref().expect("running").service;
        s.flush_series().await.expect("series written");
    }

    /// Runs a stats round now (waiting for one running), rather than at the next
    /// `STATS_INTERVAL_MS`: the inspection routes' counts then include every write so far.
    pub async fn refresh_stats(&self) {
        let s = &self.server.as_ref().expect("running").service;
        let round = s.refresh_stats(true).await.expect("stats counted");
        assert!(round.ran, "a forced round always runs");
    }

    /// One retention pass now (messages, dead letters, the series), rather than at the
    /// next tick of the retention clock.
    pub async fn retention_pass(&self) {
        let s = &self.server.as_ref().expect("running").service;
        s.retention_pass().await.expect("retention ran");
    }

    /// Writes this broker's fleet sample now, rather than at its next (every
    /// `METRICS_SAMPLE_INTERVAL`).
    pub async fn sample_now(&self) {
        let s = &self.server.as_ref().expect("running").service;
        s.fleet().sample().await.expect("sample written");
    }

    /// One bounded batch of the fleet's expired samples deleted now; how many went.
    pub async fn expire_samples(&self) -> i64 {
        let s = &self.server.as_ref().expect("running").service;
        s.fleet().expire_samples().await.expect("samples expired")
    }

    /// This broker's id in the fleet's samples (`workerId`).
    pub fn broker_id(&self) -> String {
        self.server
            .as_ref()
            .expect("running")
            .service
            .broker_id()
            .to_string()
    }

    /// Another broker on the database at `db_url`, with its own pool and its own in-memory
    /// state (wakeups, ready lists, sweeps, remembered deliveries), as a second `regent serve`
    /// process would have; `tune` adjusts its configuration.
    pub async fn attach_with(db_url: &str, tune: impl FnOnce(&mut Config)) -> Broker {
        start_on(test_config(tune), db_url.to_string()).await
    }
}

/// An answer's status, its `Retry-After` (when it has one) and its JSON body (`null` when it
/// has none): what the tests of refusals compare.
pub async fn with_retry_after(res: reqwest::Response) -> (StatusCode, Option<String>, Value) {
    let status = res.status();
    let retry = res
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    (status, retry, res.json().await.unwrap_or(Value::Null))
}

/// The secret of [`authed_broker`]'s brokers and of [`token`]'s tokens.
pub const SECRET: &str = "test-secret";

/// A token for `role` as `regent token` mints one: HS256 with [`SECRET`], valid for ten
/// minutes, naming no tenant and no subject until told to.
pub fn token(role: &str) -> Token<'_> {
    Token {
        secret: SECRET,
        role,
        tenant: None,
        sub: None,
        expires_in_secs: Some(600),
    }
}

/// The claims of a token to mint ([`token`]); [`Token::mint`] signs them.
pub struct Token<'a> {
    secret: &'a str,
    role: &'a str,
    tenant: Option<&'a str>,
    sub: Option<&'a str>,
    expires_in_secs: Option<u64>,
}

impl<'a> Token<'a> {
    pub fn tenant(self, tenant: &'a str) -> Self {
        Token {
            tenant: Some(tenant),
            ..self
        }
    }

    pub fn sub(self, sub: &'a str) -> Self {
        Token {
            sub: Some(sub),
            ..self
        }
    }

    /// Valid for `secs` from now; `None`: no `exp` claim, valid for ever.
    pub fn expires_in(self, secs: Option<u64>) -> Self {
        Token {
            expires_in_secs: secs,
            ..self
        }
    }

    /// Signed with another secret than [`SECRET`].
    pub fn secret(self, secret: &'a str) -> Self {
        Token { secret, ..self }
    }

    pub fn mint(&self) -> String {
        regent::http::auth::mint(
            self.secret,
            &regent::http::auth::Minted {
                role: self.role,
                tenant: self.tenant,
                sub: self.sub,
                expires_in_secs: self.expires_in_secs,
            },
        )
    }
}

/// A token of exactly `claims` (nothing added), signed with `alg` by `key`: a shared secret
/// for the HS algorithms, a PEM private key for the others; `kid` in its header when given.
/// For the tokens [`token`] cannot make: no tenant, a roles array, claims of the wrong type,
/// other algorithms and keys.
pub fn signed(alg: Algorithm, key: &str, kid: Option<&str>, claims: Value) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_string);
    let key = match alg {
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => {
            Ok(EncodingKey::from_secret(key.as_bytes()))
        }
        Algorithm::EdDSA => EncodingKey::from_ed_pem(key.as_bytes()),
        Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(key.as_bytes()),
        _ => EncodingKey::from_rsa_pem(key.as_bytes()),
    };
    encode(&header, &claims, &key.expect("a key for the algorithm")).unwrap()
}

/// The lease of a pop answer (`""` for an `autoAck` pop); the test fails without one.
pub fn lease_of(pop: &Value) -> String {
    wire::read::<wire::Popped>(pop)
        .lease_id
        .unwrap_or_else(|| panic!("no lease in {pop}"))
}

/// The `error` of a pop answer that delivered nothing (`lease_held`, ...).
pub fn pop_error(pop: &Value) -> Option<String> {
    wire::read::<wire::Popped>(pop).error
}

/// The `name` of each element of an answer's `partitions`, in order.
pub fn partition_names(v: &Value) -> Vec<String> {
    v["partitions"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .filter_map(|p| p["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The value of one sample line `name{labels} value` of an exposition.
pub fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
        .parse()
        .unwrap()
}
