//! A broker that has pushed to a partition or popped from a queue knows it by name, and its
//! next push or pop goes without looking it up: one statement of its own, no transaction
//! around it (one PostgreSQL only). What it knows must never outlive what the database says:
//! each statement checks that the partition or queue still exists with the options the broker
//! knew, and a stale one runs the full way. These tests change the database under a broker
//! that knows the names.

use serde_json::json;

use crate::support::*;

/// Whether this broker knows the queue (for pops) and its partition `p` (for pushes), as a
/// next push or pop would use them.
fn knows(b: &Broker, queue: &str, partition: &str) -> (bool, bool) {
    let rt = b.runtime();
    (
        rt.known_queues.all_of("default", [(queue, "")]).is_some(),
        rt.known.all_of("default", [(queue, partition)]).is_some(),
    )
}

#[tokio::test]
async fn a_pop_after_its_queue_was_deleted_and_made_again_finds_the_new_queue() {
    if single_only("what a broker knows by name").await {
        return;
    }
    let b = broker().await;
    b.push("reborn", "p", &["old"]).await;
    let old = b.pop("reborn", "batch=1").await;
    b.ack_all(None, &old).await;
    assert_eq!(knows(&b, "reborn", "p"), (true, true));

    let (s, _) = b.delete("/api/v1/resources/queues/reborn").await;
    assert_eq!(s, reqwest::StatusCode::OK);
    // Pushed through another broker: this one's next pop is the first to meet the new queue.
    let other = Broker::attach(&b.db_url).await;
    other.push("reborn", "p", &["new"]).await;

    let popped = b.pop("reborn", "batch=10").await;
    assert_eq!(Broker::txids(&popped), vec!["new"], "{popped}");
    b.ack_all(None, &popped).await;
}

#[tokio::test]
async fn a_pop_follows_options_changed_after_the_broker_learned_the_queue() {
    if single_only("what a broker knows by name").await {
        return;
    }
    let b = broker().await;
    b.push("slowed", "p", &["a"]).await;
    let first = b.pop("slowed", "batch=1").await;
    b.ack_all(None, &first).await;
    assert!(knows(&b, "slowed", "p").0);

    // Changed through another broker, which this one hears nothing of.
    let other = Broker::attach(&b.db_url).await;
    other
        .configure("slowed", json!({"delayedProcessing": 60}))
        .await;
    b.push("slowed", "p", &["b"]).await;
    let popped = b.pop("slowed", "batch=10").await;
    assert!(
        Broker::txids(&popped).is_empty(),
        "a message younger than the queue's new delay was delivered: {popped}"
    );
}

#[tokio::test]
async fn a_push_follows_options_changed_after_the_broker_learned_the_partition() {
    if single_only("what a broker knows by name").await {
        return;
    }
    const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    let keyed = |c: &mut regent::config::Config| c.queen_encryption_key = Some(KEY.into());
    let b = broker_with(keyed).await;
    b.push("sealed", "p", &["plain"]).await;
    assert!(knows(&b, "sealed", "p").1);

    let other = Broker::attach_with(&b.db_url, keyed).await;
    other
        .configure("sealed", json!({"encryptionEnabled": true}))
        .await;
    b.push("sealed", "p", &["secret"]).await;
    let db = b.db().await;
    let last: Vec<u8> = db
        .query_one(
            "SELECT frames FROM segments ORDER BY end_offset DESC LIMIT 1",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let text = String::from_utf8_lossy(&last);
    assert!(
        !text.contains("\"tx\""),
        "stored in the clear in a queue that now encrypts: {text}"
    );
    let popped = b.pop("sealed", "batch=10").await;
    assert_eq!(Broker::txids(&popped), vec!["plain", "secret"], "{popped}");
    assert_eq!(popped["messages"][1]["data"], json!({"tx": "secret"}));
}
