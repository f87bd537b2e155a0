//! The deduplication window (issue 35, ARCHITECTURE.md "Invariants"): a transaction id the
//! partition took less than `DEDUP_WINDOW_SECONDS` ago is a duplicate, on any broker and
//! after a crash; one taken longer ago is a new message whether or not the purge has run;
//! an ack naming its live lease resolves past the window, one without a lease does not, and
//! a trace of a leased message is recorded past it.
//!
//! Time is made to pass by ageing the index's entries in SQL (the database's clock decides),
//! never by sleeping through a window.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{broker_with, fresh_database, serve, Broker};

const WINDOW: i64 = 60;

/// Makes every index entry look taken `secs` seconds ago.
async fn age_index(b: &Broker, secs: i64) {
    let n = b
        .db()
        .await
        // One timestamp for all (Citus refuses a STABLE function of a column in an UPDATE).
        .execute(
            "UPDATE tx_index SET created_at = now() - make_interval(secs => $1::float8)",
            &[&(secs as f64)],
        )
        .await
        .unwrap();
    assert!(n > 0, "the index holds entries to age");
}

fn statuses(v: &[Value]) -> Vec<&str> {
    v.iter().map(|r| r["status"].as_str().unwrap()).collect()
}

/// A broker keeping a one-minute window whose purge clock never runs during a test.
async fn windowed() -> Broker {
    broker_with(|c| {
        c.dedup_window_seconds = WINDOW as u64;
        c.purge_interval_seconds = 3600;
    })
    .await
}

#[tokio::test]
async fn a_duplicate_one_second_inside_the_window_is_refused_and_one_outside_is_new() {
    let a = windowed().await;
    let b = Broker::attach_with(&a.db_url, |c| {
        c.dedup_window_seconds = WINDOW as u64;
        c.purge_interval_seconds = 3600;
    })
    .await;
    let first = a.push_verdicts("orders", "p", &["x"]).await;
    assert_eq!(statuses(&first), ["queued"]);

    // One second inside: a duplicate, on the other broker too, naming the stored message.
    age_index(&a, WINDOW - 1).await;
    let again = b.push_verdicts("orders", "p", &["x"]).await;
    assert_eq!(statuses(&again), ["duplicate"], "{again:?}");
    assert_eq!(again[0]["message_id"], first[0]["message_id"]);

    // One second outside, the entry still there (no purge ran): a new message. In a batch
    // with an id still inside the window, each is judged on its own.
    a.push_verdicts("orders", "p", &["y"]).await;
    age_index(&a, WINDOW + 1).await;
    let v = b.push_verdicts("orders", "p", &["x"]).await;
    assert_eq!(statuses(&v), ["queued"], "{v:?}");
    assert_ne!(v[0]["message_id"], first[0]["message_id"]);
    let mixed = a.push_verdicts("orders", "p", &["x", "y"]).await;
    assert_eq!(statuses(&mixed), ["duplicate", "queued"], "{mixed:?}");

    // The log holds x twice (one per window), y twice; each delivered in push order.
    let popped = a.pop("orders", "batch=10").await;
    assert_eq!(Broker::txids(&popped), ["x", "y", "x", "y"], "{popped}");
}

#[tokio::test]
async fn an_ack_after_the_window_resolves_inside_its_live_lease_and_not_without_one() {
    let a = broker_with(|c| {
        c.dedup_window_seconds = WINDOW as u64;
        c.purge_interval_seconds = 1;
    })
    .await;
    a.push("jobs", "p", &["leased", "later"]).await;
    let popped = a.pop("jobs", "batch=1").await;
    assert_eq!(Broker::txids(&popped), ["leased"], "{popped}");
    let pid = popped["messages"][0]["partitionId"].clone();
    // The purge deletes every entry once they look older than the window.
    age_index(&a, 2 * WINDOW).await;
    let give_up = std::time::Instant::now() + Duration::from_secs(30);
    while a.indexed(None).await > 0 {
        assert!(
            std::time::Instant::now() < give_up,
            "the index was never purged"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A consumer traces what it works on, past the window too; nothing else is found.
    let trace =
        |txid: &str| json!({"transactionId": txid, "partitionId": pid, "data": {"step": 1}});
    let (s, v) = a.post("/api/v1/traces", trace("leased")).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, v) = a.post("/api/v1/traces", trace("later")).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    // Another broker never saw the delivery: it resolves from the leased segment's frames.
    let other = Broker::attach(&a.db_url).await;
    let outside = json!({"transactionId": "later", "partitionId": pid, "status": "completed"});
    let r = other.ack_batch(None, json!([outside])).await;
    assert_eq!(r[0]["success"], false, "{r:?}");
    assert_eq!(
        r[0]["error"],
        "unresolvable: transaction not in the ack window (hash purged or never pushed); if leased, the message redelivers",
        "not in the live lease's range: the index alone, which no longer has it"
    );
    let inside = json!({"transactionId": "leased", "partitionId": pid,
                        "leaseId": popped["leaseId"], "status": "completed"});
    let r = other.ack_batch(None, json!([inside])).await;
    assert_eq!(r[0]["success"], true, "{r:?}");
    // The cursor moved: what is left is the message after it.
    let next = a.pop("jobs", "batch=10").await;
    assert_eq!(Broker::txids(&next), ["later"], "{next}");
}

/// The window holds across a broker killed mid-flight: the index is PostgreSQL's, written in
/// the push's own transaction. `DEDUP_WINDOW_SECONDS` is read from the environment.
#[tokio::test]
async fn the_window_survives_a_crash() {
    let db_url = fresh_database().await;
    let env = [("DEDUP_WINDOW_SECONDS", "60")];
    let push = |port: u16| {
        let body = json!({"items": [{"queue": "q", "partition": "p", "transactionId": "once",
                                      "payload": {}}]});
        async move {
            let v: Value = reqwest::Client::new()
                .post(format!("http://127.0.0.1:{port}/api/v1/push"))
                .json(&body)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            v[0]["status"].as_str().unwrap().to_string()
        }
    };
    let (mut first, port) = serve(&db_url, &env).await;
    assert_eq!(push(port).await, "queued");
    first.kill().await.unwrap();
    let (mut second, port) = serve(&db_url, &env).await;
    let b = Broker::attach(&db_url).await;
    age_index(&b, 59).await;
    assert_eq!(push(port).await, "duplicate");
    age_index(&b, 61).await;
    assert_eq!(push(port).await, "queued");
    second.kill().await.unwrap();
}

/// A purge interval past any clock's range (`PURGE_INTERVAL_SECONDS=18446744073709551615`)
/// means "never again", not a background task that panics at its first wait.
#[tokio::test]
async fn a_purge_interval_past_the_clocks_range_never_takes_a_task_down() {
    let b = broker_with(|c| c.purge_interval_seconds = u64::MAX).await;
    b.push("q", "p", &["x"]).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (status, health) = b.get("/health").await;
    assert_eq!(status, StatusCode::OK, "{health}");
    assert_eq!(health["tasksDown"], json!([]), "{health}");
}
