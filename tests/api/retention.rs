//! Retention through HTTP (issue 12): whole segments deleted once due, by age alone or by age
//! once every group has passed them; cursors below the first kept message continue from it;
//! counts and depth count only what is kept; traces follow their messages.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{broker_with, single_only, Broker};

async fn retaining(implicit: bool) -> Broker {
    broker_with(|c| {
        c.retention_interval = 50;
        c.implicit_retention = implicit;
    })
    .await
}

/// Waits until the queue holds `total` messages (what retention keeps, whoever has read it),
/// or panics after 30 s (a bound for a slow machine; a pass runs every 50 ms). Not the depth:
/// a message under a lease is not pending, so the depth can reach its mark before a pass.
async fn until_total(b: &Broker, queue: &str, total: i64) {
    let give_up = Instant::now() + PATIENCE;
    let path = format!("/api/v1/resources/queues/{queue}");
    while Instant::now() < give_up {
        b.refresh_stats().await;
        let (_, v) = b.get(&path).await;
        if v["totals"]["total"] == total {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, v) = b.get(&path).await;
    panic!(
        "{queue} never held {total}: {v}; {}",
        where_things_are(b).await
    );
}

/// How long a test waits for the retention clock before it fails.
const PATIENCE: Duration = Duration::from_secs(30);

/// Makes every segment the queue holds now look appended two hours ago, so that a retention
/// of an hour finds them due whatever the machine's speed; what is pushed later is young.
async fn age_queue(b: &Broker, queue: &str) {
    let db = b.db().await;
    let parts: Vec<String> = db
        .query(
            "SELECT p.id::text FROM partitions p JOIN queues q ON q.id = p.queue_id
              WHERE q.name = $1",
            &[&queue],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let n = db
        .execute(
            // One timestamp for all (Citus refuses a STABLE function of a column here).
            "UPDATE segments SET created_at = now() - interval '2 hours'
              WHERE partition_id = ANY ($1::text[]::uuid[])",
            &[&parts],
        )
        .await
        .unwrap();
    assert!(n > 0, "{queue} has segments to age");
}

/// The log's and the cursors' positions, for a failure's message.
async fn where_things_are(b: &Broker) -> String {
    let db = b.db().await;
    let q = |sql: &'static str| {
        let db = &db;
        async move {
            let rows = db.query(sql, &[]).await.unwrap();
            rows.iter()
                .map(|r| r.get::<_, String>(0))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    format!(
        "partitions [{}]; segments [{}]; cursors [{}]; subscriptions [{}]",
        q("SELECT format('%s first %s next %s', name, first_offset, next_offset) FROM partition_heads")
            .await,
        q("SELECT format('%s..%s at %s', base_offset, end_offset, created_at) FROM segments").await,
        q(
            "SELECT format('%s committed %s lease %s..%s until %s', consumer_group, committed,
                         lease_id, lease_end, lease_expires_at) FROM cursor_state"
        )
        .await,
        q("SELECT format('%s after %s', consumer_group, start_after) FROM subscriptions").await,
    )
}

/// A broker whose queue `logs` keeps messages an hour (retention switched on), holding
/// `old-1` and `old-2`.
async fn hour_of_logs() -> Broker {
    let b = retaining(false).await;
    b.configure(
        "logs",
        json!({"retentionEnabled": true, "retentionSeconds": 3600}),
    )
    .await;
    b.push("logs", "Default", &["old-1", "old-2"]).await;
    b
}

async fn partition_of(b: &Broker, queue: &str) -> Value {
    let v = b.pop(queue, "consumerGroup=probe&autoAck=true").await;
    v["messages"][0]["partitionId"].clone()
}

#[tokio::test]
async fn messages_older_than_retention_seconds_are_deleted_consumed_or_not() {
    let b = hour_of_logs().await;
    let pid = partition_of(&b, "logs").await;
    let trace =
        json!({"transactionId": "old-1", "partitionId": pid, "data": {}, "traceNames": "t"});
    assert_eq!(b.post("/api/v1/traces", trace).await.0, StatusCode::CREATED);
    // A group holding a lease over the old messages.
    let held = b.pop("logs", "consumerGroup=slow&batch=10").await;
    assert_eq!(Broker::txids(&held).len(), 2, "{held}");
    age_queue(&b, "logs").await;
    b.push("logs", "Default", &["new-1"]).await;
    until_total(&b, "logs", 1).await;
    b.flush_series().await;
    let (_, v) = b.get("/api/v1/analytics/retention?queue=logs").await;
    assert_eq!(
        v["totals"]["expired"], 2,
        "the series counts what retention deleted: {v}"
    );

    for group in ["slow", "fresh"] {
        let v = b
            .pop("logs", &format!("consumerGroup={group}&batch=10"))
            .await;
        assert_eq!(Broker::txids(&v), vec!["new-1"], "{group}: {v}");
    }
    let v = b.pop("logs", "batch=10").await;
    assert_eq!(Broker::txids(&v), vec!["new-1"], "queue mode: {v}");
    // The slow group's lease over deleted messages is gone: its ack changes nothing.
    let item = json!({"transactionId": "old-1", "partitionId": pid, "leaseId": held["leaseId"], "status": "completed"});
    let r = b.ack_batch(Some("slow"), json!([item])).await;
    assert_eq!(r[0]["success"], false, "{r:?}");
    // Without a lease, an ack of a deleted message is an ack behind the cursor: accepted,
    // and nothing moves.
    let item = json!({"transactionId": "old-2", "partitionId": pid, "status": "completed"});
    let r = b.ack_batch(Some("fresh"), json!([item])).await;
    assert_eq!(r[0]["success"], true, "{r:?}");
    let v = b.pop("logs", "consumerGroup=late&batch=10").await;
    assert_eq!(Broker::txids(&v), vec!["new-1"], "{v}");
    let (_, v) = b
        .get(&format!("/api/v1/traces/{}/old-1", pid.as_str().unwrap()))
        .await;
    assert_eq!(v["traces"], json!([]), "traces follow their message: {v}");
    let (_, v) = b.get("/api/v1/resources/queues/logs").await;
    assert_eq!(v["totals"]["total"], 1, "{v}");
    // A retried push of a deleted message is still a duplicate (the index keeps its own
    // clock); the message it duplicates is gone, so it has no id.
    let item =
        json!({"queue": "logs", "partition": "Default", "transactionId": "old-1", "payload": {}});
    let (s, again) = b.post("/api/v1/push", json!({ "items": [item] })).await;
    assert_eq!(s, StatusCode::CREATED, "{again}");
    assert_eq!(
        (&again[0]["status"], &again[0]["message_id"]),
        (&json!("duplicate"), &Value::Null),
        "{again}"
    );
}

/// A log retention empties keeps its head: the next push continues its offsets (a group that
/// has read everything reads the new message), and the partition still tells its last push,
/// though no segment is left to tell it (partition_heads).
#[tokio::test]
async fn a_log_emptied_by_retention_keeps_its_head_and_its_last_push() {
    let b = hour_of_logs().await;
    let v = b
        .pop("logs", "consumerGroup=done&batch=10&autoAck=true")
        .await;
    assert_eq!(Broker::txids(&v), ["old-1", "old-2"], "{v}");
    age_queue(&b, "logs").await;
    let before = last_activity(&b, "logs").await;
    assert!(before.is_number() || before.is_string(), "{before}");
    until_total(&b, "logs", 0).await;
    assert_eq!(last_activity(&b, "logs").await, before);

    b.push("logs", "Default", &["new-1"]).await;
    let v = b.pop("logs", "consumerGroup=done&batch=10").await;
    assert_eq!(Broker::txids(&v), ["new-1"], "{v}");
}

/// The partition listing's last push of the queue's one partition.
async fn last_activity(b: &Broker, queue: &str) -> Value {
    let (_, v) = b
        .get(&format!("/api/v1/resources/partitions?queue={queue}"))
        .await;
    v["partitions"][0]["lastActivity"].clone()
}

/// A broker whose retention clock never ticks (each test runs its passes itself), with the
/// queue `jobs` keeping messages an hour after every group has passed them.
async fn completing_jobs() -> Broker {
    let b = broker_with(|c| c.retention_interval = 3_600_000).await;
    b.configure(
        "jobs",
        json!({"retentionEnabled": true, "completedRetentionSeconds": 3600}),
    )
    .await;
    b
}

#[tokio::test]
async fn completed_retention_waits_for_every_group() {
    // Passes run when the test says, so each one sees the joins and acks before it: this
    // test once raced a pass of the 50 ms clock (the race is the test below).
    let b = completing_jobs().await;
    b.push("jobs", "Default", &["j1"]).await;
    let ack = |group: &'static str, v: Value| {
        let item = json!({"transactionId": "j1", "partitionId": v["messages"][0]["partitionId"],
                          "leaseId": v["leaseId"], "status": "completed"});
        (group, item)
    };
    let (g, item) = ack("a", b.pop("jobs", "consumerGroup=a").await);
    assert_eq!(
        b.ack_batch(Some(g), json!([item])).await[0]["success"],
        true
    );
    let (_, item) = ack("", b.pop("jobs", "").await);
    assert_eq!(b.ack_batch(None, json!([item])).await[0]["success"], true);
    // Group b joins the queue without reading j1 yet.
    let (s, _) = b
        .get("/api/v1/pop/queue/jobs/partition/nowhere?wait=false&consumerGroup=b")
        .await;
    assert_eq!(s, StatusCode::OK);
    age_queue(&b, "jobs").await;
    // No pass may delete j1 while b is behind it.
    b.retention_pass().await;
    b.retention_pass().await;
    // b has not passed j1: it stays, and b reads it.
    let v = b.pop("jobs", "consumerGroup=b").await;
    if Broker::txids(&v) != vec!["j1"] {
        panic!("b did not get j1: {v}; {}", where_things_are(&b).await);
    }
    let (g, item) = ack("b", v);
    assert_eq!(
        b.ack_batch(Some(g), json!([item])).await[0]["success"],
        true
    );
    b.retention_pass().await;
    let (_, v) = b.get("/api/v1/resources/queues/jobs").await;
    assert_eq!(
        v["totals"]["total"], 0,
        "j1 was not deleted once every group had passed it: {v}"
    );
}

/// A group that joins (and an ack that completes what the others passed) while a pass is
/// between reading the queue's groups and deleting: the pass must not delete what the new
/// group has not read. The pass is held there by a lock on `segments` the test takes, which
/// its delete waits for; the join and the ack commit meanwhile.
#[tokio::test]
async fn a_group_that_joins_while_a_pass_runs_keeps_what_it_has_not_read() {
    if single_only("the pass is held by a lock on one PostgreSQL's segments table").await {
        return;
    }
    let b = completing_jobs().await;
    b.push("jobs", "Default", &["j1"]).await;
    let item = |v: &Value| {
        json!([{"transactionId": "j1", "partitionId": v["messages"][0]["partitionId"],
                "leaseId": v["leaseId"], "status": "completed"}])
    };
    let a_popped = b.pop("jobs", "consumerGroup=a").await;
    let queue_mode = b.pop("jobs", "").await;
    assert_eq!(
        b.ack_batch(None, item(&queue_mode)).await[0]["success"],
        true
    );
    age_queue(&b, "jobs").await;

    let holder = b.db().await;
    holder
        .batch_execute("BEGIN; LOCK TABLE segments IN SHARE MODE")
        .await
        .unwrap();
    let meanwhile = async {
        let watcher = b.db().await;
        let give_up = Instant::now() + PATIENCE;
        loop {
            let waiting: i64 = watcher
                .query_one(
                    "SELECT count(*) FROM pg_locks
                      WHERE NOT granted AND relation = 'segments'::regclass",
                    &[],
                )
                .await
                .unwrap()
                .get(0);
            if waiting > 0 {
                break;
            }
            assert!(
                Instant::now() < give_up,
                "the pass never reached its delete"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // The pass has read the groups (a only) and waits to delete: b joins, a passes j1.
        let (s, _) = b
            .get("/api/v1/pop/queue/jobs/partition/nowhere?wait=false&consumerGroup=b")
            .await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(
            b.ack_batch(Some("a"), item(&a_popped)).await[0]["success"],
            true
        );
        holder.batch_execute("COMMIT").await.unwrap();
    };
    tokio::join!(b.retention_pass(), meanwhile);
    let v = b.pop("jobs", "consumerGroup=b").await;
    if Broker::txids(&v) != vec!["j1"] {
        panic!(
            "b joined before the pass deleted, and did not get j1: {v}; {}",
            where_things_are(&b).await
        );
    }
}

#[tokio::test]
async fn the_retention_switch_is_needed_unless_the_broker_reads_seconds_alone() {
    for implicit in [false, true] {
        let b = retaining(implicit).await;
        // What the Python client sends: the seconds, never the switch.
        b.configure("py", json!({"retentionSeconds": 3600})).await;
        b.configure(
            "off",
            json!({"retentionSeconds": 3600, "retentionEnabled": false}),
        )
        .await;
        b.push("py", "Default", &["m"]).await;
        b.push("off", "Default", &["m"]).await;
        age_queue(&b, "py").await;
        age_queue(&b, "off").await;
        if implicit {
            until_total(&b, "py", 0).await;
        } else {
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert_eq!(Broker::txids(&b.pop("py", "").await), vec!["m"]);
        }
        assert_eq!(
            Broker::txids(&b.pop("off", "").await),
            vec!["m"],
            "implicit {implicit}"
        );
    }
}

/// `maxWaitTimeSeconds` evicts (deletes, as Queen 0.15 does) messages older than that, with
/// or without `retentionEnabled`, on the retention clock.
#[tokio::test]
async fn max_wait_time_evicts_old_messages_without_the_retention_switch() {
    let b = retaining(false).await;
    b.configure("waits", json!({"maxWaitTimeSeconds": 3600}))
        .await;
    b.push("waits", "Default", &["stale"]).await;
    b.pop("waits", "consumerGroup=g&batch=0&autoAck=true").await;
    b.push("waits", "Default", &["stale-2"]).await;
    age_queue(&b, "waits").await;
    b.push("waits", "Default", &["fresh"]).await;
    until_total(&b, "waits", 1).await;
    for group in ["g", "new"] {
        let v = b
            .pop("waits", &format!("consumerGroup={group}&batch=10"))
            .await;
        assert_eq!(Broker::txids(&v), vec!["fresh"], "{group}: {v}");
    }
}

/// Files a dead letter of `txid` for group `g` through a `dlq` ack.
async fn dead_letter(b: &Broker, queue: &str, txid: &str) {
    b.push(queue, "Default", &[txid]).await;
    let v = b.pop(queue, "consumerGroup=g").await;
    assert_eq!(Broker::txids(&v), vec![txid], "{v}");
    let item = json!({"transactionId": txid, "partitionId": v["messages"][0]["partitionId"],
                      "leaseId": v["leaseId"], "status": "dlq", "error": "poison"});
    let r = b.ack_batch(Some("g"), json!([item])).await;
    assert_eq!(r[0]["dlq"], true, "{r:?}");
}

async fn dead_letter_ids(b: &Broker, queue: &str) -> Vec<String> {
    let (s, v) = b.get(&format!("/api/v1/dlq?queue={queue}")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let rows = v["messages"].as_array().expect("dlq messages");
    rows.iter()
        .map(|r| r["transactionId"].as_str().unwrap().to_string())
        .collect()
}

/// Makes every dead letter of `txid` look filed `hours` ago.
async fn backdate_dead_letter(b: &Broker, txid: &str, hours: i32) {
    let n = b
        .db()
        .await
        .execute(
            "UPDATE dead_letters SET failed_at = now() - make_interval(hours => $2)
              WHERE transaction_id = $1",
            &[&txid, &hours],
        )
        .await
        .unwrap();
    assert_eq!(n, 1);
}

#[tokio::test]
async fn dead_letters_older_than_the_broker_wide_retention_are_deleted() {
    let b = broker_with(|c| {
        c.retention_interval = 50;
        c.dead_letter_retention_seconds = 3600;
    })
    .await;
    dead_letter(&b, "work", "stale").await;
    dead_letter(&b, "work", "recent").await;
    backdate_dead_letter(&b, "stale", 2).await;
    let give_up = Instant::now() + PATIENCE;
    while Instant::now() < give_up {
        if dead_letter_ids(&b, "work").await.len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(dead_letter_ids(&b, "work").await, vec!["recent"]);
}

#[tokio::test]
async fn dead_letters_are_kept_by_default_however_old() {
    let b = retaining(false).await;
    dead_letter(&b, "work", "ancient").await;
    backdate_dead_letter(&b, "ancient", 24 * 365 * 50).await;
    // A queue whose messages expire shows that passes have run meanwhile.
    b.configure(
        "logs",
        json!({"retentionEnabled": true, "retentionSeconds": 3600}),
    )
    .await;
    b.push("logs", "Default", &["l1"]).await;
    age_queue(&b, "logs").await;
    until_total(&b, "logs", 0).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(dead_letter_ids(&b, "work").await, vec!["ancient"]);
}

/// Queue mode is a group like the named ones: a partition created after its last pop, which
/// the named groups have read, keeps its messages until queue mode has read them too.
#[tokio::test]
async fn completed_retention_waits_for_queue_mode_on_a_partition_it_has_not_met() {
    let b = completing_jobs().await;
    b.push("jobs", "first", &["f1"]).await;
    for group in [Some("a"), None] {
        let query = group.map_or(String::new(), |g| format!("consumerGroup={g}"));
        let v = b.pop("jobs", &query).await;
        assert_eq!(Broker::txids(&v), vec!["f1"], "{v}");
        b.ack_all(group, &v).await;
    }
    // A partition queue mode has not met yet; group a reads it.
    b.push("jobs", "second", &["s1"]).await;
    let v = b.pop("jobs/partition/second", "consumerGroup=a").await;
    assert_eq!(Broker::txids(&v), vec!["s1"], "{v}");
    b.ack_all(Some("a"), &v).await;
    age_queue(&b, "jobs").await;
    b.retention_pass().await;
    let v = b.pop("jobs", "batch=10").await;
    if Broker::txids(&v) != vec!["s1"] {
        panic!(
            "queue mode did not get s1: {v}; {}",
            where_things_are(&b).await
        );
    }
}
