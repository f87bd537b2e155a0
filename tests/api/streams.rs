//! Queen Streams through HTTP (spec §16): registration, the cycle's one transaction (state,
//! sink pushes and the source ack commit together or not at all), exactly once under
//! retries, state reads, bounds, tenancy, and what deleting or expiring the source does.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{authed_broker, broker, broker_with, token, Broker};
use crate::wire::{
    self, CycleAck, Cycled, DeadLetters, MessageListing, Popped, StreamConflict, StreamPartitions,
    StreamQueries, StreamRegistered, StreamState,
};

const GROUP: &str = "streams.q";

/// A registered query and a popped batch of its source.
struct Batch {
    query: String,
    partition: String,
    lease: String,
    txids: Vec<String>,
}

async fn register(b: &Broker, name: &str, source: &str, hash: &str) -> StreamRegistered {
    let (s, v) = b
        .post(
            "/streams/v1/queries",
            json!({"name": name, "source_queue": source, "config_hash": hash}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    wire::read(&v)
}

/// Registers query `name` over `source`, pushes `n` messages to its partition `p` and pops
/// them for the streams group.
async fn batch(b: &Broker, name: &str, source: &str, n: usize) -> Batch {
    let query = register(b, name, source, "h1").await.query_id;
    let ids: Vec<String> = (0..n).map(|i| format!("{source}-{i}")).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    b.push(source, "p", &refs).await;
    let pop = b
        .pop(source, &format!("batch={n}&consumerGroup={GROUP}"))
        .await;
    let read: Popped = wire::read(&pop);
    Batch {
        query,
        partition: read.partition_id.unwrap(),
        lease: read.lease_id.unwrap(),
        txids: Broker::txids(&pop),
    }
}

impl Batch {
    /// A cycle body acking the whole batch, with these state ops and push items.
    fn cycle(&self, state_ops: Value, push_items: Value) -> Value {
        json!({
            "query_id": self.query, "partition_id": self.partition, "consumer_group": GROUP,
            "state_ops": state_ops, "push_items": push_items,
            "ack": {"transactionId": self.txids.last().unwrap(), "leaseId": self.lease,
                    "status": "completed", "count": self.txids.len()},
            "release_lease": true,
        })
    }

    fn flush(&self, state_ops: Value, push_items: Value) -> Value {
        json!({"query_id": self.query, "partition_id": self.partition, "consumer_group": GROUP,
               "state_ops": state_ops, "push_items": push_items, "ack": null})
    }
}

async fn cycle(b: &Broker, body: &Value) -> Value {
    let (s, v) = b.post_raw("/streams/v1/cycle", &body.to_string()).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

/// A cycle's answer, read.
fn cycled(v: &Value) -> Cycled {
    wire::read(v)
}

/// The ack result of a cycle that acked, as the answer spells it.
fn acked(count: i64, lease_released: bool, dlq: bool) -> Option<CycleAck> {
    Some(CycleAck {
        success: true,
        count,
        lease_released,
        dlq,
    })
}

/// The state rows (key, value) of a batch's query and partition that `filter` selects.
async fn state(b: &Broker, at: &Batch, filter: Value) -> Vec<(String, Value)> {
    let mut body = json!({"query_id": at.query, "partition_id": at.partition});
    for (k, v) in filter.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (s, v) = b.post("/streams/v1/state/get", body).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let read: StreamState = wire::read(&v);
    assert!(read.success, "{v}");
    read.rows.into_iter().map(|r| (r.key, r.value)).collect()
}

/// Every message of `queue` as one consumer group sees it: payloads in order.
async fn drain(b: &Broker, queue: &str, group: &str) -> Vec<Value> {
    let pop = b
        .pop(queue, &format!("batch=1000&consumerGroup={group}"))
        .await;
    Broker::data(&pop)
}

#[tokio::test]
async fn registration_is_idempotent_by_name_and_a_new_hash_needs_reset() {
    let b = broker().await;
    let first = register(&b, "orders.sum", "orders", "h1").await;
    assert!(first.success);
    assert!(first.fresh);
    assert!(!first.reset);
    assert_eq!(first.name, "orders.sum");
    assert_eq!(first.config_hash, "h1");
    let id = first.query_id.as_str();
    let again = register(&b, "orders.sum", "orders", "h1").await;
    assert_eq!((again.query_id.as_str(), again.fresh), (id, false));

    let (s, v) = b
        .post(
            "/streams/v1/queries",
            json!({"name": "orders.sum", "source_queue": "orders", "config_hash": "h2"}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");
    let refused: StreamConflict = wire::read(&v);
    assert!(!refused.success);
    assert_eq!(refused.query_id, id);
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .starts_with("config_hash mismatch"),
        "{v}"
    );
    // Refused: the stored hash is unchanged.
    assert!(!register(&b, "orders.sum", "orders", "h1").await.fresh);

    let (s, v) = b
        .post(
            "/streams/v1/queries",
            json!({"name": "orders.sum", "source_queue": "orders", "config_hash": "h2", "reset": true}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let reset: StreamRegistered = wire::read(&v);
    assert_eq!(
        (reset.query_id.as_str(), reset.reset, reset.fresh),
        (id, true, false)
    );
    assert!(!register(&b, "orders.sum", "orders", "h2").await.fresh);
}

#[tokio::test]
async fn registration_and_reads_refuse_bad_bodies_with_the_spec_texts() {
    let b = broker().await;
    let cases: &[(&str, Value, &str)] = &[
        (
            "/streams/v1/queries",
            json!([1]),
            "request body must be a JSON object",
        ),
        (
            "/streams/v1/queries",
            json!({"source_queue": "q", "config_hash": "h"}),
            "name is required",
        ),
        (
            "/streams/v1/queries",
            json!({"name": "", "source_queue": "q", "config_hash": "h"}),
            "name is required",
        ),
        (
            "/streams/v1/queries",
            json!({"name": "n", "config_hash": "h"}),
            "source_queue is required",
        ),
        (
            "/streams/v1/queries",
            json!({"name": "n", "source_queue": "q"}),
            "config_hash is required",
        ),
        (
            "/streams/v1/queries",
            json!({"name": "n", "source_queue": "q", "config_hash": "h", "reset": "yes"}),
            "reset must be a boolean",
        ),
        (
            "/streams/v1/cycle",
            json!("x"),
            "request body must be a JSON object",
        ),
        (
            "/streams/v1/cycle",
            json!({"partition_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d"}),
            "query_id is required",
        ),
        (
            "/streams/v1/cycle",
            json!({"query_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d"}),
            "partition_id is required",
        ),
        (
            "/streams/v1/cycle",
            json!({"query_id": "nope", "partition_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d"}),
            "query_id must be a UUID",
        ),
        (
            "/streams/v1/cycle",
            json!({"query_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "partition_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "state_ops": {}}),
            "state_ops must be an array",
        ),
        (
            "/streams/v1/cycle",
            json!({"query_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "partition_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "state_ops": [{"type": "put", "key": "k"}]}),
            "state_ops[0].type must be upsert or delete",
        ),
        (
            "/streams/v1/cycle",
            json!({"query_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "partition_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "state_ops": [{"type": "upsert"}]}),
            "state_ops[0].key is required",
        ),
        (
            "/streams/v1/cycle",
            json!({"query_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "partition_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "ack": {"status": "completed"}}),
            "ack.transactionId is required",
        ),
        (
            "/streams/v1/cycle",
            json!({"query_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "partition_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "release_lease": 1}),
            "release_lease must be a boolean",
        ),
        (
            "/streams/v1/cycle",
            json!({"query_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "partition_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "push_items": [{"queue": 5}]}),
            "Queue must be a string",
        ),
        (
            "/streams/v1/state/get",
            json!({"partition_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d"}),
            "query_id is required",
        ),
        (
            "/streams/v1/state/get",
            json!({"query_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d"}),
            "partition_id is required",
        ),
        (
            "/streams/v1/state/get",
            json!({"query_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "partition_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "keys": [1]}),
            "keys must be an array of strings",
        ),
        (
            "/streams/v1/state/get",
            json!({"query_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "partition_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "ripe_at_or_before": "soon"}),
            "ripe_at_or_before must be a number",
        ),
    ];
    // NUL cannot be stored as text: refused with the field's name, never the database's text.
    let id = "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d";
    let nul: Vec<(&str, Value, &str)> = vec![
        (
            "/streams/v1/queries",
            json!({"name": "a\u{0}b", "source_queue": "q", "config_hash": "h"}),
            "name must not contain NUL",
        ),
        (
            "/streams/v1/queries",
            json!({"name": "n", "source_queue": "q", "config_hash": "h", "sink_queue": "s\u{0}"}),
            "sink_queue must not contain NUL",
        ),
        (
            "/streams/v1/cycle",
            json!({"query_id": id, "partition_id": id, "state_ops": [{"type": "delete", "key": "k\u{0}"}]}),
            "state_ops[0].key must not contain NUL",
        ),
        (
            "/streams/v1/state/get",
            json!({"query_id": id, "partition_id": id, "keys": ["k\u{0}"]}),
            "keys must not contain NUL",
        ),
        (
            "/streams/v1/state/get",
            json!({"query_id": id, "partition_id": id, "key_prefix": "k\u{0}"}),
            "key_prefix must not contain NUL",
        ),
        (
            "/streams/v1/queries",
            json!({"name": "n".repeat(513), "source_queue": "q", "config_hash": "h"}),
            "name must be at most 512 bytes",
        ),
    ];
    let cases: Vec<(&str, Value, &str)> = cases.iter().cloned().chain(nul).collect();
    for (path, body, text) in &cases {
        let (s, v) = b.post(path, body.clone()).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{path} {body}: {v}");
        assert_eq!(v["error"], *text, "{path} {body}");
    }
    let (s, v) = b.post_raw("/streams/v1/cycle", "{nope").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert!(
        v["error"].as_str().unwrap().starts_with("Invalid JSON"),
        "{v}"
    );
}

#[tokio::test]
async fn a_cycle_commits_state_sink_pushes_and_the_ack_together() {
    let b = broker().await;
    let at = batch(&b, "sum", "src", 3).await;
    let v = cycle(
        &b,
        &at.cycle(
            json!([{"type": "upsert", "key": "w1", "value": {"acc": 3, "windowEnd": 1000}},
                   {"type": "upsert", "key": "gone", "value": 1},
                   {"type": "delete", "key": "gone"}]),
            json!([{"queue": "sink", "partition": "p", "payload": {"sum": 3}, "transactionId": "out-1"},
                   {"queue": "sink", "partition": "p", "payload": 7}]),
        ),
    )
    .await;
    let done = cycled(&v);
    assert!(done.success, "{v}");
    assert_eq!(done.queue_name.as_deref(), Some("src"));
    assert_eq!(done.query_id, at.query);
    assert_eq!(done.partition_id, at.partition);
    assert_eq!(done.state_ops_applied, 3);
    assert_eq!(done.ack_result, acked(3, true, false));
    let results = &done.push_results;
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].status, "queued");
    assert_eq!(results[0].transaction_id, "out-1");
    assert_eq!(results[0].queue_name.as_deref(), Some("sink"));
    assert!(results[1].transaction_id.starts_with("stream-"), "{v}");

    // The last operation on a key wins: `gone` was upserted, then deleted.
    assert_eq!(
        state(&b, &at, json!({})).await,
        vec![("w1".into(), json!({"acc": 3, "windowEnd": 1000}))]
    );
    assert_eq!(
        drain(&b, "sink", "reader").await,
        vec![json!({"sum": 3}), json!(7)]
    );
    // The ack committed the batch: nothing left for the group, the lease released.
    assert_eq!(b.cursor(&at.partition, GROUP).await, Some((2, false, 0)));
    assert!(Broker::txids(&b.pop("src", &format!("consumerGroup={GROUP}")).await).is_empty());
}

#[tokio::test]
async fn a_refused_cycle_writes_nothing_at_all() {
    let b = broker().await;
    let at = batch(&b, "sum", "src", 2).await;
    let state_ops = json!([{"type": "upsert", "key": "k", "value": {"acc": 1}}]);
    let push_items = json!([{"queue": "never-made", "payload": {"x": 1}}]);
    let mut stale = at.cycle(state_ops.clone(), push_items.clone());
    stale["ack"]["leaseId"] = json!("0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d");
    let mut unknown = at.cycle(state_ops.clone(), push_items.clone());
    unknown["ack"]["transactionId"] = json!("never-pushed");
    let mut bad_status = at.cycle(state_ops.clone(), push_items.clone());
    bad_status["ack"]["status"] = json!("retry");
    let mut other_partition = at.cycle(state_ops.clone(), push_items.clone());
    other_partition["partition_id"] = json!(b.push_pid("elsewhere", "p", &["e-1"]).await);
    let mut no_query = at.cycle(state_ops, push_items);
    no_query["query_id"] = json!("0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d");
    for (body, error) in [
        (&stale, "ACK operation failed: invalid or expired lease"),
        (&unknown, "ACK operation failed: unresolvable"),
        (&bad_status, "ACK operation failed: invalid status: retry"),
        (
            &other_partition,
            "partition not found in the query's source queue",
        ),
        (&no_query, "query not found"),
    ] {
        let v = cycle(&b, body).await;
        let refused = cycled(&v);
        assert!(!refused.success, "{v}");
        assert!(
            v["error"].as_str().unwrap().starts_with(error),
            "{body}: {v}"
        );
        assert!(refused.push_results.is_empty(), "{v}");
        assert_eq!(refused.ack_result, None);
    }
    assert!(state(&b, &at, json!({})).await.is_empty());
    let (s, _) = b.get("/api/v1/resources/queues/never-made").await;
    assert_eq!(
        s,
        StatusCode::NOT_FOUND,
        "a refused cycle's sink queue is not created"
    );
    assert_eq!(b.cursor(&at.partition, GROUP).await, Some((-1, true, 0)));
    let (_, m) = b.get("/api/v1/metrics/queues").await;
    assert!(
        m.as_str()
            .unwrap()
            .contains("regent_stream_failures_total{tenant=\"default\",query=\"sum\"} 4"),
        "{m}"
    );
}

#[tokio::test]
async fn a_retried_cycle_applies_once_and_gets_its_first_answer() {
    let b = broker().await;
    let at = batch(&b, "count", "src", 2).await;
    let body = at.cycle(
        json!([{"type": "upsert", "key": "n", "value": {"count": 2}}]),
        json!([{"queue": "sink", "payload": {"count": 2}}]),
    );
    let first = cycle(&b, &body).await;
    assert!(cycled(&first).success, "{first}");
    // The answer was lost; the client sends the same bytes again.
    let again = cycle(&b, &body).await;
    assert_eq!(again, first, "a replay answers what the commit answered");
    assert_eq!(drain(&b, "sink", "r").await, vec![json!({"count": 2})]);
    let (_, m) = b.get("/api/v1/metrics/queues").await;
    let m = m.as_str().unwrap();
    assert!(
        m.contains("regent_stream_cycles_total{tenant=\"default\",query=\"count\"} 1"),
        "{m}"
    );
    assert!(
        m.contains("regent_stream_replays_total{tenant=\"default\",query=\"count\"} 1"),
        "{m}"
    );

    // Another cycle acking the same messages (another body: its work was done) is refused.
    let mut other = body.clone();
    other["state_ops"] = json!([{"type": "upsert", "key": "n", "value": {"count": 4}}]);
    other["ack"]["leaseId"] = Value::Null;
    let v = cycle(&b, &other).await;
    assert!(!cycled(&v).success, "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("already committed"),
        "{v}"
    );
    assert_eq!(
        state(&b, &at, json!({})).await,
        vec![("n".into(), json!({"count": 2}))]
    );
}

#[tokio::test]
async fn a_retry_arriving_after_a_later_cycle_changes_nothing() {
    let b = broker().await;
    let at = batch(&b, "w", "src", 2).await;
    let a = at.cycle(
        json!([{"type": "upsert", "key": "k", "value": {"v": "a"}}]),
        json!([]),
    );
    assert!(cycled(&cycle(&b, &a).await).success);
    // A flush cycle (no ack) commits next, then cycle A arrives again.
    let flush = at.flush(
        json!([{"type": "upsert", "key": "k", "value": {"v": "flushed"}}]),
        json!([{"queue": "sink", "payload": {"window": 1}}]),
    );
    assert!(cycled(&cycle(&b, &flush).await).success);
    let v = cycle(&b, &a).await;
    assert!(!cycled(&v).success, "{v}");
    assert_eq!(v["error"], "ACK operation failed: invalid or expired lease");
    assert_eq!(
        state(&b, &at, json!({})).await,
        vec![("k".into(), json!({"v": "flushed"}))]
    );

    // A flush cycle retried after another one: its sink item, sent without a transaction id,
    // is pushed once.
    let other = at.flush(json!([{"type": "delete", "key": "zzz"}]), json!([]));
    assert!(cycled(&cycle(&b, &other).await).success);
    let v = cycle(&b, &flush).await;
    let again = cycled(&v);
    assert!(again.success, "{v}");
    assert_eq!(again.push_results[0].status, "duplicate", "{v}");
    assert_eq!(drain(&b, "sink", "r").await, vec![json!({"window": 1})]);
}

#[tokio::test]
async fn release_lease_decides_whether_a_partial_ack_keeps_the_lease() {
    let b = broker().await;
    let at = batch(&b, "gate", "src", 3).await;
    let mut keep = at.cycle(json!([]), json!([]));
    keep["ack"]["transactionId"] = json!(at.txids[0]);
    keep["release_lease"] = json!(false);
    let v = cycle(&b, &keep).await;
    assert_eq!(cycled(&v).ack_result, acked(1, false, false), "{v}");
    assert_eq!(b.cursor(&at.partition, GROUP).await, Some((0, true, 0)));
    // Still leased: the group's next pop gets nothing until the lease ends.
    assert!(Broker::txids(&b.pop("src", &format!("consumerGroup={GROUP}")).await).is_empty());

    let mut release = at.cycle(json!([]), json!([]));
    release["ack"]["transactionId"] = json!(at.txids[1]);
    let v = cycle(&b, &release).await;
    assert_eq!(cycled(&v).ack_result, acked(1, true, false), "{v}");
    assert_eq!(b.cursor(&at.partition, GROUP).await, Some((1, false, 0)));
    // The tail redelivers at once.
    let pop = b.pop("src", &format!("consumerGroup={GROUP}")).await;
    assert_eq!(Broker::txids(&pop), vec![at.txids[2].clone()]);
}

#[tokio::test]
async fn a_failed_cycle_ack_dead_letters_the_message() {
    let b = broker().await;
    for (status, reason) in [("failed", None), ("dlq", Some("bad window"))] {
        let source = format!("src-{status}");
        let at = batch(&b, &format!("q-{status}"), &source, 1).await;
        let mut body = at.cycle(json!([]), json!([]));
        body["ack"]["status"] = json!(status);
        if let Some(r) = reason {
            body["ack"]["error"] = json!(r);
        }
        let v = cycle(&b, &body).await;
        let done = cycled(&v);
        assert!(done.success, "{v}");
        assert!(done.ack_result.expect("an ack result").dlq, "{v}");
        let (_, d) = b.get(&format!("/api/v1/dlq?queue={source}")).await;
        let letters = wire::read::<DeadLetters>(&d).messages;
        assert_eq!(letters.len(), 1, "{d}");
        assert_eq!(
            letters[0].error_message,
            reason.unwrap_or("Streaming cycle reported failure"),
            "{d}"
        );
    }
}

#[tokio::test]
async fn state_reads_select_by_keys_prefix_ripeness_and_limit() {
    let b = broker().await;
    let at = batch(&b, "win", "src", 1).await;
    let ops = json!([
        {"type": "upsert", "key": "agg\u{1f}a\u{1f}1", "value": {"acc": 1, "windowEnd": 1000}},
        {"type": "upsert", "key": "agg\u{1f}b\u{1f}2", "value": {"acc": 2, "windowEnd": 2000.5}},
        {"type": "upsert", "key": "agg\u{1f}c\u{1f}3", "value": {"acc": 3, "windowEnd": "late"}},
        {"type": "upsert", "key": "__wm__", "value": {"eventTimeMs": 5}},
    ]);
    assert!(cycled(&cycle(&b, &at.cycle(ops, json!([]))).await).success);
    let keys = |rows: Vec<(String, Value)>| rows.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    assert_eq!(keys(state(&b, &at, json!({})).await).len(), 4);
    assert_eq!(
        keys(state(&b, &at, json!({"keys": ["__wm__", "missing"]})).await),
        vec!["__wm__"]
    );
    assert_eq!(
        keys(state(&b, &at, json!({"key_prefix": "agg\u{1f}"})).await),
        vec![
            "agg\u{1f}a\u{1f}1",
            "agg\u{1f}b\u{1f}2",
            "agg\u{1f}c\u{1f}3"
        ]
    );
    assert_eq!(
        keys(
            state(
                &b,
                &at,
                json!({"key_prefix": "agg\u{1f}", "ripe_at_or_before": 2000})
            )
            .await
        ),
        vec!["agg\u{1f}a\u{1f}1"]
    );
    assert_eq!(
        keys(state(&b, &at, json!({"ripe_at_or_before": 2000.5})).await),
        vec!["agg\u{1f}a\u{1f}1", "agg\u{1f}b\u{1f}2"]
    );
    assert_eq!(keys(state(&b, &at, json!({"limit": 2})).await).len(), 2);
    // A value is returned as written, numbers no double holds included.
    let big = at.flush(
        json!([{"type": "upsert", "key": "big", "value": {"n": "BIG"}}]),
        json!([]),
    );
    let big = big.to_string().replace(r#""BIG""#, "1e400");
    let (_, v) = b.post_raw("/streams/v1/cycle", &big).await;
    assert!(cycled(&v).success, "{v}");
    let text = reqwest::Client::new()
        .post(format!("{}/streams/v1/state/get", b.url))
        .header("content-type", "application/json")
        .body(
            json!({"query_id": at.query, "partition_id": at.partition, "keys": ["big"]})
                .to_string(),
        )
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains(r#""value":{"n":1e400}"#), "{text}");
}

#[tokio::test]
async fn oversized_state_and_cycles_are_refused_with_their_limits() {
    let b = broker_with(|c| c.max_push_items = 10).await;
    let at = batch(&b, "big", "src", 1).await;
    let long_key = "k".repeat(2049);
    let v = b
        .post(
            "/streams/v1/cycle",
            at.flush(
                json!([{"type": "upsert", "key": long_key, "value": 1}]),
                json!([]),
            ),
        )
        .await;
    assert_eq!(v.0, StatusCode::BAD_REQUEST, "{}", v.1);
    assert_eq!(v.1["error"], "state_ops[0].key is longer than 2048 bytes");
    let big = "x".repeat((1 << 20) + 1);
    let (s, v) = b
        .post(
            "/streams/v1/cycle",
            at.flush(
                json!([{"type": "upsert", "key": "k", "value": big}]),
                json!([]),
            ),
        )
        .await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .starts_with("state_ops[0].value is 1048579 bytes"),
        "{v}"
    );
    let ops: Vec<Value> = (0..6)
        .map(|i| json!({"type": "delete", "key": format!("k{i}")}))
        .collect();
    let items: Vec<Value> = (0..5)
        .map(|i| json!({"queue": "sink", "payload": i}))
        .collect();
    let (s, v) = b
        .post("/streams/v1/cycle", at.flush(json!(ops), json!(items)))
        .await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
    assert_eq!(
        v["error"],
        "A request of 11 items is over the limit of 10 items (MAX_PUSH_ITEMS)"
    );
    assert!(state(&b, &at, json!({})).await.is_empty());
}

#[tokio::test]
async fn a_tenant_sees_and_changes_only_its_own_queries() {
    let b = authed_broker().await;
    let acme = token("read-write").tenant("acme").sub("acme-svc").mint();
    let zenith = token("read-write")
        .tenant("zenith")
        .sub("zenith-svc")
        .mint();
    let call = |t: &str, path: &str, body: Value| {
        let t = t.to_string();
        let path = path.to_string();
        let b = &b;
        async move {
            b.request_as(Some(&t), Method::POST, &path, Some(&body.to_string()))
                .await
        }
    };
    let reg = json!({"name": "shared-name", "source_queue": "src", "config_hash": "h"});
    let (_, a) = call(&acme, "/streams/v1/queries", reg.clone()).await;
    let (_, z) = call(&zenith, "/streams/v1/queries", reg).await;
    let (a, z): (StreamRegistered, StreamRegistered) = (wire::read(&a), wire::read(&z));
    assert_eq!((a.fresh, z.fresh), (true, true), "{a:?} {z:?}");
    assert_ne!(a.query_id, z.query_id);

    b.push_as(Some(&acme), "src", "p", &["a-1"]).await;
    let (_, pop) = b
        .request_as(
            Some(&acme),
            Method::GET,
            &format!("/api/v1/pop/queue/src?wait=false&consumerGroup={GROUP}"),
            None,
        )
        .await;
    let pop: Popped = wire::read(&pop);
    let partition = pop.partition_id.as_deref().unwrap();
    let body = json!({
        "query_id": a.query_id, "partition_id": partition, "consumer_group": GROUP,
        "state_ops": [{"type": "upsert", "key": "k", "value": 1}],
        "push_items": [{"queue": "out", "payload": {"n": 1}}],
        "ack": {"transactionId": "a-1", "leaseId": pop.lease_id, "status": "completed"},
    });
    // Zenith naming acme's query, or its own query with acme's partition: refused.
    let (_, v) = call(&zenith, "/streams/v1/cycle", body.clone()).await;
    assert_eq!(v["error"], "query not found", "{v}");
    let mut theirs = body.clone();
    theirs["query_id"] = json!(z.query_id);
    let (_, v) = call(&zenith, "/streams/v1/cycle", theirs).await;
    assert_eq!(
        v["error"], "partition not found in the query's source queue",
        "{v}"
    );
    let (_, v) = call(&acme, "/streams/v1/cycle", body).await;
    assert!(cycled(&v).success, "{v}");

    let read = json!({"query_id": a.query_id, "partition_id": partition});
    let (_, v) = call(&zenith, "/streams/v1/state/get", read.clone()).await;
    assert!(wire::read::<StreamState>(&v).rows.is_empty(), "{v}");
    let (_, v) = call(&acme, "/streams/v1/state/get", read).await;
    assert_eq!(wire::read::<StreamState>(&v).rows.len(), 1, "{v}");
    let path = format!("/streams/v1/queries/{}/partitions", a.query_id);
    let (s, _) = b.request_as(Some(&zenith), Method::GET, &path, None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, v) = b.request_as(Some(&acme), Method::GET, &path, None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        wire::read::<StreamPartitions>(&v).partitions[0].state_rows,
        1,
        "{v}"
    );
    let (_, v) = b
        .request_as(Some(&zenith), Method::GET, "/streams/v1/queries", None)
        .await;
    let queries = wire::read::<StreamQueries>(&v).queries;
    assert_eq!(queries.len(), 1, "{v}");
    assert_eq!(queries[0].query_id, z.query_id);

    // The sink message carries the producer's subject from the token.
    let (_, out) = b
        .request_as(
            Some(&acme),
            Method::GET,
            "/api/v1/pop/queue/out?wait=false",
            None,
        )
        .await;
    assert_eq!(
        wire::read::<Popped>(&out).messages[0]
            .producer_sub
            .as_deref(),
        Some("acme-svc"),
        "{out}"
    );
    // A read-only token reads state but may not cycle or register.
    let reader = token("read-only").tenant("acme").mint();
    let (s, _) = call(
        &reader,
        "/streams/v1/queries",
        json!({"name": "n", "source_queue": "s", "config_hash": "h"}),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn state_outlives_the_sources_retention_and_goes_with_its_queue() {
    let b = broker_with(|c| c.retention_interval = 50).await;
    b.configure(
        "src",
        json!({"retentionEnabled": true, "retentionSeconds": 1}),
    )
    .await;
    let at = batch(&b, "keep", "src", 2).await;
    let v = cycle(
        &b,
        &at.cycle(
            json!([{"type": "upsert", "key": "k", "value": 1}]),
            json!([]),
        ),
    )
    .await;
    assert!(cycled(&v).success, "{v}");
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    b.push("src", "p", &["new-1"]).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (_, m) = b.get("/api/v1/messages?queue=src").await;
        let ids: Vec<String> = wire::read::<MessageListing>(&m)
            .messages
            .into_iter()
            .map(|x| x.transaction_id)
            .collect();
        if ids == ["new-1"] {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "retention never ran: {m}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        state(&b, &at, json!({})).await.len(),
        1,
        "state survives retention"
    );

    let (s, _) = b.delete("/api/v1/resources/queues/src").await;
    assert_eq!(s, StatusCode::OK);
    let db = b.db().await;
    let left: i64 = db
        .query_one(
            "SELECT (SELECT count(*) FROM stream_state) + (SELECT count(*) FROM stream_partitions)",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        left, 0,
        "the deleted source's state rows and cycle records are gone"
    );

    // A reset removes its query's state too.
    let at = batch(&b, "again", "src2", 1).await;
    cycle(
        &b,
        &at.cycle(
            json!([{"type": "upsert", "key": "k", "value": 1}]),
            json!([]),
        ),
    )
    .await;
    let (_, v) = b
        .post(
            "/streams/v1/queries",
            json!({"name": "again", "source_queue": "src2", "config_hash": "h1", "reset": true}),
        )
        .await;
    assert!(
        !wire::read::<StreamRegistered>(&v).reset,
        "the same hash is a restart: its state is kept: {v}"
    );
    assert_eq!(state(&b, &at, json!({})).await.len(), 1);
    let (_, v) = b
        .post(
            "/streams/v1/queries",
            json!({"name": "again", "source_queue": "src2", "config_hash": "h2", "reset": true}),
        )
        .await;
    assert!(wire::read::<StreamRegistered>(&v).reset, "{v}");
    assert!(state(&b, &at, json!({})).await.is_empty());
}

#[tokio::test]
async fn sink_pushes_follow_push_maintenance_and_the_stored_message_cap() {
    // Under push maintenance the sink item waits in the buffer, committed with the cycle.
    let b = broker().await;
    let at = batch(&b, "m", "src", 1).await;
    let (s, _) = b
        .post("/api/v1/system/maintenance", json!({"enabled": true}))
        .await;
    assert_eq!(s, StatusCode::OK);
    let v = cycle(
        &b,
        &at.cycle(json!([]), json!([{"queue": "sink", "payload": 1}])),
    )
    .await;
    let done = cycled(&v);
    assert!(done.success, "{v}");
    assert_eq!(done.push_results[0].status, "buffered", "{v}");

    // Over the tenant's stored-message cap the whole cycle is refused, acking nothing.
    let b = crate::support::authed_broker_with(|c| {
        c.tenant_limits = Some(json!({"acme": {"maxMessages": 2}}).to_string())
    })
    .await;
    let t = token("read-write").tenant("acme").mint();
    let post = |path: &str, body: Value| {
        let (b, t, path) = (&b, t.clone(), path.to_string());
        async move {
            b.request_as(Some(&t), Method::POST, &path, Some(&body.to_string()))
                .await
        }
    };
    let (_, reg) = post(
        "/streams/v1/queries",
        json!({"name": "q", "source_queue": "src", "config_hash": "h"}),
    )
    .await;
    b.push_as(Some(&t), "src", "p", &["s-1"]).await;
    let (_, pop) = b
        .request_as(
            Some(&t),
            Method::GET,
            &format!("/api/v1/pop/queue/src?wait=false&consumerGroup={GROUP}"),
            None,
        )
        .await;
    let reg: StreamRegistered = wire::read(&reg);
    let pop: Popped = wire::read(&pop);
    let body = json!({
        "query_id": reg.query_id, "partition_id": pop.partition_id, "consumer_group": GROUP,
        "state_ops": [{"type": "upsert", "key": "k", "value": 1}],
        "push_items": [{"queue": "sink", "payload": 1}, {"queue": "sink", "payload": 2}],
        "ack": {"transactionId": "s-1", "leaseId": pop.lease_id},
    });
    let (s, v) = post("/streams/v1/cycle", body).await;
    assert_eq!(s, StatusCode::TOO_MANY_REQUESTS, "{v}");
    assert_eq!(v["code"], "quota_exceeded", "{v}");
    let (_, rows) = post(
        "/streams/v1/state/get",
        json!({"query_id": reg.query_id, "partition_id": pop.partition_id}),
    )
    .await;
    assert!(wire::read::<StreamState>(&rows).rows.is_empty(), "{rows}");
}
