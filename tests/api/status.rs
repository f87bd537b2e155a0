//! The status pages (spec §13.1–13.5, issue 13) through HTTP: the series bucketed over a
//! window, each queue's share, the queue page and its messages, and the analytics points.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{broker, partition_names, Broker};

/// Three messages pushed to `orders/p1`, two of them popped and acked (one dead-lettered),
/// one pushed to `logs`; the series flushed.
async fn fill(b: &Broker) -> String {
    let (s, _) = b
        .post(
            "/api/v1/configure",
            json!({"queue": "orders", "namespace": "shop", "task": "ship",
                   "options": {"retryLimit": 5, "leaseTime": 60}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let pushed = b.push("orders", "p1", &["a1", "a2", "a3"]).await;
    let pid = pushed[0]["partition_id"].as_str().unwrap().to_string();
    b.push("logs", "Default", &["l1"]).await;
    let v = b.pop("orders", "batch=2").await;
    let acks = json!([
        {"transactionId": "a1", "partitionId": pid, "leaseId": v["leaseId"], "status": "completed"},
        {"transactionId": "a2", "partitionId": pid, "leaseId": v["leaseId"], "status": "dlq",
         "error": "bad"}]);
    let r = b.ack_batch(None, acks).await;
    assert!(r.iter().all(|i| i["success"] == true), "{r:?}");
    b.flush_series().await;
    b.refresh_stats().await;
    pid
}

#[tokio::test]
async fn the_status_page_buckets_the_series_and_counts_what_is_there_now() {
    let b = broker().await;
    fill(&b).await;
    let (s, v) = b.get("/api/v1/status").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["bucketMinutes"], &v["pointCount"]),
        (&json!(1), &json!(60)),
        "{v}"
    );
    let points = v["throughput"].as_array().unwrap();
    let sum = |k: &str| points.iter().map(|p| p[k].as_i64().unwrap()).sum::<i64>();
    assert_eq!(
        (
            sum("ingested"),
            sum("popMessages"),
            sum("processed"),
            sum("dlqCount")
        ),
        (4, 2, 2, 1),
        "{v}"
    );
    assert_eq!(points[0]["avgEventLoopLagMs"], Value::Null, "not invented");
    let orders = v["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == "orders")
        .cloned()
        .unwrap();
    assert_eq!(
        (&orders["partitions"], &orders["totalConsumed"]),
        (&json!(2), &json!(2))
    );
    assert_eq!(v["messages"]["total"], 4, "{v}");
    assert_eq!(v["messages"]["deadLetter"], 1, "{v}");
    assert_eq!(
        v["deadLetterQueue"],
        json!({"totalMessages": 1, "affectedPartitions": 1,
               "topErrors": [{"error": "bad", "count": 1}]})
    );
    assert_eq!(v["errors"]["dlqMessages"], 1);

    // Filtered to one queue; a window before anything happened has no points.
    let (_, v) = b.get("/api/v1/status?queue=logs").await;
    assert_eq!(v["messages"]["total"], 1, "{v}");
    assert_eq!(v["deadLetterQueue"]["totalMessages"], 0, "{v}");
    let (_, v) = b
        .get("/api/v1/status?from=2020-01-01T00:00:00Z&to=2020-01-02T00:00:00Z")
        .await;
    assert_eq!(
        (&v["throughput"], &v["bucketMinutes"]),
        (&json!([]), &json!(15)),
        "{v}"
    );
    let (s, v) = b
        .get("/api/v1/status?from=2020-01-02T00:00:00Z&to=2020-01-01T00:00:00Z")
        .await;
    assert_eq!(
        (s, v),
        (
            StatusCode::BAD_REQUEST,
            json!({"error": "from must be before to"})
        )
    );
}

#[tokio::test]
async fn the_queue_pages_list_configure_and_page_messages() {
    let b = broker().await;
    let pid = fill(&b).await;
    let (s, v) = b.get("/api/v1/status/queues?namespace=shop").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["queues"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["queues"][0]["name"], "orders");
    assert_eq!(v["pagination"], json!({"limit": 100, "offset": 0}));

    let (s, v) = b.get("/api/v1/status/queues/orders").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v["queue"]["config"],
        json!({"leaseTime": 60, "retryLimit": 5, "retryDelay": 1000, "ttl": 3600,
               "maxQueueSize": 0, "deadLetterQueue": true})
    );
    let p1 = v["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "p1")
        .cloned()
        .unwrap();
    assert_eq!(p1["messages"]["total"], 3);
    assert_eq!(p1["messages"], p1["stats"]);
    assert_eq!(v["totals"]["total"], 3);
    assert_eq!(v["totals"]["messages"]["deadLetter"], 1);
    assert_eq!(
        v["pagination"],
        json!({"limit": 1000, "offset": 0, "total": 2})
    );
    // A page of one partition, by name; the totals still cover the whole queue.
    let (_, v) = b.get("/api/v1/status/queues/orders?limit=1&offset=1").await;
    assert_eq!(partition_names(&v), ["p1"], "{v}");
    assert_eq!(v["totals"]["total"], 3, "{v}");
    let (s, v) = b.get("/api/v1/status/queues/nope").await;
    assert_eq!(
        (s, v),
        (StatusCode::NOT_FOUND, json!({"error": "Queue not found"}))
    );

    let (s, v) = b.get("/api/v1/status/queues/orders/messages").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let rows: Vec<(Value, Value)> = v
        .as_array()
        .expect("a top-level array")
        .iter()
        .map(|m| (m["transactionId"].clone(), m["status"].clone()))
        .collect();
    assert_eq!(
        rows,
        [
            (json!("a3"), json!("pending")),
            (json!("a2"), json!("dead_letter")),
            (json!("a1"), json!("completed")),
        ]
    );
    assert_eq!(v[0]["partitionId"], json!(pid));
    let (_, v) = b
        .get("/api/v1/status/queues/orders/messages?limit=1&offset=1")
        .await;
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["transactionId"], "a2");
    let (_, v) = b.get("/api/v1/status/queues/nope/messages").await;
    assert_eq!(v, json!([]));
}

#[tokio::test]
async fn analytics_counts_pushed_messages_per_interval() {
    let b = broker().await;
    fill(&b).await;
    for (interval, want) in [
        ("minute", "minute"),
        ("day", "day"),
        ("week", "hour"),
        ("", "hour"),
    ] {
        let (s, v) = b
            .get(&format!("/api/v1/status/analytics?interval={interval}"))
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(v["interval"], want, "{v}");
        let total: i64 = v["dataPoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["messages"].as_i64().unwrap())
            .sum();
        assert_eq!(total, 4, "{interval}: {v}");
    }
    let (_, v) = b.get("/api/v1/status/analytics?queue=logs").await;
    assert_eq!(v["dataPoints"][0]["messages"], 1, "{v}");
}

#[tokio::test]
async fn the_queue_analytics_count_operations_and_waits_per_queue() {
    let b = broker().await;
    fill(&b).await;
    let (s, v) = b.get("/api/v1/analytics/queue-ops").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let orders = v["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["queue"] == "orders")
        .cloned()
        .unwrap();
    assert_eq!(
        orders,
        json!({"queue": "orders", "push": 3, "pop": 2, "ack": 2, "nack": 0, "dlq": 1,
               "expired": 0})
    );
    assert!(v["series"][0]["timestamp"].is_string(), "{v}");
    assert_eq!(v["bucketMinutes"], 1);

    let (s, v) = b.get("/api/v1/analytics/queue-lag?queue=orders").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let rows = v.as_array().expect("an array");
    assert_eq!(rows.len(), 1, "{v}");
    assert_eq!(
        (&rows[0]["queueName"], &rows[0]["popCount"]),
        (&json!("orders"), &json!(2))
    );
    let (avg, max) = (
        rows[0]["avgLagMs"].as_f64().unwrap(),
        rows[0]["maxLagMs"].as_i64().unwrap(),
    );
    assert!(avg >= 0.0 && avg <= max as f64 && max < 60_000, "{v}");

    let (s, v) = b.get("/api/v1/analytics/retention").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["totals"]["expired"], 0, "{v}");
    assert_eq!(v["bucketMinutes"], 15);
}
