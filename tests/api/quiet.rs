//! A consumer group whose last walk over its cursors found nothing (`regent_memory::quiet`):
//! its waiting pops park without claiming for a while, and nothing that makes a message
//! claimable is missed for it: a push wakes them at once, and what nothing announces (a lease
//! expiring) is found by a later walk.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::{broker, Broker};

/// A waiting pop of one message (the answer as the broker gave it).
async fn waiting_pop(b: &Broker, queue: &str, timeout_ms: u64) -> Value {
    let (status, v) = b
        .get(&format!(
            "/api/v1/pop/queue/{queue}?wait=true&timeout={timeout_ms}&batch=1"
        ))
        .await;
    assert!(status.is_success(), "{status} {v}");
    v
}

async fn skipped(b: &Broker) -> f64 {
    b.metric("regent_pop_walks_skipped_total").await
}

/// The queue drained: one message pushed, popped and acked, so the broker knows the queue.
async fn drained(b: &Broker, queue: &str) {
    b.push(queue, "p", &["first"]).await;
    let pop = b.pop(queue, "batch=1").await;
    assert_eq!(Broker::txids(&pop), ["first"]);
    b.ack_all(None, &pop).await;
}

#[tokio::test]
async fn pops_arriving_after_a_walk_that_found_nothing_park_without_claiming_and_a_push_wakes_them()
{
    let b = std::sync::Arc::new(broker().await);
    drained(&b, "quiet-wake").await;
    let before = skipped(&b).await;
    // The first walks and finds nothing; the others come within the next 100 ms.
    let mut pops = Vec::new();
    for _ in 0..4 {
        let b = b.clone();
        pops.push(tokio::spawn(async move {
            waiting_pop(&b, "quiet-wake", 3000).await
        }));
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        skipped(&b).await > before,
        "a pop arriving just after an empty walk parks without claiming"
    );
    let pushed = Instant::now();
    b.push("quiet-wake", "p", &["second"]).await;
    let mut got = Vec::new();
    for p in pops {
        got.extend(Broker::txids(&p.await.unwrap()));
    }
    assert_eq!(got, ["second"], "exactly one parked pop takes it");
    // The others waited out their 3 s; the push was taken long before.
    assert!(pushed.elapsed() >= Duration::from_millis(2500));
}

#[tokio::test]
async fn a_lease_expiring_unannounced_reaches_a_pop_parked_on_a_quiet_group() {
    let b = broker().await;
    b.configure("quiet-expiry", json!({"leaseTime": 1})).await;
    drained(&b, "quiet-expiry").await;
    b.push("quiet-expiry", "p", &["held"]).await;
    let held = b.pop("quiet-expiry", "batch=1").await;
    assert_eq!(Broker::txids(&held), ["held"], "leased and never acked");
    let started = Instant::now();
    let again = waiting_pop(&b, "quiet-expiry", 5000).await;
    assert_eq!(
        Broker::txids(&again),
        ["held"],
        "redelivered after its lease expired"
    );
    assert!(
        started.elapsed() < Duration::from_millis(3000),
        "found by a walk soon after the expiry, not at the long-poll's end: {:?}",
        started.elapsed()
    );
}

/// A push comes with its partition, which the pop it wakes claims from the ready list: the
/// group stays quiet, and a pop arriving just after still parks without walking.
#[tokio::test]
async fn a_push_leaves_a_quiet_group_quiet_and_the_pop_it_wakes_claims_it() {
    let b = std::sync::Arc::new(broker().await);
    drained(&b, "quiet-busy").await;
    let first = {
        let b = b.clone();
        tokio::spawn(async move { waiting_pop(&b, "quiet-busy", 3000).await })
    };
    // It walks, finds nothing and parks; the push wakes it.
    tokio::time::sleep(Duration::from_millis(20)).await;
    b.push("quiet-busy", "p", &["pushed"]).await;
    assert_eq!(Broker::txids(&first.await.unwrap()), ["pushed"]);
    let before = skipped(&b).await;
    let next = waiting_pop(&b, "quiet-busy", 200).await;
    assert!(Broker::txids(&next).is_empty());
    assert!(
        skipped(&b).await > before,
        "the next pop, within 100 ms of the empty walk, parked without walking"
    );
}

/// An ack that ends its lease with more to read on the partition lists the partition for its
/// group: a pop parked on the quiet group is woken and claims it from the list, never
/// skipping for want of a hint.
#[tokio::test]
async fn an_ack_that_leaves_more_hands_its_partition_to_a_pop_parked_on_a_quiet_group() {
    let b = std::sync::Arc::new(broker().await);
    drained(&b, "quiet-reopen").await;
    b.push("quiet-reopen", "p", &["one", "two"]).await;
    let held = b.pop("quiet-reopen", "batch=1").await;
    assert_eq!(Broker::txids(&held), ["one"]);
    let waiter = {
        let b = b.clone();
        tokio::spawn(async move { waiting_pop(&b, "quiet-reopen", 3000).await })
    };
    // It walks, meets the partition leased, finds nothing and parks: the group is quiet.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let before = skipped(&b).await;
    let acked = Instant::now();
    b.ack_all(None, &held).await;
    assert_eq!(Broker::txids(&waiter.await.unwrap()), ["two"]);
    assert!(acked.elapsed() < Duration::from_millis(2000));
    assert_eq!(
        skipped(&b).await,
        before,
        "woken with the partition listed: it claimed, not skipped"
    );
}
