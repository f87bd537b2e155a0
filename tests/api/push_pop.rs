//! Configure, push, pop, lease extend, DLQ listing and queue resources through HTTP.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{broker, broker_with, lease_of, partition_names, pop_error, Broker};
use crate::wire::{self, Counts, PartitionPage, PartitionPending, Popped};

const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

#[tokio::test]
async fn configure_echoes_options_with_tri_state_dead_letter_flags() {
    let b = broker().await;
    let v = b
        .configure("billing.invoices", json!({"leaseTime": 30}))
        .await;
    // Read, it has a partitionId, a string.
    let c: wire::Configured = wire::read(&v);
    assert!(c.configured);
    assert_eq!(c.options.lease_time, 30);
    assert_eq!(c.options.retry_limit, 3);
    assert_eq!(c.options.dead_letter_queue, None);
    assert_eq!(c.options.dlq_after_max_retries, None);

    // Full replace: what is absent falls back to its default; explicit false is kept.
    let (s, v) = b
        .post(
            "/api/v1/configure",
            json!({"queue": "billing.invoices", "namespace": "billing", "task": "inv",
                   "options": {"deadLetterQueue": false, "retryLimit": "5"}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let c: wire::Configured = wire::read(&v);
    assert_eq!(c.options.lease_time, 300);
    assert_eq!(c.options.retry_limit, 5);
    assert_eq!(c.options.dead_letter_queue, Some(false));
    assert_eq!(c.options.dlq_after_max_retries, None);
    assert_eq!((c.namespace.as_str(), c.task.as_str()), ("billing", "inv"));
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
    let r: Vec<wire::Pushed> = wire::read(&v);
    assert_eq!(r.len(), 4);
    assert_eq!(r[0].status, "queued");
    assert_eq!(
        r[0].trace_id.as_deref(),
        Some("5f0c2a9e-1b7d-4c3e-9a21-6d4b8e0f1a23")
    );
    assert_eq!(r[0].queue_name.as_deref(), Some("shop.orders"));
    assert_eq!(r[1].status, "duplicate");
    assert_eq!(r[1].message_id, r[0].message_id);
    // The key is (partition, transactionId): another partition may reuse it.
    assert_eq!(r[2].status, "queued");
    assert_ne!(r[2].partition_id, r[0].partition_id);
    // A transaction id is minted when absent.
    assert_eq!(r[3].status, "queued");
    assert!(!r[3].transaction_id.is_empty());
    for (i, item) in r.iter().enumerate() {
        assert_eq!(item.index, i);
    }

    let (_, again) = b
        .post(
            "/api/v1/push",
            json!({"items": [{"queue": "shop.orders", "transactionId": "x"}]}),
        )
        .await;
    let again: Vec<wire::Pushed> = wire::read(&again);
    assert_eq!(again[0].status, "duplicate");
    assert_eq!(again[0].message_id, r[0].message_id);

    // Auto-created queue: namespace and task derived from the name.
    b.refresh_stats().await;
    let (_, q) = b.get("/api/v1/resources/queues").await;
    let q = &wire::read::<wire::QueueList>(&q).queues[0];
    assert_eq!((q.namespace.as_str(), q.task.as_str()), ("shop", "orders"));
    assert_eq!(q.partitions, 2);
    assert_eq!(q.messages.total, 3);

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
    let pid = b.push_pid("orders", "customer-42", &["a", "b", "c"]).await;

    let (s, v) = b
        .get("/api/v1/pop/queue/orders/partition/customer-42?batch=2&autopilot=true")
        .await;
    assert_eq!(s, StatusCode::OK);
    let p: Popped = wire::read(&v);
    assert!(p.success);
    assert_eq!(p.partition.as_deref(), Some("customer-42"));
    assert_eq!(p.partition_id.as_deref(), Some(pid.as_str()));
    assert_eq!(p.consumer_group.as_deref(), Some("__QUEUE_MODE__"));
    assert_eq!(p.autopilot.as_ref().map(|a| a.batch), Some(2));
    // Every key present (null or not), on the JSON itself.
    let raw = &v["messages"][0];
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
        assert!(raw.get(k).is_some(), "message lacks {k}: {raw}");
    }
    let m = &p.messages[0];
    assert_eq!(Some(m.lease_id.as_str()), p.lease_id.as_deref());
    // createdAt carries microseconds: 2026-04-26T10:59:28.267966Z
    let created = &m.created_at;
    assert_eq!(created.len(), 27, "{created}");
    assert_eq!(Broker::txids(&v), vec!["a", "b"]);

    // The same group cannot take a partition while its lease is live.
    let (_, held) = b
        .get("/api/v1/pop/queue/orders/partition/customer-42?wait=false")
        .await;
    let held: Popped = wire::read(&held);
    assert!(!held.success);
    assert_eq!(held.error.as_deref(), Some("lease_held"));
    let (_, missing) = b
        .get("/api/v1/pop/queue/orders/partition/nope?wait=false")
        .await;
    assert_eq!(pop_error(&missing), Some("partition_not_found".into()));
    let (_, noqueue) = b.get("/api/v1/pop/queue/ghost?wait=false").await;
    assert_eq!(pop_error(&noqueue), Some("no_available_partition".into()));

    // Another group is not blocked and starts from the beginning.
    let other = b.pop("orders", "consumerGroup=audit&batch=10").await;
    assert_eq!(Broker::txids(&other), vec!["a", "b", "c"]);
    assert_eq!(
        wire::read::<Popped>(&other).consumer_group.as_deref(),
        Some("audit")
    );
}

#[tokio::test]
async fn auto_ack_commits_at_delivery() {
    let b = broker().await;
    let pid = b.push_pid("q", "Default", &["a", "b"]).await;
    let v: Popped = wire::read(&b.pop("q", "batch=10&autoAck=true").await);
    assert_eq!(v.lease_id.as_deref(), Some(""));
    assert_eq!(v.messages[0].lease_id, "");
    assert_eq!(b.cursor(&pid, "__QUEUE_MODE__").await, Some((1, false, 0)));
    assert_eq!(
        pop_error(&b.pop("q", "batch=10").await),
        Some("no_available_partition".into())
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
    let p: Popped = wire::read(&v);
    let msgs = &p.messages;
    assert_eq!(msgs.len(), 5, "{v}");
    assert_eq!(p.partitions_claimed, Some(3));
    let lease = p.lease_id.as_deref().unwrap();
    assert!(msgs.iter().all(|m| m.lease_id == lease));
    // One extend renews every partition of the pop.
    let (s, e) = b
        .request(
            reqwest::Method::POST,
            &format!("/api/v1/lease/{lease}/extend"),
            None,
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let e: wire::LeaseExtended = wire::read(&e);
    assert!(e.success);
    assert_eq!(e.renewed, 3);
    assert!(e.new_expires_at.is_some() && e.lease_expires_at == e.new_expires_at);
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
        let p: Popped = wire::read(&v);
        assert_eq!(p.messages.len(), 10, "{v}");
        served.insert(p.messages[0].partition.clone());
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
    assert_eq!(
        wire::read::<Popped>(&v).window_buffer_active,
        Some(true),
        "{v}"
    );
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
    let lease = lease_of(&b.pop("q", "").await);
    let (s, e) = b
        .request(
            reqwest::Method::POST,
            &format!("/api/v1/lease/{lease}/extend"),
            Some(r#"{"seconds": 30}"#),
        )
        .await;
    assert_eq!(
        (s, wire::read::<wire::LeaseExtended>(&e).success),
        (StatusCode::OK, true),
        "{e}"
    );
    // Extended past the queue's 1 s lease: still held after 1.2 s.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let (_, held) = b
        .get("/api/v1/pop/queue/q/partition/Default?wait=false")
        .await;
    assert_eq!(pop_error(&held), Some("lease_held".into()));

    let (s, e) = b
        .request(
            reqwest::Method::POST,
            "/api/v1/lease/0198f2c1-9a7b-7d20-8e31-4c5d6e7f8a90/extend",
            None,
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let e: wire::LeaseExtended = wire::read(&e);
    assert_eq!(
        (e.success, e.error.as_deref()),
        (false, Some("Lease not found"))
    );
    assert_eq!(e.new_expires_at, None);
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
    let pid = b.push_pid("jobs", "Default", &["a", "b", "c"]).await;
    for t in ["a", "b", "c"] {
        let lease = lease_of(&b.pop("jobs", "consumerGroup=w").await);
        let r = b
            .acked(Some("w"), json!([{"transactionId": t, "partitionId": pid, "leaseId": lease, "status": "dlq", "error": format!("bad {t}")}]))
            .await;
        assert!(r[0].dlq, "{r:?}");
    }
    let dlq = |query: &'static str| {
        let b = &b;
        async move {
            let (s, v) = b.get(&format!("/api/v1/dlq?{query}")).await;
            (s, wire::read::<wire::DeadLetters>(&v), v)
        }
    };
    let (s, d, v) = dlq("queue=jobs&limit=2").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(d.total, 3);
    assert_eq!(d.messages.len(), 2);
    let first = &d.messages[0];
    assert_eq!(first.transaction_id, "c", "newest failure first: {v}");
    assert_eq!(first.error_message, "bad c");
    assert_eq!(first.data, json!({"tx": "c"}));
    assert_eq!(first.consumer_group, "w");
    assert_eq!(first.queue, "jobs");
    let (_, page2, raw) = dlq("queue=jobs&limit=2&offset=2").await;
    assert_eq!(Broker::txids(&raw), vec!["a"]);
    assert_eq!(page2.total, 3);
    assert_eq!(dlq("queue=jobs&consumerGroup=other").await.1.total, 0);
    assert_eq!(dlq("queue=nothing").await.1.total, 0);
}

#[tokio::test]
async fn deleting_a_queue_removes_everything_it_owns() {
    let b = broker().await;
    let pid = b.push_pid("doomed", "Default", &["a", "b"]).await;
    let lease = lease_of(&b.pop("doomed", "").await);
    b.ack_batch(
        None,
        json!([{"transactionId": "a", "partitionId": pid, "leaseId": lease, "status": "dlq"}]),
    )
    .await;
    b.push("kept", "Default", &["k"]).await;

    let (s, v) = b.delete("/api/v1/resources/queues/doomed").await;
    assert_eq!(s, StatusCode::OK);
    let deleted: wire::QueueDeleted = wire::read(&v);
    assert_eq!((deleted.deleted, deleted.existed), (true, true));
    let db = b.db().await;
    for (table, column) in [
        ("partitions", "id"),
        ("segments", "partition_id"),
        ("cursors", "partition_id"),
        ("cursor_log", "partition_id"),
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
    assert!(!wire::read::<wire::QueueDeleted>(&v).existed);
    let again = b.pushed("doomed", "Default", &["a"]).await;
    assert_eq!(again[0].status, "queued", "{again:?}");
    assert_ne!(again[0].partition_id.as_deref(), Some(pid.as_str()));
    b.delete("/api/v1/resources/queues/doomed").await;
    let (_, q) = b.get("/api/v1/resources/queues").await;
    assert_eq!(wire::read::<wire::QueueList>(&q).queues.len(), 1);
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
    assert_eq!(
        Broker::data(&b.pop("secret", "").await)[0],
        json!({"tx": "s1"})
    );
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
    let p: Popped = wire::read(&v);
    assert_eq!(p.messages[0].queue, "billing.high");
    assert_eq!(p.messages[1].queue, "billing.low");
    let lease = p.lease_id.as_deref().unwrap();
    assert!(p.messages.iter().all(|m| m.lease_id == lease));

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
    let pid = b.push_pid("q", "Default", &["a", "b"]).await;
    let popped = b.pop("q", "batch=1").await;
    assert_eq!(Broker::txids(&popped), ["a"], "{popped}");
    let lease = lease_of(&popped);
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
        .acked(None, json!([{"transactionId": "b", "partitionId": pid}]))
        .await;
    assert!(!r[0].success);
    assert!(
        r[0].error.as_deref().unwrap().starts_with("unresolvable:"),
        "{r:?}"
    );
    let r = b
        .acked(
            None,
            json!([{"transactionId": "a", "partitionId": pid, "leaseId": lease}]),
        )
        .await;
    assert!(r[0].success, "{r:?}");
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
    let pid = b.push_pid("q", "p", &["m1", "m2"]).await;
    let first = b.pop("q", "consumerGroup=g&batch=2").await;
    assert_eq!(Broker::txids(&first), ["m1", "m2"]);
    let lease = lease_of(&first);

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

    let kept = b.acked(Some("g"), ack("m1", "completed")).await;
    assert!(kept[0].success, "{kept:?}");
    assert!(!kept[0].lease_released, "m2 is still leased");
    assert_eq!(woken_now(&mut in_g), 0, "a lease still held frees nothing");

    let nacked = b.acked(Some("g"), ack("m2", "failed")).await;
    assert!(nacked[0].lease_released, "{nacked:?}");
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
                "requiredLeases": [lease_of(&again)]}),
        )
        .await;
    assert_eq!(
        (s, wire::read::<wire::Transacted>(&v).success),
        (StatusCode::OK, true),
        "{v}"
    );
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
        .acked(
            Some("g"),
            json!([{"transactionId": "m2", "partitionId": pid,
                    "leaseId": lease_of(&last), "status": "completed"}]),
        )
        .await;
    assert!(done[0].lease_released, "{done:?}");
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
    let popped: Popped = wire::read(&b.pop("dq", "consumerGroup=g&batch=3").await);
    let first = popped.messages[0].transaction_id.clone();
    let p1 = if first == "a1" { "p1" } else { "p2" };
    let done = &popped.messages.last().unwrap().transaction_id;
    b.ack_batch(
        Some("g"),
        json!([{"transactionId": done, "partitionId": popped.partition_id,
                "leaseId": popped.lease_id}]),
    )
    .await;
    let (left, other) = if p1 == "p1" { (2, "p2") } else { (3, "p1") };
    let pending = |partition: &str, pending: i64| PartitionPending {
        partition: partition.into(),
        pending,
    };
    let read = |v: Value| (wire::read::<wire::QueueDepth>(&v), v);
    let (d, v) = read(depth("?group=g").await);
    assert_eq!(d.group.as_deref(), Some("g"));
    assert_eq!(d.pending, left, "{v}");
    assert_eq!(d.partitions_pending, 1);
    assert_eq!(d.partitions, [pending(other, left)]);
    // The worst cursor among groups is g's.
    assert_eq!(read(depth("").await).0.pending, left);
    // A group that never popped would start at the beginning.
    assert_eq!(read(depth("?group=fresh").await).0.pending, 5);

    // A group subscribed to new messages only owes what came after it.
    let late = b.pop("dq", "consumerGroup=late&subscriptionMode=new").await;
    assert!(Broker::txids(&late).is_empty(), "{late}");
    assert_eq!(read(depth("?group=late").await).0.pending, 0);
    b.push("dq", "p3", &["c1"]).await;
    let (d, v) = read(depth("?group=late").await);
    assert_eq!(d.pending, 1, "{v}");
    assert_eq!(d.partitions, [pending("p3", 1)]);

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
    let stats_of = |v: &wire::QueueDetail, name: &str| v.partition(name).stats.clone();
    let stats = |total, pending, processing, completed, failed, dead_letter| Counts {
        total,
        pending,
        processing,
        completed,
        failed,
        dead_letter,
    };
    let pop = || b.pop("qd/partition/p1", "consumerGroup=g&batch=2");
    let b = &b;
    let nack = |popped: Value| async move {
        let popped: Popped = wire::read(&popped);
        let r = b
            .acked(
                Some("g"),
                json!([{"transactionId": "a1", "partitionId": popped.partition_id,
                        "leaseId": popped.lease_id, "status": "failed", "error": "boom"}]),
            )
            .await;
        assert!(r[0].success, "{r:?}");
        r
    };

    let popped = pop().await;
    assert_eq!(Broker::txids(&popped), ["a1", "a2"]);
    // Read, it has an id and a createdAt, strings.
    let v: wire::QueueDetail = wire::read(&detail().await);
    assert_eq!((v.name.as_str(), v.namespace.as_str()), ("qd", ""), "{v:?}");
    assert_eq!(stats_of(&v, "p1"), stats(3, 3, 2, 0, 0, 0));
    assert_eq!(stats_of(&v, "p2"), stats(1, 1, 0, 0, 0, 0));
    let p1 = v.partition("p1");
    assert!(
        p1.oldest_message.is_some() && p1.newest_message.is_some(),
        "{p1:?}"
    );

    // A nack with the budget left: waiting for its retry, nothing leased.
    nack(popped).await;
    let v: wire::QueueDetail = wire::read(&detail().await);
    assert_eq!(stats_of(&v, "p1"), stats(3, 3, 0, 0, 1, 0));
    // The budget spent: dead-lettered, and the cursor moves past it.
    let r = nack(pop().await).await;
    assert!(r[0].dlq, "{r:?}");
    let v: wire::QueueDetail = wire::read(&detail().await);
    assert_eq!(stats_of(&v, "p1"), stats(3, 2, 0, 1, 0, 1));
    assert_eq!(v.totals, stats(4, 3, 0, 1, 0, 1));
    let page = PartitionPage {
        limit: 1000,
        offset: 0,
        total: 3,
    };
    assert_eq!((&v.pagination, v.stats_age), (&page, 0), "{v:?}");
    // The page's partitions are counted when asked; the totals, when a round ran.
    b.push("qd", "p2", &["b2"]).await;
    // By name: Default (configure made it), p1, p2.
    let (_, raw) = b.get("/api/v1/resources/queues/qd?limit=1&offset=2").await;
    assert_eq!(partition_names(&raw), ["p2"], "{raw}");
    let v: wire::QueueDetail = wire::read(&raw);
    assert_eq!(stats_of(&v, "p2"), stats(2, 2, 0, 0, 0, 0));
    assert_eq!(v.totals.total, 4, "not counted yet: {raw}");

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
        let empty = s == StatusCode::NO_CONTENT || wire::read::<Popped>(&v).messages.is_empty();
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
    let mut got: Vec<wire::PoppedMessage> = Vec::new();
    for _round in 0..20 {
        let pops = (0..POPS).map(|_| b.pop("q", "batch=1&consumerGroup=g"));
        for v in futures::future::join_all(pops).await {
            let p: Popped = wire::read(&v);
            if let Some(m) = p.messages.first() {
                assert_eq!(p.messages.len(), 1, "batch 1: {v}");
                assert_eq!(Some(m.lease_id.as_str()), p.lease_id.as_deref(), "{v}");
                got.push(m.clone());
            }
        }
        if got.len() >= POPS {
            break;
        }
    }
    let mut txids: Vec<&str> = got.iter().map(|m| m.transaction_id.as_str()).collect();
    txids.sort();
    txids.dedup();
    assert_eq!(txids.len(), POPS, "every message once: {got:?}");
    let mut leases: Vec<&str> = got.iter().map(|m| m.lease_id.as_str()).collect();
    leases.sort();
    leases.dedup();
    assert_eq!(leases.len(), POPS, "a lease per pop");

    let db = b.db().await;
    for m in &got {
        let pid = &m.partition_id;
        let row = db
            .query_one(
                "SELECT lease_id::text FROM cursor_state
                  WHERE partition_id = $1::text::uuid AND consumer_group = 'g'",
                &[&pid],
            )
            .await
            .unwrap();
        assert_eq!(
            row.get::<_, Option<String>>(0).as_deref(),
            Some(m.lease_id.as_str()),
            "the cursor is leased to the pop that got its message"
        );
    }
    let ack = |m: &wire::PoppedMessage, lease: &str| {
        json!([{"transactionId": m.transaction_id, "partitionId": m.partition_id,
                "leaseId": lease, "status": "completed"}])
    };
    let (first, second) = (&got[0], &got[1]);
    let res = b.acked(Some("g"), ack(first, &second.lease_id)).await;
    assert!(!res[0].success, "another pop's lease: {res:?}");
    assert_eq!(res[0].error.as_deref(), Some("invalid or expired lease"));
    // Each under its own pop's lease.
    let each: Vec<Value> = got.iter().map(|m| ack(m, &m.lease_id)[0].clone()).collect();
    let res = b.acked(Some("g"), json!(each)).await;
    for r in &res {
        assert!(r.success, "{res:?}");
    }
    assert!(Broker::txids(&b.pop("q", "consumerGroup=g").await).is_empty());
}
