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

/// `/status`'s `depth` (a Regent extension): what each stats round counted, a point per
/// minute, the last round of a minute winning; the tenant's, or one queue's (written only
/// when it changed), `null` for a namespace or task. Minutes past `SERIES_RETENTION_DAYS`
/// are deleted by retention.
#[tokio::test]
async fn the_status_page_charts_the_backlog_each_round_counted() {
    let b = broker().await;
    let (_, v) = b.get("/api/v1/status").await;
    assert_eq!(v["depth"], json!([]), "no round yet: {v}");

    let pid = fill(&b).await;
    let (_, overview) = b.get("/api/v1/resources/overview").await;
    let (_, v) = b.get("/api/v1/status").await;
    let now = &v["depth"][0];
    assert_eq!(
        (&now["pending"], &now["processing"], &now["deadLetter"]),
        (
            &overview["messages"]["pending"],
            &overview["messages"]["processing"],
            &overview["messages"]["deadLetter"]
        ),
        "{v} vs {overview}"
    );
    // a3 and l1 wait; queue mode is one behind on orders/p1 and one on logs, which nobody has
    // read (issue 50: a queue never read lags too).
    assert_eq!(
        (&now["pending"], &now["lagMessages"], &now["deadLetter"]),
        (&json!(2), &json!(2), &json!(1)),
        "{v}"
    );
    assert!(now["maxTimeLagSeconds"].as_f64().unwrap() >= 0.0, "{v}");

    // a3 consumed: the next round's point says so (the same minute's row, or the next's).
    let popped = b.pop("orders", "batch=1").await;
    let ack = json!([{"transactionId": "a3", "partitionId": pid, "leaseId": popped["leaseId"],
                      "status": "completed"}]);
    b.ack_batch(None, ack).await;
    b.refresh_stats().await;
    let (_, v) = b.get("/api/v1/status").await;
    let points = v["depth"].as_array().unwrap();
    assert!(points.len() <= 2, "a point per minute: {v}");
    assert_eq!(
        (&points[0]["pending"], &points[0]["lagMessages"]),
        (&json!(1), &json!(1)),
        "l1 still waits: {v}"
    );
    // One queue's: a row only when a round counts new figures, carried forward.
    let (_, v) = b.get("/api/v1/status?queue=orders").await;
    let points = v["depth"].as_array().unwrap();
    assert_eq!(
        (
            &points[0]["pending"],
            &points[0]["deadLetter"],
            &points[0]["lagMessages"]
        ),
        (&json!(0), &json!(1), &json!(0)),
        "{v}"
    );
    if points.len() > 1 {
        assert_eq!(points[1]["pending"], json!(1), "the first round's: {v}");
    }
    let rows = |db: tokio_postgres::Client| async move {
        let r = db
            .query_one("SELECT count(*) FROM queue_depth_minutes", &[])
            .await
            .unwrap();
        r.get::<_, i64>(0)
    };
    let before = rows(b.db().await).await;
    b.refresh_stats().await;
    assert_eq!(
        rows(b.db().await).await,
        before,
        "nothing changed, nothing written"
    );
    let (_, v) = b.get("/api/v1/status?queue=logs").await;
    assert_eq!(v["depth"][0]["pending"], json!(1), "{v}");
    // A window after the queue's last row: that row, carried to the window's start.
    let later = chrono::Utc::now() + chrono::Duration::minutes(5);
    let (from, to) = (
        later.to_rfc3339(),
        (later + chrono::Duration::minutes(10)).to_rfc3339(),
    );
    let path = format!(
        "/api/v1/status?queue=logs&from={}&to={}",
        enc(&from),
        enc(&to)
    );
    let (_, v) = b.get(&path).await;
    assert_eq!(
        (
            v["depth"].as_array().map(Vec::len),
            &v["depth"][0]["pending"]
        ),
        (Some(1), &json!(1)),
        "{v}"
    );
    for (path, want) in [
        ("/api/v1/status?queue=nosuch", json!([])),
        ("/api/v1/status?namespace=shop", Value::Null),
    ] {
        let (_, v) = b.get(path).await;
        assert_eq!(v["depth"], want, "{path}: {v}");
    }

    // Another tenant's rows are not this tenant's; old minutes go with the series.
    let db = b.db().await;
    db.batch_execute(
        "INSERT INTO depth_minutes VALUES
           ('zenith', date_trunc('minute', now()), 7, 0, 0, 0, 0),
           ('default', now() - interval '8 days', 9, 0, 0, 0, 0);
         INSERT INTO queue_depth_minutes
           SELECT queue_id, now() - interval '8 days', 9, 0, 0, 0 FROM queue_stats",
    )
    .await
    .unwrap();
    let (_, v) = b.get("/api/v1/status").await;
    assert!(
        v["depth"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["pending"] != 7),
        "{v}"
    );
    b.retention_pass().await;
    let left: i64 = db
        .query_one(
            "SELECT (SELECT count(*) FROM depth_minutes WHERE minute < now() - interval '7 days')
                  + (SELECT count(*) FROM queue_depth_minutes
                      WHERE minute < now() - interval '7 days')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 0);
}

fn enc(s: &str) -> String {
    s.replace('+', "%2B").replace(':', "%3A")
}

/// The queue page's `options` (a Regent extension) are configure's echo, so a client that
/// edits one option can send the rest back: the round trip changes nothing.
#[tokio::test]
async fn the_queue_page_names_every_option_as_configure_echoes_it() {
    let b = broker().await;
    let options = json!({"leaseTime": 45, "retryLimit": 7, "delayedProcessing": 3,
                         "windowBuffer": 2, "retentionSeconds": 600, "encryptionEnabled": false,
                         "maxWaitTimeSeconds": 30, "dlqAfterMaxRetries": false});
    let (s, echo) = b
        .post(
            "/api/v1/configure",
            json!({"queue": "opts", "options": options}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{echo}");
    let (s, v) = b.get("/api/v1/status/queues/opts").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["queue"]["options"], echo["options"], "{v}");
    let (s, again) = b
        .post(
            "/api/v1/configure",
            json!({"queue": "opts", "options": v["queue"]["options"]}),
        )
        .await;
    assert_eq!(
        (s, &again["options"]),
        (StatusCode::OK, &echo["options"]),
        "{again}"
    );
}
