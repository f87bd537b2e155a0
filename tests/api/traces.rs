//! Trace events through HTTP (spec §12): recorded against a message, read per message, per
//! name and as the list of names; gone with their queue.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{broker, broker_with, Broker};

/// Pushes one message per id to `queue`/Default and answers its partition id (as a pop of
/// a group of its own reads it).
async fn message(b: &Broker, queue: &str, txids: &[&str]) -> String {
    b.push(queue, "Default", txids).await;
    let v = b.pop(queue, "consumerGroup=peek").await;
    v["messages"][0]["partitionId"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn trace(b: &Broker, body: Value) -> (StatusCode, Value) {
    b.post("/api/v1/traces", body).await
}

#[tokio::test]
async fn a_trace_is_recorded_against_its_message_and_read_back_oldest_first() {
    let b = broker().await;
    let pid = message(&b, "orders", &["o-1", "o-2"]).await;
    let (s, v) = trace(
        &b,
        json!({"transactionId": "o-1", "partitionId": pid, "data": {"step": 1},
               "consumerGroup": "billing", "eventType": "processing",
               "traceNames": ["order-flow", "tenant-7"]}),
    )
    .await;
    assert_eq!(
        (s, &v["success"]),
        (StatusCode::CREATED, &json!(true)),
        "{v}"
    );
    assert!(
        uuid::Uuid::parse_str(v["traceId"].as_str().unwrap()).is_ok(),
        "{v}"
    );
    // Defaults: queue mode, `info`, no names; null data is an empty object; one name may be
    // a plain string.
    for body in [
        json!({"transactionId": "o-1", "partitionId": pid, "data": null, "consumerGroup": null}),
        json!({"transactionId": "o-1", "partitionId": pid, "data": "done", "traceNames": "order-flow"}),
    ] {
        let (s, v) = trace(&b, body).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
    }

    let (s, v) = b.get(&format!("/api/v1/traces/{pid}/o-1")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let t = v["traces"].as_array().unwrap();
    assert_eq!(t.len(), 3, "{v}");
    assert_eq!(
        (
            &t[0]["event_type"],
            &t[0]["data"],
            &t[0]["consumer_group"],
            &t[0]["trace_names"]
        ),
        (
            &json!("processing"),
            &json!({"step": 1}),
            &json!("billing"),
            &json!(["order-flow", "tenant-7"])
        )
    );
    assert_eq!(
        (
            &t[1]["event_type"],
            &t[1]["data"],
            &t[1]["consumer_group"],
            &t[1]["trace_names"]
        ),
        (
            &json!("info"),
            &json!({}),
            &json!("__QUEUE_MODE__"),
            &json!([])
        )
    );
    assert_eq!(
        (&t[2]["data"], &t[2]["trace_names"]),
        (&json!("done"), &json!(["order-flow"]))
    );
    for k in ["id", "worker_id", "created_at"] {
        assert!(t[0].get(k).is_some(), "{k} missing: {}", t[0]);
    }
    let (_, v) = b.get(&format!("/api/v1/traces/{pid}/o-2")).await;
    assert_eq!(v["traces"], json!([]), "{v}");
}

#[tokio::test]
async fn a_trace_is_refused_with_the_spec_texts() {
    let b = broker().await;
    let pid = message(&b, "orders", &["o-1"]).await;
    let required = "transactionId and partitionId are required";
    for (body, text) in [
        (json!({"partitionId": pid, "data": {}}), required),
        (json!({"transactionId": "o-1", "data": {}}), required),
        (
            json!({"transactionId": 5, "partitionId": pid, "data": {}}),
            required,
        ),
        (json!([]), required),
        (
            json!({"transactionId": "o-1", "partitionId": pid}),
            "data is required",
        ),
        (
            json!({"transactionId": "o-1", "partitionId": pid, "data": {}, "traceNames": [1]}),
            "traceNames must be a string or an array of strings",
        ),
    ] {
        let (s, v) = trace(&b, body.clone()).await;
        assert_eq!(
            (s, &v["error"]),
            (StatusCode::BAD_REQUEST, &json!(text)),
            "{body}"
        );
    }
    let missing = json!({"success": false, "error": "Message not found"});
    for (txid, partition) in [
        ("o-9", pid.clone()),
        ("o-1", uuid::Uuid::now_v7().to_string()),
        ("o-1", "not-a-uuid".into()),
    ] {
        let body = json!({"transactionId": txid, "partitionId": partition, "data": {}});
        let (s, v) = trace(&b, body).await;
        assert_eq!(
            (s, &v),
            (StatusCode::NOT_FOUND, &missing),
            "{txid} {partition}"
        );
    }
    let (s, v) = b.get("/api/v1/traces/not-a-uuid/o-1").await;
    assert_eq!((s, &v["traces"]), (StatusCode::OK, &json!([])), "{v}");
}

#[tokio::test]
async fn traces_are_found_by_name_with_their_message_and_the_names_are_listed() {
    const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    let b = broker_with(|c| c.queen_encryption_key = Some(KEY.into())).await;
    b.configure("sealed", json!({"encryptionEnabled": true}))
        .await;
    let plain = message(&b, "orders", &["o-1", "o-2"]).await;
    let sealed = message(&b, "sealed", &["s-1"]).await;
    for (pid, txid, names) in [
        (&plain, "o-1", json!(["flow"])),
        (&plain, "o-2", json!(["flow", "audit"])),
        (&sealed, "s-1", json!("flow")),
        (&plain, "o-1", json!("audit")),
    ] {
        let body = json!({"transactionId": txid, "partitionId": pid, "data": {"t": txid}, "traceNames": names});
        assert_eq!(trace(&b, body).await.0, StatusCode::CREATED);
    }

    let (s, v) = b.get("/api/v1/traces/by-name/flow?limit=2").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["total"], &v["pagination"]),
        (&json!(3), &json!({"limit": 2, "offset": 0}))
    );
    let t = v["traces"].as_array().unwrap();
    assert_eq!(t.len(), 2, "{v}");
    // Newest first: the sealed message's trace, its payload opened.
    assert_eq!(
        (
            &t[0]["transaction_id"],
            &t[0]["queue_name"],
            &t[0]["partition_name"],
            &t[0]["message_payload"]
        ),
        (
            &json!("s-1"),
            &json!("sealed"),
            &json!("Default"),
            &json!({"tx": "s-1"})
        )
    );
    assert_eq!(t[0]["partition_id"], json!(sealed));
    assert_eq!(
        (&t[1]["transaction_id"], &t[1]["message_payload"]),
        (&json!("o-2"), &json!({"tx": "o-2"}))
    );
    let (_, v) = b.get("/api/v1/traces/by-name/flow?limit=2&offset=2").await;
    assert_eq!(v["traces"][0]["transaction_id"], "o-1", "{v}");
    let (_, v) = b.get("/api/v1/traces/by-name/nobody").await;
    assert_eq!((&v["traces"], &v["total"]), (&json!([]), &json!(0)));

    let (s, v) = b.get("/api/v1/traces/names").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["total"], 2, "{v}");
    let names = v["trace_names"].as_array().unwrap();
    // `audit` was seen last.
    assert_eq!(
        (
            &names[0]["trace_name"],
            &names[0]["trace_count"],
            &names[0]["message_count"]
        ),
        (&json!("audit"), &json!(2), &json!(2))
    );
    assert_eq!(
        (
            &names[1]["trace_name"],
            &names[1]["trace_count"],
            &names[1]["message_count"]
        ),
        (&json!("flow"), &json!(3), &json!(3))
    );
    assert!(names[0]["last_seen"].is_string(), "{v}");

    // Deleting a queue deletes its traces.
    let (s, _) = b.delete("/api/v1/resources/queues/orders").await;
    assert_eq!(s, StatusCode::OK);
    let (_, v) = b.get("/api/v1/traces/names").await;
    assert_eq!(v["total"], 1, "{v}");
    assert_eq!(v["trace_names"][0]["trace_count"], 1, "{v}");
}
