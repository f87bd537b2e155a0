//! A case's world: its own PostgreSQL cluster, its brokers (`regent serve` children), the
//! queue, the load and its ledger; and the end every case shares: a few seconds more of load,
//! the drain, the checks, one summary line.

mod audit;
pub mod broker;
pub mod client;
#[path = "../../common/mod.rs"]
mod common;
pub mod ledger;
pub mod load;
pub mod netns;
pub mod slow_link;

use std::sync::Arc;
use std::time::{Duration, Instant};

use regent::private_pg::PrivateCluster;
use serde_json::json;
use tokio::sync::{Semaphore, SemaphorePermit};

use broker::Broker;
use client::{Answers, Client};
use ledger::{Book, Findings, Ledger};
use load::Load;
use netns::Host;

/// Cases at once. Each runs a cluster, a broker or two and a dozen clients; on two cores,
/// more at once makes timings (leases, long-polls) meaningless.
static RUNNING: Semaphore = Semaphore::const_new(2);
/// Load after the fault is over, before the drain.
const AFTERWARDS: Duration = Duration::from_secs(3);
/// The longest a drain may take: every acknowledged push delivered by then.
const DRAIN: Duration = Duration::from_secs(30);
/// The longest the load may take to get a push acknowledged again after a fault.
const RECOVERY: Duration = Duration::from_secs(20);

pub struct Case {
    name: &'static str,
    pub cluster: PrivateCluster,
    pub brokers: Vec<Broker>,
    pub ledger: Arc<Ledger>,
    answers: Arc<Answers>,
    urls: Arc<Vec<String>>,
    load: Option<Load>,
    started: Instant,
    recovered_in: Option<Duration>,
    /// The fault is one no client should feel (a slow link): any 503 or transport error is a
    /// finding, instead of their absence.
    calm: bool,
    _turn: SemaphorePermit<'static>,
}

impl Case {
    /// A cluster, `brokers` brokers on it (`env` added to each), the load's queue with a
    /// lease of `lease`, and the load started.
    pub async fn start(
        name: &'static str,
        brokers: usize,
        lease: Duration,
        env: &[(&str, &str)],
    ) -> Case {
        let turn = Case::turn().await;
        let started = Instant::now();
        let cluster = PrivateCluster::start(None)
            .await
            .expect("a private cluster");
        let mut started_brokers = Vec::new();
        for k in 0..brokers {
            let log = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("faults-{name}-broker{k}.log"));
            started_brokers.push(Broker::serve(&cluster.url(), env, log).await);
        }
        Case::run(name, cluster, started_brokers, lease, turn, started).await
    }

    /// This process's turn to run a case (two at a time).
    pub async fn turn() -> SemaphorePermit<'static> {
        RUNNING.acquire().await.expect("never closed")
    }

    /// One broker on a test host of its own (`host`), reaching a cluster that also listens
    /// on the host's database link, and the load started: for faults on that link.
    pub async fn on_host(name: &'static str, host: &Host, lease: Duration) -> Case {
        let turn = Case::turn().await;
        let started = Instant::now();
        let listen = format!("listen_addresses=127.0.0.1,{}", host.database_address());
        let cluster = PrivateCluster::start_with(None, &[&listen])
            .await
            .expect("a private cluster");
        trust_the_link(&cluster).await;
        let db_url = format!(
            "postgres://postgres@{}:{}/postgres",
            host.database_address(),
            cluster.port()
        );
        let log =
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("faults-{name}.log"));
        let env = [("HOST", "0.0.0.0")];
        let broker =
            Broker::serve_via(host.launcher(), &host.broker_address(), &db_url, &env, log).await;
        Case::run(name, cluster, vec![broker], lease, turn, started).await
    }

    /// The load started on brokers already serving on `cluster` (on hosts of their own, say).
    pub async fn run(
        name: &'static str,
        cluster: PrivateCluster,
        brokers: Vec<Broker>,
        lease: Duration,
        turn: SemaphorePermit<'static>,
        started: Instant,
    ) -> Case {
        let urls = Arc::new(brokers.iter().map(Broker::url).collect::<Vec<_>>());
        configure(&urls[0], load::QUEUE, lease).await;
        let ledger = Arc::new(Ledger::default());
        let answers = Arc::new(Answers::default());
        let client = |k: usize| Client::new(urls.clone(), k, answers.clone());
        let load = Load::start(client, &ledger, lease);
        Case {
            name,
            cluster,
            brokers,
            ledger,
            answers,
            urls,
            load: Some(load),
            started,
            recovered_in: None,
            calm: false,
            _turn: turn,
        }
    }

    /// For a fault no client should feel: [`Case::finish`] then fails on any 503 or
    /// transport error.
    pub fn calm(&mut self) {
        self.calm = true;
    }

    /// The 503s the clients were answered so far.
    pub fn unavailable(&self) -> u64 {
        self.answers.seen().unavailable.values().sum()
    }

    /// A careful client of this case's brokers, starting at broker `home`.
    pub fn client(&self, home: usize) -> Client {
        Client::new(self.urls.clone(), home, self.answers.clone())
    }

    /// Sends `body` to `path` on the first broker, which the abort-after-commit hook makes
    /// crash between the request's COMMIT and its answer: the request gets no answer, the
    /// broker exits on SIGABRT and is started again without the hook; then the careful
    /// client's retry of the same body, answered within 20 s.
    pub async fn crash_after_commit(
        &mut self,
        path: &str,
        body: &serde_json::Value,
    ) -> client::Reply {
        use std::os::unix::process::ExitStatusExt;
        let first = reqwest::Client::new()
            .post(format!("{}{path}", self.brokers[0].url()))
            .json(body)
            .send()
            .await;
        assert!(
            first.is_err(),
            "the request that committed got no answer: {first:?}"
        );
        let status = self.brokers[0]
            .exited(Duration::from_secs(5))
            .await
            .expect("the broker aborted after the commit");
        assert_eq!(status.signal(), Some(libc::SIGABRT), "{status}");
        self.brokers[0].restart(&[]).await;
        self.client(0)
            .post(
                path,
                body,
                client::Until::Deadline(Instant::now() + Duration::from_secs(20)),
            )
            .await
            .expect("the retried request is answered")
    }

    /// Lets the load run for `period`, which must see pushes acknowledged.
    pub async fn steady(&self, period: Duration) {
        let before = self.ledger.acknowledged();
        tokio::time::sleep(period).await;
        assert!(
            self.ledger.acknowledged() > before + 100,
            "{}: the load ran ({} pushes acknowledged in {period:?})",
            self.name,
            self.ledger.acknowledged() - before
        );
    }

    /// Call when the fault is over: waits until pushes are acknowledged again (a broker that
    /// hangs after the database returns fails here) and remembers how long that took.
    pub async fn recovered(&mut self) {
        let since = Instant::now();
        let target = self.ledger.acknowledged() + 1;
        while self.ledger.acknowledged() < target {
            assert!(
                since.elapsed() < RECOVERY,
                "{}: no push acknowledged within {RECOVERY:?} after the fault",
                self.name
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.recovered_in = Some(since.elapsed());
    }

    /// A few seconds more of load, the drain, the checks and the audit; prints the summary
    /// line, and fails the test on any finding. Returns the ledger for the case's own checks.
    pub async fn finish(mut self) -> Book {
        self.steady(AFTERWARDS).await;
        let load = self.load.take().expect("finished once");
        let drained = load.finish(&self.ledger, DRAIN).await;
        let book = self.ledger.book();
        let mut findings = book.check();
        let (logged, wrong) = audit::audit(&self.client(self.urls.len() - 1), &book).await;
        findings.failures.extend(wrong);
        let seen = self.answers.seen();
        if let Err(left) = drained {
            findings.failures.push(format!(
                "{left} acknowledged pushes still undelivered {DRAIN:?} after the producers stopped"
            ));
        }
        for line in &seen.without_retry_after {
            findings
                .failures
                .push(format!("503 without Retry-After: {line}"));
        }
        for line in seen.server_errors.iter().chain(&seen.refused) {
            findings.failures.push(format!("answered {line}"));
        }
        let felt = seen.transport_errors + seen.unavailable.values().sum::<u64>();
        if self.calm && felt > 0 {
            findings
                .failures
                .push(format!("{felt} requests failed (503s or transport errors)"));
        } else if !self.calm && felt == 0 {
            findings
                .failures
                .push("no client felt the fault: the case tested nothing".to_string());
        }
        println!("{}", self.summary(&findings, &seen, logged, drained.ok()));
        let logs: Vec<String> = self
            .brokers
            .iter()
            .map(|b| b.log.display().to_string())
            .collect();
        for b in &mut self.brokers {
            b.kill().await;
        }
        self.cluster.stop().await.expect("stopping the cluster");
        assert!(
            findings.failures.is_empty(),
            "{}: {} findings (broker logs: {logs:?}; first transport errors: {:#?}):\n{}",
            self.name,
            findings.failures.len(),
            seen.transport_samples,
            findings.failures.join("\n")
        );
        book
    }

    fn summary(
        &self,
        f: &Findings,
        seen: &client::Seen,
        logged: usize,
        drained: Option<Duration>,
    ) -> String {
        let redelivered: u64 = f.redelivered.values().sum();
        let why: Vec<String> = f
            .redelivered
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect();
        let s503: u64 = seen.unavailable.values().sum();
        let which: Vec<String> = seen
            .unavailable
            .iter()
            .map(|(k, v)| format!("{v} \"{k}\""))
            .collect();
        let ms =
            |d: Option<Duration>| d.map_or("-".into(), |d| format!("{:.1} s", d.as_secs_f64()));
        format!(
            "fault case {}: {} pushes acknowledged ({} as duplicates of a lost answer), \
             {} unconfirmed ({} of them delivered); \
             {} stored; {} delivered {} times ({} redeliveries{}{}); {} 503s ({}); {} transport errors \
             ({} timeouts); recovered in {}, drained in {}; {:.1} s",
            self.name,
            f.acknowledged,
            f.duplicates,
            f.unconfirmed,
            f.unconfirmed_delivered,
            logged,
            f.unique_delivered,
            f.deliveries,
            redelivered,
            if why.is_empty() { "" } else { ": " },
            why.join(", "),
            s503,
            if which.is_empty() { "none".into() } else { which.join(", ") },
            seen.transport_errors,
            seen.timeouts,
            ms(self.recovered_in),
            ms(drained),
            self.started.elapsed().as_secs_f64()
        )
    }
}

/// Sets the queue's lease time.
pub async fn configure(url: &str, queue: &str, lease: Duration) {
    let answer = reqwest::Client::new()
        .post(format!("{url}/api/v1/configure"))
        .json(&json!({"queue": queue, "options": {"leaseTime": lease.as_secs()}}))
        .send()
        .await
        .expect("configure");
    assert!(
        answer.status().is_success(),
        "configure: {}",
        answer.status()
    );
}

/// One plain request a case makes outside the load (no retries): its JSON answer, which must
/// be a success.
pub async fn call(
    url: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<&serde_json::Value>,
) -> serde_json::Value {
    let mut req = reqwest::Client::new().request(method, format!("{url}{path}"));
    if let Some(b) = body {
        req = req.json(b);
    }
    let res = req.send().await.expect("answered");
    assert!(res.status().is_success(), "{path}: {}", res.status());
    res.json().await.expect("JSON")
}

/// A plain connection to a case's cluster, for the case's own reads and faults.
pub async fn database(url: &str) -> tokio_postgres::Client {
    let (db, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connecting to the case's cluster");
    tokio::spawn(connection);
    db
}

/// Lets a test host's addresses in (the private cluster trusts loopback only).
async fn trust_the_link(cluster: &PrivateCluster) {
    use std::io::Write;
    let hba = cluster.data_dir().join("pg_hba.conf");
    let mut f = std::fs::OpenOptions::new().append(true).open(&hba).unwrap();
    writeln!(f, "host all all 10.78.0.0/16 trust").unwrap();
    let db = database(&cluster.url()).await;
    db.batch_execute("SELECT pg_reload_conf()").await.unwrap();
}
