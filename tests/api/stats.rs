//! The stats snapshot (spec §9's stats table, issue 13): the counts of the inspection routes
//! come from rounds one broker of the fleet runs every `STATS_INTERVAL_MS`, so they cost the
//! same at 100,000 partitions; its lists are bounded.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{broker, broker_with, Broker};

async fn overview(b: &Broker) -> Value {
    let (s, v) = b.get("/api/v1/resources/overview").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

/// With a short interval, the broker's own rounds count a push without anyone asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rounds_run_by_themselves_every_stats_interval() {
    let b = broker_with(|c| c.stats_interval_ms = 200).await;
    b.push("auto", "p", &["a1", "a2"]).await;
    let mut v = overview(&b).await;
    for _ in 0..100 {
        if v["messages"]["total"] == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        v = overview(&b).await;
    }
    assert_eq!(v["messages"]["total"], 2, "no round counted the push: {v}");
    let age = v["statsAge"].as_i64().unwrap();
    assert!((0..=1).contains(&age), "{v}");
}

/// A deleted queue leaves the counts at once (the snapshot is read through the queues), and
/// a background round right after another one is skipped.
#[tokio::test]
async fn a_deleted_queue_is_not_counted_and_rounds_do_not_pile_up() {
    let b = broker().await;
    b.push("gone", "p", &["g1"]).await;
    b.push("kept", "p", &["k1", "k2"]).await;
    b.refresh_stats().await;
    assert_eq!(overview(&b).await["messages"]["total"], 3);
    let (s, _) = b.delete("/api/v1/resources/queues/gone").await;
    assert_eq!(s, StatusCode::OK);
    let v = overview(&b).await;
    assert_eq!(
        (&v["queues"], &v["messages"]["total"]),
        (&json!(1), &json!(2)),
        "{v}"
    );

    let service = &b.server.as_ref().unwrap().service;
    let skipped = service.refresh_stats(false).await.unwrap();
    assert!(
        !skipped.ran,
        "the last round finished less than an interval ago"
    );
    let forced = service.refresh_stats(true).await.unwrap();
    assert!(forced.ran && forced.queues == 1, "{forced:?}");
}

/// 1,001 partitions behind a group's cursors: the depth lists the 100 with the most pending
/// and counts them all; the lagging list keeps the tenant's 1,000 oldest and pages them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_snapshots_lists_are_bounded() {
    let b = broker().await;
    let items: Vec<Value> = (0..1001)
        .map(|i| {
            json!({"queue": "wide", "partition": format!("p{i:04}"), "transactionId": format!("t{i}"),
                   "payload": {}})
        })
        .collect();
    let (s, v) = b.post("/api/v1/push", json!({ "items": items })).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    // One more message on p0500, so the depth list has a clear first.
    b.push("wide", "p0500", &["extra"]).await;
    // A pop gives the group a cursor on every partition.
    let v = b.pop("wide", "consumerGroup=g&batch=1").await;
    assert_eq!(Broker::txids(&v).len(), 1, "{v}");
    b.refresh_stats().await;

    let (_, d) = b.get("/api/v1/resources/queues/wide/depth").await;
    assert_eq!(
        (&d["pending"], &d["partitionsPending"]),
        (&json!(1002), &json!(1001)),
        "{d}"
    );
    let listed = d["partitions"].as_array().unwrap();
    assert_eq!(listed.len(), 100, "{d}");
    assert_eq!(listed[0], json!({"partition": "p0500", "pending": 2}));
    let (_, g) = b.get("/api/v1/resources/queues/wide/depth?group=g").await;
    assert_eq!(g["partitions"].as_array().unwrap().len(), 100, "{g}");

    let (_, all) = b
        .get("/api/v1/consumer-groups/lagging?minLagSeconds=0")
        .await;
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 1000, "the tenant's 1,000 oldest");
    let ages: Vec<&str> = all
        .iter()
        .map(|r| r["oldest_unconsumed_at"].as_str().unwrap())
        .collect();
    assert!(ages.windows(2).all(|w| w[0] <= w[1]), "oldest first");
    let (_, tail) = b
        .get("/api/v1/consumer-groups/lagging?minLagSeconds=0&limit=5&offset=998")
        .await;
    assert_eq!(tail.as_array().unwrap().len(), 2, "{tail}");

    // The group's own page of cursors is counted now and paged too.
    let (_, page) = b
        .get("/api/v1/consumer-groups/g?limit=10&offset=1000")
        .await;
    assert_eq!(
        page["wide"]["partitions"].as_array().unwrap().len(),
        1,
        "{page}"
    );
    let (_, q) = b.get("/api/v1/resources/queues/wide?limit=10").await;
    assert_eq!(q["partitions"].as_array().unwrap().len(), 10);
    assert_eq!(q["pagination"]["total"], 1001, "{}", q["pagination"]);
}

/// A round recounts queues in statements of 500: 501 queues, each counted once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_counts_every_queue_of_a_tenant_in_batches() {
    let b = broker().await;
    let items: Vec<Value> = (0..501)
        .map(|i| json!({"queue": format!("q{i:03}"), "transactionId": "t", "payload": {}}))
        .collect();
    let (s, v) = b.post("/api/v1/push", json!({ "items": items })).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    b.push("q500", "Default", &["second"]).await;
    b.refresh_stats().await;
    let v = overview(&b).await;
    assert_eq!(
        (&v["queues"], &v["partitions"], &v["messages"]["total"]),
        (&json!(501), &json!(501), &json!(502)),
        "{v}"
    );
    let (_, v) = b.get("/api/v1/resources/queues?search=q500").await;
    assert_eq!(v["queues"][0]["messages"]["total"], 2, "{v}");
}

/// After a round, the fleet pauses at least an interval and four times the round's length,
/// so large rounds cannot keep the database busy.
#[tokio::test]
async fn a_long_round_is_followed_by_a_pause_four_times_as_long() {
    let b = broker_with(|c| c.stats_interval_ms = 1000).await;
    let service = &b.server.as_ref().unwrap().service;
    let db = b.db().await;
    let last_round = |took: i32, ago: i32| {
        format!(
            "UPDATE stats_rounds SET started_at = now() - make_interval(secs => {}),
                                     finished_at = now() - make_interval(secs => {ago})",
            took + ago
        )
    };
    // Whether a round (this call's or the broker's own) finished in the last 5 s.
    let recent = || async {
        let sql = "SELECT finished_at > now() - interval '5 s' AS recent FROM stats_rounds";
        db.query_one(sql, &[])
            .await
            .unwrap()
            .get::<_, bool>("recent")
    };
    // A 10 s round that finished 30 s ago: 40 s of pause are due.
    db.execute(&last_round(10, 30), &[]).await.unwrap();
    assert!(
        !service.refresh_stats(false).await.unwrap().ran,
        "still paused"
    );
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert!(!recent().await, "the broker's own rounds pause too");
    // 41 s ago: due, for this call or for the broker's next look.
    db.execute(&last_round(10, 41), &[]).await.unwrap();
    let ran = service.refresh_stats(false).await.unwrap().ran;
    assert!(ran || recent().await, "due");
}

/// The per-queue series name at most the window's 100 busiest queues.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_queue_series_name_the_windows_busiest_queues_only() {
    let b = broker().await;
    let items: Vec<Value> = (0..101)
        .map(|i| json!({"queue": format!("s{i:03}"), "transactionId": "t", "payload": {}}))
        .collect();
    let (s, v) = b.post("/api/v1/push", json!({ "items": items })).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    // s100 pushed most: it is among the busiest.
    b.push("s100", "Default", &["2", "3"]).await;
    b.flush_series().await;
    let (_, v) = b.get("/api/v1/analytics/queue-ops").await;
    let queues: Vec<&str> = v["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["queue"].as_str().unwrap())
        .collect();
    assert_eq!(queues.len(), 100, "{v}");
    assert!(queues.contains(&"s100"), "{queues:?}");
}
