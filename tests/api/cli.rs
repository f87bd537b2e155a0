//! The operator's command line (`regent ping|status|tail|push|pop|ack|replay|queue|
//! maintenance|config|completion`, docs/cli.md) as an operator runs it: the binary as a child
//! process against a real broker, its output read back, its exit code checked.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use crate::support::*;

pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) out: String,
    pub(crate) err: String,
}

impl Run {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.out).unwrap_or_else(|e| panic!("{e}: {}", self.out))
    }

    fn lines(&self) -> Vec<Value> {
        self.out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }
}

/// A configuration file of the test's own, so that no test reads another's contexts (or the
/// user's).
pub(crate) fn config_file() -> String {
    let dir = std::env::temp_dir().join(format!("regent-cli-{}", uuid::Uuid::new_v4()));
    dir.join("config.yaml").display().to_string()
}

pub(crate) fn command(url: &str, config: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_regent"));
    c.args(args)
        .env("REGENT_SERVER", url)
        .env("REGENT_CONFIG", config)
        .env_remove("REGENT_TOKEN")
        .env_remove("REGENT_CA_FILE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    c
}

/// Runs `regent ARGS` against `url` with `stdin`, to its end.
pub(crate) async fn run_at(url: &str, config: &str, args: &[&str], stdin: &str) -> Run {
    let mut child = command(url, config, args).spawn().expect("regent runs");
    let mut input = child.stdin.take().unwrap();
    let text = stdin.to_string();
    let feed = tokio::spawn(async move {
        let _ = input.write_all(text.as_bytes()).await;
    });
    let out = tokio::time::timeout(Duration::from_secs(180), child.wait_with_output())
        .await
        .expect("regent ends within 3 minutes")
        .unwrap();
    feed.await.unwrap();
    Run {
        code: out.status.code().expect("an exit code"),
        out: String::from_utf8(out.stdout).unwrap(),
        err: String::from_utf8(out.stderr).unwrap(),
    }
}

pub(crate) async fn run(b: &Broker, args: &[&str]) -> Run {
    run_at(&b.url, &config_file(), args, "").await
}

#[tokio::test]
async fn ping_answers_0_and_an_unreachable_broker_2() {
    let b = broker().await;
    let r = run(&b, &["ping", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(r.json()["status"], "healthy");
    let r = run(&b, &["ping", "-o", "table"]).await;
    assert!(r.out.contains("is healthy"), "{}", r.out);

    let closed = format!("http://127.0.0.1:{}", free_port());
    let r = run_at(&closed, &config_file(), &["ping"], "").await;
    assert_eq!(r.code, 2, "{} {}", r.out, r.err);
    assert!(r.err.contains(&closed), "{}", r.err);
    assert!(!r.err.contains("panicked"), "{}", r.err);
}

#[tokio::test]
async fn a_hundred_thousand_lines_arrive_whole_and_in_order_per_partition() {
    let b = broker().await;
    let lines: String = (0..100_000)
        .map(|i| format!("{{\"n\":{i},\"customer\":\"c{}\"}}\n", i % 10))
        .collect();
    let r = run_at(
        &b.url,
        &config_file(),
        &["push", "orders", "--partition-key", "customer"],
        &lines,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.err
            .contains("100000 lines: 100000 pushed to orders, 0 duplicates, 0 failed"),
        "{}",
        r.err
    );
    let r = run(&b, &["tail", "orders"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let mut last = std::collections::HashMap::new();
    let mut count = 0;
    for m in r.lines() {
        let n = m["data"]["n"].as_i64().unwrap();
        let customer = m["data"]["customer"].as_str().unwrap().to_string();
        assert_eq!(m["partition"], customer.as_str(), "{m}");
        if let Some(before) = last.insert(customer, n) {
            assert!(n > before, "{n} after {before} in one partition");
        }
        count += 1;
    }
    assert_eq!(count, 100_000);
    assert_eq!(last.len(), 10);
}

#[tokio::test]
async fn bad_lines_are_named_and_the_good_ones_arrive() {
    let b = broker().await;
    let input = "{\"k\":\"a\",\"n\":1}\nnot json\n\n{\"n\":2}\n{\"k\":\"a\",\"n\":3}\n";
    let r = run_at(
        &b.url,
        &config_file(),
        &["push", "q", "--partition-key", "k"],
        input,
    )
    .await;
    assert_eq!(r.code, 1, "{}", r.err);
    assert!(r.err.contains("line 2: not JSON"), "{}", r.err);
    assert!(
        r.err.contains("line 4: no string or number field \"k\""),
        "{}",
        r.err
    );
    assert!(
        r.err
            .contains("4 lines: 2 pushed to q, 0 duplicates, 2 failed"),
        "{}",
        r.err
    );
    let r = run(&b, &["tail", "q"]).await;
    let ns: Vec<i64> = r
        .lines()
        .iter()
        .map(|m| m["data"]["n"].as_i64().unwrap())
        .collect();
    assert_eq!(ns, [1, 3]);
}

#[tokio::test]
async fn tail_follow_prints_a_message_pushed_after_it_started_and_leaves_no_group() {
    let b = broker().await;
    b.push("live", "p", &["before"]).await;
    let mut child = command(&b.url, &config_file(), &["tail", "live", "--follow"])
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), out.next_line())
        .await
        .expect("the message already there")
        .unwrap()
        .unwrap();
    assert!(first.contains("\"before\""), "{first}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    b.push("live", "p", &["after"]).await;
    let next = tokio::time::timeout(Duration::from_secs(30), out.next_line())
        .await
        .expect("a message pushed after the tail started")
        .unwrap()
        .unwrap();
    assert!(next.contains("\"after\""), "{next}");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGINT) };
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("tail ends on SIGINT")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let (_, groups) = b.get("/api/v1/consumer-groups").await;
    assert!(
        !groups.to_string().contains("regent-tail-"),
        "the tail's group is gone: {groups}"
    );
}

#[tokio::test]
async fn pop_prints_each_format_ack_reads_what_pop_printed_and_an_empty_pop_is_4() {
    let b = broker().await;
    b.push("jobs", "p", &["t1", "t2", "t3"]).await;
    let url = b.url.clone();
    let r = run(&b, &["pop", "jobs", "--batch", "3", "-o", "ndjson"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let popped = r.lines();
    assert_eq!(popped.len(), 3);
    assert!(popped
        .iter()
        .all(|m| m["leaseId"].as_str().is_some_and(|l| !l.is_empty())));

    let r = run_at(&url, &config_file(), &["ack", "-o", "json"], &r.out).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let acks = r.json();
    assert_eq!(acks.as_array().unwrap().len(), 3);
    assert!(
        acks.as_array()
            .unwrap()
            .iter()
            .all(|a| a["success"] == true),
        "{acks}"
    );

    let r = run(&b, &["pop", "jobs", "-o", "json"]).await;
    assert_eq!(r.code, 4, "nothing left: {} {}", r.out, r.err);
    assert_eq!(r.json(), json!([]));

    b.push("jobs", "p", &["t4"]).await;
    let r = run(&b, &["pop", "jobs", "-o", "yaml"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("transactionId: t4"), "{}", r.out);
    // A group of its own reads from the first message.
    let r = run(&b, &["pop", "jobs", "--cg", "other", "-o", "table"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.out.contains("TRANSACTION ID") && r.out.contains("t1"),
        "{}",
        r.out
    );
}

#[tokio::test]
async fn ack_by_transaction_id_and_failed_acks_are_refused_with_1() {
    let b = broker().await;
    let (pid, lease, tx) = b.popped("jobs").await;
    let r = run(
        &b,
        &[
            "ack",
            &tx,
            "--partition-id",
            &pid,
            "--lease",
            &lease,
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(r.json()[0]["leaseReleased"], true);
    let r = run(&b, &["ack", &tx]).await;
    assert_eq!(r.code, 1, "{}", r.err);
    assert!(r.err.contains("--partition-id is required"), "{}", r.err);
    let r = run(
        &b,
        &[
            "ack",
            "zz",
            "--partition-id",
            &pid,
            "--lease",
            &lease,
            "--failed",
        ],
    )
    .await;
    assert_eq!(r.code, 1, "{} {}", r.out, r.err);
    assert!(r.err.contains("zz:"), "{}", r.err);
}

#[tokio::test]
async fn replay_moves_a_group_back_and_to_the_end() {
    let b = broker().await;
    b.push("r", "p", &["x1", "x2"]).await;
    let r = run(&b, &["tail", "r", "--cg", "readers"]).await;
    assert_eq!(r.lines().len(), 2, "{}", r.err);
    let r = run(&b, &["tail", "r", "--cg", "readers"]).await;
    assert_eq!(r.code, 4, "read already: {}", r.out);

    let r = run(
        &b,
        &[
            "replay", "r", "--cg", "readers", "--to", "1h ago", "-o", "json",
        ],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(r.json()["partitionsUpdated"], 1, "{}", r.out);
    let r = run(&b, &["tail", "r", "--cg", "readers"]).await;
    assert_eq!(r.lines().len(), 2, "replayed: {}", r.err);

    b.push("r", "p", &["x3"]).await;
    let r = run(&b, &["replay", "r", "--cg", "readers", "--to", "end"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let r = run(&b, &["tail", "r", "--cg", "readers"]).await;
    assert_eq!(r.code, 4, "skipped to the end: {}", r.out);

    let r = run(&b, &["replay", "r", "--cg", "readers", "--to", "yesterday"]).await;
    assert_eq!(r.code, 1);
    assert!(r.err.contains("is not a time"), "{}", r.err);
}

#[tokio::test]
async fn lag_lists_groups_behind_and_exits_4_when_none_is() {
    let b = broker().await;
    let r = run(&b, &["lag", "--min", "1"]).await;
    assert_eq!(r.code, 4, "{} {}", r.out, r.err);
    b.push("slow", "p", &["s1", "s2"]).await;
    let r = run(&b, &["pop", "slow", "--cg", "laggard", "--auto-ack"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    b.refresh_stats().await;
    let r = run(&b, &["lag", "--min", "1", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{} {}", r.out, r.err);
    let rows = r.json();
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .any(|row| row["consumer_group"] == "laggard" && row["queue_name"] == "slow"),
        "{rows}"
    );
}

#[tokio::test]
async fn queues_are_configured_described_cleared_and_deleted_only_with_yes() {
    let b = broker().await;
    let r = run(
        &b,
        &[
            "queue",
            "configure",
            "billing",
            "--set",
            "leaseTime=90",
            "--set",
            "retryLimit=2",
            "--namespace",
            "acct",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    b.push("billing", "p", &["b1"]).await;
    let r = run(&b, &["queue", "describe", "billing", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(r.json()["namespace"], "acct");
    let r = run(&b, &["queue", "list", "-o", "ndjson"]).await;
    assert!(
        r.lines().iter().any(|q| q["name"] == "billing"),
        "{}",
        r.out
    );
    let r = run(&b, &["queue", "describe", "nope"]).await;
    assert_eq!(r.code, 1, "{}", r.err);
    assert!(r.err.contains("404: Queue not found"), "{}", r.err);

    let r = run(&b, &["queue", "clear", "billing"]).await;
    assert_eq!(r.code, 1);
    assert!(r.err.contains("add --yes"), "{}", r.err);
    let r = run(&b, &["queue", "clear", "billing", "--yes", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let r = run(&b, &["tail", "billing"]).await;
    assert_eq!(r.code, 4, "cleared: {}", r.out);

    let r = run(&b, &["queue", "delete", "billing"]).await;
    assert_eq!(r.code, 1);
    let r = run(&b, &["queue", "delete", "billing", "--yes", "-o", "json"]).await;
    assert_eq!(
        (r.code, &r.json()["existed"]),
        (0, &json!(true)),
        "{}",
        r.err
    );
    let r = run(&b, &["queue", "delete", "billing", "--yes", "-o", "json"]).await;
    assert_eq!(r.code, 4, "a second delete does nothing: {}", r.out);
}

#[tokio::test]
async fn status_and_maintenance_switches() {
    let b = broker().await;
    b.push("s", "p", &["m1"]).await;
    b.sample_now().await;
    let r = run(&b, &["status", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(
        r.json()["brokers"].as_array().map(Vec::len),
        Some(1),
        "{}",
        r.out
    );
    let table = run(&b, &["status", "-o", "table"]).await;
    assert!(
        table.out.contains("brokers seen in the last 5 minutes: "),
        "{}",
        table.out
    );
    assert!(
        r.json()["queues"].to_string().contains("\"s\""),
        "{}",
        r.out
    );
    assert!(r.json()["overview"].get("queues").is_some(), "{}", r.out);

    let r = run(&b, &["maintenance", "on", "--pop", "-o", "json"]).await;
    assert_eq!(
        (r.code, &r.json()["popMaintenanceMode"]),
        (0, &json!(true)),
        "{}",
        r.err
    );
    let r = run(&b, &["maintenance", "get", "-o", "json"]).await;
    assert_eq!(r.json()["popMaintenanceMode"], true, "{}", r.out);
    let r = run(&b, &["maintenance", "off", "--pop", "-o", "json"]).await;
    assert_eq!(r.json()["popMaintenanceMode"], false, "{}", r.out);
}

#[tokio::test]
async fn contexts_and_their_precedence_flag_then_environment_then_context() {
    let b = broker().await;
    let config = config_file();
    let closed = format!("http://127.0.0.1:{}", free_port());
    let no_env = |args: &[&str]| {
        let mut c = command(&b.url, &config, args);
        c.env_remove("REGENT_SERVER");
        c
    };
    let status = |mut c: Command| async move { c.output().await.unwrap() };

    let out = status(no_env(&[
        "config",
        "set-context",
        "here",
        "--server",
        &b.url,
    ]))
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = status(no_env(&[
        "config",
        "set-context",
        "gone",
        "--server",
        &closed,
    ]))
    .await;
    assert!(out.status.success());
    let out = status(no_env(&["config", "current-context"])).await;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "here",
        "the first is current"
    );
    let out = status(no_env(&["ping"])).await;
    assert_eq!(out.status.code(), Some(0), "the current context's server");

    let out = status(no_env(&["config", "use-context", "gone"])).await;
    assert!(out.status.success());
    let out = status(no_env(&["ping"])).await;
    assert_eq!(out.status.code(), Some(2), "now the unreachable one");
    // The environment wins over the context, the flag over both.
    let out = status(command(&b.url, &config, &["ping"])).await;
    assert_eq!(out.status.code(), Some(0), "REGENT_SERVER wins");
    let out = status(command(&closed, &config, &["ping", "--server", &b.url])).await;
    assert_eq!(out.status.code(), Some(0), "--server wins");
    let out = status(no_env(&["ping", "--context", "here"])).await;
    assert_eq!(out.status.code(), Some(0), "--context picks another");

    let out = status(no_env(&["config", "get-contexts", "-o", "json"])).await;
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert!(
        listed
            .to_string()
            .contains("\"current\":true,\"name\":\"gone\""),
        "{listed}"
    );
    let out = status(no_env(&["config", "use-context", "nowhere"])).await;
    assert_eq!(out.status.code(), Some(1));
}

#[tokio::test]
async fn a_refused_token_is_3_and_a_good_one_from_a_token_file_works() {
    let b = authed_broker().await;
    let r = run(&b, &["queue", "list"]).await;
    assert_eq!(r.code, 3, "no token: {}", r.err);
    let r = run(&b, &["queue", "list", "--token", "not-a-token"]).await;
    assert_eq!(r.code, 3, "{}", r.err);
    assert!(!r.err.contains("panicked"), "{}", r.err);
    let reader = token("read-only").tenant("acme").mint();
    let r = run(&b, &["maintenance", "on", "--token", &reader]).await;
    assert_eq!(
        r.code, 3,
        "a read-only token cannot switch maintenance: {}",
        r.err
    );

    let config = config_file();
    let file = std::path::Path::new(&config).with_file_name("token");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, format!("{}\n", token("admin").tenant("acme").mint())).unwrap();
    let mut c = command(
        &b.url,
        &config,
        &[
            "config",
            "set-context",
            "prod",
            "--server",
            &b.url,
            "--token-file",
            file.to_str().unwrap(),
        ],
    );
    assert!(c.output().await.unwrap().status.success());
    let r = run_at(&b.url, &config, &["queue", "list", "-o", "json"], "").await;
    assert_eq!(r.code, 0, "the context's token file: {}", r.err);
}

#[tokio::test]
async fn completion_scripts_for_three_shells() {
    let b = broker().await;
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef regent"),
        ("fish", "complete -c regent"),
    ] {
        let r = run(&b, &["completion", shell]).await;
        assert_eq!(r.code, 0, "{shell}: {}", r.err);
        assert!(
            r.out.contains(marker),
            "{shell}: {}",
            &r.out[..200.min(r.out.len())]
        );
        assert!(
            r.out.contains("tail"),
            "{shell} completes the operator's commands"
        );
    }
}

#[tokio::test]
async fn consumer_groups_are_listed_described_moved_and_deleted() {
    let b = broker().await;
    b.push("cgq", "p", &["g1", "g2"]).await;
    let r = run(&b, &["tail", "cgq", "--cg", "readers"]).await;
    assert_eq!(r.lines().len(), 2, "{}", r.err);
    let r = run(&b, &["cg", "list", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.json()
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "readers" && g["queueName"] == "cgq"),
        "{}",
        r.out
    );
    let r = run(&b, &["cg", "describe", "readers", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(r.json()[0]["queue"], "cgq", "{}", r.out);
    let r = run(&b, &["cg", "describe", "nobody"]).await;
    assert_eq!(r.code, 1, "{}", r.out);

    let r = run(
        &b,
        &["cg", "seek", "readers", "--queue", "cgq", "--to", "1h ago"],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    let r = run(&b, &["tail", "cgq", "--cg", "readers"]).await;
    assert_eq!(r.lines().len(), 2, "read again after the seek: {}", r.err);

    let r = run(&b, &["cg", "delete", "readers"]).await;
    assert_eq!(r.code, 1, "needs --yes");
    let r = run(&b, &["cg", "delete", "readers", "--yes", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let r = run(&b, &["cg", "list", "-o", "json"]).await;
    assert_eq!(r.code, 4, "no group left: {}", r.out);
}

#[tokio::test]
async fn dead_letters_are_listed_requeued_with_a_dry_run_first_and_deleted() {
    let b = broker().await;
    b.push("dq", "p", &["d1", "d2", "d3"]).await;
    for _ in 0..3 {
        let pop = b.pop("dq", "batch=1").await;
        let m = &pop["messages"][0];
        let ack = json!([{"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                          "leaseId": pop["leaseId"], "status": "dlq", "error": "bad input"}]);
        assert_eq!(b.ack_batch(None, ack).await[0]["dlq"], true);
    }

    let r = run(&b, &["dlq", "list", "--queue", "dq", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(r.json().as_array().unwrap().len(), 3, "{}", r.out);
    let r = run(&b, &["dlq", "requeue"]).await;
    assert_eq!(r.code, 1, "a selection is required");
    assert!(r.err.contains("say which dead letters"), "{}", r.err);

    let r = run(
        &b,
        &["dlq", "requeue", "--queue", "dq", "--dry-run", "-o", "json"],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(
        (&r.json()["matched"], &r.json()["dryRun"]),
        (&json!(3), &json!(true))
    );
    // A table says what a dry run would do, never that it was done (issue 50).
    let r = run(
        &b,
        &[
            "dlq",
            "requeue",
            "--queue",
            "dq",
            "--dry-run",
            "-o",
            "table",
        ],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(r.out.matches("would requeue").count(), 3, "{}", r.out);
    assert!(!r.out.contains("requeued"), "{}", r.out);
    assert!(
        r.err.contains("3 matched, 3 would be requeued"),
        "{}",
        r.err
    );
    let r = run(&b, &["dlq", "list", "--queue", "dq", "-o", "json"]).await;
    assert_eq!(
        r.json().as_array().unwrap().len(),
        3,
        "the dry run changed nothing"
    );

    let r = run(
        &b,
        &[
            "dlq",
            "requeue",
            "--queue",
            "dq",
            "--reason",
            "bad input",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(r.json()["requeued"], 3, "{}", r.out);
    assert!(r.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["verdict"] == "requeued"));
    let r = run(&b, &["dlq", "list", "--queue", "dq"]).await;
    assert_eq!(r.code, 4, "none left: {}", r.out);
    let r = run(&b, &["dlq", "delete", "--all", "-o", "json"]).await;
    assert_eq!(r.code, 4, "nothing to delete: {}", r.out);
    let r = run(&b, &["tail", "dq"]).await;
    assert_eq!(
        r.lines().len(),
        6,
        "three pushed and three requeued: {}",
        r.out
    );
}

#[tokio::test]
async fn messages_partitions_and_traces() {
    let b = broker().await;
    b.push("mq", "east", &["m1", "m2"]).await;
    b.push("mq", "west", &["m3"]).await;
    let r = run(&b, &["partition", "list", "mq", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let listed = r.json();
    let mut names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["east", "west"], "{}", r.out);
    let r = run(&b, &["partition", "describe", "mq", "east", "-o", "json"]).await;
    assert_eq!(r.json()["stats"]["total"], 2, "{}", r.out);
    let r = run(&b, &["partition", "describe", "mq", "north"]).await;
    assert_eq!(r.code, 1);

    let r = run(&b, &["messages", "list", "--queue", "mq", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let listed = r.json();
    let m1 = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["transactionId"] == "m1")
        .unwrap()
        .clone();
    let pid = m1["partitionId"].as_str().unwrap();
    let r = run(&b, &["messages", "get", pid, "m1", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(r.json()["payload"], json!({"tx": "m1"}));
    let r = run(&b, &["messages", "get", pid, "nope"]).await;
    assert_eq!(r.code, 1, "{}", r.err);

    let (s, v) = b
        .post(
            "/api/v1/traces",
            json!({"transactionId": "m1", "partitionId": pid,
                                        "data": {"step": "checked"}, "traceNames": ["order-7"]}),
        )
        .await;
    assert_eq!(s, reqwest::StatusCode::CREATED, "{v}");
    let r = run(&b, &["traces", "by-name", "order-7", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("checked"), "{}", r.out);
    let r = run(&b, &["traces", "get", pid, "m1", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let r = run(&b, &["traces", "names", "-o", "json"]).await;
    assert!(r.out.contains("order-7"), "{}", r.out);

    let r = run(&b, &["messages", "delete", pid, "m1", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let r = run(&b, &["tail", "mq", "--partition", "east"]).await;
    let left: Vec<Value> = r
        .lines()
        .iter()
        .map(|m| m["transactionId"].clone())
        .collect();
    assert_eq!(left, [json!("m2")], "m1 deleted");

    b.push("mq", "west", &["m4"]).await;
    let seek = [
        "partition",
        "seek",
        "mq",
        "west",
        "--cg",
        "late",
        "-o",
        "json",
    ];
    let r = run(&b, &seek).await;
    assert_eq!(
        r.code, 4,
        "a group with no cursor there yet: {} {}",
        r.out, r.err
    );
    let r = run(
        &b,
        &[
            "pop",
            "mq",
            "--partition",
            "west",
            "--cg",
            "late",
            "--auto-ack",
        ],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    let r = run(&b, &seek).await;
    assert_eq!(r.code, 0, "{} {}", r.out, r.err);
    let r = run(&b, &["tail", "mq", "--partition", "west", "--cg", "late"]).await;
    assert_eq!(r.code, 4, "moved to the end: {}", r.out);
}

#[tokio::test]
async fn apply_shows_changes_applies_them_changes_nothing_the_second_time_and_prunes_with_yes() {
    let b = broker().await;
    b.push("stray", "p", &["s1"]).await;
    let config = config_file();
    let dir = std::path::Path::new(&config)
        .parent()
        .unwrap()
        .to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("queues.yaml");
    std::fs::write(
        &file,
        "queues:\n  orders:\n    namespace: shop\n    options:\n      leaseTime: 60\n      retryLimit: 5\n  audit: {}\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let apply = |extra: &'static [&'static str]| {
        let mut args = vec!["apply", "-f", f];
        args.extend_from_slice(extra);
        let (url, config) = (b.url.clone(), config.clone());
        async move { run_at(&url, &config, &args, "").await }
    };

    let r = apply(&["--dry-run"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.err.contains("+ queue orders: created") && r.err.contains("+ queue audit"),
        "{}",
        r.err
    );
    let r = run(&b, &["queue", "describe", "orders"]).await;
    assert_eq!(r.code, 1, "a dry run creates nothing");

    let r = apply(&[]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let (_, q) = b.get("/api/v1/status/queues/orders").await;
    assert_eq!(
        (
            &q["queue"]["options"]["leaseTime"],
            &q["queue"]["namespace"]
        ),
        (&json!(60), &json!("shop"))
    );
    let r = apply(&[]).await;
    assert_eq!(r.code, 4, "the second apply changes nothing: {}", r.err);
    assert!(r.err.contains("nothing to change"), "{}", r.err);

    // A key changed by hand is put back; keys the file does not name keep their value.
    b.configure(
        "orders",
        json!({"leaseTime": 99, "retryLimit": 5, "ttl": 7200}),
    )
    .await;
    let r = apply(&[]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.err.contains("~ queue orders: leaseTime 99 -> 60"),
        "{}",
        r.err
    );
    let (_, q) = b.get("/api/v1/status/queues/orders").await;
    assert_eq!(
        (
            &q["queue"]["options"]["leaseTime"],
            &q["queue"]["options"]["ttl"]
        ),
        (&json!(60), &json!(7200))
    );

    let r = apply(&["--prune"]).await;
    assert_eq!(r.code, 1, "pruning needs --yes: {}", r.err);
    assert!(
        r.err.contains("- queue stray: deleted (pruned)"),
        "{}",
        r.err
    );
    let r = apply(&["--prune", "--yes"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let (_, gone) = b.get("/api/v1/status/queues/stray").await;
    assert_eq!(gone["error"], "Queue not found");
    let r = apply(&["--prune", "--yes"]).await;
    assert_eq!(r.code, 4, "{}", r.err);

    std::fs::write(&file, "queues:\n  orders:\n    lease: 60\n").unwrap();
    let r = apply(&[]).await;
    assert_eq!(r.code, 1);
    assert!(r.err.contains("unknown field `lease`"), "{}", r.err);
}

#[tokio::test]
async fn key_values_timers_and_stream_queries_are_inspected() {
    let b = broker().await;
    let (s, v) = b
        .post(
            "/api/v1/kv",
            json!({"operations": [
                {"op": "put", "ns": "counters", "key": "page/home", "value": 3, "forever": true},
                {"op": "put", "ns": "counters", "key": "page/about", "value": 1, "forever": true}]}),
        )
        .await;
    assert_eq!(s, reqwest::StatusCode::OK, "{v}");
    let r = run(&b, &["kv", "get", "counters", "page/home", "-o", "json"]).await;
    assert_eq!((r.code, &r.json()["value"]), (0, &json!(3)), "{}", r.err);
    let r = run(&b, &["kv", "get", "counters", "page/none", "-o", "json"]).await;
    assert_eq!(r.code, 4, "{}", r.out);
    let r = run(
        &b,
        &["kv", "list", "counters", "--prefix", "page/", "-o", "json"],
    )
    .await;
    let keys: Vec<Value> = r
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["key"].clone())
        .collect();
    assert_eq!(keys, [json!("page/about"), json!("page/home")]);

    let (s, v) = b
        .post(
            "/api/v1/timers",
            json!({"operations": [{"op": "schedule", "queue": "reminders", "timerKey": "invoice/41",
                                   "payload": "eyJ4IjoxfQ==", "delayMs": 600000}]}),
        )
        .await;
    assert_eq!(s, reqwest::StatusCode::OK, "{v}");
    let r = run(&b, &["timers", "list", "-o", "json"]).await;
    assert_eq!(r.json()[0]["pending"], 1, "{}", r.out);
    let r = run(&b, &["timers", "list", "reminders", "-o", "json"]).await;
    assert_eq!(r.json()[0]["timerKey"], "invoice/41", "{}", r.out);
    let r = run(
        &b,
        &["timers", "get", "reminders", "invoice/41", "-o", "json"],
    )
    .await;
    assert_eq!((r.code, &r.json()["found"]), (0, &json!(true)), "{}", r.err);
    let r = run(
        &b,
        &["timers", "cancel", "reminders", "invoice/41", "-o", "json"],
    )
    .await;
    assert_eq!(r.code, 0, "{} {}", r.out, r.err);
    let r = run(&b, &["timers", "cancel", "reminders", "invoice/41"]).await;
    assert_eq!(r.code, 4, "already cancelled: {}", r.out);
    let r = run(&b, &["timers", "list"]).await;
    assert_eq!(r.code, 4, "none pending: {}", r.out);

    let r = run(&b, &["stream", "list"]).await;
    assert_eq!(r.code, 4, "no query yet: {}", r.out);
    let (s, v) = b
        .post(
            "/streams/v1/queries",
            json!({"name": "clicks-per-second", "source_queue": "clicks", "config_hash": "h1"}),
        )
        .await;
    assert!(s.is_success(), "{v}");
    let r = run(&b, &["stream", "list", "-o", "json"]).await;
    assert_eq!(r.json()[0]["name"], "clicks-per-second", "{}", r.out);
    let id = r.json()[0]["query_id"].as_str().unwrap().to_string();
    let r = run(&b, &["stream", "partitions", &id, "-o", "json"]).await;
    assert_eq!(
        r.code, 4,
        "no partition has run a cycle: {} {}",
        r.out, r.err
    );
    let r = run(&b, &["stream", "partitions", "not-a-query"]).await;
    assert_eq!(r.code, 1, "{}", r.err);
}

#[tokio::test]
async fn a_429_is_retried_after_its_retry_after_and_the_push_arrives() {
    // A tenant allowed one request a second: the second push is answered 429 with
    // Retry-After, and the command waits and sends it again.
    let b = broker_with(|c| {
        c.tenant_limits = Some(r#"{"*": {"rate": 1, "burst": 1}}"#.into());
    })
    .await;
    let r = run_at(
        &b.url,
        &config_file(),
        &["push", "limited", "--batch", "1"],
        "{\"n\":1}\n{\"n\":2}\n",
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.err.contains("2 lines: 2 pushed to limited"), "{}", r.err);
    let r = run(&b, &["tail", "limited"]).await;
    assert_eq!(r.lines().len(), 2, "{} {}", r.out, r.err);
    // What the command waited out: two requests back to back, and the second is refused.
    let push = json!({"items": [{"queue": "limited", "payload": {}}]});
    let first = b.post("/api/v1/push", push.clone()).await.0;
    let second = b.post("/api/v1/push", push).await.0;
    assert!(
        [first, second].contains(&reqwest::StatusCode::TOO_MANY_REQUESTS),
        "{first} {second}"
    );
}

#[tokio::test]
async fn a_message_is_retried_and_filed_as_a_dead_letter_and_the_dead_letter_deleted() {
    let b = broker().await;
    b.push("ops", "p", &["o1", "o2"]).await;
    let pop = b.pop("ops", "batch=2").await;
    b.ack_all(None, &pop).await;
    let pid = pop["partitionId"].as_str().unwrap().to_string();

    let r = run(&b, &["messages", "retry", &pid, "o1", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.json()["copy"].is_object(), "{}", r.out);
    let r = run(&b, &["tail", "ops"]).await;
    assert_eq!(r.lines().len(), 3, "the copy is read again: {}", r.out);

    let r = run(
        &b,
        &["messages", "dlq", &pid, "o2", "--cg", "audit", "-o", "json"],
    )
    .await;
    assert_eq!(r.code, 0, "{} {}", r.out, r.err);
    let r = run(&b, &["dlq", "list", "--cg", "audit", "-o", "json"]).await;
    let listed = r.json();
    assert_eq!(listed[0]["transactionId"], "o2", "{}", r.out);
    let id = listed[0]["deadLetterId"].to_string();
    let r = run(&b, &["dlq", "delete", "--id", &id, "-o", "json"]).await;
    assert_eq!((r.code, &r.json()["deleted"]), (0, &json!(1)), "{}", r.out);
    let r = run(&b, &["dlq", "list", "--cg", "audit"]).await;
    assert_eq!(r.code, 4, "{}", r.out);
}

#[tokio::test]
async fn envelopes_keep_their_transaction_ids_and_a_second_push_is_all_duplicates() {
    let b = broker().await;
    let lines = "{\"payload\":{\"n\":1},\"partition\":\"a\",\"transactionId\":\"e-1\"}\n\
                 {\"payload\":{\"n\":2},\"partition\":\"b\",\"transactionId\":\"e-2\"}\n";
    let r = run_at(
        &b.url,
        &config_file(),
        &["push", "env", "--envelope"],
        lines,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    let r = run_at(
        &b.url,
        &config_file(),
        &["push", "env", "--envelope"],
        lines,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.err
            .contains("2 lines: 0 pushed to env, 2 duplicates, 0 failed"),
        "{}",
        r.err
    );
    let r = run(
        &b,
        &["pop", "env", "--partition", "b", "--wait", "-o", "json"],
    )
    .await;
    assert_eq!(r.json()[0]["transactionId"], "e-2", "{}", r.out);
    let r = run_at(
        &b.url,
        &config_file(),
        &["push", "env", "--envelope"],
        "[1]\n",
    )
    .await;
    assert_eq!(r.code, 1);
    assert!(
        r.err
            .contains("line 1: with --envelope each line is an object"),
        "{}",
        r.err
    );
}

#[tokio::test]
async fn a_context_is_deleted_and_a_new_one_needs_a_server() {
    let b = broker().await;
    let config = config_file();
    let r = run_at(
        &b.url,
        &config,
        &["config", "set-context", "x", "--server", &b.url],
        "",
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    let r = run_at(&b.url, &config, &["config", "set-context", "y"], "").await;
    assert_eq!(r.code, 1);
    assert!(r.err.contains("give it a --server"), "{}", r.err);
    let r = run_at(&b.url, &config, &["config", "delete-context", "x"], "").await;
    assert_eq!(r.code, 0, "{}", r.err);
    let r = run_at(&b.url, &config, &["config", "current-context"], "").await;
    assert_eq!(r.code, 4, "no current context left: {}", r.out);
    let r = run_at(&b.url, &config, &["config", "delete-context", "x"], "").await;
    assert_eq!(r.code, 1);
}
