//! Compatibility with the official Python client: `queen-mq==1.3.0` drives a real broker
//! through `tests/python/client_flow.py` (create, push + dedup, consume with auto-ack, manual
//! ack/nack, lease renewal, transaction, dead-letter queue, a `from_beginning` subscription, an
//! encrypted queue, a trace, both maintenance switches, a queue whose messages expire, delete). The plain flow runs against `regent dev` as the quick start
//! starts it, so the encrypted queue is made with the key dev keeps for itself. The client's
//! streaming SDK (`queen.streams`) runs its pipelines through `tests/python/streams_flow.py`, its
//! key/value surface through `tests/python/kv_flow.py`, its timers (`client.timers`) through
//! `tests/python/timers_flow.py` and its ephemeral queues (`client.ephemeral`) through
//! `tests/python/ephemeral_flow.py`.
//!
//! The interpreter is `$REGENT_PYTHON`, else `<crate>/.venv/bin/python`; `scripts/test` creates
//! that virtualenv and installs the client. A missing interpreter or client is a failure, never
//! a skip.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use crate::dev_command::Dev;
use crate::support::{authed_broker_with, broker_with, token};

const CLIENT_VERSION: &str = "1.3.0";
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(120);
/// The streams flow waits out windows, session gaps and a killed worker's lease.
const STREAMS_TIMEOUT: Duration = Duration::from_secs(180);
/// A short retention clock, and the seconds alone enabling retention.
const RETENTION: &[(&str, &str)] = &[
    ("RETENTION_INTERVAL", "200"),
    ("IMPLICIT_RETENTION", "true"),
];

/// The encryption key of the flows that run against the test harness's brokers.
pub(crate) const FLOW_KEY: &str =
    "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

fn python() -> PathBuf {
    match std::env::var_os("REGENT_PYTHON") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"),
    }
}

/// Panics with instructions unless `python` exists and imports the right client version.
async fn check_client(python: &PathBuf) {
    let hint = format!(
        "run `scripts/test` (it creates {}/.venv and installs queen-mq=={CLIENT_VERSION}), \
         or point REGENT_PYTHON at an interpreter that has queen-mq=={CLIENT_VERSION}",
        env!("CARGO_MANIFEST_DIR")
    );
    assert!(
        python.exists(),
        "Python interpreter {} not found: {hint}",
        python.display()
    );
    let out = Command::new(python)
        .args(["-c", "import queen; print(queen.__version__)"])
        .output()
        .await
        .unwrap_or_else(|e| panic!("cannot run {}: {e}; {hint}", python.display()));
    assert!(
        out.status.success(),
        "{} cannot `import queen` ({}): {}\n{hint}",
        python.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(
        version,
        CLIENT_VERSION,
        "{} has queen-mq {version}, this test targets {CLIENT_VERSION}: {hint}",
        python.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_1_3_0_full_flow() {
    // The flow's expiring queue is configured as the Python client configures one: with
    // retentionSeconds and no retentionEnabled.
    let dev = Dev::start_with(&[], RETENTION).await;
    run_flow(&dev.base, None).await;
    dev.stop().await;
}

/// The same flow with authentication on: the client sends its token as a bearer. The token
/// is admin's, since the flow ends by deleting its queues.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_1_3_0_with_authentication() {
    let b = authed_broker_with(|c| {
        c.queen_encryption_key = Some(FLOW_KEY.into());
        c.retention_interval = 200;
        c.implicit_retention = true;
    })
    .await;
    let admin = token("admin").tenant("py-tenant").sub("py").mint();
    run_flow(&b.url, Some(admin)).await;
}

async fn run_flow(url: &str, token: Option<String>) {
    run_flow_with(url, token, &[]).await
}

/// The flow with extra environment for the interpreter (e.g. `SSL_CERT_FILE`, which httpx
/// honours, to trust a test CA).
pub(crate) async fn run_flow_with(url: &str, token: Option<String>, env: &[(&str, &str)]) {
    run_script("client_flow.py", url, token, env).await
}

/// Every `Admin` method of the client, against a broker with data (`tests/python/admin_walk.py`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_1_3_0_admin_walk() {
    let b = broker_with(|_| {}).await;
    run_script("admin_walk.py", &b.url, None, &[]).await;
}

/// The client's streaming SDK (`queen.streams`, spec §16) against a broker
/// (`tests/python/streams_flow.py`): tumbling-window sums over four partitions, session windows
/// closed by the gap and by the idle flush, event time with allowed lateness (one late event
/// admitted, one dropped), a query whose worker process is SIGKILLed between cycles and again
/// mid-stream and resumed (every window exactly once), a changed configuration refused with 409
/// and accepted with `reset` (state wiped), two queries on one source queue, processing-time
/// windows closed by the idle flush (`ripe_at_or_before`), and a token-bucket gate's partial acks
/// (`release_lease: false`). Each compares the sink's output and the stored state with what the
/// input determines, exactly; a retried cycle is checked to replay (the last) or be refused (an
/// older one) without applying anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_1_3_0_streams() {
    let b = broker_with(|_| {}).await;
    run_script_within("streams_flow.py", &b.url, None, &[], STREAMS_TIMEOUT).await;
}

/// The streams flow with authentication on: the SDK's own HTTP client (`/streams/v1/*`) and the
/// queue client both send the token as a bearer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_1_3_0_streams_with_authentication() {
    let b = authed_broker_with(|_| {}).await;
    let user = token("read-write").tenant("py-streams").sub("py").mint();
    run_script_within("streams_flow.py", &b.url, Some(user), &[], STREAMS_TIMEOUT).await;
}

/// Key/value through the client (`tests/python/kv_flow.py`): `client.kv`'s reads and writes,
/// versions and `expect`, `putIfAbsent`/`once`, `incr` as a limiter, paging with `list_all`,
/// `KvError` codes, and the transaction builder's `kv` rider and `once` gate (a lost gate is
/// returned as `kv_precondition` and writes nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_1_3_0_kv() {
    let b = broker_with(|_| {}).await;
    run_script("kv_flow.py", &b.url, None, &[]).await;
}

/// The client's timers (`client.timers`, `client.timer(queue)`, spec §18.2) against a broker with
/// authentication on (`tests/python/timers_flow.py`): schedule, peek, the delivered message with
/// the promised id and txn consumed with the client's pop and ack, reschedule, cancel through the
/// route nothing blocks, list pages and `list_all`, an index-aligned batch, a server-owned field
/// refused by the client and `payloadZstd` by the broker (a `TimerError`), and the transaction
/// builder's timer rider (a timer set with one ack and cancelled with another).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_1_3_0_timers() {
    let b = authed_broker_with(|_| {}).await;
    let user = token("read-write").tenant("py-timers").sub("py").mint();
    run_script("timers_flow.py", &b.url, Some(user), &[]).await;
}

/// Ephemeral queues through `client.ephemeral`: every verb, the groups, a long poll, the ack
/// outcomes, the bounds, the buffered producer, and `EphemeralQueueNotFoundError`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_1_3_0_ephemeral() {
    let b = broker_with(|_| {}).await;
    run_script("ephemeral_flow.py", &b.url, None, &[]).await;
}

/// The ephemeral flow with authentication on: an admin token (deleting a queue is admin).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_1_3_0_ephemeral_with_authentication() {
    let b = authed_broker_with(|_| {}).await;
    let user = token("admin").tenant("py-ephemeral").sub("py").mint();
    run_script("ephemeral_flow.py", &b.url, Some(user), &[]).await;
}

/// Runs `tests/python/<name>` with the broker's URL; fails with its output unless it exits 0.
async fn run_script(name: &str, url: &str, token: Option<String>, env: &[(&str, &str)]) {
    run_script_within(name, url, token, env, SCRIPT_TIMEOUT).await
}

/// [`run_script`] with another time limit.
async fn run_script_within(
    name: &str,
    url: &str,
    token: Option<String>,
    env: &[(&str, &str)],
    limit: Duration,
) {
    let python = python();
    check_client(&python).await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(name);
    assert!(script.exists(), "missing {}", script.display());

    let mut child = Command::new(&python)
        .arg(&script)
        .arg(url)
        .env("QUEEN_TOKEN", token.unwrap_or_default())
        .env("PYTHONUNBUFFERED", "1")
        .env_remove("QUEEN_SDK_POP_AUTOPILOT")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", python.display()));

    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_task = tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf).await;
        buf
    });
    let err_task = tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf).await;
        buf
    });

    let status = match tokio::time::timeout(limit, child.wait()).await {
        Ok(status) => Some(status.expect("wait for the python script")),
        Err(_) => {
            let _ = child.kill().await;
            None
        }
    };
    let out = String::from_utf8_lossy(&out_task.await.unwrap()).into_owned();
    let err = String::from_utf8_lossy(&err_task.await.unwrap()).into_owned();
    let report = format!("--- stdout ---\n{out}\n--- stderr ---\n{err}");

    match status {
        None => {
            panic!("tests/python/{name} did not finish within {limit:?}\n{report}")
        }
        Some(s) if !s.success() => {
            panic!("tests/python/{name} failed ({s})\n{report}")
        }
        Some(_) => println!("{out}"),
    }
}
