//! The ack contract (docs/api.md, "Acknowledgement") end to end: every
//! status, every per-item outcome and every error string, each checked both in the per-item
//! answer and in the state it leaves behind (cursor row, next pop, dead-letter rows).

use std::time::Duration;

use regent::rules::tx_hash::tx_hash;
use reqwest::StatusCode;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::{broker, layout, Broker};
use crate::wire::{self, Acked, Popped};
use regent::store::Layout;

const QUEUE_MODE: &str = "__QUEUE_MODE__";
const CONSUMER_NOT_FOUND: &str = "consumer not found";
const INVALID_LEASE: &str = "invalid or expired lease";
const ALREADY_COMMITTED: &str =
    "already committed: the cursor moved past this message before this ack";
const UNRESOLVABLE: &str = "unresolvable: transaction not in the ack window (hash purged or never pushed); if leased, the message redelivers";
/// The broker's text for a completion (or dlq) above a lower explicit signal in the same call
/// (crates/rules/src/ack_plan.rs, an interpretation: the seed only says those messages redeliver).
const SUPERSEDED: &str = "superseded: an explicit failed/retry/dlq at a lower offset in this call clamps the cursor; this message redelivers";
const RETRIES_EXHAUSTED: &str = "Retries exhausted";

// ------------------------------------------------------------------------------------------
// helpers

/// The expected per-item answer (besides `index` and `transactionId`).
#[derive(Clone, Copy, Debug)]
struct Want {
    success: bool,
    error: Option<&'static str>,
    released: bool,
    dlq: bool,
    noop: bool,
}

/// Carried out; `released` = this ack ended the lease.
fn done(released: bool) -> Want {
    Want {
        success: true,
        error: None,
        released,
        dlq: false,
        noop: false,
    }
}

/// Carried out and filed a dead-letter row.
fn done_dlq(released: bool) -> Want {
    Want {
        dlq: true,
        ..done(released)
    }
}

/// A harmless duplicate completion.
fn noop() -> Want {
    Want {
        success: true,
        error: None,
        released: false,
        dlq: false,
        noop: true,
    }
}

fn refused(error: &'static str) -> Want {
    Want {
        success: false,
        error: Some(error),
        released: false,
        dlq: false,
        noop: false,
    }
}

/// Asserts the answer is exactly one element per expectation, in request order, with every
/// contract field as expected.
fn check(ctx: &str, res: &[Value], want: &[(&str, Want)]) {
    assert_eq!(res.len(), want.len(), "{ctx}: answer length: {res:#?}");
    for (i, (r, (txid, w))) in res.iter().zip(want).enumerate() {
        check_at(ctx, r, i, txid, *w);
    }
}

/// Asserts one element of an answer, which must carry `index`.
fn check_at(ctx: &str, r: &Value, index: usize, txid: &str, w: Want) {
    let at = format!("{ctx}: item {index}: {r}");
    let a: Acked = wire::read(r);
    assert_eq!(a.index, index, "{at}: index");
    assert_eq!(a.transaction_id, txid, "{at}: transactionId");
    assert_eq!(a.success, w.success, "{at}: success");
    assert_eq!(a.error.as_deref(), w.error, "{at}: error");
    assert_eq!(a.lease_released, w.released, "{at}: leaseReleased");
    assert_eq!(a.dlq, w.dlq, "{at}: dlq");
    assert_eq!(a.noop, w.noop, "{at}: noop");
}

/// Asserts a single error item whose text is a raw database message.
fn check_db_error(ctx: &str, r: &Value, index: usize, txid: &str, needle: &str) {
    let a: Acked = wire::read(r);
    assert_eq!(
        (a.index, a.transaction_id.as_str()),
        (index, txid),
        "{ctx}: {r}"
    );
    assert!(!a.success, "{ctx}: {r}");
    let e = a.error.unwrap_or_default();
    assert!(
        e.contains(needle),
        "{ctx}: error should contain {needle:?}: {r}"
    );
    assert!(!a.lease_released && !a.dlq && !a.noop, "{ctx}: {r}");
}

/// One ack item; `lease` None = lease-less.
fn item(txid: &str, pid: &str, lease: Option<&str>, status: &str) -> Value {
    let mut v = json!({"transactionId": txid, "partitionId": pid, "status": status});
    if let Some(l) = lease {
        v["leaseId"] = json!(l);
    }
    v
}

/// Like `item`, with an `error` reason.
fn item_err(txid: &str, pid: &str, lease: Option<&str>, status: &str, error: &str) -> Value {
    let mut v = item(txid, pid, lease, status);
    v["error"] = json!(error);
    v
}

/// Pushes to partition "p" of `queue`; returns the partition id.
async fn push(b: &Broker, queue: &str, txids: &[&str]) -> String {
    push_to(b, queue, "p", txids).await
}

async fn push_to(b: &Broker, queue: &str, partition: &str, txids: &[&str]) -> String {
    b.push_pid(queue, partition, txids).await
}

/// A pop; `group` None = queue mode. Returns (transaction ids, lease id, the answer).
async fn pop(b: &Broker, queue: &str, group: Option<&str>, batch: u32) -> (Vec<String>, String) {
    let q = match group {
        Some(g) => format!("batch={batch}&consumerGroup={g}"),
        None => format!("batch={batch}"),
    };
    let v: Popped = wire::read(&b.pop(queue, &q).await);
    let lease = v.lease_id.unwrap_or_default();
    (
        v.messages.into_iter().map(|m| m.transaction_id).collect(),
        lease,
    )
}

/// Pops and asserts exactly these messages were delivered; returns the lease.
async fn pop_expect(
    b: &Broker,
    queue: &str,
    group: Option<&str>,
    batch: u32,
    want: &[&str],
) -> String {
    let (got, lease) = pop(b, queue, group, batch).await;
    assert_eq!(got, want, "pop {queue} as {group:?}");
    if !want.is_empty() {
        assert!(!lease.is_empty(), "a delivering pop carries a lease");
    }
    lease
}

/// The dead-letter rows of a queue (newest first) after checking `total` agrees.
async fn dead_letters(b: &Broker, queue: &str) -> Vec<Value> {
    let (s, v) = b.get(&format!("/api/v1/dlq?queue={queue}")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let rows = v["messages"].as_array().expect("dlq messages").clone();
    assert_eq!(v["total"], json!(rows.len()), "{v}");
    rows
}

/// Asserts exactly one dead-letter row: that message, that group, that reason.
async fn assert_one_dead_letter(b: &Broker, queue: &str, txid: &str, group: &str, reason: &str) {
    let rows = dead_letters(b, queue).await;
    assert_eq!(rows.len(), 1, "{queue}: {rows:#?}");
    let r = &rows[0];
    assert_eq!(r["transactionId"], txid, "{r}");
    assert_eq!(r["consumerGroup"], group, "{r}");
    assert_eq!(r["errorMessage"], reason, "{r}");
    assert_eq!(r["data"], json!({"tx": txid}), "payload snapshot: {r}");
    assert!(
        r["deadLetterId"].is_i64(),
        "the id the bulk routes take: {r}"
    );
}

/// Posts a raw body to a route.
/// A `failed` nack of `txid` under `lease` that must be charged (budget left).
async fn nack_charged(b: &Broker, pid: &str, lease: &str, txid: &str, group: &str) {
    let res = b
        .ack_batch(Some(group), json!([item(txid, pid, Some(lease), "failed")]))
        .await;
    check("charged nack", &res, &[(txid, done(true))]);
}

// ------------------------------------------------------------------------------------------
// 1. status normalisation

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Completed,
    Retry,
    Dlq,
    Failed,
}

#[tokio::test]
async fn status_normalisation_table_end_to_end() {
    let b = broker().await;
    // None = the key is absent.
    let table: Vec<(Option<Value>, Kind)> = vec![
        (None, Kind::Completed),
        (Some(Value::Null), Kind::Completed),
        (Some(json!("completed")), Kind::Completed),
        (Some(json!("success")), Kind::Completed),
        (Some(json!("acked")), Kind::Completed),
        (Some(json!("ok")), Kind::Completed),
        (Some(json!("retry")), Kind::Retry),
        (Some(json!("dlq")), Kind::Dlq),
        (Some(json!("failed")), Kind::Failed),
        (Some(json!("")), Kind::Failed),
        (Some(json!("Completed")), Kind::Failed),
        (Some(json!("FAILED")), Kind::Failed),
        (Some(json!("nack")), Kind::Failed),
        (Some(json!("OK")), Kind::Failed),
        (Some(json!(5)), Kind::Failed),
        (Some(json!(true)), Kind::Failed),
    ];
    for (n, (status, kind)) in table.into_iter().enumerate() {
        let q = format!("norm{n}");
        let ctx = format!("status {status:?} ({q})");
        let pid = push(&b, &q, &["a"]).await;
        let lease = pop_expect(&b, &q, Some("g"), 10, &["a"]).await;
        let mut it = json!({"transactionId": "a", "partitionId": pid, "leaseId": lease});
        if let Some(s) = status {
            it["status"] = s;
        }
        let res = b.ack_batch(Some("g"), json!([it])).await;
        let want = match kind {
            Kind::Dlq => done_dlq(true),
            _ => done(true),
        };
        check(&ctx, &res, &[("a", want)]);
        let (cursor, redelivered): ((i64, bool, i32), &[&str]) = match kind {
            Kind::Completed => ((0, false, 0), &["b"]),
            Kind::Dlq => ((0, false, 0), &["b"]),
            Kind::Retry => ((-1, false, 0), &["a", "b"]),
            Kind::Failed => ((-1, false, 1), &["a", "b"]),
        };
        assert_eq!(b.cursor(&pid, "g").await, Some(cursor), "{ctx}: cursor");
        b.push(&q, "p", &["b"]).await;
        pop_expect(&b, &q, Some("g"), 10, redelivered).await;
        let rows = dead_letters(&b, &q).await;
        if kind == Kind::Dlq {
            assert_one_dead_letter(&b, &q, "a", "g", RETRIES_EXHAUSTED).await;
        } else {
            assert!(rows.is_empty(), "{ctx}: no dead letter: {rows:#?}");
        }
    }
}

// ------------------------------------------------------------------------------------------
// 2. completed

#[tokio::test]
async fn completed_partial_keeps_lease_and_full_releases_and_resets_counter() {
    let b = broker().await;
    let pid = push(&b, "q", &["a", "b", "c", "d"]).await;

    // Charge the counter once so the reset on completion is observable.
    let lease = pop_expect(&b, "q", Some("g"), 4, &["a", "b", "c", "d"]).await;
    nack_charged(&b, &pid, &lease, "a", "g").await;
    assert_eq!(b.cursor(&pid, "g").await, Some((-1, false, 1)));
    let lease = pop_expect(&b, "q", Some("g"), 4, &["a", "b", "c", "d"]).await;

    // Partial: acking b implicitly completes the silent gap a; the lease is kept, the counter
    // is not reset, and the partition stays claimed.
    let res = b
        .ack_batch(
            Some("g"),
            json!([item("b", &pid, Some(&lease), "completed")]),
        )
        .await;
    check("partial", &res, &[("b", done(false))]);
    assert_eq!(b.cursor(&pid, "g").await, Some((1, true, 1)));
    pop_expect(&b, "q", Some("g"), 4, &[]).await;

    // Full: acking only d completes the silent gap c and the batch: released, counter reset.
    let res = b
        .ack_batch(
            Some("g"),
            json!([item("d", &pid, Some(&lease), "completed")]),
        )
        .await;
    check("full", &res, &[("d", done(true))]);
    assert_eq!(b.cursor(&pid, "g").await, Some((3, false, 0)));
    pop_expect(&b, "q", Some("g"), 4, &[]).await;

    // The next pop gets the next batch, not any of the completed messages.
    b.push("q", "p", &["e", "f"]).await;
    let lease = pop_expect(&b, "q", Some("g"), 4, &["e", "f"]).await;

    // Several completions in one call with a silent gap between them: cursor = the highest.
    b.push("q", "p", &["g", "h"]).await;
    drop(lease);
    let res = b
        .ack_batch(Some("g"), json!([item("f", &pid, None, "completed")]))
        .await;
    check("finish e,f lease-less", &res, &[("f", done(true))]);
    let lease = pop_expect(&b, "q", Some("g"), 4, &["g", "h"]).await;
    b.push("q", "p", &["i", "j"]).await;
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("h", &pid, Some(&lease), "ok"),
                item("g", &pid, Some(&lease), "success"),
            ]),
        )
        .await;
    check(
        "two completions",
        &res,
        &[("h", done(true)), ("g", done(true))],
    );
    assert_eq!(b.cursor(&pid, "g").await, Some((7, false, 0)));
    pop_expect(&b, "q", Some("g"), 4, &["i", "j"]).await;
}

#[tokio::test]
async fn completed_with_silent_gaps_completes_them() {
    let b = broker().await;
    let pid = push(&b, "q", &["a", "b", "c", "d", "e", "f"]).await;
    let lease = pop_expect(&b, "q", Some("g"), 6, &["a", "b", "c", "d", "e", "f"]).await;
    // a and c mentioned, b silent: b is completed implicitly; d-f are above: still leased.
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("c", &pid, Some(&lease), "completed"),
                item("a", &pid, Some(&lease), "acked"),
            ]),
        )
        .await;
    check("gaps", &res, &[("c", done(false)), ("a", done(false))]);
    assert_eq!(b.cursor(&pid, "g").await, Some((2, true, 0)));
    // Release the rest with a retry of d: only d-f redeliver, so b was completed.
    let res = b
        .ack_batch(Some("g"), json!([item("d", &pid, Some(&lease), "retry")]))
        .await;
    check("retry d", &res, &[("d", done(true))]);
    pop_expect(&b, "q", Some("g"), 6, &["d", "e", "f"]).await;
}

// ------------------------------------------------------------------------------------------
// 3. failed / retry / dlq

#[tokio::test]
async fn failed_with_budget_left_charges_once_and_clamps() {
    let b = broker().await;
    let pid = push(&b, "q", &["a", "b", "c", "d", "e"]).await;
    let lease = pop_expect(&b, "q", Some("g"), 5, &["a", "b", "c", "d", "e"]).await;
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("a", &pid, Some(&lease), "completed"),
                item("b", &pid, Some(&lease), "completed"),
                item_err("c", &pid, Some(&lease), "failed", "x"),
                item_err("d", &pid, Some(&lease), "failed", "y"),
            ]),
        )
        .await;
    check(
        "failed with budget",
        &res,
        &[
            ("a", done(true)),
            ("b", done(true)),
            ("c", done(true)),
            ("d", done(true)),
        ],
    );
    // Prefix kept, counter charged once (not twice), lease released.
    assert_eq!(b.cursor(&pid, "g").await, Some((1, false, 1)));
    assert!(dead_letters(&b, "q").await.is_empty());
    let lease = pop_expect(&b, "q", Some("g"), 5, &["c", "d", "e"]).await;

    // A lone failure above unmentioned messages caps the cursor, it does not jump to it.
    let res = b
        .ack_batch(Some("g"), json!([item("e", &pid, Some(&lease), "failed")]))
        .await;
    check("lone failure", &res, &[("e", done(true))]);
    assert_eq!(b.cursor(&pid, "g").await, Some((1, false, 2)));
    pop_expect(&b, "q", Some("g"), 5, &["c", "d", "e"]).await;
}

#[tokio::test]
async fn failed_exhausted_dead_letters_by_default_after_three_redeliveries() {
    let b = broker().await;
    // Unconfigured queue: retryLimit 3, dead-lettering on.
    let pid = push(&b, "q", &["a", "b"]).await;
    for attempt in 1..=3 {
        let lease = pop_expect(&b, "q", Some("g"), 2, &["a", "b"]).await;
        let res = b
            .ack_batch(
                Some("g"),
                json!([item_err(
                    "a",
                    &pid,
                    Some(&lease),
                    "failed",
                    &format!("boom {attempt}")
                )]),
            )
            .await;
        check(&format!("nack {attempt}"), &res, &[("a", done(true))]);
        assert_eq!(b.cursor(&pid, "g").await, Some((-1, false, attempt)));
        assert!(dead_letters(&b, "q").await.is_empty(), "attempt {attempt}");
    }
    // Third redelivery, fourth nack: the budget is exhausted.
    let lease = pop_expect(&b, "q", Some("g"), 2, &["a", "b"]).await;
    let res = b
        .ack_batch(
            Some("g"),
            json!([item_err("a", &pid, Some(&lease), "failed", "boom 4")]),
        )
        .await;
    check("exhausted", &res, &[("a", done_dlq(true))]);
    assert_one_dead_letter(&b, "q", "a", "g", "boom 4").await;
    // Cursor past the poison message, counter reset, lease released.
    assert_eq!(b.cursor(&pid, "g").await, Some((0, false, 0)));
    pop_expect(&b, "q", Some("g"), 2, &["b"]).await;
}

#[tokio::test]
async fn failed_exhausted_with_configured_budget_three() {
    let b = broker().await;
    b.configure("q", json!({"retryLimit": 3})).await;
    let pid = push(&b, "q", &["a", "b", "c"]).await;
    let mut deliveries = 0;
    let mut last = Vec::new();
    for attempt in 1..=4 {
        let lease = pop_expect(&b, "q", Some("g"), 3, &["a", "b", "c"]).await;
        deliveries += 1;
        // A batch handler nacking the whole batch: clamped at a, charged once per call.
        last = b
            .ack_batch(
                Some("g"),
                json!([
                    item("a", &pid, Some(&lease), "failed"),
                    item("b", &pid, Some(&lease), "failed"),
                    item("c", &pid, Some(&lease), "failed"),
                ]),
            )
            .await;
        if attempt < 4 {
            check(
                &format!("nack {attempt}"),
                &last,
                &[("a", done(true)), ("b", done(true)), ("c", done(true))],
            );
            assert_eq!(b.cursor(&pid, "g").await, Some((-1, false, attempt)));
        }
    }
    assert_eq!(deliveries, 4, "first delivery plus three redeliveries");
    check(
        "4th nack",
        &last,
        &[("a", done_dlq(true)), ("b", done(true)), ("c", done(true))],
    );
    assert_one_dead_letter(&b, "q", "a", "g", RETRIES_EXHAUSTED).await;
    assert_eq!(b.cursor(&pid, "g").await, Some((0, false, 0)));
    // b and c were nacked in the same call: they redeliver.
    pop_expect(&b, "q", Some("g"), 3, &["b", "c"]).await;
}

#[tokio::test]
async fn failed_exhausted_with_dead_lettering_off_drops() {
    let b = broker().await;
    b.configure(
        "q",
        json!({"retryLimit": 1, "deadLetterQueue": false, "dlqAfterMaxRetries": false}),
    )
    .await;
    let pid = push(&b, "q", &["a", "b"]).await;
    let lease = pop_expect(&b, "q", Some("g"), 2, &["a", "b"]).await;
    nack_charged(&b, &pid, &lease, "a", "g").await;
    assert_eq!(b.cursor(&pid, "g").await, Some((-1, false, 1)));
    let lease = pop_expect(&b, "q", Some("g"), 2, &["a", "b"]).await;
    let res = b
        .ack_batch(
            Some("g"),
            json!([item_err("a", &pid, Some(&lease), "failed", "boom")]),
        )
        .await;
    check("dropped", &res, &[("a", done(true))]);
    assert!(dead_letters(&b, "q").await.is_empty(), "nothing recorded");
    assert_eq!(b.cursor(&pid, "g").await, Some((0, false, 0)));
    pop_expect(&b, "q", Some("g"), 2, &["b"]).await;
}

#[tokio::test]
async fn failed_exhausted_with_only_one_flag_off_still_dead_letters() {
    let b = broker().await;
    for (q, opts) in [
        ("q1", json!({"retryLimit": 1, "deadLetterQueue": false})),
        ("q2", json!({"retryLimit": 1, "dlqAfterMaxRetries": false})),
        (
            "q3",
            json!({"retryLimit": 1, "deadLetterQueue": true, "dlqAfterMaxRetries": false}),
        ),
    ] {
        b.configure(q, opts.clone()).await;
        let pid = push(&b, q, &["a", "b"]).await;
        let lease = pop_expect(&b, q, Some("g"), 2, &["a", "b"]).await;
        nack_charged(&b, &pid, &lease, "a", "g").await;
        let lease = pop_expect(&b, q, Some("g"), 2, &["a", "b"]).await;
        let res = b
            .ack_batch(
                Some("g"),
                json!([item_err("a", &pid, Some(&lease), "failed", "bad")]),
            )
            .await;
        check(&format!("{q} {opts}"), &res, &[("a", done_dlq(true))]);
        assert_one_dead_letter(&b, q, "a", "g", "bad").await;
        assert_eq!(b.cursor(&pid, "g").await, Some((0, false, 0)), "{q}");
        pop_expect(&b, q, Some("g"), 2, &["b"]).await;
    }
}

#[tokio::test]
async fn retry_is_budget_free() {
    let b = broker().await;
    let pid = push(&b, "q", &["a", "b", "c"]).await;
    let lease = pop_expect(&b, "q", Some("g"), 3, &["a", "b", "c"]).await;
    nack_charged(&b, &pid, &lease, "a", "g").await;
    let lease = pop_expect(&b, "q", Some("g"), 3, &["a", "b", "c"]).await;
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("a", &pid, Some(&lease), "completed"),
                item_err("b", &pid, Some(&lease), "retry", "not yet"),
            ]),
        )
        .await;
    check("retry", &res, &[("a", done(true)), ("b", done(true))]);
    // Counter untouched (still 1), prefix kept, lease released.
    assert_eq!(b.cursor(&pid, "g").await, Some((0, false, 1)));
    let lease = pop_expect(&b, "q", Some("g"), 3, &["b", "c"]).await;

    // Retries never exhaust anything: many in a row leave the counter and DLQ alone.
    let mut lease = lease;
    for _ in 0..4 {
        let res = b
            .ack_batch(Some("g"), json!([item("b", &pid, Some(&lease), "retry")]))
            .await;
        check("repeated retry", &res, &[("b", done(true))]);
        assert_eq!(b.cursor(&pid, "g").await, Some((0, false, 1)));
        lease = pop_expect(&b, "q", Some("g"), 3, &["b", "c"]).await;
    }
    assert!(dead_letters(&b, "q").await.is_empty());
}

#[tokio::test]
async fn dlq_status_dead_letters_immediately() {
    let b = broker().await;
    let pid = push(&b, "q", &["a", "b", "c"]).await;
    let lease = pop_expect(&b, "q", Some("g"), 3, &["a", "b", "c"]).await;
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("a", &pid, Some(&lease), "completed"),
                item_err("b", &pid, Some(&lease), "dlq", "poison"),
            ]),
        )
        .await;
    check("dlq", &res, &[("a", done(true)), ("b", done_dlq(true))]);
    assert_one_dead_letter(&b, "q", "b", "g", "poison").await;
    // Budget was untouched and stays 0; cursor past b; lease released.
    assert_eq!(b.cursor(&pid, "g").await, Some((1, false, 0)));
    pop_expect(&b, "q", Some("g"), 3, &["c"]).await;
}

#[tokio::test]
async fn dlq_status_with_charged_budget_resets_counter() {
    let b = broker().await;
    let pid = push(&b, "q", &["a", "b"]).await;
    let lease = pop_expect(&b, "q", Some("g"), 2, &["a", "b"]).await;
    nack_charged(&b, &pid, &lease, "a", "g").await;
    let lease = pop_expect(&b, "q", Some("g"), 2, &["a", "b"]).await;
    let res = b
        .ack_batch(Some("g"), json!([item("a", &pid, Some(&lease), "dlq")]))
        .await;
    check("dlq", &res, &[("a", done_dlq(true))]);
    assert_one_dead_letter(&b, "q", "a", "g", RETRIES_EXHAUSTED).await;
    assert_eq!(b.cursor(&pid, "g").await, Some((0, false, 0)));
    pop_expect(&b, "q", Some("g"), 2, &["b"]).await;
}

// ------------------------------------------------------------------------------------------
// 4. precedence

#[tokio::test]
async fn precedence_dlq_over_failed_over_retry_at_same_offset() {
    let b = broker().await;

    // dlq > failed > retry: dead-lettered at once although the budget is untouched.
    let pid = push(&b, "q1", &["a", "b", "c"]).await;
    let lease = pop_expect(&b, "q1", Some("g"), 3, &["a", "b", "c"]).await;
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("a", &pid, Some(&lease), "completed"),
                item("b", &pid, Some(&lease), "retry"),
                item("b", &pid, Some(&lease), "failed"),
                item_err("b", &pid, Some(&lease), "dlq", "why"),
            ]),
        )
        .await;
    assert_eq!(res.len(), 4, "{res:#?}");
    for (i, r) in res.iter().enumerate() {
        assert_eq!(r["index"], json!(i), "{r}");
        assert_eq!(r["success"], true, "{r}");
        assert_eq!(r["error"], Value::Null, "{r}");
        assert_eq!(r["leaseReleased"], true, "{r}");
        assert_eq!(r["noop"], false, "{r}");
    }
    assert_eq!(res[0]["transactionId"], "a");
    assert_eq!(res[0]["dlq"], false);
    let flagged: Vec<usize> = (1..4).filter(|&i| res[i]["dlq"] == true).collect();
    assert_eq!(
        flagged.len(),
        1,
        "exactly one item reports the dead letter: {res:#?}"
    );
    assert_one_dead_letter(&b, "q1", "b", "g", "why").await;
    assert_eq!(b.cursor(&pid, "g").await, Some((1, false, 0)));
    pop_expect(&b, "q1", Some("g"), 3, &["c"]).await;

    // failed > retry: charged, whatever the request order.
    for (q, order) in [("q2", ["retry", "failed"]), ("q3", ["failed", "retry"])] {
        let pid = push(&b, q, &["a", "b"]).await;
        let lease = pop_expect(&b, q, Some("g"), 2, &["a", "b"]).await;
        let res = b
            .ack_batch(
                Some("g"),
                json!([
                    item("a", &pid, Some(&lease), order[0]),
                    item("a", &pid, Some(&lease), order[1]),
                ]),
            )
            .await;
        check(q, &res, &[("a", done(true)), ("a", done(true))]);
        assert_eq!(b.cursor(&pid, "g").await, Some((-1, false, 1)), "{q}");
        assert!(dead_letters(&b, q).await.is_empty(), "{q}");
        pop_expect(&b, q, Some("g"), 2, &["a", "b"]).await;
    }

    // An exhausted failure is not rescued by a retry at the same offset.
    b.configure("q4", json!({"retryLimit": 0})).await;
    let pid = push(&b, "q4", &["a", "b"]).await;
    let lease = pop_expect(&b, "q4", Some("g"), 2, &["a", "b"]).await;
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("a", &pid, Some(&lease), "retry"),
                item_err("a", &pid, Some(&lease), "failed", "boom"),
            ]),
        )
        .await;
    assert_eq!(res.len(), 2, "{res:#?}");
    assert!(res
        .iter()
        .all(|r| r["success"] == true && r["leaseReleased"] == true));
    assert_eq!(
        res.iter().filter(|r| r["dlq"] == true).count(),
        1,
        "{res:#?}"
    );
    assert_one_dead_letter(&b, "q4", "a", "g", "boom").await;
    assert_eq!(b.cursor(&pid, "g").await, Some((0, false, 0)));
    pop_expect(&b, "q4", Some("g"), 2, &["b"]).await;
}

#[tokio::test]
async fn lowest_explicit_signal_clamps_and_later_completions_redeliver() {
    let b = broker().await;
    let pid = push(&b, "q", &["a", "b", "c", "d", "e", "f"]).await;
    let lease = pop_expect(&b, "q", Some("g"), 6, &["a", "b", "c", "d", "e", "f"]).await;
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("f", &pid, Some(&lease), "completed"),
                item("d", &pid, Some(&lease), "failed"),
                item("b", &pid, Some(&lease), "completed"),
                item("e", &pid, Some(&lease), "completed"),
            ]),
        )
        .await;
    check(
        "clamp",
        &res,
        &[
            ("f", refused(SUPERSEDED)),
            ("d", done(true)),
            ("b", done(true)),
            ("e", refused(SUPERSEDED)),
        ],
    );
    // Cursor at b (a silent gap completed, c left), charged once, released.
    assert_eq!(b.cursor(&pid, "g").await, Some((1, false, 1)));
    pop_expect(&b, "q", Some("g"), 6, &["c", "d", "e", "f"]).await;

    // A dlq above a lower retry is not carried out either: nothing is dead-lettered.
    let pid2 = push(&b, "q2", &["a", "b", "c", "d"]).await;
    let lease = pop_expect(&b, "q2", Some("g"), 4, &["a", "b", "c", "d"]).await;
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("b", &pid2, Some(&lease), "retry"),
                item("d", &pid2, Some(&lease), "dlq"),
                item("a", &pid2, Some(&lease), "completed"),
            ]),
        )
        .await;
    check(
        "dlq above retry",
        &res,
        &[
            ("b", done(true)),
            ("d", refused(SUPERSEDED)),
            ("a", done(true)),
        ],
    );
    assert!(dead_letters(&b, "q2").await.is_empty());
    assert_eq!(b.cursor(&pid2, "g").await, Some((0, false, 0)));
    pop_expect(&b, "q2", Some("g"), 4, &["b", "c", "d"]).await;
}

// ------------------------------------------------------------------------------------------
// 5. acks that cannot do anything

#[tokio::test]
async fn acks_that_cannot_do_anything() {
    let b = broker().await;
    let pid = push(&b, "q", &["a", "b", "c", "d"]).await;
    let lease = pop_expect(&b, "q", Some("g"), 4, &["a", "b", "c", "d"]).await;
    let res = b
        .ack_batch(
            Some("g"),
            json!([item("b", &pid, Some(&lease), "completed")]),
        )
        .await;
    check("setup", &res, &[("b", done(false))]);
    let before = Some((1, true, 0));
    assert_eq!(b.cursor(&pid, "g").await, before);

    // Duplicate completions at/below the cursor: harmless noops.
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("a", &pid, Some(&lease), "completed"),
                item("b", &pid, Some(&lease), "ok"),
            ]),
        )
        .await;
    check("noop", &res, &[("a", noop()), ("b", noop())]);
    assert_eq!(b.cursor(&pid, "g").await, before);

    // Signals at/below the cursor cannot be honoured.
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item_err("a", &pid, Some(&lease), "failed", "late"),
                item("b", &pid, Some(&lease), "retry"),
                item("a", &pid, Some(&lease), "dlq"),
            ]),
        )
        .await;
    check(
        "already committed",
        &res,
        &[
            ("a", refused(ALREADY_COMMITTED)),
            ("b", refused(ALREADY_COMMITTED)),
            ("a", refused(ALREADY_COMMITTED)),
        ],
    );
    assert_eq!(
        b.cursor(&pid, "g").await,
        before,
        "nothing charged, nothing moved"
    );
    assert!(dead_letters(&b, "q").await.is_empty());

    // Unknown transaction ids (and the empty default) resolve nowhere, whatever the status.
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("never-pushed", &pid, Some(&lease), "completed"),
                item("never-pushed-2", &pid, Some(&lease), "failed"),
                {"partitionId": pid, "leaseId": lease, "status": "dlq"},
            ]),
        )
        .await;
    check(
        "unresolvable",
        &res,
        &[
            ("never-pushed", refused(UNRESOLVABLE)),
            ("never-pushed-2", refused(UNRESOLVABLE)),
            ("", refused(UNRESOLVABLE)),
        ],
    );
    assert_eq!(b.cursor(&pid, "g").await, before);
    assert!(dead_letters(&b, "q").await.is_empty());

    // A purged index entry: the message exists but its transaction id no longer resolves.
    // The entry is removed by hand, which the purge clock never does to a message this young,
    // so the acks name no lease: an ack naming its live lease resolves from what this broker
    // delivered under it, else from the leased segments' frames (`dedup_window` covers a
    // leased ack after a real purge).
    let db = b.db().await;
    let hash = tx_hash(Uuid::parse_str(&pid).unwrap(), "d");
    let purged = db
        .execute("DELETE FROM tx_index WHERE hash = $1", &[&hash])
        .await
        .unwrap();
    assert_eq!(purged, 1);
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("d", &pid, None, "completed"),
                item("d", &pid, None, "failed"),
            ]),
        )
        .await;
    check(
        "purged",
        &res,
        &[("d", refused(UNRESOLVABLE)), ("d", refused(UNRESOLVABLE))],
    );
    assert_eq!(
        b.cursor(&pid, "g").await,
        before,
        "cursor unchanged, nothing charged"
    );

    // An unresolvable item takes no part; a resolvable completion in the same call commits.
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("never-pushed", &pid, Some(&lease), "failed"),
                item("c", &pid, Some(&lease), "completed"),
            ]),
        )
        .await;
    check(
        "mixed",
        &res,
        &[("never-pushed", refused(UNRESOLVABLE)), ("c", done(false))],
    );
    assert_eq!(b.cursor(&pid, "g").await, Some((2, true, 0)));
}

// ------------------------------------------------------------------------------------------
// 6. error strings and status codes

#[tokio::test]
async fn consumer_not_found_for_a_group_that_never_popped() {
    let b = broker().await;
    let pid = push(&b, "q", &["a", "b"]).await;
    let lease = pop_expect(&b, "q", Some("g1"), 2, &["a", "b"]).await;
    let res = b
        .ack_batch(
            Some("g2"),
            json!([
                item("a", &pid, None, "completed"),
                item("b", &pid, None, "failed"),
                item("b", &pid, Some(&lease), "completed"),
            ]),
        )
        .await;
    check(
        "consumer not found",
        &res,
        &[
            ("a", refused(CONSUMER_NOT_FOUND)),
            ("b", refused(CONSUMER_NOT_FOUND)),
            ("b", refused(CONSUMER_NOT_FOUND)),
        ],
    );
    assert_eq!(b.cursor(&pid, "g2").await, None);
    assert_eq!(b.cursor(&pid, "g1").await, Some((-1, true, 0)));
    // Queue mode never popped this partition either.
    let res = b
        .ack_batch(None, json!([item("a", &pid, None, "completed")]))
        .await;
    check("queue mode", &res, &[("a", refused(CONSUMER_NOT_FOUND))]);
}

/// PostgreSQL accepts UUID spellings the broker's parser does not (a hyphen after any group
/// of four digits). The index key is a hash of the partition id, so such an ack is keyed
/// again with the partition the database found, and resolves like any other.
#[tokio::test]
async fn a_partition_id_only_postgres_can_parse_still_resolves() {
    let b = broker().await;
    let pid = push(&b, "q", &["a", "b"]).await;
    let lease = pop_expect(&b, "q", Some("g"), 2, &["a", "b"]).await;
    let hex: String = pid.chars().filter(|c| *c != '-').collect();
    let odd = hex
        .as_bytes()
        .chunks(4)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect::<Vec<_>>()
        .join("-");
    assert!(
        Uuid::parse_str(&odd).is_err(),
        "{odd} must be PostgreSQL-only"
    );
    let res = b
        .ack_batch(
            Some("g"),
            json!([item("b", &odd, Some(&lease), "completed")]),
        )
        .await;
    check("odd spelling", &res, &[("b", done(true))]);
    assert_eq!(b.cursor(&pid, "g").await, Some((1, false, 0)));
}

#[tokio::test]
async fn invalid_lease_wrong_released_and_expired() {
    let b = broker().await;
    let pid = push(&b, "q", &["a", "b", "c"]).await;
    let lease = pop_expect(&b, "q", Some("g"), 3, &["a", "b", "c"]).await;

    // Wrong lease (a random UUID, and a non-UUID string): refused, nothing moves.
    let wrong = Uuid::now_v7().to_string();
    for bad in [wrong.as_str(), "not-a-lease"] {
        let res = b
            .ack_batch(
                Some("g"),
                json!([
                    item("c", &pid, Some(bad), "completed"),
                    item("a", &pid, Some(bad), "failed"),
                ]),
            )
            .await;
        check(
            &format!("wrong lease {bad}"),
            &res,
            &[("c", refused(INVALID_LEASE)), ("a", refused(INVALID_LEASE))],
        );
        assert_eq!(b.cursor(&pid, "g").await, Some((-1, true, 0)));
    }

    // Released lease: a retry releases it; the same lease is then refused.
    let res = b
        .ack_batch(Some("g"), json!([item("a", &pid, Some(&lease), "retry")]))
        .await;
    check("release", &res, &[("a", done(true))]);
    let res = b
        .ack_batch(
            Some("g"),
            json!([item("c", &pid, Some(&lease), "completed")]),
        )
        .await;
    check("released lease", &res, &[("c", refused(INVALID_LEASE))]);
    assert_eq!(b.cursor(&pid, "g").await, Some((-1, false, 0)));

    // A superseded lease (the partition was claimed again) is refused too.
    let lease2 = pop_expect(&b, "q", Some("g"), 3, &["a", "b", "c"]).await;
    assert_ne!(lease, lease2);
    let res = b
        .ack_batch(
            Some("g"),
            json!([item("c", &pid, Some(&lease), "completed")]),
        )
        .await;
    check("old lease", &res, &[("c", refused(INVALID_LEASE))]);
    assert_eq!(b.cursor(&pid, "g").await, Some((-1, true, 0)));
}

#[tokio::test]
async fn invalid_lease_after_expiry() {
    let b = broker().await;
    b.configure("q", json!({"leaseTime": 1})).await;
    let pid = push(&b, "q", &["a", "b"]).await;
    let lease = pop_expect(&b, "q", Some("g"), 2, &["a", "b"]).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("b", &pid, Some(&lease), "completed"),
                item("a", &pid, Some(&lease), "failed"),
            ]),
        )
        .await;
    check(
        "expired",
        &res,
        &[("b", refused(INVALID_LEASE)), ("a", refused(INVALID_LEASE))],
    );
    // Nothing moved, and the expiry itself charged nothing.
    assert_eq!(b.cursor(&pid, "g").await, Some((-1, false, 0)));
    pop_expect(&b, "q", Some("g"), 2, &["a", "b"]).await;
    assert_eq!(b.cursor(&pid, "g").await, Some((-1, true, 0)));
}

#[tokio::test]
async fn malformed_partition_id_surfaces_the_database_message() {
    let b = broker().await;
    let pid = push(&b, "q", &["a"]).await;
    let lease = pop_expect(&b, "q", Some("g"), 1, &["a"]).await;
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("a", "not-a-uuid", None, "completed"),
                item("a", "not-a-uuid", Some(&lease), "completed"),
                {"transactionId": "a", "status": "completed"},
            ]),
        )
        .await;
    assert_eq!(res.len(), 3, "{res:#?}");
    check_db_error(
        "non-uuid",
        &res[0],
        0,
        "a",
        "invalid input syntax for type uuid",
    );
    check_db_error(
        "non-uuid leased",
        &res[1],
        1,
        "a",
        "invalid input syntax for type uuid",
    );
    // An absent partitionId defaults to "" which fails the same way.
    check_db_error(
        "absent",
        &res[2],
        2,
        "a",
        "invalid input syntax for type uuid",
    );
    assert_eq!(b.cursor(&pid, "g").await, Some((-1, true, 0)));

    // Single route too.
    let (s, v) = b
        .post(
            "/api/v1/ack",
            json!({"transactionId": "a", "partitionId": "zzz", "consumerGroup": "g"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let arr = v.as_array().expect("array");
    assert_eq!(arr.len(), 1);
    check_db_error(
        "single",
        &arr[0],
        0,
        "a",
        "invalid input syntax for type uuid",
    );
}

#[tokio::test]
async fn bad_bodies_and_empty_batches() {
    let b = broker().await;
    for route in ["/api/v1/ack", "/api/v1/ack/batch"] {
        for body in ["not json", "{\"transactionId\": ", "{'a': 1}"] {
            let (s, v) = b.post_raw(route, body).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{route} {body:?}: {v}");
            let e = v["error"].as_str().unwrap_or_default();
            assert!(e.starts_with("bad body: "), "{route} {body:?}: {v}");
        }
    }
    // Missing or non-array acknowledgments.
    for body in [
        json!({}),
        json!({"consumerGroup": "g"}),
        json!({"acknowledgments": null}),
        json!({"acknowledgments": {"transactionId": "a"}}),
        json!({"acknowledgments": "a"}),
        json!({"acknowledgements": []}),
    ] {
        let (s, v) = b.post("/api/v1/ack/batch", body.clone()).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body}: {v}");
        assert_eq!(
            v["error"], "bad body: acknowledgments array is required",
            "{body}: {v}"
        );
    }
    // Empty array: 200 [].
    for body in [
        json!({"acknowledgments": []}),
        json!({"acknowledgments": [], "consumerGroup": "g"}),
    ] {
        let (s, v) = b.post("/api/v1/ack/batch", body.clone()).await;
        assert_eq!(s, StatusCode::OK, "{body}: {v}");
        assert_eq!(v, json!([]), "{body}");
    }
}

// ------------------------------------------------------------------------------------------
// 7. lease-less acks

#[tokio::test]
async fn lease_less_acks_skip_validation_even_under_a_live_lease() {
    let b = broker().await;
    let pid = push(&b, "q", &["a", "b", "c", "d"]).await;
    let _lease = pop_expect(&b, "q", Some("g"), 4, &["a", "b", "c", "d"]).await;
    // Another worker holds the lease; a lease-less partial ack still moves the cursor and
    // leaves that lease in place.
    let res = b
        .ack_batch(Some("g"), json!([item("b", &pid, None, "completed")]))
        .await;
    check("lease-less partial", &res, &[("b", done(false))]);
    assert_eq!(b.cursor(&pid, "g").await, Some((1, true, 0)));
    pop_expect(&b, "q", Some("g"), 4, &[]).await;
    // Reaching the lease's end ends it.
    let res = b
        .ack_batch(Some("g"), json!([item("d", &pid, None, "completed")]))
        .await;
    check("lease-less full", &res, &[("d", done(true))]);
    assert_eq!(b.cursor(&pid, "g").await, Some((3, false, 0)));
    b.push("q", "p", &["e"]).await;
    pop_expect(&b, "q", Some("g"), 4, &["e"]).await;
}

#[tokio::test]
async fn post_expiry_ack_with_old_lease_refused_without_lease_succeeds() {
    let b = broker().await;
    b.configure("q", json!({"leaseTime": 1})).await;
    let pid = push(&b, "q", &["a", "b", "c"]).await;
    let lease = pop_expect(&b, "q", Some("g"), 3, &["a", "b", "c"]).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(b.cursor(&pid, "g").await, Some((-1, false, 0)));

    let res = b
        .ack_batch(
            Some("g"),
            json!([item("c", &pid, Some(&lease), "completed")]),
        )
        .await;
    check("old lease", &res, &[("c", refused(INVALID_LEASE))]);
    assert_eq!(b.cursor(&pid, "g").await, Some((-1, false, 0)));

    // Without the lease id: accepted; no live lease, so nothing to report released.
    let res = b
        .ack_batch(Some("g"), json!([item("b", &pid, None, "completed")]))
        .await;
    check("lease-less after expiry", &res, &[("b", done(false))]);
    assert_eq!(b.cursor(&pid, "g").await, Some((1, false, 0)));
    pop_expect(&b, "q", Some("g"), 3, &["c"]).await;
}

// ------------------------------------------------------------------------------------------
// 8. grouping

#[tokio::test]
async fn groups_by_partition_and_lease_resolve_independently() {
    let b = broker().await;
    let p1 = push_to(&b, "q", "p1", &["a", "b"]).await;
    let p2 = push_to(&b, "q", "p2", &["c", "d"]).await;
    assert_ne!(p1, p2);
    // Two pops: each claims one partition under its own lease.
    let (first, l_first) = pop(&b, "q", Some("g"), 2).await;
    let (second, l_second) = pop(&b, "q", Some("g"), 2).await;
    let (l1, l2) = match (first.as_slice(), second.as_slice()) {
        ([x, y], [z, w]) if x == "a" && y == "b" && z == "c" && w == "d" => (l_first, l_second),
        ([x, y], [z, w]) if x == "c" && y == "d" && z == "a" && w == "b" => (l_second, l_first),
        _ => panic!("expected one partition per pop: {first:?} {second:?}"),
    };
    assert_ne!(l1, l2);
    let bad = Uuid::now_v7().to_string();

    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("c", &p2, Some(&l2), "completed"),
                item("a", &p1, Some(&bad), "completed"),
                item("x", &p1, Some(&l1), "completed"),
                item("a", "not-a-uuid", Some(&l1), "completed"),
                item("d", &p2, Some(&l2), "completed"),
                item("b", &p1, Some(&bad), "failed"),
            ]),
        )
        .await;
    assert_eq!(res.len(), 6, "{res:#?}");
    check_db_error(
        "raw db group",
        &res[3],
        3,
        "a",
        "invalid input syntax for type uuid",
    );
    check_at("p2 group", &res[0], 0, "c", done(true));
    check_at("p1 bad lease", &res[1], 1, "a", refused(INVALID_LEASE));
    check_at("p1 own lease", &res[2], 2, "x", refused(UNRESOLVABLE));
    check_at("p2 group", &res[4], 4, "d", done(true));
    check_at("p1 bad lease", &res[5], 5, "b", refused(INVALID_LEASE));
    // p2 completed and released; p1 untouched and still leased under l1.
    assert_eq!(b.cursor(&p2, "g").await, Some((1, false, 0)));
    assert_eq!(b.cursor(&p1, "g").await, Some((-1, true, 0)));
    let res = b
        .ack_batch(Some("g"), json!([item("b", &p1, Some(&l1), "completed")]))
        .await;
    check("p1 with its own lease", &res, &[("b", done(true))]);
    assert_eq!(b.cursor(&p1, "g").await, Some((1, false, 0)));
}

// ------------------------------------------------------------------------------------------
// 9. dead-letter reasons

#[tokio::test]
async fn dead_letter_reason_rule() {
    let b = broker().await;
    // (queue, items as (txid, status, error), poison, reason); every queue has a, b, c.
    type Spec<'a> = (
        &'a str,
        Vec<(&'a str, &'a str, Option<&'a str>)>,
        &'a str,
        &'a str,
    );
    let cases: Vec<Spec> = vec![
        // The poison message's own error wins over an earlier-listed one.
        (
            "own",
            vec![("b", "failed", Some("other")), ("a", "dlq", Some("own"))],
            "a",
            "own",
        ),
        // Poison without a reason: the first available one in the group.
        (
            "first",
            vec![
                ("a", "dlq", None),
                ("c", "failed", Some("first")),
                ("b", "failed", Some("second")),
            ],
            "a",
            "first",
        ),
        // Empty strings are not reasons; a retry's error is available.
        (
            "retryreason",
            vec![("a", "dlq", Some("")), ("c", "retry", Some("not yet"))],
            "a",
            "not yet",
        ),
        // Nobody gave one.
        (
            "default",
            vec![("a", "dlq", None), ("b", "failed", Some(""))],
            "a",
            RETRIES_EXHAUSTED,
        ),
        // A completion's error is not a reason.
        (
            "completedreason",
            vec![("a", "completed", Some("irrelevant")), ("b", "dlq", None)],
            "b",
            RETRIES_EXHAUSTED,
        ),
    ];
    for (q, items, poison, reason) in cases {
        let pid = push(&b, q, &["a", "b", "c"]).await;
        let lease = pop_expect(&b, q, Some("g"), 3, &["a", "b", "c"]).await;
        let body: Vec<Value> = items
            .iter()
            .map(|(t, s, e)| match e {
                Some(e) => item_err(t, &pid, Some(&lease), s, e),
                None => item(t, &pid, Some(&lease), s),
            })
            .collect();
        let res = b.ack_batch(Some("g"), Value::Array(body)).await;
        let want: Vec<(&str, Want)> = items
            .iter()
            .map(|(t, _, _)| {
                (
                    *t,
                    if *t == poison {
                        done_dlq(true)
                    } else {
                        done(true)
                    },
                )
            })
            .collect();
        check(q, &res, &want);
        assert_one_dead_letter(&b, q, poison, "g", reason).await;
    }

    // The same rule when an exhausted `failed` dead-letters.
    b.configure("exhausted", json!({"retryLimit": 1})).await;
    let pid = push(&b, "exhausted", &["a", "b", "c"]).await;
    let lease = pop_expect(&b, "exhausted", Some("g"), 3, &["a", "b", "c"]).await;
    nack_charged(&b, &pid, &lease, "b", "g").await;
    let lease = pop_expect(&b, "exhausted", Some("g"), 3, &["a", "b", "c"]).await;
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item_err("c", &pid, Some(&lease), "failed", "later"),
                item("a", &pid, Some(&lease), "completed"),
                item_err("b", &pid, Some(&lease), "failed", "own"),
            ]),
        )
        .await;
    check(
        "exhausted",
        &res,
        &[("c", done(true)), ("a", done(true)), ("b", done_dlq(true))],
    );
    assert_one_dead_letter(&b, "exhausted", "b", "g", "own").await;
    assert_eq!(b.cursor(&pid, "g").await, Some((1, false, 0)));
    pop_expect(&b, "exhausted", Some("g"), 3, &["c"]).await;

    b.configure("exhausted2", json!({"retryLimit": 0})).await;
    let pid = push(&b, "exhausted2", &["a", "b"]).await;
    let lease = pop_expect(&b, "exhausted2", Some("g"), 2, &["a", "b"]).await;
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                item("a", &pid, Some(&lease), "failed"),
                item_err("b", &pid, Some(&lease), "failed", "from b"),
            ]),
        )
        .await;
    check(
        "exhausted2",
        &res,
        &[("a", done_dlq(true)), ("b", done(true))],
    );
    assert_one_dead_letter(&b, "exhausted2", "a", "g", "from b").await;
}

// ------------------------------------------------------------------------------------------
// 10. routes and consumer groups

#[tokio::test]
async fn single_route_and_queue_mode_default() {
    let b = broker().await;
    let pid = push(&b, "q", &["a", "b"]).await;
    let lease = pop_expect(&b, "q", None, 2, &["a", "b"]).await;

    // consumerGroup null (as the Python client sends it) is queue mode.
    let (s, v) = b
        .post(
            "/api/v1/ack",
            json!({"transactionId": "a", "partitionId": pid, "leaseId": lease,
                   "status": "completed", "consumerGroup": null, "error": null}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    check(
        "single null group",
        v.as_array().expect("array"),
        &[("a", done(false))],
    );
    assert_eq!(b.cursor(&pid, QUEUE_MODE).await, Some((0, true, 0)));

    // consumerGroup and status absent: queue mode, completed.
    let (s, v) = b
        .post(
            "/api/v1/ack",
            json!({"transactionId": "b", "partitionId": pid, "leaseId": lease}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    check(
        "single absent group",
        v.as_array().expect("array"),
        &[("b", done(true))],
    );
    assert_eq!(b.cursor(&pid, QUEUE_MODE).await, Some((1, false, 0)));

    // Single route nack: a one-element answer, charged, redelivers.
    b.push("q", "p", &["c"]).await;
    let lease = pop_expect(&b, "q", None, 2, &["c"]).await;
    let (s, v) = b
        .post(
            "/api/v1/ack",
            json!({"transactionId": "c", "partitionId": pid, "leaseId": lease,
                   "status": "failed", "error": "boom"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    check(
        "single nack",
        v.as_array().expect("array"),
        &[("c", done(true))],
    );
    assert_eq!(b.cursor(&pid, QUEUE_MODE).await, Some((1, false, 1)));
    pop_expect(&b, "q", None, 2, &["c"]).await;

    // Named group on the single route; absent group there means queue mode, not "g".
    let pid2 = push(&b, "q2", &["a"]).await;
    let lease = pop_expect(&b, "q2", Some("g"), 1, &["a"]).await;
    let (s, v) = b
        .post(
            "/api/v1/ack",
            json!({"transactionId": "a", "partitionId": pid2, "leaseId": lease}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    check(
        "single, group absent",
        v.as_array().expect("array"),
        &[("a", refused(CONSUMER_NOT_FOUND))],
    );
    assert_eq!(b.cursor(&pid2, "g").await, Some((-1, true, 0)));
    let (s, v) = b
        .post(
            "/api/v1/ack",
            json!({"transactionId": "a", "partitionId": pid2, "leaseId": lease,
                   "consumerGroup": "g"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    check(
        "single, group g",
        v.as_array().expect("array"),
        &[("a", done(true))],
    );
    assert_eq!(b.cursor(&pid2, "g").await, Some((0, false, 0)));
}

#[tokio::test]
async fn batch_route_reads_only_the_top_level_consumer_group() {
    let b = broker().await;
    let pid = push(&b, "q", &["a", "b"]).await;
    let lease = pop_expect(&b, "q", Some("g"), 2, &["a", "b"]).await;

    // Top-level absent, per-item "g": queue mode is used, which never popped here.
    let (s, v) = b
        .post(
            "/api/v1/ack/batch",
            json!({"acknowledgments": [
                {"transactionId": "a", "partitionId": pid, "leaseId": lease, "consumerGroup": "g"}
            ]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    check(
        "absent top-level",
        v.as_array().expect("array"),
        &[("a", refused(CONSUMER_NOT_FOUND))],
    );
    // Top-level null: the same.
    let res = b
        .ack_batch(
            None,
            json!([{"transactionId": "a", "partitionId": pid, "leaseId": lease, "consumerGroup": "g"}]),
        )
        .await;
    check(
        "null top-level",
        &res,
        &[("a", refused(CONSUMER_NOT_FOUND))],
    );
    assert_eq!(b.cursor(&pid, "g").await, Some((-1, true, 0)));

    // Top-level "g", per-item "other": "g" is used.
    let res = b
        .ack_batch(
            Some("g"),
            json!([
                {"transactionId": "a", "partitionId": pid, "leaseId": lease, "consumerGroup": "other"},
                {"transactionId": "b", "partitionId": pid, "leaseId": lease, "consumerGroup": null},
            ]),
        )
        .await;
    check("top-level g", &res, &[("a", done(true)), ("b", done(true))]);
    assert_eq!(b.cursor(&pid, "g").await, Some((1, false, 0)));
    assert_eq!(b.cursor(&pid, "other").await, None);
}

// ------------------------------------------------------------------------------------------
// partition not owned by tenant

/// Another tenant's partition, planted in the database directly so the broker runs with
/// authentication off (tenant `default`): an ack naming it (with or without a lease, even for
/// a group that has a cursor there) is refused with the contract's text and changes nothing,
/// and its lease cannot be extended from this tenant. `tenants.rs` covers the same through
/// tokens of two tenants.
#[tokio::test]
async fn a_partition_of_another_tenant_is_not_owned() {
    let b = broker().await;
    let db = b.db().await;
    let (qid, pid, lease) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    db.execute(
        "INSERT INTO queues (id, tenant, name) VALUES ($1, 'other', 'orders')",
        &[&qid],
    )
    .await
    .unwrap();
    db.execute(
        "INSERT INTO partitions (id, tenant, queue_id, name, next_offset) VALUES ($1, 'other', $2, 'Default', 1)",
        &[&pid, &qid],
    )
    .await
    .unwrap();
    let hash = tx_hash(pid, "theirs");
    match layout().await {
        Layout::Single => {
            db.execute(
                "INSERT INTO tx_index (hash, \"offset\", created_at) VALUES ($1, 0, now())",
                &[&hash],
            )
            .await
        }
        // On Citus the index row carries its partition (its distribution column).
        Layout::Citus => {
            db.execute(
                "INSERT INTO tx_index (hash, \"offset\", created_at, partition_id)
                 VALUES ($1, 0, now(), $2)",
                &[&hash, &pid],
            )
            .await
        }
    }
    .unwrap();
    db.execute(
        "INSERT INTO cursors (partition_id, consumer_group, start, queue_id)
         VALUES ($1, '__QUEUE_MODE__', -1, $2)",
        &[&pid, &qid],
    )
    .await
    .unwrap();
    db.execute(
        "INSERT INTO cursor_log (partition_id, consumer_group, seq, committed, lease_id,
                                 lease_expires_at, lease_end)
         VALUES ($1, '__QUEUE_MODE__', 1, -1, $2, now() + interval '5 minutes', 0)",
        &[&pid, &lease],
    )
    .await
    .unwrap();
    let pid_s = pid.to_string();
    let lease_s = lease.to_string();
    for (label, l) in [("leased", Some(lease_s.as_str())), ("lease-less", None)] {
        for status in ["completed", "failed", "dlq"] {
            let res = b
                .ack_batch(None, json!([item("theirs", &pid_s, l, status)]))
                .await;
            check(
                &format!("{label} {status}"),
                &res,
                &[("theirs", refused("partition not owned by tenant"))],
            );
        }
    }
    let row = db
        .query_one(
            "SELECT committed, lease_id, retry_count FROM cursor_state WHERE partition_id = $1",
            &[&pid],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), -1);
    assert_eq!(row.get::<_, Option<Uuid>>(1), Some(lease));
    assert_eq!(row.get::<_, i32>(2), 0);
    assert!(dead_letters(&b, "orders").await.is_empty());
    let (s, v) = b
        .request(
            reqwest::Method::POST,
            &format!("/api/v1/lease/{lease}/extend"),
            None,
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["error"], "Lease not found", "{v}");
}

/// A retried ack whose first answer was lost (it committed): what it answers depends on
/// whether that commit ended the lease. With its `leaseId`: `noop` while the lease lives
/// (a partial ack keeps it), `invalid or expired lease` once the first ack ended it (the
/// seed's lease rule: a released lease is not the live one); without a `leaseId`: `noop`
/// either way. In every case the cursor does not move and nothing redelivers: the retry
/// cannot undo or double the first ack. docs/api.md, "A retried ack", says so.
#[tokio::test]
async fn a_retried_ack_after_a_lost_answer() {
    let b = broker().await;
    let pid = push(&b, "q", &["a", "b"]).await;
    let lease = pop_expect(&b, "q", Some("g"), 2, &["a", "b"]).await;
    let first = json!([item("a", &pid, Some(&lease), "completed")]);
    check(
        "a, partial",
        &b.ack_batch(Some("g"), first.clone()).await,
        &[("a", done(false))],
    );
    check(
        "a, retried: lease alive",
        &b.ack_batch(Some("g"), first).await,
        &[("a", noop())],
    );

    let last = json!([item("b", &pid, Some(&lease), "completed")]);
    check(
        "b, ends it",
        &b.ack_batch(Some("g"), last.clone()).await,
        &[("b", done(true))],
    );
    check(
        "b, retried with the released lease",
        &b.ack_batch(Some("g"), last).await,
        &[("b", refused(INVALID_LEASE))],
    );
    let leaseless = json!([item("b", &pid, None, "completed")]);
    check(
        "b, retried without a lease",
        &b.ack_batch(Some("g"), leaseless).await,
        &[("b", noop())],
    );
    assert_eq!(
        b.cursor(&pid, "g").await,
        Some((1, false, 0)),
        "the cursor stayed"
    );
    pop_expect(&b, "q", Some("g"), 2, &[]).await;
}

/// Acks of one lease's messages sent at once, one request each, are fused into few
/// transactions and statements (one per (partition, group) at most in the one-statement
/// path, the others by the full path): every one succeeds, done or a no-op where a higher
/// offset committed first, the lease lives on until its last message, and nothing is
/// redelivered.
#[tokio::test]
async fn concurrent_acks_of_one_lease_each_succeed_and_the_last_releases_it() {
    let b = broker().await;
    let txids: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    let ids: Vec<&str> = txids.iter().map(String::as_str).collect();
    let pid = push(&b, "q", &ids).await;
    let lease = pop_expect(&b, "q", Some("g"), 20, &ids).await;
    let acks = ids[..19].iter().map(|t| {
        let body = json!([item(t, &pid, Some(&lease), "completed")]);
        let b = &b;
        async move { (t, b.ack_batch(Some("g"), body).await) }
    });
    for (t, res) in futures::future::join_all(acks).await {
        assert_eq!(res.len(), 1, "{t}: {res:?}");
        assert_eq!(res[0]["success"], json!(true), "{t}: {res:?}");
        assert_eq!(res[0]["leaseReleased"], json!(false), "{t}: {res:?}");
    }
    assert_eq!(
        b.cursor(&pid, "g").await,
        Some((18, true, 0)),
        "the lease lives on"
    );
    let last = json!([item("m19", &pid, Some(&lease), "completed")]);
    check(
        "the last one ends it",
        &b.ack_batch(Some("g"), last).await,
        &[("m19", done(true))],
    );
    assert_eq!(b.cursor(&pid, "g").await, Some((19, false, 0)));
    pop_expect(&b, "q", Some("g"), 20, &[]).await;
}
