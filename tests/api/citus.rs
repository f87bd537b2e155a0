//! What only Citus has: partitions spread over workers, and a transaction route whose
//! bundle spans two of them. These tests run when the suite runs on Citus
//! (`REGENT_TEST_CITUS=2`, as CI does) and say so and pass on one PostgreSQL, where the rest
//! of the suite covers the same routes.

use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio_postgres::Client;

use crate::support::{acks, broker, broker_with, Broker};

const QUEUE_MODE: &str = "__QUEUE_MODE__";

/// The worker port Citus placed a partition on (its `partitions` shard).
async fn node_of(db: &Client, partition_id: &str) -> i32 {
    db.query_one(
        "SELECT nodeport FROM citus_shards
          WHERE table_name = 'partitions'::regclass
            AND shardid = get_shard_id_for_distribution_column('partitions', $1::text::uuid)",
        &[&partition_id],
    )
    .await
    .unwrap()
    .get(0)
}

/// Pushes one message to each of `n` partitions of `queue` and returns their ids, in order.
async fn spread(b: &Broker, queue: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let pushed = b
            .push(queue, &format!("p{i}"), &[&format!("{queue}-{i}")])
            .await;
        ids.push(pushed[0]["partition_id"].as_str().unwrap().to_string());
    }
    ids
}

/// Two partitions of `queue` on different workers: (name, id, worker port) of each.
async fn on_two_workers(b: &Broker, queue: &str) -> [(String, String, i32); 2] {
    let db = b.db().await;
    let ids = spread(b, queue, 16).await;
    let mut first: Option<(String, String, i32)> = None;
    for (i, id) in ids.iter().enumerate() {
        let node = node_of(&db, id).await;
        match &first {
            None => first = Some((format!("p{i}"), id.clone(), node)),
            Some(f) if f.2 != node => return [f.clone(), (format!("p{i}"), id.clone(), node)],
            Some(_) => {}
        }
    }
    panic!("16 partitions all on one worker");
}

/// The name of the shard of `table` that holds partition `id`, as the worker knows it.
async fn shard_of(db: &Client, table: &str, id: &str) -> String {
    db.query_one(
        "SELECT shard_name($1::text::regclass,
                           get_shard_id_for_distribution_column($1::text::regclass, $2::text::uuid))",
        &[&table, &id],
    )
    .await
    .unwrap()
    .get(0)
}

/// The client of the worker on `port`.
fn worker(workers: &[(u16, Client)], port: i32) -> &Client {
    &workers
        .iter()
        .find(|(p, _)| i32::from(*p) == port)
        .expect("a worker on that port")
        .1
}

/// Everything about one partition lives on one worker: its sequencer row, its log, its
/// cursors and its transaction index are shards of one co-location group, on one node. A
/// queue's partitions are spread over both workers.
#[tokio::test]
async fn a_partition_lives_on_one_worker_and_a_queue_on_all_of_them() {
    let b = broker().await;
    let workers = b.workers().await;
    if workers.len() < 2 {
        eprintln!("not on Citus with two workers: nothing to check");
        return;
    }
    let ids = spread(&b, "spread", 16).await;
    let popped = b.pop("spread", "batch=1").await;
    assert_eq!(Broker::txids(&popped).len(), 1, "{popped}");
    let db = b.db().await;
    let mut nodes = std::collections::BTreeSet::new();
    for id in &ids {
        let placed: Vec<i32> = db
            .query(
                "SELECT DISTINCT s.nodeport FROM citus_shards s
                  WHERE s.table_name::text IN ('partitions', 'segments', 'cursors', 'tx_index')
                    AND s.shardid IN (
                        SELECT get_shard_id_for_distribution_column(t, $1::text::uuid)
                          FROM unnest(ARRAY['partitions', 'segments', 'cursors', 'tx_index']::regclass[]) t)",
                &[id],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(placed.len(), 1, "partition {id} spans nodes {placed:?}");
        nodes.insert(placed[0]);
    }
    assert_eq!(nodes.len(), 2, "16 partitions on {nodes:?}");
}

/// Concurrent pushes, each to one partition, are fused by worker, and so are their acks:
/// once the broker knows where the partitions lie, none of those transactions commits in two
/// phases (Citus records every two-phase commit in the coordinator's `pg_dist_transaction`
/// until its recovery clears the committed ones). A push naming partitions on both workers
/// does, which shows that the count moves.
#[tokio::test]
async fn concurrent_requests_fuse_by_worker_and_commit_in_one_phase() {
    // No background clock that writes on every shard while the test counts.
    let b = broker_with(|c| {
        c.purge_interval_seconds = 3600;
        c.retention_interval = 3_600_000;
        c.metrics_sample_interval = 3600;
    })
    .await;
    let workers = b.workers().await;
    if workers.len() < 2 {
        eprintln!("not on Citus with two workers: nothing to check");
        return;
    }
    let [(a_name, ..), (b_name, ..)] = on_two_workers(&b, "fused").await;
    let db = b.db().await;
    recover(&db).await;

    let pushes = (0..256).map(|i| {
        let b = &b;
        async move {
            b.push("fused", &format!("p{}", i % 16), &[&format!("burst-{i}")])
                .await
        }
    });
    futures::future::join_all(pushes).await;
    assert_eq!(
        two_phase_records(&db).await,
        0,
        "a fused push committed on two workers"
    );

    // A pop may give its group cursors on every partition: that is not what is counted.
    let popped = pop_each(&b, 16).await;
    recover(&db).await;
    let acks = popped.into_iter().map(|items| {
        let b = &b;
        async move {
            for r in b.ack_batch(None, items).await {
                assert_eq!(r["success"], true, "{r}");
            }
        }
    });
    futures::future::join_all(acks).await;
    assert_eq!(
        two_phase_records(&db).await,
        0,
        "a fused ack committed on two workers"
    );

    let both = json!({"items": [
        {"queue": "fused", "partition": a_name, "transactionId": "both-a", "payload": {}},
        {"queue": "fused", "partition": b_name, "transactionId": "both-b", "payload": {}}]});
    let (s, v) = b.post("/api/v1/push", both).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert!(
        two_phase_records(&db).await > 0,
        "a push to two workers commits in two phases"
    );
}

/// Clears the records of committed two-phase commits, as Citus's recovery does every minute.
async fn recover(db: &Client) {
    db.batch_execute("SELECT recover_prepared_transactions()")
        .await
        .unwrap();
    assert_eq!(two_phase_records(db).await, 0, "recovered");
}

/// The two-phase commits the coordinator still records.
async fn two_phase_records(db: &Client) -> i64 {
    db.query_one("SELECT count(*) FROM pg_dist_transaction", &[])
        .await
        .unwrap()
        .get(0)
}

/// Pops every message of partitions `p0`..`p{n-1}` of `fused`, a partition at a time: the
/// acknowledgments of each partition's messages.
async fn pop_each(b: &Broker, n: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for i in 0..n {
        let (s, v) = b
            .get(&format!(
                "/api/v1/pop/queue/fused/partition/p{i}?wait=false&batch=100"
            ))
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
        out.push(Value::Array(acks(
            v["messages"].as_array().unwrap(),
            "completed",
        )));
    }
    out
}

/// `postgres-stats` sizes a distributed table by its shards on the workers, not by its empty
/// shell on the coordinator the broker is connected to.
#[tokio::test]
async fn postgres_stats_size_the_log_over_every_worker() {
    let b = broker().await;
    if b.workers().await.len() < 2 {
        eprintln!("not on Citus with two workers: nothing to check");
        return;
    }
    spread(&b, "sized", 16).await;
    let (s, v) = b.get("/api/v1/analytics/postgres-stats").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let segments = v["tableSizes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == "segments")
        .unwrap_or_else(|| panic!("segments among the largest tables: {v}"))
        .clone();
    let shards: i64 = b
        .db()
        .await
        .query_one(
            "SELECT sum(shard_size)::bigint FROM citus_shards
              WHERE table_name = 'segments'::regclass",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(segments["totalBytes"], json!(shards), "{segments}");
    let parts = ["tableBytes", "indexBytes"].map(|k| segments[k].as_i64().unwrap());
    assert_eq!(parts[0] + parts[1], shards, "{segments}");
    assert!(parts[0] > 0, "{segments}");
}

/// The pipeline hand-off of the transaction route, its ack on one worker and its push on the
/// other: when the push's worker refuses the write, the ack on the first worker is not
/// committed either; once it accepts, the same bundle commits on both.
#[tokio::test]
async fn a_bundle_across_two_workers_is_all_or_nothing_when_one_refuses_a_write() {
    refused_then_accepted("BEFORE INSERT ON", "").await;
}

/// As above, but the worker refuses only when asked to commit: a deferred trigger fires at
/// its PREPARE TRANSACTION, after both workers did their writes. Citus's two-phase commit
/// then rolls the other worker's prepared part back.
#[tokio::test]
async fn a_bundle_across_two_workers_is_all_or_nothing_when_one_refuses_to_commit() {
    refused_then_accepted("AFTER INSERT ON", "DEFERRABLE INITIALLY DEFERRED").await;
}

/// A hand-off bundle refused by the push's worker (a trigger `when`, `deferral`, on its
/// shard of `segments`) commits nothing; the same bundle commits whole once it accepts.
async fn refused_then_accepted(when: &str, deferral: &str) {
    let b = broker().await;
    let workers = b.workers().await;
    if workers.len() < 2 {
        eprintln!("not on Citus with two workers: nothing to check");
        return;
    }
    let [(a_name, a_id, _), (b_name, b_id, b_node)] = on_two_workers(&b, "hand").await;
    let refusing = worker(&workers, b_node);
    let coordinator = b.db().await;
    let segments = shard_of(&coordinator, "segments", &b_id).await;
    refuse(&coordinator, refusing, &segments, when, deferral).await;

    let (lease, txid) = popped(&b, &a_name).await;
    let bundle = hand_off(&a_id, &txid, &lease, &b_name);
    let (s, v) = b.post("/api/v1/transaction", bundle.clone()).await;
    assert_ne!(v["success"], true, "{s} {v}");
    assert_nothing_committed(&b, &a_id, &b_id).await;

    unrefuse(refusing, &segments).await;
    let (s, v) = b.post("/api/v1/transaction", bundle).await;
    assert_eq!((s, &v["success"]), (StatusCode::OK, &json!(true)), "{v}");
    assert_both_committed(&b, &a_id, &b_id).await;
}

/// A trigger on one worker's shard that raises on every row: `when` says when it fires
/// (`BEFORE INSERT ON`, or `AFTER INSERT ON` with `deferral` for commit time). Its function
/// is made on the coordinator, which gives it to every worker (a worker makes none itself).
async fn refuse(coordinator: &Client, db: &Client, shard: &str, when: &str, deferral: &str) {
    coordinator
        .batch_execute(
            "CREATE OR REPLACE FUNCTION refuse_write() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN RAISE EXCEPTION 'test: this worker refuses'; END $$",
        )
        .await
        .unwrap();
    db.batch_execute("SET citus.enable_manual_changes_to_shards = on")
        .await
        .unwrap();
    let constraint = if deferral.is_empty() {
        ""
    } else {
        "CONSTRAINT"
    };
    db.batch_execute(&format!(
        "CREATE {constraint} TRIGGER refuse_write {when} {shard} {deferral}
           FOR EACH ROW EXECUTE FUNCTION refuse_write()"
    ))
    .await
    .unwrap();
}

async fn unrefuse(db: &Client, shard: &str) {
    db.batch_execute(&format!("DROP TRIGGER refuse_write ON {shard}"))
        .await
        .unwrap();
}

/// Pops partition `name` of the hand-off's source queue: (lease, transaction id).
async fn popped(b: &Broker, name: &str) -> (String, String) {
    let (s, v) = b
        .get(&format!(
            "/api/v1/pop/queue/hand/partition/{name}?wait=false&batch=1"
        ))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let txids = Broker::txids(&v);
    assert_eq!(txids.len(), 1, "{v}");
    (v["leaseId"].as_str().unwrap().to_string(), txids[0].clone())
}

/// Acks the message on partition `a_id` and pushes its result to partition `b_name` of the
/// same queue, on the other worker, in one bundle.
fn hand_off(a_id: &str, txid: &str, lease: &str, b_name: &str) -> Value {
    json!({
        "operations": [
            {"type": "ack", "transactionId": txid, "partitionId": a_id, "status": "completed"},
            {"type": "push", "items": [
                {"queue": "hand", "partition": b_name, "payload": {"from": txid},
                 "transactionId": "handed-on"}]}
        ],
        "requiredLeases": [lease]
    })
}

async fn assert_nothing_committed(b: &Broker, a_id: &str, b_id: &str) {
    let cursor = b.cursor(a_id, QUEUE_MODE).await.expect("a's cursor");
    assert_eq!(
        cursor.0, -1,
        "the ack on the first worker was not committed"
    );
    assert_eq!(
        next_offset(b, b_id).await,
        1,
        "the push on the second worker was not committed"
    );
    assert_eq!(
        b.indexed(Some(b_id)).await,
        1,
        "only the first message is indexed"
    );
}

async fn assert_both_committed(b: &Broker, a_id: &str, b_id: &str) {
    let cursor = b.cursor(a_id, QUEUE_MODE).await.expect("a's cursor");
    assert_eq!(cursor.0, 0, "the ack committed");
    assert_eq!(next_offset(b, b_id).await, 2, "the push committed once");
}

async fn next_offset(b: &Broker, partition_id: &str) -> i64 {
    b.db()
        .await
        .query_one(
            "SELECT next_offset FROM partition_heads WHERE id = $1::text::uuid",
            &[&partition_id],
        )
        .await
        .unwrap()
        .get(0)
}

/// A stream cycle's state lives with its source partition, so a cycle whose sink partition is
/// on the same worker (state, sink push and ack) commits in one phase; one whose sink is on
/// the other worker commits in two, which shows that the count moves.
#[tokio::test]
async fn a_stream_cycle_with_its_sink_on_the_same_worker_commits_in_one_phase() {
    let b = broker_with(|c| {
        c.purge_interval_seconds = 3600;
        c.retention_interval = 3_600_000;
        c.metrics_sample_interval = 3600;
    })
    .await;
    if b.workers().await.len() < 2 {
        eprintln!("not on Citus with two workers: nothing to check");
        return;
    }
    let db = b.db().await;
    let [(source, source_id, node), ..] = on_two_workers(&b, "src").await;
    let sinks = spread(&b, "sink", 16).await;
    let mut near = None;
    let mut far = None;
    for (i, id) in sinks.iter().enumerate() {
        if node_of(&db, id).await == node {
            near.get_or_insert(format!("p{i}"));
        } else {
            far.get_or_insert(format!("p{i}"));
        }
    }
    let (near, far) = (near.expect("a sink partition near"), far.expect("one far"));
    let (_, reg) = b
        .post(
            "/streams/v1/queries",
            json!({"name": "q", "source_queue": "src", "config_hash": "h"}),
        )
        .await;
    for (round, sink) in [(0, &near), (1, &far)] {
        let txid = format!("more-{round}");
        b.push("src", &source, &[&txid]).await;
        let (_, pop) = b
            .get(&format!(
                "/api/v1/pop/queue/src/partition/{source}?wait=false&batch=10&consumerGroup=g"
            ))
            .await;
        let last = pop["messages"].as_array().unwrap().last().unwrap()["transactionId"].clone();
        recover(&db).await;
        let (_, v) = b
            .post("/streams/v1/cycle", json!({
                "query_id": reg["query_id"], "partition_id": source_id, "consumer_group": "g",
                "state_ops": [{"type": "upsert", "key": format!("k{round}"), "value": {"n": round}}],
                "push_items": [{"queue": "sink", "partition": sink, "payload": {"round": round}}],
                "ack": {"transactionId": last, "leaseId": pop["leaseId"], "status": "completed"},
            }))
            .await;
        assert_eq!(v["success"], true, "{v}");
        let records = two_phase_records(&db).await;
        if round == 0 {
            assert_eq!(records, 0, "a cycle on one worker committed in two phases");
        } else {
            assert!(
                records > 0,
                "a cycle across two workers commits in two phases"
            );
        }
    }
    // The state's shard is on the source partition's worker.
    let placed: i32 = db
        .query_one(
            "SELECT nodeport FROM citus_shards
              WHERE table_name = 'stream_state'::regclass
                AND shardid = get_shard_id_for_distribution_column('stream_state', $1::text::uuid)",
            &[&source_id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(placed, node);
}
