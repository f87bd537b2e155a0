//! Configure, push, pop, lease extend, DLQ listing and queue resources through HTTP.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{acks, broker, broker_with, partition_names, Broker};

const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

#[tokio::test]
async fn configure_echoes_options_with_tri_state_dead_letter_flags() {
    let b = broker().await;
    let v = b
        .configure("billing.invoices", json!({"leaseTime": 30}))
        .await;
    assert_eq!(v["configured"], true);
    assert_eq!(v["options"]["leaseTime"], 30);
    assert_eq!(v["options"]["retryLimit"], 3);
    assert_eq!(v["options"]["deadLetterQueue"], Value::Null);
    assert_eq!(v["options"]["dlqAfterMaxRetries"], Value::Null);
    assert!(v["partitionId"].as_str().is_some());

    // Full replace: what is absent falls back to its default; explicit false is kept.
    let (s, v) = b
        .post(
            "/api/v1/configure",
            json!({"queue": "billing.invoices", "namespace": "billing", "task": "inv",
                   "options": {"deadLetterQueue": false, "retryLimit": "5"}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["options"]["leaseTime"], 300);
    assert_eq!(v["options"]["retryLimit"], 5);
    assert_eq!(v["options"]["deadLetterQueue"], false);
    assert_eq!(v["options"]["dlqAfterMaxRetries"], Value::Null);
    assert_eq!(
        (v["namespace"].as_str(), v["task"].as_str()),
        (Some("billing"), Some("inv"))
    );
}

#[tokio::test]
async fn configure_refuses_bad_input() {
    let b = broker().await;
    let (s, v) = b.post("/api/v1/configure", json!({"options": {}})).await;
    assert_eq!(
        (s, v["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("queue is required"))
    );
    let (s, v) = b
        .post(
            "/api/v1/configure",
            json!({"queue": "q", "options": {"leaseTime": "abc"}}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(v["error"], "leaseTime must be an integer");
    let (s, v) = b
        .post(
            "/api/v1/configure",
            json!({"queue": "q", "options": {"deadLetterQueue": 3}}),
        )
        .await;
    assert_eq!(
        (s, v["error"].as_str()),
        (
            StatusCode::BAD_REQUEST,
            Some("deadLetterQueue must be a boolean")
        )
    );
    // Encryption needs a key on the broker.
    let (s, _) = b
        .post(
            "/api/v1/configure",
            json!({"queue": "q", "options": {"encryptionEnabled": true}}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn push_answers_per_item_and_deduplicates_within_and_across_requests() {
    let b = broker().await;
    let (s, v) = b
        .post(
            "/api/v1/push",
            json!({"items": [
                {"queue": "shop.orders", "payload": {"n": 1}, "transactionId": "x",
                 "traceId": "5f0c2a9e-1b7d-4c3e-9a21-6d4b8e0f1a23"},
                {"queue": "shop.orders", "payload": {"n": 2}, "transactionId": "x"},
                {"queue": "shop.orders", "partition": "p2", "payload": {"n": 3}, "transactionId": "x"},
                {"queue": "shop.orders", "payload": null}
            ]}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED);
    let r = v.as_array().unwrap();
    assert_eq!(r.len(), 4);
    assert_eq!(r[0]["status"], "queued");
    assert_eq!(r[0]["trace_id"], "5f0c2a9e-1b7d-4c3e-9a21-6d4b8e0f1a23");
    assert_eq!(r[0]["queueName"], "shop.orders");
    assert_eq!(r[1]["status"], "duplicate");
    assert_eq!(r[1]["message_id"], r[0]["message_id"]);
    // The key is (partition, transactionId): another partition may reuse it.
    assert_eq!(r[2]["status"], "queued");
    assert_ne!(r[2]["partition_id"], r[0]["partition_id"]);
    // A transaction id is minted when absent.
    assert_eq!(r[3]["status"], "queued");
    assert!(!r[3]["transaction_id"].as_str().unwrap().is_empty());
    for (i, item) in r.iter().enumerate() {
        assert_eq!(item["index"], i);
    }

    let (_, again) = b
        .post(
            "/api/v1/push",
            json!({"items": [{"queue": "shop.orders", "transactionId": "x"}]}),
        )
        .await;
    assert_eq!(again[0]["status"], "duplicate");
    assert_eq!(again[0]["message_id"], r[0]["message_id"]);

    // Auto-created queue: namespace and task derived from the name.
    b.refresh_stats().await;
    let (_, q) = b.get("/api/v1/resources/queues").await;
    let q = &q["queues"][0];
    assert_eq!(
        (q["namespace"].as_str(), q["task"].as_str()),
        (Some("shop"), Some("orders"))
    );
    assert_eq!(q["partitions"], 2);
    assert_eq!(q["messages"]["total"], 3);

    let pop = b.pop("shop.orders", "batch=10&partitions=2").await;
    let data: Vec<Value> = Broker::data(&pop);
    assert!(
        data.contains(&json!({"n": 1}))
            && data.contains(&Value::Null)
            && data.contains(&json!({"n": 3}))
    );
    assert!(!data.contains(&json!({"n": 2})));
}

#[tokio::test]
async fn pop_shapes_and_fields() {
    let b = broker().await;
    let pushed = b.push("orders", "customer-42", &["a", "b", "c"]).await;
    let pid = pushed[0]["partition_id"].as_str().unwrap();

    let (s, v) = b
        .get("/api/v1/pop/queue/orders/partition/customer-42?batch=2&autopilot=true")
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["success"], true);
    assert_eq!(v["partition"], "customer-42");
    assert_eq!(v["partitionId"], pid);
    assert_eq!(v["consumerGroup"], "__QUEUE_MODE__");
    assert_eq!(v["autopilot"]["batch"], 2);
    let m = &v["messages"][0];
    for k in [
        "id",
        "transactionId",
        "traceId",
        "data",
        "producerSub",
        "createdAt",
        "partitionId",
        "partition",
        "leaseId",
        "consumerGroup",
    ] {
        assert!(m.get(k).is_some(), "message lacks {k}: {m}");
    }
    assert_eq!(m["leaseId"], v["leaseId"]);
    // createdAt carries microseconds: 2026-04-26T10:59:28.267966Z
    let created = m["createdAt"].as_str().unwrap();
    assert_eq!(created.len(), 27, "{created}");
    assert_eq!(Broker::txids(&v), vec!["a", "b"]);

    // The same group cannot take a partition while its lease is live.
    let (_, held) = b
        .get("/api/v1/pop/queue/orders/partition/customer-42?wait=false")
        .await;
    assert_eq!(held["success"], false);
    assert_eq!(held["error"], "lease_held");
    let (_, missing) = b
        .get("/api/v1/pop/queue/orders/partition/nope?wait=false")
        .await;
    assert_eq!(missing["error"], "partition_not_found");
    let (_, noqueue) = b.get("/api/v1/pop/queue/ghost?wait=false").await;
    assert_eq!(noqueue["error"], "no_available_partition");

    // Another group is not blocked and starts from the beginning.
    let other = b.pop("orders", "consumerGroup=audit&batch=10").await;
    assert_eq!(Broker::txids(&other), vec!["a", "b", "c"]);
    assert_eq!(other["consumerGroup"], "audit");
}

#[tokio::test]
async fn auto_ack_commits_at_delivery() {
    let b = broker().await;
    let pushed = b.push("q", "Default", &["a", "b"]).await;
    let pid = pushed[0]["partition_id"].as_str().unwrap();
    let v = b.pop("q", "batch=10&autoAck=true").await;
    assert_eq!(v["leaseId"], "");
    assert_eq!(v["messages"][0]["leaseId"], "");
    assert_eq!(b.cursor(pid, "__QUEUE_MODE__").await, Some((1, false, 0)));
    assert_eq!(
        b.pop("q", "batch=10").await["error"],
        "no_available_partition"
    );
}

#[tokio::test]
async fn multi_partition_pop_shares_one_lease_and_one_budget() {
    let b = broker().await;
    for p in ["p1", "p2", "p3"] {
        b.push("q", p, &[&format!("{p}-a"), &format!("{p}-b")])
            .await;
    }
    let v = b.pop("q", "batch=5&partitions=3").await;
    let msgs = v["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 5, "{v}");
    assert_eq!(v["partitionsClaimed"], 3);
    let lease = v["leaseId"].as_str().unwrap();
    assert!(msgs.iter().all(|m| m["leaseId"] == lease));
    // One extend renews every partition of the pop.
    let (s, e) = b
        .request(
            reqwest::Method::POST,
            &format!("/api/v1/lease/{lease}/extend"),
            None,
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(e["success"], true);
    assert_eq!(e["renewed"], 3);
    assert!(e["newExpiresAt"].as_str().is_some() && e["lease_expires_at"] == e["newExpiresAt"]);
}

/// A pop over several partitions whose first one fills the batch releases the others
/// unserved: they keep their place in the claim order (least recently served first), so
/// every partition with a backlog is served in turn, not the first of every `partitions`.
#[tokio::test]
async fn partitions_released_unserved_keep_their_turn() {
    let b = broker().await;
    for i in 0..20 {
        let ids: Vec<String> = (0..30).map(|k| format!("p{i}-{k}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        b.push("q", &format!("p{i:02}"), &refs).await;
    }
    let mut served = std::collections::BTreeSet::new();
    for _ in 0..20 {
        let v = b.pop("q", "batch=10&partitions=4&consumerGroup=g").await;
        assert_eq!(v["messages"].as_array().map(Vec::len), Some(10), "{v}");
        served.insert(v["messages"][0]["partition"].as_str().unwrap().to_string());
        b.ack_all(Some("g"), &v).await;
    }
    assert_eq!(served.len(), 20, "20 pops served {served:?}");
}

#[tokio::test]
async fn subscription_mode_new_skips_history_and_is_sticky() {
    let b = broker().await;
    b.push("events", "Default", &["old"]).await;
    let v = b
        .pop(
            "events",
            "consumerGroup=fresh&subscriptionMode=new&batch=10",
        )
        .await;
    assert!(Broker::txids(&v).is_empty(), "{v}");
    b.push("events", "Default", &["new1"]).await;
    b.push("events", "later", &["new2"]).await;
    // The first choice sticks: asking for "all" now changes nothing.
    let v = b
        .pop(
            "events",
            "consumerGroup=fresh&subscriptionMode=all&batch=10&partitions=2",
        )
        .await;
    let mut got = Broker::txids(&v);
    got.sort();
    assert_eq!(got, vec!["new1", "new2"]);
    // A group that joins with the default reads the history.
    let v = b.pop("events", "consumerGroup=archive&batch=10").await;
    assert_eq!(Broker::txids(&v)[0], "old");

    let (s, _) = b
        .get("/api/v1/pop/queue/events?consumerGroup=x&subscriptionFrom=yesterday")
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let from = chrono::Utc::now().to_rfc3339();
    tokio::time::sleep(Duration::from_millis(20)).await;
    b.push("events", "Default", &["after"]).await;
    let v = b
        .pop(
            "events",
            &format!(
                "consumerGroup=since&batch=10&subscriptionFrom={}",
                urlencode(&from)
            ),
        )
        .await;
    assert_eq!(Broker::txids(&v), vec!["after"]);
}

fn urlencode(s: &str) -> String {
    s.replace('+', "%2B").replace(':', "%3A")
}

#[tokio::test]
async fn delayed_processing_hides_young_messages() {
    let b = broker().await;
    b.configure("slow", json!({"delayedProcessing": 1})).await;
    b.push("slow", "Default", &["a"]).await;
    assert!(Broker::txids(&b.pop("slow", "batch=10").await).is_empty());
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(Broker::txids(&b.pop("slow", "batch=10").await), vec!["a"]);
}

#[tokio::test]
async fn window_buffer_waits_for_a_quiet_partition() {
    let b = broker().await;
    b.configure("debounced", json!({"windowBuffer": 1})).await;
    b.push("debounced", "p", &["a"]).await;
    let (_, v) = b
        .get("/api/v1/pop/queue/debounced/partition/p?wait=false")
        .await;
    assert_eq!(v["windowBufferActive"], true, "{v}");
    assert!(Broker::txids(&v).is_empty());
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        Broker::txids(&b.pop("debounced", "batch=10").await),
        vec!["a"]
    );
}

#[tokio::test]
async fn lease_extend_accepts_an_empty_body_and_reports_unknown_leases() {
    let b = broker().await;
    b.configure("q", json!({"leaseTime": 1})).await;
    b.push("q", "Default", &["a"]).await;
    let v = b.pop("q", "").await;
    let lease = v["leaseId"].as_str().unwrap().to_string();
    let (s, e) = b
        .request(
            reqwest::Method::POST,
            &format!("/api/v1/lease/{lease}/extend"),
            Some(r#"{"seconds": 30}"#),
        )
        .await;
    assert_eq!(
        (s, e["success"].as_bool()),
        (StatusCode::OK, Some(true)),
        "{e}"
    );
    // Extended past the queue's 1 s lease: still held after 1.2 s.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let (_, held) = b
        .get("/api/v1/pop/queue/q/partition/Default?wait=false")
        .await;
    assert_eq!(held["error"], "lease_held");

    let (s, e) = b
        .request(
            reqwest::Method::POST,
            "/api/v1/lease/0198f2c1-9a7b-7d20-8e31-4c5d6e7f8a90/extend",
            None,
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        (e["success"].as_bool(), e["error"].as_str()),
        (Some(false), Some("Lease not found"))
    );
    assert_eq!(e["newExpiresAt"], Value::Null);
    let (s, _) = b
        .request(
            reqwest::Method::POST,
            &format!("/api/v1/lease/{lease}/extend"),
            Some(r#"{"seconds": 0}"#),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn dlq_lists_with_total_filters_and_pages() {
    let b = broker().await;
    let pushed = b.push("jobs", "Default", &["a", "b", "c"]).await;
    let pid = pushed[0]["partition_id"].as_str().unwrap();
    for t in ["a", "b", "c"] {
        let v = b.pop("jobs", "consumerGroup=w").await;
        let lease = v["leaseId"].as_str().unwrap();
        let r = b
            .ack_batch(Some("w"), json!([{"transactionId": t, "partitionId": pid, "leaseId": lease, "status": "dlq", "error": format!("bad {t}")}]))
            .await;
        assert_eq!(r[0]["dlq"], true, "{r:?}");
    }
    let (s, v) = b.get("/api/v1/dlq?queue=jobs&limit=2").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["total"], 3);
    assert_eq!(v["messages"].as_array().unwrap().len(), 2);
    let first = &v["messages"][0];
    assert_eq!(first["transactionId"], "c", "newest failure first: {v}");
    assert_eq!(first["errorMessage"], "bad c");
    assert_eq!(first["data"], json!({"tx": "c"}));
    assert_eq!(first["consumerGroup"], "w");
    assert_eq!(first["queue"], "jobs");
    let (_, page2) = b.get("/api/v1/dlq?queue=jobs&limit=2&offset=2").await;
    assert_eq!(Broker::txids(&page2), vec!["a"]);
    assert_eq!(page2["total"], 3);
    let (_, none) = b.get("/api/v1/dlq?queue=jobs&consumerGroup=other").await;
    assert_eq!(none["total"], 0);
    let (_, other_queue) = b.get("/api/v1/dlq?queue=nothing").await;
    assert_eq!(other_queue["total"], 0);
}

#[tokio::test]
async fn deleting_a_queue_removes_everything_it_owns() {
    let b = broker().await;
    let pushed = b.push("doomed", "Default", &["a", "b"]).await;
    let pid = pushed[0]["partition_id"].as_str().unwrap();
    let v = b.pop("doomed", "").await;
    let lease = v["leaseId"].as_str().unwrap();
    b.ack_batch(
        None,
        json!([{"transactionId": "a", "partitionId": pid, "leaseId": lease, "status": "dlq"}]),
    )
    .await;
    b.push("kept", "Default", &["k"]).await;

    let (s, v) = b.delete("/api/v1/resources/queues/doomed").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        (v["deleted"].as_bool(), v["existed"].as_bool()),
        (Some(true), Some(true))
    );
    let db = b.db().await;
    for (table, column) in [
        ("partitions", "id"),
        ("segments", "partition_id"),
        ("cursors", "partition_id"),
        ("dead_letters", "partition_id"),
    ] {
        let n: i64 = db
            .query_one(
                &format!("SELECT count(*) FROM {table} WHERE {column} = $1::text::uuid"),
                &[&pid],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 0, "{table} still holds rows of the deleted queue");
    }
    // The transaction index is left to its purge clock, but a queue created again under the
    // same name has new partitions: its old ids no longer deduplicate.
    let (_, v) = b.delete("/api/v1/resources/queues/doomed").await;
    assert_eq!(v["existed"], false);
    let again = b.push("doomed", "Default", &["a"]).await;
    assert_eq!(again[0]["status"], "queued", "{again:?}");
    assert_ne!(again[0]["partition_id"].as_str(), Some(pid));
    b.delete("/api/v1/resources/queues/doomed").await;
    let (_, q) = b.get("/api/v1/resources/queues").await;
    assert_eq!(q["queues"].as_array().unwrap().len(), 1);
    assert_eq!(Broker::txids(&b.pop("kept", "").await), vec!["k"]);
}

#[tokio::test]
async fn encrypted_queues_store_ciphertext_and_deliver_plaintext() {
    let b = broker_with(|c| c.queen_encryption_key = Some(KEY.into())).await;
    b.configure("secret", json!({"encryptionEnabled": true}))
        .await;
    b.push("secret", "Default", &["s1"]).await;
    let db = b.db().await;
    // The segment holds the binary frame: the payload is Queen's envelope, not the plaintext.
    let stored: Vec<u8> = db
        .query_one("SELECT frames FROM segments", &[])
        .await
        .unwrap()
        .get(0);
    let text = String::from_utf8_lossy(&stored);
    for key in ["\"encrypted\"", "\"iv\"", "\"authTag\""] {
        assert!(text.contains(key), "no {key} in {text}");
    }
    assert!(!text.contains("\"tx\""), "plaintext leaked: {text}");
    let v = b.pop("secret", "").await;
    assert_eq!(v["messages"][0]["data"], json!({"tx": "s1"}));
}

#[tokio::test]
async fn namespace_and_task_pop_spans_queues_by_priority() {
    let b = broker().await;
    // Configure replaces namespace and task too (absent means ""), so name them.
    for (q, task, priority) in [("billing.low", "low", 1), ("billing.high", "high", 9)] {
        let body = json!({"queue": q, "namespace": "billing", "task": task, "options": {"priority": priority}});
        assert_eq!(b.post("/api/v1/configure", body).await.0, StatusCode::OK);
    }
    b.push("billing.low", "Default", &["low-1"]).await;
    b.push("billing.high", "Default", &["high-1"]).await;
    b.push("shipping.high", "Default", &["other"]).await;

    let (s, v) = b
        .get("/api/v1/pop?namespace=billing&batch=10&partitions=5&wait=false")
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(Broker::txids(&v), vec!["high-1", "low-1"], "{v}");
    assert_eq!(v["messages"][0]["queue"], "billing.high");
    assert_eq!(v["messages"][1]["queue"], "billing.low");
    let lease = v["leaseId"].as_str().unwrap();
    assert!(v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["leaseId"] == lease));

    let (_, v) = b
        .get("/api/v1/pop?task=high&batch=10&partitions=5&wait=false")
        .await;
    assert_eq!(
        Broker::txids(&v),
        vec!["other"],
        "billing.high is leased: {v}"
    );

    let (s, v) = b.get("/api/v1/pop?wait=false").await;
    assert_eq!(
        (s, v["error"].as_str()),
        (
            StatusCode::BAD_REQUEST,
            Some("namespace or task is required")
        )
    );

    // A parked scope pop wakes on a push to any queue of the scope.
    let parked = tokio::spawn({
        let (http, url) = (
            b.http.clone(),
            format!(
                "{}/api/v1/pop?namespace=audit&wait=true&timeout=10000",
                b.url
            ),
        );
        async move {
            http.get(url)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    b.push("audit.log", "Default", &["woke"]).await;
    let v = tokio::time::timeout(Duration::from_secs(2), parked)
        .await
        .expect("woken")
        .unwrap();
    assert_eq!(Broker::txids(&v), vec!["woke"]);
}

#[tokio::test]
async fn the_transaction_index_is_purged_on_its_own_clock() {
    let b = broker_with(|c| {
        c.dedup_window_seconds = 0;
        c.purge_interval_seconds = 1;
    })
    .await;
    let pushed = b.push("q", "Default", &["a", "b"]).await;
    let pid = pushed[0]["partition_id"].as_str().unwrap();
    let popped = b.pop("q", "batch=1").await;
    assert_eq!(Broker::txids(&popped), ["a"], "{popped}");
    let lease = popped["leaseId"].as_str().unwrap().to_string();
    let db = b.db().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let n = b.indexed(None).await;
        if n == 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the index was never purged"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Past the window an ack without a live lease over its message cannot resolve, and says
    // so; one inside its live lease still does (from the leased segment); the log itself is
    // untouched.
    let r = b
        .ack_batch(None, json!([{"transactionId": "b", "partitionId": pid}]))
        .await;
    assert_eq!(r[0]["success"], false);
    assert!(
        r[0]["error"].as_str().unwrap().starts_with("unresolvable:"),
        "{r:?}"
    );
    let r = b
        .ack_batch(
            None,
            json!([{"transactionId": "a", "partitionId": pid, "leaseId": lease}]),
        )
        .await;
    assert_eq!(r[0]["success"], true, "{r:?}");
    let segments: i64 = db
        .query_one("SELECT count(*) FROM segments", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(segments, 1);
}

/// Discovery may lag but never hides data: a group kept busy by one partition still finds a
/// partition created after its last sweep within the sweep interval (1 s).
#[tokio::test]
async fn a_busy_group_discovers_new_partitions_within_the_sweep_interval() {
    let b = broker().await;
    let old: Vec<String> = (0..200).map(|i| format!("old-{i}")).collect();
    let old_refs: Vec<&str> = old.iter().map(String::as_str).collect();
    b.push("busy", "old", &old_refs).await;
    assert_eq!(
        Broker::txids(&b.pop("busy", "batch=1&autoAck=true").await),
        vec!["old-0"]
    );
    b.push("busy", "new", &["fresh"]).await;
    let started = std::time::Instant::now();
    loop {
        let v = b.pop("busy", "batch=1&autoAck=true").await;
        if Broker::txids(&v) == vec!["fresh"] {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "the new partition was not discovered: {v}"
        );
    }
}

/// A consumer that hangs up while its long-poll is parked takes nothing with it: the next
/// push goes to a consumer that is still there, not to a lease held for a closed connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_that_hangs_up_on_a_long_poll_takes_no_message_with_it() {
    use tokio::io::AsyncWriteExt;

    let b = broker().await;
    b.configure("q", json!({"leaseTime": 3600})).await;
    let addr = b.url.trim_start_matches("http://").to_string();
    let mut gone = tokio::net::TcpStream::connect(&addr).await.unwrap();
    gone.write_all(
        b"GET /api/v1/pop/queue/q?wait=true&timeout=20000 HTTP/1.1\r\nHost: regent\r\n\r\n",
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(gone);
    tokio::time::sleep(Duration::from_millis(300)).await;

    b.push("q", "p", &["m1"]).await;
    let mut got = Vec::new();
    for _ in 0..20 {
        got = Broker::txids(&b.pop("q", "").await);
        if !got.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        got,
        vec!["m1".to_string()],
        "the message is not leased to the hung-up consumer"
    );
}

/// How many of `waiters` have been woken; each is polled once, without waiting.
pub(crate) fn woken_now(
    waiters: &mut [std::pin::Pin<Box<tokio::sync::futures::Notified<'_>>>],
) -> usize {
    use futures::FutureExt;
    let mut n = 0;
    for w in waiters {
        if w.as_mut().now_or_never().is_some() {
            n += 1;
        }
    }
    n
}

/// An ack that ends a lease with messages left on the partition (a nack to retry) wakes one
/// parked pop of its consumer group before it answers, through `/ack` and `/transaction`
/// alike, so the message redelivers at once rather than at the pop's next recheck (up to a
/// second later). The notifiers watched here fire only for pushes and acks, never on a timer.
/// An ack that keeps the lease, or leaves nothing to read, wakes no one, nor does any ack
/// wake another group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nack_wakes_a_parked_consumer_of_its_group_at_once() {
    let b = broker().await;
    let pid = b.push("q", "p", &["m1", "m2"]).await[0]["partition_id"]
        .as_str()
        .unwrap()
        .to_string();
    let first = b.pop("q", "consumerGroup=g&batch=2").await;
    assert_eq!(Broker::txids(&first), ["m1", "m2"]);
    let lease = first["leaseId"].as_str().unwrap().to_string();

    let state = b.runtime();
    let (g, h) = (
        state.wakeups.for_group("default", "q", "g"),
        state.wakeups.for_group("default", "q", "h"),
    );
    let mut in_g: Vec<_> = (0..2).map(|_| Box::pin(g.notified())).collect();
    let mut in_h = vec![Box::pin(h.notified())];
    for n in in_g.iter_mut().chain(in_h.iter_mut()) {
        n.as_mut().enable();
    }
    let ack = |txid: &str, status: &str| json!([{"transactionId": txid, "partitionId": pid, "leaseId": lease, "status": status}]);

    let kept = b.ack_batch(Some("g"), ack("m1", "completed")).await;
    assert_eq!(kept[0]["success"], true, "{kept:?}");
    assert_eq!(kept[0]["leaseReleased"], false, "m2 is still leased");
    assert_eq!(woken_now(&mut in_g), 0, "a lease still held frees nothing");

    let nacked = b.ack_batch(Some("g"), ack("m2", "failed")).await;
    assert_eq!(nacked[0]["leaseReleased"], true, "{nacked:?}");
    assert_eq!(woken_now(&mut in_g), 1, "one parked pop of g is woken");
    assert_eq!(
        woken_now(&mut in_h),
        0,
        "another group's cursor did not move"
    );

    // A parked consumer of g gets the retry.
    let (s, again) = b
        .get("/api/v1/pop/queue/q?wait=true&timeout=20000&consumerGroup=g")
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(Broker::txids(&again), ["m2"]);

    // The same through a transaction. (The waiter left over would take the next wakeup.)
    drop(in_g);
    let mut in_g: Vec<_> = (0..2).map(|_| Box::pin(g.notified())).collect();
    for n in &mut in_g {
        n.as_mut().enable();
    }
    let (s, v) = b
        .post(
            "/api/v1/transaction",
            json!({"operations": [{"type": "ack", "transactionId": "m2", "partitionId": pid,
                "status": "failed", "consumerGroup": "g"}],
                "requiredLeases": [again["leaseId"]]}),
        )
        .await;
    assert_eq!((s, &v["success"]), (StatusCode::OK, &json!(true)), "{v}");
    assert_eq!(woken_now(&mut in_g), 1, "a nack in a transaction wakes too");

    // Completing the last message leaves nothing to read: no one is woken.
    let last = b.pop("q", "consumerGroup=g").await;
    assert_eq!(Broker::txids(&last), ["m2"]);
    drop(in_g);
    let mut in_g: Vec<_> = (0..2).map(|_| Box::pin(g.notified())).collect();
    for n in &mut in_g {
        n.as_mut().enable();
    }
    let done = b
        .ack_batch(
            Some("g"),
            json!([{"transactionId": "m2", "partitionId": pid,
                    "leaseId": last["leaseId"], "status": "completed"}]),
        )
        .await;
    assert_eq!(done[0]["leaseReleased"], true, "{done:?}");
    assert_eq!(woken_now(&mut in_g), 0, "nothing left to read");
    assert_eq!(b.cursor(&pid, "g").await, Some((1, false, 0)));
}

/// `GET /resources/queues/:queue/depth` (`Admin.get_queue_depth`): per consumer group, the
/// messages after its cursor on each partition that has any, counted from where a group's
/// first pop would start it; without a group, from the furthest-behind cursor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_depth_counts_each_groups_backlog() {
    let b = broker().await;
    b.push("dq", "p1", &["a1", "a2", "a3"]).await;
    b.push("dq", "p2", &["b1", "b2"]).await;
    let depth = |query: &'static str| {
        let b = &b;
        async move {
            b.refresh_stats().await;
            let (s, v) = b
                .get(&format!("/api/v1/resources/queues/dq/depth{query}"))
                .await;
            assert_eq!(s, StatusCode::OK, "{v}");
            v
        }
    };

    let mut v = depth("").await;
    // Seconds since the refresh just asked for: 0 unless the machine is slow.
    let age = v.as_object_mut().unwrap().remove("statsAge");
    assert!(
        age.as_ref()
            .and_then(Value::as_i64)
            .is_some_and(|a| (0..30).contains(&a)),
        "{age:?}"
    );
    assert_eq!(
        v,
        json!({"queue": "dq", "group": null, "pending": 5, "partitionsPending": 2,
               "conflation": false, "effectivePending": 5,
               "partitions": [{"partition": "p1", "pending": 3}, {"partition": "p2", "pending": 2}]})
    );

    // Group g reads p1 to its end.
    let popped = b.pop("dq", "consumerGroup=g&batch=3").await;
    let pid = popped["partitionId"].clone();
    let first = Broker::txids(&popped)[0].clone();
    let p1 = if first == "a1" { "p1" } else { "p2" };
    let done = popped["messages"].as_array().unwrap().last().unwrap()["transactionId"].clone();
    b.ack_batch(
        Some("g"),
        json!([{"transactionId": done, "partitionId": pid, "leaseId": popped["leaseId"]}]),
    )
    .await;
    let (left, other) = if p1 == "p1" { (2, "p2") } else { (3, "p1") };
    let v = depth("?group=g").await;
    assert_eq!(v["group"], "g");
    assert_eq!(v["pending"], left, "{v}");
    assert_eq!(v["partitionsPending"], 1);
    assert_eq!(
        v["partitions"],
        json!([{"partition": other, "pending": left}])
    );
    // The worst cursor among groups is g's.
    assert_eq!(depth("").await["pending"], left);
    // A group that never popped would start at the beginning.
    assert_eq!(depth("?group=fresh").await["pending"], 5);

    // A group subscribed to new messages only owes what came after it.
    let late = b.pop("dq", "consumerGroup=late&subscriptionMode=new").await;
    assert!(Broker::txids(&late).is_empty(), "{late}");
    assert_eq!(depth("?group=late").await["pending"], 0);
    b.push("dq", "p3", &["c1"]).await;
    let v = depth("?group=late").await;
    assert_eq!(v["pending"], 1, "{v}");
    assert_eq!(v["partitions"], json!([{"partition": "p3", "pending": 1}]));

    let (s, v) = b.get("/api/v1/resources/queues/nope/depth").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(v, json!({"error": "Queue not found"}));
}

/// `GET /resources/queues/:queue` (`Admin.get_queue`): each partition's counts, each the
/// largest over consumer groups, as leases, nacks and dead letters change them; `totals`
/// sums the partitions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_detail_counts_what_happened_to_each_partition() {
    let b = broker().await;
    b.configure("qd", json!({"retryLimit": 1})).await;
    b.push("qd", "p1", &["a1", "a2", "a3"]).await;
    b.push("qd", "p2", &["b1"]).await;
    let detail = || async {
        b.refresh_stats().await;
        let (s, v) = b.get("/api/v1/resources/queues/qd").await;
        assert_eq!(s, StatusCode::OK, "{v}");
        v
    };
    let stats_of = |v: &Value, name: &str| {
        v["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {v}"))["stats"]
            .clone()
    };
    let stats = |total, pending, processing, completed, failed, dead| {
        json!({"total": total, "pending": pending, "processing": processing,
               "completed": completed, "failed": failed, "deadLetter": dead})
    };
    let pop = || b.pop("qd/partition/p1", "consumerGroup=g&batch=2");
    let b = &b;
    let nack = |popped: Value| async move {
        let r = b
            .ack_batch(
                Some("g"),
                json!([{"transactionId": "a1", "partitionId": popped["partitionId"],
                        "leaseId": popped["leaseId"], "status": "failed", "error": "boom"}]),
            )
            .await;
        assert_eq!(r[0]["success"], true, "{r:?}");
        r
    };

    let popped = pop().await;
    assert_eq!(Broker::txids(&popped), ["a1", "a2"]);
    let v = detail().await;
    assert_eq!(
        (&v["name"], &v["namespace"]),
        (&json!("qd"), &json!("")),
        "{v}"
    );
    assert!(v["id"].is_string() && v["createdAt"].is_string(), "{v}");
    assert_eq!(stats_of(&v, "p1"), stats(3, 3, 2, 0, 0, 0));
    assert_eq!(stats_of(&v, "p2"), stats(1, 1, 0, 0, 0, 0));
    let p1 = v["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "p1")
        .unwrap();
    assert!(
        p1["oldestMessage"].is_string() && p1["newestMessage"].is_string(),
        "{p1}"
    );

    // A nack with the budget left: waiting for its retry, nothing leased.
    nack(popped).await;
    assert_eq!(stats_of(&detail().await, "p1"), stats(3, 3, 0, 0, 1, 0));
    // The budget spent: dead-lettered, and the cursor moves past it.
    let r = nack(pop().await).await;
    assert_eq!(r[0]["dlq"], true, "{r:?}");
    let v = detail().await;
    assert_eq!(stats_of(&v, "p1"), stats(3, 2, 0, 1, 0, 1));
    assert_eq!(v["totals"], stats(4, 3, 0, 1, 0, 1));
    assert_eq!(
        (&v["pagination"], &v["statsAge"]),
        (&json!({"limit": 1000, "offset": 0, "total": 3}), &json!(0)),
        "{v}"
    );
    // The page's partitions are counted when asked; the totals, when a round ran.
    b.push("qd", "p2", &["b2"]).await;
    // By name: Default (configure made it), p1, p2.
    let (_, v) = b.get("/api/v1/resources/queues/qd?limit=1&offset=2").await;
    assert_eq!(partition_names(&v), ["p2"], "{v}");
    assert_eq!(stats_of(&v, "p2"), stats(2, 2, 0, 0, 0, 0));
    assert_eq!(v["totals"]["total"], 4, "not counted yet: {v}");

    let (s, v) = b.get("/api/v1/resources/queues/nope").await;
    assert_eq!(
        (s, v),
        (StatusCode::NOT_FOUND, json!({"error": "Queue not found"}))
    );
}

/// A long-poll's `timeout` is clamped to `MAX_TIMEOUT`, as `batch` is to `MAX_BATCH_SIZE`:
/// `timeout=2147483648` (weeks) parks for the maximum, then answers empty.
#[tokio::test]
async fn a_long_poll_timeout_is_clamped_to_the_maximum() {
    let b = broker_with(|c| c.max_timeout = 400).await;
    for path in [
        "/api/v1/pop/queue/idle?wait=true&timeout=2147483648",
        "/api/v1/pop?namespace=none&wait=true&timeout=999999999999",
    ] {
        let started = std::time::Instant::now();
        let (s, v) = b.get(path).await;
        let took = started.elapsed();
        let empty = s == StatusCode::NO_CONTENT || v["messages"] == json!([]);
        assert!(s.is_success() && empty, "{path}: {s} {v}");
        assert!(
            took >= Duration::from_millis(350) && took < Duration::from_secs(10),
            "{path}: parked {took:?}"
        );
    }
}

/// Concurrent pops of one queue by one group are claimed together (pop lanes), yet each
/// keeps a lease of its own: the cursor of every partition names the lease of the pop that
/// got its message, an ack under that lease is carried out, and one under another pop's
/// lease is refused. A fused claim that left its partitions under one shared lease, or under
/// the claim's own, fails here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_pops_fused_into_one_claim_each_keep_their_own_lease() {
    const POPS: usize = 24;
    let b = broker().await;
    b.configure("q", json!({"leaseTime": 3600})).await;
    for k in 0..POPS {
        b.push("q", &format!("p{k}"), &[&format!("m{k}")]).await;
    }
    let mut got: Vec<Value> = Vec::new();
    for _round in 0..20 {
        let pops = (0..POPS).map(|_| b.pop("q", "batch=1&consumerGroup=g"));
        for v in futures::future::join_all(pops).await {
            if let Some(m) = v["messages"].as_array().and_then(|m| m.first()) {
                assert_eq!(v["messages"].as_array().unwrap().len(), 1, "batch 1: {v}");
                assert_eq!(m["leaseId"], v["leaseId"], "{v}");
                got.push(m.clone());
            }
        }
        if got.len() >= POPS {
            break;
        }
    }
    let mut txids: Vec<&str> = got
        .iter()
        .map(|m| m["transactionId"].as_str().unwrap())
        .collect();
    txids.sort();
    txids.dedup();
    assert_eq!(txids.len(), POPS, "every message once: {got:?}");
    let mut leases: Vec<&str> = got.iter().map(|m| m["leaseId"].as_str().unwrap()).collect();
    leases.sort();
    leases.dedup();
    assert_eq!(leases.len(), POPS, "a lease per pop");

    let db = b.db().await;
    for m in &got {
        let pid = m["partitionId"].as_str().unwrap();
        let row = db
            .query_one(
                "SELECT lease_id::text FROM cursors
                  WHERE partition_id = $1::text::uuid AND consumer_group = 'g'",
                &[&pid],
            )
            .await
            .unwrap();
        assert_eq!(
            row.get::<_, Option<String>>(0).as_deref(),
            m["leaseId"].as_str(),
            "the cursor is leased to the pop that got its message"
        );
    }
    let ack = |m: &Value, lease: &Value| {
        json!([{"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                "leaseId": lease, "status": "completed"}])
    };
    let (first, second) = (&got[0], &got[1]);
    let res = b.ack_batch(Some("g"), ack(first, &second["leaseId"])).await;
    assert_eq!(res[0]["success"], false, "another pop's lease: {res:?}");
    assert_eq!(res[0]["error"], "invalid or expired lease");
    // Each under its own pop's lease.
    let res = b.ack_batch(Some("g"), json!(acks(&got, "completed"))).await;
    for r in &res {
        assert_eq!(r["success"], true, "{res:?}");
    }
    assert!(Broker::txids(&b.pop("q", "consumerGroup=g").await).is_empty());
}
