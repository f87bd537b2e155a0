//! `POST /api/v1/transaction` (Queen's transaction route) end to end: acks and pushes commit together or
//! not at all. Every test checks both the answer and the state it leaves behind: what the next
//! pop delivers, the cursor rows, the transaction index and the dead-letter listing.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::{broker, pop_error, Broker};
use crate::wire::{self, DeadLetter, Popped, Transacted, TxAcked, TxPushed};

const QUEUE_MODE: &str = "__QUEUE_MODE__";
const INVALID_LEASE: &str = "ACK operation failed: invalid or expired lease";
const UNRESOLVABLE: &str = "ACK operation failed: unresolvable: transaction not in the ack window (hash purged or never pushed); if leased, the message redelivers";
const CONSUMER_NOT_FOUND: &str = "ACK operation failed: consumer not found";
const ALREADY_COMMITTED: &str =
    "ACK operation failed: already committed: the cursor moved past this message before this ack";

// ------------------------------------------------------------------------------------------
// helpers

fn is_uuid(v: Option<&str>) -> bool {
    v.is_some_and(|s| Uuid::parse_str(s).is_ok())
}

/// Posts a bundle that must commit; returns the whole answer.
async fn commit(b: &Broker, body: Value) -> Transacted {
    let (s, v) = b.post("/api/v1/transaction", body.clone()).await;
    assert_eq!(s, StatusCode::OK, "request {body}: {v}");
    assert!(v.is_object(), "the answer is always an object: {v}");
    let t: Transacted = wire::read(&v);
    assert!(t.success, "request {body}: {v}");
    assert!(is_uuid(Some(&t.transaction_id)), "bundle id: {v}");
    // Absent or null, on the JSON itself.
    assert!(v.get("error").is_none_or(Value::is_null), "{v}");
    t
}

/// Posts a bundle that must be rolled back with exactly `error`.
async fn refused(b: &Broker, body: Value, error: &str) {
    let (s, v) = b.post("/api/v1/transaction", body.clone()).await;
    assert_eq!(s, StatusCode::OK, "request {body}: {v}");
    let t: Transacted = wire::read(&v);
    assert!(!t.success, "request {body}: {v}");
    assert_eq!(t.error.as_deref(), Some(error), "request {body}: {v}");
    assert!(t.results.is_empty(), "request {body}: {v}");
    assert!(is_uuid(Some(&t.transaction_id)), "bundle id: {v}");
}

/// Asserts one ack result.
fn check_ack(r: &Value, index: usize, txid: &str, released: bool, dlq: bool, noop: bool) {
    let a: TxAcked = wire::read(r);
    assert_eq!(a.index, index, "{r}");
    assert_eq!(a.kind, "ack", "{r}");
    assert!(a.success, "{r}");
    assert_eq!(a.transaction_id, txid, "{r}");
    assert_eq!(a.error, None, "{r}");
    assert_eq!(a.lease_released, released, "leaseReleased: {r}");
    assert_eq!(a.dlq, dlq, "dlq: {r}");
    assert_eq!(a.noop, noop, "noop: {r}");
}

/// Asserts one push result; returns (messageId, partitionId).
fn check_push(r: &Value, index: usize, txid: &str, queue: &str, status: &str) -> (String, String) {
    let p: TxPushed = wire::read(r);
    assert_eq!(p.index, index, "{r}");
    assert_eq!(p.kind, "push", "{r}");
    assert!(p.success, "{r}");
    assert_eq!(p.transaction_id, txid, "{r}");
    assert_eq!(p.queue_name, queue, "{r}");
    assert_eq!(p.status.as_deref(), Some(status), "{r}");
    assert!(is_uuid(p.message_id.as_deref()), "messageId: {r}");
    assert!(is_uuid(p.partition_id.as_deref()), "partitionId: {r}");
    (p.message_id.unwrap(), p.partition_id.unwrap())
}

/// The lease of a pop, a UUID.
fn lease_of(pop: &Value) -> String {
    let l = crate::support::lease_of(pop);
    assert!(Uuid::parse_str(&l).is_ok(), "{pop}");
    l
}

/// A non-waiting pop of one named partition.
async fn pop_partition(b: &Broker, queue: &str, partition: &str, query: &str) -> Value {
    let (s, v) = b
        .get(&format!(
            "/api/v1/pop/queue/{queue}/partition/{partition}?wait=false&{query}"
        ))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

async fn tx_index_count(b: &Broker) -> i64 {
    b.indexed(None).await
}

async fn dlq_total(b: &Broker, queue: &str) -> (i64, Vec<DeadLetter>) {
    let (s, v) = b.get(&format!("/api/v1/dlq?queue={queue}")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let d: wire::DeadLetters = wire::read(&v);
    (d.total, d.messages)
}

// ------------------------------------------------------------------------------------------
// 1. pipeline hand-off

#[tokio::test]
async fn pipeline_hand_off_acks_stage1_and_pushes_stage2_in_one_commit() {
    let b = broker().await;
    let pushed = b.pushed("stage1", "acct-9", &["in-1"]).await;
    let pid1 = pushed[0].partition_id.clone().unwrap();
    let pop = b.pop("stage1", "batch=1").await;
    assert_eq!(Broker::txids(&pop), vec!["in-1"]);
    let lease = lease_of(&pop);
    assert_eq!(b.cursor(&pid1, QUEUE_MODE).await, Some((-1, true, 0)));

    // Exactly what the Python client 1.3.0 sends: no per-op leaseId, only requiredLeases.
    let v = commit(
        &b,
        json!({
            "operations": [
                {"type": "ack", "transactionId": "in-1", "partitionId": pid1, "status": "completed"},
                {"type": "push", "items": [
                    {"queue": "stage2", "partition": "acct-9", "payload": {"total": 42},
                     "transactionId": "out-1"}]}
            ],
            "requiredLeases": [lease]
        }),
    )
    .await;
    let r = &v.results;
    assert_eq!(r.len(), 2, "{v:?}");
    check_ack(&r[0], 0, "in-1", true, false, false);
    let (mid, pid2) = check_push(&r[1], 1, "out-1", "stage2", "queued");
    // The bundle id is fresh, not a message id.
    assert_ne!(v.transaction_id, mid);
    assert_ne!(Some(&v.transaction_id), pushed[0].message_id.as_ref());

    // Stage 1: committed, lease released, nothing redelivers.
    assert_eq!(b.cursor(&pid1, QUEUE_MODE).await, Some((0, false, 0)));
    let again = b.pop("stage1", "batch=10").await;
    assert!(Broker::txids(&again).is_empty(), "{again}");
    assert_eq!(pop_error(&again), Some("no_available_partition".into()));

    // Stage 2: the pushed message is consumable, with the ids the bundle reported.
    let next = b.pop("stage2", "batch=10").await;
    assert_eq!(Broker::txids(&next), vec!["out-1"], "{next}");
    let next: Popped = wire::read(&next);
    let m = &next.messages[0];
    assert_eq!(m.id, mid);
    assert_eq!(m.partition_id, pid2);
    assert_eq!(m.partition, "acct-9");
    assert_eq!(m.data, json!({"total": 42}));
    assert_eq!(next.partition_id, Some(pid2));
}

// ------------------------------------------------------------------------------------------
// 2. atomicity

#[tokio::test]
async fn a_refused_ack_rolls_back_every_push_and_every_cursor_move() {
    let b = broker().await;
    let pid = b.push_pid("stage1", "p", &["a", "b"]).await;
    let pop = b.pop("stage1", "batch=1").await;
    assert_eq!(Broker::txids(&pop), vec!["a"]);
    let lease = lease_of(&pop);
    let stranger = Uuid::now_v7().to_string();
    let before = b.cursor(&pid, QUEUE_MODE).await;
    assert_eq!(before, Some((-1, true, 0)));
    assert_eq!(tx_index_count(&b).await, 2);

    let ack = |txid: &str| json!({"type": "ack", "transactionId": txid, "partitionId": pid, "status": "completed"});
    let push = |txid: &str| json!({"type": "push", "items": [{"queue": "out", "payload": {"from": txid}, "transactionId": txid}]});

    let cases: Vec<(&str, Value, &str)> = vec![
        // A valid ack of `a` (which moves the cursor inside the transaction) next to an
        // unresolvable one in the same (partition, lease) group.
        (
            "unresolvable",
            json!({"operations": [ack("a"), ack("ghost"), push("out-A")], "requiredLeases": [lease]}),
            UNRESOLVABLE,
        ),
        // The push comes first in the request: it must still not land.
        (
            "push before a refused ack",
            json!({"operations": [push("out-A2"), ack("ghost")], "requiredLeases": [lease]}),
            UNRESOLVABLE,
        ),
        // A required lease that is not live (the op carries the right lease itself).
        (
            "stranger in requiredLeases",
            json!({"operations": [
                {"type": "ack", "transactionId": "a", "partitionId": pid, "leaseId": lease},
                push("out-B")],
             "requiredLeases": [stranger]}),
            INVALID_LEASE,
        ),
        // Every required lease must be live, not just one of them.
        (
            "one of two required leases dead",
            json!({"operations": [
                {"type": "ack", "transactionId": "a", "partitionId": pid, "leaseId": lease},
                push("out-B2")],
             "requiredLeases": [lease, stranger]}),
            INVALID_LEASE,
        ),
        (
            "malformed required lease",
            json!({"operations": [
                {"type": "ack", "transactionId": "a", "partitionId": pid, "leaseId": lease},
                push("out-B3")],
             "requiredLeases": ["not-a-lease"]}),
            INVALID_LEASE,
        ),
        // The op's own lease is wrong.
        (
            "wrong per-op lease",
            json!({"operations": [
                {"type": "ack", "transactionId": "a", "partitionId": pid, "leaseId": stranger},
                push("out-C")]}),
            INVALID_LEASE,
        ),
        // The op's own lease wins over the borrowed one, and it is wrong.
        (
            "wrong per-op lease beside a live required lease",
            json!({"operations": [
                {"type": "ack", "transactionId": "a", "partitionId": pid, "leaseId": stranger},
                push("out-C2")],
             "requiredLeases": [lease]}),
            INVALID_LEASE,
        ),
        // A valid ack in the default group, then one in a group that never popped: the first
        // one is carried out inside the transaction and must be undone.
        (
            "consumer not found",
            json!({"operations": [
                ack("a"),
                {"type": "ack", "transactionId": "a", "partitionId": pid, "consumerGroup": "never"},
                push("out-D")],
             "requiredLeases": [lease]}),
            CONSUMER_NOT_FOUND,
        ),
    ];
    for (name, body, error) in cases {
        refused(&b, body, error).await;
        assert_eq!(b.cursor(&pid, QUEUE_MODE).await, before, "{name}: cursor");
        assert_eq!(
            b.cursor(&pid, "never").await,
            None,
            "{name}: no cursor row created"
        );
        assert_eq!(tx_index_count(&b).await, 2, "{name}: nothing indexed");
        let out = b.pop("out", "batch=10").await;
        assert!(
            Broker::txids(&out).is_empty(),
            "{name}: pushed anyway: {out}"
        );
    }

    // The lease and the message were untouched: the same hand-off now commits.
    let v = commit(
        &b,
        json!({"operations": [ack("a"), push("out-ok")], "requiredLeases": [lease]}),
    )
    .await;
    check_ack(&v.results[0], 0, "a", true, false, false);
    check_push(&v.results[1], 1, "out-ok", "out", "queued");
    assert_eq!(b.cursor(&pid, QUEUE_MODE).await, Some((0, false, 0)));
    assert_eq!(tx_index_count(&b).await, 3);

    // A nack of an already committed message refuses the bundle, and the lease-less
    // completion of `b` beside it (which would advance the cursor) is undone.
    refused(
        &b,
        json!({"operations": [
            ack("b"),
            {"type": "ack", "transactionId": "a", "partitionId": pid, "status": "failed", "error": "late"},
            push("out-E")]}),
        ALREADY_COMMITTED,
    )
    .await;
    assert_eq!(b.cursor(&pid, QUEUE_MODE).await, Some((0, false, 0)));
    assert_eq!(tx_index_count(&b).await, 3);

    let out = b.pop("out", "batch=10").await;
    assert_eq!(Broker::txids(&out), vec!["out-ok"], "{out}");
    let rest = b.pop("stage1", "batch=10").await;
    assert_eq!(Broker::txids(&rest), vec!["b"], "{rest}");
}

#[tokio::test]
async fn an_expired_required_lease_refuses_the_bundle_and_the_message_redelivers() {
    let b = broker().await;
    b.configure("stage1", json!({"leaseTime": 1})).await;
    let pid = b.push_pid("stage1", "Default", &["a"]).await;
    let pop = b.pop("stage1", "batch=1").await;
    let lease = lease_of(&pop);
    tokio::time::sleep(Duration::from_millis(1200)).await;

    refused(
        &b,
        json!({"operations": [
            {"type": "ack", "transactionId": "a", "partitionId": pid, "status": "completed"},
            {"type": "push", "items": [{"queue": "out", "payload": {}, "transactionId": "out-a"}]}],
         "requiredLeases": [lease]}),
        INVALID_LEASE,
    )
    .await;
    assert_eq!(b.cursor(&pid, QUEUE_MODE).await, Some((-1, false, 0)));
    assert_eq!(tx_index_count(&b).await, 1);
    assert!(Broker::txids(&b.pop("out", "batch=10").await).is_empty());
    let again = b.pop("stage1", "batch=10").await;
    assert_eq!(Broker::txids(&again), vec!["a"], "{again}");
}

// ------------------------------------------------------------------------------------------
// 3. retries

#[tokio::test]
async fn retrying_a_committed_bundle_is_harmless() {
    let b = broker().await;
    let pid = b.push_pid("src", "Default", &["a", "b"]).await;
    let pop = b.pop("src", "batch=2").await;
    assert_eq!(Broker::txids(&pop), vec!["a", "b"]);
    let lease = lease_of(&pop);

    // Ack the first message of the batch: the lease is kept for the rest of it, so the
    // client's retry of this exact bundle still finds its required lease live.
    let bundle = json!({
        "operations": [
            {"type": "ack", "transactionId": "a", "partitionId": pid, "status": "completed"},
            {"type": "push", "items": [
                {"queue": "dst", "payload": {"n": 1}, "transactionId": "out-a"},
                // A repeat inside the bundle is reported, not fatal.
                {"queue": "dst", "payload": {"n": 2}, "transactionId": "out-a"}]}
        ],
        "requiredLeases": [lease]
    });
    let first = commit(&b, bundle.clone()).await;
    let r1 = &first.results;
    assert_eq!(r1.len(), 3, "{first:?}");
    check_ack(&r1[0], 0, "a", false, false, false);
    let (mid, dpid) = check_push(&r1[1], 1, "out-a", "dst", "queued");
    let (mid_rep, _) = check_push(&r1[2], 2, "out-a", "dst", "duplicate");
    assert_eq!(mid_rep, mid);
    assert_eq!(b.cursor(&pid, QUEUE_MODE).await, Some((0, true, 0)));
    assert_eq!(tx_index_count(&b).await, 3);

    let second = commit(&b, bundle.clone()).await;
    assert_ne!(second.transaction_id, first.transaction_id);
    let r2 = &second.results;
    assert_eq!(r2.len(), 3, "{second:?}");
    check_ack(&r2[0], 0, "a", false, false, true);
    for (i, r) in r2.iter().enumerate().skip(1) {
        let (m, p) = check_push(r, i, "out-a", "dst", "duplicate");
        assert_eq!((m.as_str(), p.as_str()), (mid.as_str(), dpid.as_str()));
    }
    assert_eq!(b.cursor(&pid, QUEUE_MODE).await, Some((0, true, 0)));
    assert_eq!(tx_index_count(&b).await, 3);

    // A lease-less bundle (the unvalidated form) retried after it committed: noop + duplicate.
    let leaseless = json!({"operations": [
        {"type": "ack", "transactionId": "b", "partitionId": pid},
        {"type": "push", "queue": "dst", "payload": {"n": 3}, "transactionId": "out-b"}]});
    let v = commit(&b, leaseless.clone()).await;
    check_ack(&v.results[0], 0, "b", true, false, false);
    let (mid_b, _) = check_push(&v.results[1], 1, "out-b", "dst", "queued");
    assert_eq!(b.cursor(&pid, QUEUE_MODE).await, Some((1, false, 0)));
    let v = commit(&b, leaseless).await;
    check_ack(&v.results[0], 0, "b", false, false, true);
    let (m, _) = check_push(&v.results[1], 1, "out-b", "dst", "duplicate");
    assert_eq!(m, mid_b);
    assert_eq!(b.cursor(&pid, QUEUE_MODE).await, Some((1, false, 0)));
    assert_eq!(tx_index_count(&b).await, 4);

    // The original bundle once more, now that its lease was released by the final ack (the
    // client re-sends after a lost answer): every ack in it replays a committed ack, so it
    // is the same harmless no-op, not a refusal the client would raise on.
    let replay = commit(&b, bundle).await;
    check_ack(&replay.results[0], 0, "a", false, false, true);
    let (m, _) = check_push(&replay.results[1], 1, "out-a", "dst", "duplicate");
    assert_eq!(m, mid);
    assert_eq!(b.cursor(&pid, QUEUE_MODE).await, Some((1, false, 0)));
    assert_eq!(tx_index_count(&b).await, 4);

    let out = b.pop("dst", "batch=10").await;
    assert_eq!(Broker::txids(&out), vec!["out-a", "out-b"], "{out}");
    let data = Broker::data(&out);
    assert_eq!(data[0], json!({"n": 1}));
    assert_eq!(data[1], json!({"n": 3}));
    assert!(Broker::txids(&b.pop("src", "batch=10").await).is_empty());
}

// ------------------------------------------------------------------------------------------
// 4. nacks inside a transaction

#[tokio::test]
async fn a_nack_in_a_transaction_follows_the_seed() {
    let b = broker().await;
    b.configure("work", json!({"retryLimit": 1})).await;
    let pid = b.push_pid("work", "Default", &["a", "b"]).await;

    // failed with budget left: counter charged once, lease released, the batch redelivers;
    // the push beside it commits (the nack was carried out).
    let pop = b.pop("work", "batch=2").await;
    let lease = lease_of(&pop);
    let v = commit(
        &b,
        json!({"operations": [
            {"type": "ack", "transactionId": "a", "partitionId": pid, "status": "failed", "error": "boom"},
            {"type": "push", "items": [{"queue": "audit", "payload": {"nack": 1}, "transactionId": "audit-1"}]}],
         "requiredLeases": [lease]}),
    )
    .await;
    check_ack(&v.results[0], 0, "a", true, false, false);
    check_push(&v.results[1], 1, "audit-1", "audit", "queued");
    assert_eq!(b.cursor(&pid, QUEUE_MODE).await, Some((-1, false, 1)));
    assert_eq!(dlq_total(&b, "work").await.0, 0);
    let pop = b.pop("work", "batch=2").await;
    assert_eq!(Broker::txids(&pop), vec!["a", "b"], "{pop}");
    let lease = lease_of(&pop);

    // failed with the budget exhausted: dead-lettered with the nack's reason.
    let v = commit(
        &b,
        json!({"operations": [
            {"type": "ack", "transactionId": "a", "partitionId": pid, "status": "failed", "error": "boom-2"}],
         "requiredLeases": [lease]}),
    )
    .await;
    assert_eq!(v.results.len(), 1);
    check_ack(&v.results[0], 0, "a", true, true, false);
    assert_eq!(b.cursor(&pid, QUEUE_MODE).await, Some((0, false, 0)));
    let (total, rows) = dlq_total(&b, "work").await;
    assert_eq!(total, 1, "{rows:?}");
    assert_eq!(rows[0].transaction_id, "a");
    assert_eq!(rows[0].error_message, "boom-2");
    assert_eq!(rows[0].consumer_group, QUEUE_MODE);
    assert_eq!(rows[0].data, json!({"tx": "a"}));

    // dlq: immediate dead letter, whatever the budget.
    let pop = b.pop("work", "batch=2").await;
    assert_eq!(Broker::txids(&pop), vec!["b"], "{pop}");
    let lease = lease_of(&pop);
    let v = commit(
        &b,
        json!({"operations": [
            {"type": "push", "queue": "audit", "payload": {"dlq": "b"}, "transactionId": "audit-2"},
            {"type": "ack", "transactionId": "b", "partitionId": pid, "status": "dlq", "error": "poison"}],
         "requiredLeases": [lease]}),
    )
    .await;
    check_push(&v.results[0], 0, "audit-2", "audit", "queued");
    check_ack(&v.results[1], 1, "b", true, true, false);
    assert_eq!(b.cursor(&pid, QUEUE_MODE).await, Some((1, false, 0)));
    let (total, rows) = dlq_total(&b, "work").await;
    assert_eq!(total, 2, "{rows:?}");
    let row = rows
        .iter()
        .find(|r| r.transaction_id == "b")
        .expect("b dead-lettered");
    assert_eq!(row.error_message, "poison");
    assert!(Broker::txids(&b.pop("work", "batch=10").await).is_empty());

    let audit = b.pop("audit", "batch=10").await;
    assert_eq!(Broker::txids(&audit), vec!["audit-1", "audit-2"], "{audit}");
}

// ------------------------------------------------------------------------------------------
// 5. several groups and partitions in one bundle

#[tokio::test]
async fn acks_across_groups_and_partitions_commit_together() {
    let b = broker().await;
    let p1 = b.push_pid("src", "p1", &["p1-a"]).await;
    let p2 = b.push_pid("src", "p2", &["p2-a"]).await;

    // g1 takes both partitions under one lease; g2 takes p1; the default group takes p2.
    let g1 = b.pop("src", "consumerGroup=g1&batch=2&partitions=2").await;
    let mut got = Broker::txids(&g1);
    got.sort();
    assert_eq!(got, vec!["p1-a", "p2-a"], "{g1}");
    let l1 = lease_of(&g1);
    let g2 = pop_partition(&b, "src", "p1", "consumerGroup=g2").await;
    assert_eq!(Broker::txids(&g2), vec!["p1-a"]);
    let l2 = lease_of(&g2);
    let qm = pop_partition(&b, "src", "p2", "").await;
    assert_eq!(Broker::txids(&qm), vec!["p2-a"]);
    let l3 = lease_of(&qm);

    let v = commit(
        &b,
        json!({
            "operations": [
                {"type": "ack", "transactionId": "p1-a", "partitionId": p1, "consumerGroup": "g1", "leaseId": l1},
                {"type": "push", "items": [
                    {"queue": "out", "partition": "x", "payload": {"k": "x"}, "transactionId": "o-x"},
                    {"queue": "out2", "partition": "y", "data": {"k": "y"}, "transactionId": "o-y"}]},
                {"type": "ack", "transactionId": "p2-a", "partitionId": p2, "consumerGroup": "g1", "leaseId": l1},
                {"type": "ack", "transactionId": "p1-a", "partitionId": p1, "consumerGroup": "g2", "leaseId": l2},
                {"type": "ack", "transactionId": "p2-a", "partitionId": p2, "leaseId": l3},
                {"type": "push", "queue": "out", "partition": "z", "payload": {"k": "z"}, "transactionId": "o-z"}
            ],
            "requiredLeases": [l1, l2, l3]
        }),
    )
    .await;
    let r = &v.results;
    assert_eq!(r.len(), 7, "flattened: {v:?}");
    check_ack(&r[0], 0, "p1-a", true, false, false);
    check_push(&r[1], 1, "o-x", "out", "queued");
    check_push(&r[2], 2, "o-y", "out2", "queued");
    check_ack(&r[3], 3, "p2-a", true, false, false);
    check_ack(&r[4], 4, "p1-a", true, false, false);
    check_ack(&r[5], 5, "p2-a", true, false, false);
    check_push(&r[6], 6, "o-z", "out", "queued");

    for (pid, group) in [(&p1, "g1"), (&p2, "g1"), (&p1, "g2"), (&p2, QUEUE_MODE)] {
        assert_eq!(
            b.cursor(pid, group).await,
            Some((0, false, 0)),
            "{group} on {pid}"
        );
    }
    assert_eq!(b.cursor(&p1, QUEUE_MODE).await, None);
    assert_eq!(b.cursor(&p2, "g2").await, None);

    assert!(
        Broker::txids(&b.pop("src", "consumerGroup=g1&batch=10&partitions=2").await).is_empty()
    );
    let g2 = b.pop("src", "consumerGroup=g2&batch=10&partitions=2").await;
    assert_eq!(Broker::txids(&g2), vec!["p2-a"], "{g2}");
    let qm = b.pop("src", "batch=10&partitions=2").await;
    assert_eq!(Broker::txids(&qm), vec!["p1-a"], "{qm}");

    let out = b.pop("out", "batch=10&partitions=2").await;
    let mut got = Broker::txids(&out);
    got.sort();
    assert_eq!(got, vec!["o-x", "o-z"], "{out}");
    let out2 = pop_partition(&b, "out2", "y", "").await;
    assert_eq!(Broker::txids(&out2), vec!["o-y"]);
    assert_eq!(Broker::data(&out2)[0], json!({"k": "y"}));
}

// ------------------------------------------------------------------------------------------
// 6. bad input and request forms

#[tokio::test]
async fn bad_input_is_a_400_with_the_spec_texts_and_pushes_nothing() {
    let b = broker().await;
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "operations array required"),
        (json!({"operations": null}), "operations array required"),
        (
            json!({"operations": {"type": "push"}}),
            "operations array required",
        ),
        (
            json!({"operations": []}),
            "operations array cannot be empty",
        ),
        (
            json!({"operations": [{"type": "x"}]}),
            "Unknown operation type: x",
        ),
        // A valid push before the unknown op does not land either.
        (
            json!({"operations": [
                {"type": "push", "queue": "q", "payload": {}, "transactionId": "early"},
                {"type": "x", "queue": "q"}]}),
            "Unknown operation type: x",
        ),
    ];
    for (body, error) in cases {
        let (s, v) = b.post("/api/v1/transaction", body.clone()).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body}: {v}");
        assert_eq!(v["error"], error, "{body}: {v}");
    }

    let (s, v) = b
        .request(
            reqwest::Method::POST,
            "/api/v1/transaction",
            Some("{not json"),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("Invalid JSON")),
        "{v}"
    );
    let (s, v) = b
        .request(reqwest::Method::POST, "/api/v1/transaction", None)
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(v["error"], "Empty request body");

    assert_eq!(tx_index_count(&b).await, 0);
    assert!(Broker::txids(&b.pop("q", "batch=10").await).is_empty());
}

#[tokio::test]
async fn flat_push_form_and_the_data_alias_are_accepted() {
    let b = broker().await;
    let v = commit(
        &b,
        json!({"operations": [
            {"type": "push", "queue": "flat", "partition": "p", "payload": {"via": "payload"},
             "transactionId": "f1"},
            {"type": "push", "queue": "flat", "partition": "p", "data": {"via": "data"},
             "transactionId": "f2"},
            {"type": "push", "items": [
                {"queue": "flat", "partition": "p", "data": {"via": "nested data"}, "transactionId": "f3"}]}
        ]}),
    )
    .await;
    let r = &v.results;
    assert_eq!(r.len(), 3, "{v:?}");
    let (_, p) = check_push(&r[0], 0, "f1", "flat", "queued");
    for (i, t) in [(1, "f2"), (2, "f3")] {
        let (_, pi) = check_push(&r[i], i, t, "flat", "queued");
        assert_eq!(pi, p);
    }
    let pop = pop_partition(&b, "flat", "p", "batch=10").await;
    assert_eq!(Broker::txids(&pop), vec!["f1", "f2", "f3"]);
    let data: Vec<Value> = Broker::data(&pop);
    assert_eq!(
        data,
        vec![
            json!({"via": "payload"}),
            json!({"via": "data"}),
            json!({"via": "nested data"})
        ]
    );
}

// ------------------------------------------------------------------------------------------
// 7. concurrency

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_bundles_into_one_queue_all_commit_without_deadlock() {
    let b = broker().await;
    let mut work = Vec::new();
    for i in 0..10 {
        let part = format!("c{i}");
        let txid = format!("in-{i}");
        let pid = b.push_pid("src", &part, &[&txid]).await;
        let pop = pop_partition(&b, "src", &part, "").await;
        assert_eq!(Broker::txids(&pop), vec![txid.clone()]);
        work.push((pid, txid, lease_of(&pop)));
    }

    let mut tasks = Vec::new();
    for (i, (pid, txid, lease)) in work.iter().cloned().enumerate() {
        let http = b.http.clone();
        let url = format!("{}/api/v1/transaction", b.url);
        // Half of the bundles name the two side partitions in the opposite order.
        let side = if i % 2 == 0 {
            ["left", "right"]
        } else {
            ["right", "left"]
        };
        let body = json!({
            "operations": [
                {"type": "ack", "transactionId": txid, "partitionId": pid, "status": "completed"},
                {"type": "push", "items": [
                    {"queue": "common", "payload": {"i": i}, "transactionId": format!("fan-{i}")},
                    {"queue": "side", "partition": side[0], "payload": {"i": i}, "transactionId": format!("s0-{i}")},
                    {"queue": "side", "partition": side[1], "payload": {"i": i}, "transactionId": format!("s1-{i}")}]}
            ],
            "requiredLeases": [lease]
        });
        tasks.push(tokio::spawn(async move {
            let res = http.post(url).json(&body).send().await.expect("sent");
            let status = res.status();
            let v: Value = res.json().await.expect("json answer");
            (status, v)
        }));
    }
    for (i, t) in tasks.into_iter().enumerate() {
        let (status, v) = tokio::time::timeout(Duration::from_secs(30), t)
            .await
            .expect("no deadlock")
            .expect("task");
        assert_eq!(status, StatusCode::OK, "bundle {i}: {v}");
        let t: Transacted = wire::read(&v);
        assert!(t.success, "bundle {i}: {v}");
        let r = &t.results;
        assert_eq!(r.len(), 4, "bundle {i}: {v}");
        check_ack(&r[0], 0, &format!("in-{i}"), true, false, false);
        check_push(&r[1], 1, &format!("fan-{i}"), "common", "queued");
    }

    for (pid, _, _) in &work {
        assert_eq!(b.cursor(pid, QUEUE_MODE).await, Some((0, false, 0)));
    }
    assert!(Broker::txids(&b.pop("src", "batch=10&partitions=10").await).is_empty());

    let common = b.pop("common", "batch=100").await;
    let mut got = Broker::txids(&common);
    got.sort();
    let mut want: Vec<String> = (0..10).map(|i| format!("fan-{i}")).collect();
    want.sort();
    assert_eq!(got, want, "{common}");
    assert_eq!(b.indexed_in_queue("common").await, 10);
    for part in ["left", "right"] {
        let v = pop_partition(&b, "side", part, "batch=100").await;
        assert_eq!(Broker::txids(&v).len(), 10, "{part}: {v}");
    }
}
