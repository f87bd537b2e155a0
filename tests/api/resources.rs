//! The tenant-wide inspection routes (spec §9, issue 13): the overview, the namespace and
//! task roll-ups, the partition listing and clearing a queue.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{broker, Broker};

/// Two queues, four partitions (configure makes `orders/Default`), six messages: on
/// `orders/p1` group g holds a lease over one message after acking another; on `orders/p2`
/// queue mode dead-lettered one (g's first pop gave it cursors on all of `orders`); `logs` is
/// unread.
async fn fill(b: &Broker) -> (String, String) {
    let (s, v) = b
        .post(
            "/api/v1/configure",
            json!({"queue": "orders", "namespace": "billing", "task": "invoice"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    b.push("orders", "p1", &["a1", "a2", "a3"]).await;
    b.push("orders", "p2", &["b1", "b2"]).await;
    b.push("logs", "Default", &["l1"]).await;
    let v = b
        .pop("orders", "consumerGroup=g&batch=2&partitions=1")
        .await;
    let p1 = v["messages"][0]["partitionId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(Broker::txids(&v), ["a1", "a2"], "{v}");
    let ack = json!([{"transactionId": "a1", "partitionId": p1, "leaseId": v["leaseId"], "status": "completed"}]);
    assert_eq!(b.ack_batch(Some("g"), ack).await[0]["success"], true);
    let (_, v) = b
        .get("/api/v1/pop/queue/orders/partition/p2?wait=false")
        .await;
    let p2 = v["messages"][0]["partitionId"]
        .as_str()
        .unwrap()
        .to_string();
    let dlq = json!([{"transactionId": "b1", "partitionId": p2, "leaseId": v["leaseId"], "status": "dlq", "error": "bad"}]);
    assert_eq!(b.ack_batch(None, dlq).await[0]["dlq"], true);
    (p1, p2)
}

#[tokio::test]
async fn the_overview_counts_the_tenants_queues_partitions_and_messages() {
    let b = broker().await;
    fill(&b).await;
    b.flush_series().await;
    // Counts come from the stats snapshot: none before the first round.
    let (s, v) = b.get("/api/v1/resources/overview").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["statsAge"], &v["queues"]),
        (&json!(-1), &json!(2)),
        "{v}"
    );
    assert_eq!(v["messages"]["total"], 0, "{v}");
    b.refresh_stats().await;
    let (s, v) = b.get("/api/v1/resources/overview").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (
            &v["queues"],
            &v["partitions"],
            &v["namespaces"],
            &v["tasks"]
        ),
        (&json!(2), &json!(4), &json!(2), &json!(1)),
        "billing and logs; invoice: {v}"
    );
    assert_eq!(
        v["messages"],
        json!({"total": 6, "pending": 5, "processing": 1, "completed": 2, "failed": 0,
               "deadLetter": 1}),
        "{v}"
    );
    // Cursors: g with 2 after it on p1 and p2 and none on Default, queue mode 1 on p2.
    assert_eq!(
        v["lag"]["offset"],
        json!({"avg": 1.25, "median": 1.5, "min": 0.0, "max": 2.0}),
        "{v}"
    );
    assert!(v["lag"]["time"]["max"].as_f64().unwrap() >= 0.0, "{v}");
    let t = &v["throughput"];
    assert_eq!(t["ingestedPerSecond"], json!(6.0 / 300.0), "{v}");
    assert_eq!(t["processedPerSecond"], json!(2.0 / 300.0), "{v}");
    // Seconds since the refresh just asked for: 0 unless the machine is slow.
    assert!(
        v["statsAge"].as_i64().is_some_and(|a| (0..30).contains(&a)),
        "{v}"
    );
    // Until the next round, a push is not counted; after it, it is.
    b.push("logs", "Default", &["l2"]).await;
    let (_, v) = b.get("/api/v1/resources/overview").await;
    assert_eq!(v["messages"]["total"], 6, "{v}");
    b.refresh_stats().await;
    let (_, v) = b.get("/api/v1/resources/overview").await;
    assert_eq!(v["messages"]["total"], 7, "{v}");
}

#[tokio::test]
async fn namespaces_and_tasks_roll_up_their_queues_by_name() {
    let b = broker().await;
    fill(&b).await;
    b.refresh_stats().await;
    let (s, v) = b.get("/api/v1/resources/namespaces").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v["namespaces"],
        json!([
            {"namespace": "billing", "queues": 1, "partitions": 3,
             "messages": {"total": 5, "pending": 4}},
            {"namespace": "logs", "queues": 1, "partitions": 1,
             "messages": {"total": 1, "pending": 1}},
        ])
    );
    // A page of one, from the second.
    let (_, v) = b.get("/api/v1/resources/namespaces?limit=1&offset=1").await;
    let names: Vec<&Value> = v["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| &n["namespace"])
        .collect();
    assert_eq!(names, [&json!("logs")], "{v}");
    let (_, v) = b.get("/api/v1/resources/tasks").await;
    assert_eq!(
        v["tasks"],
        json!([{"task": "invoice", "queues": 1, "partitions": 3,
                "messages": {"total": 5, "pending": 4}}])
    );
}

#[tokio::test]
async fn partitions_are_listed_a_page_at_a_time() {
    let b = broker().await;
    let (p1, p2) = fill(&b).await;
    let (s, v) = b.get("/api/v1/resources/partitions").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let names: Vec<(&str, &str)> = v["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["queue"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            ("logs", "Default"),
            ("orders", "Default"),
            ("orders", "p1"),
            ("orders", "p2")
        ]
    );
    assert_eq!(v["total"], 4);
    let (_, v) = b
        .get("/api/v1/resources/partitions?queue=orders&limit=1&offset=2")
        .await;
    assert_eq!(v["total"], 3, "{v}");
    let page = v["partitions"].as_array().unwrap();
    assert_eq!(page.len(), 1, "{v}");
    assert_eq!(page[0]["id"], json!(p2));
    assert_eq!(
        page[0]["messages"],
        json!({"total": 2, "pending": 2, "processing": 0, "completed": 1, "failed": 0})
    );
    let (_, v) = b
        .get("/api/v1/resources/partitions?queue=orders&limit=1&offset=1")
        .await;
    assert_eq!(v["partitions"][0]["id"], json!(p1));
}

#[tokio::test]
async fn clearing_a_partition_deletes_its_messages_and_moves_its_cursors_to_the_end() {
    let b = broker().await;
    let (p1, _) = fill(&b).await;
    let held = b.pop("orders", "consumerGroup=h&batch=10").await;
    assert!(!Broker::txids(&held).is_empty(), "{held}");

    let (s, v) = b.delete("/api/v1/queues/orders/clear?partition=p1").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v,
        json!({"success": true, "queue": "orders", "partition": "p1", "deleted": 3})
    );
    // g's lease over a2 is released: its ack is refused and nothing is redelivered.
    let ack = json!([{"transactionId": "a2", "partitionId": p1, "status": "completed",
                      "leaseId": "00000000-0000-0000-0000-000000000000"}]);
    assert_eq!(b.ack_batch(Some("g"), ack).await[0]["success"], false);
    for group in ["g", "fresh"] {
        let (_, v) = b
            .get(&format!(
                "/api/v1/pop/queue/orders/partition/p1?wait=false&consumerGroup={group}"
            ))
            .await;
        assert_eq!(Broker::txids(&v), Vec::<String>::new(), "{group}: {v}");
    }
    // New messages are read as usual; p2 was not touched.
    b.push("orders", "p1", &["a4"]).await;
    let (_, v) = b
        .get("/api/v1/pop/queue/orders/partition/p1?wait=false&consumerGroup=g")
        .await;
    assert_eq!(Broker::txids(&v), ["a4"], "{v}");
    let (_, v) = b.get("/api/v1/resources/queues/orders").await;
    let totals: Vec<(Value, Value)> = v["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].clone(), p["stats"]["total"].clone()))
        .collect();
    let want = [
        (json!("Default"), json!(0)),
        (json!("p1"), json!(1)),
        (json!("p2"), json!(2)),
    ];
    assert_eq!(totals, want);

    // The whole queue; the dead letter stays.
    let (_, v) = b.delete("/api/v1/queues/orders/clear").await;
    assert_eq!(v["deleted"], 3, "{v}");
    assert_eq!(v["partition"], Value::Null);
    let (_, v) = b.get("/api/v1/dlq?queue=orders").await;
    assert_eq!(v["total"], 1, "dead letters are snapshots and stay: {v}");
    // A retried push of a cleared message is still a duplicate (the index keeps its clock).
    let item = json!({"queue": "orders", "partition": "p2", "transactionId": "b2", "payload": {}});
    let (s, again) = b.post("/api/v1/push", json!({ "items": [item] })).await;
    assert_eq!(s, StatusCode::CREATED, "{again}");
    assert_eq!(again[0]["status"], "duplicate", "{again}");
}

#[tokio::test]
async fn clearing_what_does_not_exist_is_a_404() {
    let b = broker().await;
    b.push("orders", "p1", &["a1"]).await;
    for (path, error) in [
        ("/api/v1/queues/nope/clear", "Queue not found"),
        (
            "/api/v1/queues/orders/clear?partition=nope",
            "Partition not found",
        ),
    ] {
        let (s, v) = b.delete(path).await;
        assert_eq!(
            (s, v),
            (StatusCode::NOT_FOUND, json!({ "error": error })),
            "{path}"
        );
    }
}

/// The queue listing carries each queue's dead letters (from the snapshot) and its pushed
/// and processed rates over the overview's 5 minutes (from the series), so a list of queues
/// says which are busy and which are failing.
#[tokio::test]
async fn the_queue_listing_says_each_queues_dead_letters_and_throughput() {
    let b = broker().await;
    fill(&b).await;
    b.flush_series().await;
    b.refresh_stats().await;
    let (s, v) = b.get("/api/v1/resources/queues").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let by_name = |name: &str| {
        v["queues"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {v}"))
    };
    let (orders, logs) = (by_name("orders"), by_name("logs"));
    // orders: 5 pushed, a1 acked by g and b1 dead-lettered by queue mode (2 passed).
    assert_eq!(
        (&orders["messages"]["deadLetter"], &orders["throughput"]),
        (
            &json!(1),
            &json!({"ingestedPerSecond": 5.0 / 300.0, "processedPerSecond": 2.0 / 300.0})
        ),
        "{orders}"
    );
    assert_eq!(
        (&logs["messages"]["deadLetter"], &logs["throughput"]),
        (
            &json!(0),
            &json!({"ingestedPerSecond": 1.0 / 300.0, "processedPerSecond": 0.0})
        ),
        "{logs}"
    );
    // Minutes older than the span are not in the rate.
    b.db()
        .await
        .execute(
            // The shifted minute computed beside the update, not in its SET: on Citus a
            // stable function may not take the updated row's columns.
            "UPDATE queue_minutes q SET minute = s.earlier
               FROM (SELECT queue_id, minute, minute - interval '10 minutes' AS earlier
                       FROM queue_minutes) s
              WHERE q.queue_id = s.queue_id AND q.minute = s.minute",
            &[],
        )
        .await
        .unwrap();
    let (_, v) = b.get("/api/v1/resources/queues?search=orders").await;
    assert_eq!(
        v["queues"][0]["throughput"]["ingestedPerSecond"],
        json!(0.0),
        "{v}"
    );
}
