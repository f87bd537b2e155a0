//! Single messages through HTTP (spec §10, issue 13): the listing newest first across
//! partitions with its filters and statuses, one message, and delete (a tombstone pops skip),
//! retry (a copy) and move to the dead-letter queue.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{alternating, broker, two_brokers, Broker};

fn ids(v: &Value) -> Vec<String> {
    v["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|m| m["transactionId"].as_str().unwrap().to_string())
        .collect()
}

async fn listing(b: &Broker, query: &str) -> Value {
    let (s, v) = b.get(&format!("/api/v1/messages?{query}")).await;
    assert_eq!(s, StatusCode::OK, "{query}: {v}");
    v
}

fn partition_of(pushed: &[Value]) -> String {
    pushed[0]["partition_id"].as_str().unwrap().to_string()
}

fn ack(txid: &str, pid: &str, lease: &Value, status: &str) -> Value {
    json!([{"transactionId": txid, "partitionId": pid, "leaseId": lease, "status": status}])
}

#[tokio::test]
async fn the_listing_is_newest_first_across_partitions_with_computed_statuses() {
    let b = broker().await;
    let (s, _) = b
        .post(
            "/api/v1/configure",
            json!({"queue": "orders", "namespace": "shop", "task": "ship"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let p1 = partition_of(&b.push("orders", "p1", &["a1", "a2"]).await);
    let p2 = partition_of(&b.push("orders", "p2", &["b1"]).await);
    b.push("orders", "p1", &["a3"]).await;
    b.push("logs", "Default", &["l1"]).await;

    let v = listing(&b, "").await;
    assert_eq!(ids(&v), ["l1", "a3", "b1", "a2", "a1"], "{v}");
    let first = &v["messages"][1];
    assert_eq!(
        (&first["queue"], &first["partition"], &first["queuePath"]),
        (&json!("orders"), &json!("p1"), &json!("orders/p1"))
    );
    assert_eq!(
        (&first["namespace"], &first["task"]),
        (&json!("shop"), &json!("ship"))
    );
    assert!(
        first.get("payload").is_none() && first.get("data").is_none(),
        "{first}"
    );
    assert_eq!(first["status"], "pending");

    // Queue mode completes a1, leases a2; b1 is dead-lettered.
    let v1 = b.pop("orders", "batch=2&partitions=1").await;
    assert_eq!(Broker::txids(&v1), ["a1", "a2"], "{v1}");
    let r = b
        .ack_batch(None, ack("a1", &p1, &v1["leaseId"], "completed"))
        .await;
    assert_eq!(r[0]["success"], true);
    let (_, v2) = b
        .get("/api/v1/pop/queue/orders/partition/p2?wait=false")
        .await;
    let r = b
        .ack_batch(None, ack("b1", &p2, &v2["leaseId"], "dlq"))
        .await;
    assert_eq!(r[0]["dlq"], true);

    let v = listing(&b, "queue=orders").await;
    let statuses: Vec<(String, String)> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["transactionId"].as_str().unwrap().into(),
                m["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want = [
        ("a3", "pending"),
        ("b1", "dead_letter"),
        ("a2", "processing"),
        ("a1", "completed"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(statuses, want, "{v}");
    assert!(v["messages"][2]["leaseExpiresAt"].is_string(), "{v}");
    assert_eq!(v["mode"]["type"], "queue", "{v}");

    for (query, want) in [
        ("status=processing", vec!["a2"]),
        ("status=dead_letter", vec!["b1"]),
        ("status=nonsense", vec![]),
        ("queue=orders&partition=p1", vec!["a3", "a2", "a1"]),
        ("ns=shop&task=ship&limit=2", vec!["a3", "b1"]),
        ("ns=shop&limit=2&offset=2", vec!["a2", "a1"]),
        ("task=none", vec![]),
        ("from=2999-01-01T00:00:00Z", vec![]),
        ("to=2000-01-01T00:00:00Z", vec![]),
    ] {
        assert_eq!(ids(&listing(&b, query).await), want, "{query}");
    }
    let (s, v) = b.get("/api/v1/messages?from=yesterday").await;
    assert_eq!(
        (s, v),
        (
            StatusCode::BAD_REQUEST,
            json!({"error": "from must be an ISO-8601 timestamp"})
        )
    );
}

#[tokio::test]
async fn one_message_carries_its_payload_its_groups_and_its_dead_letter() {
    let b = broker().await;
    let pid = partition_of(&b.push("orders", "p1", &["a1", "a2"]).await);
    let v = b.pop("orders", "consumerGroup=g").await;
    let nack = json!([{"transactionId": "a1", "partitionId": pid, "leaseId": v["leaseId"],
                       "status": "dlq", "error": "poison"}]);
    assert_eq!(b.ack_batch(Some("g"), nack).await[0]["dlq"], true);
    let held = b.pop("orders", "").await;
    assert_eq!(Broker::txids(&held), ["a1"]);

    let (s, v) = b.get(&format!("/api/v1/messages/{pid}/a1")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["payload"], json!({"tx": "a1"}), "{v}");
    assert_eq!(
        (&v["status"], &v["errorMessage"], &v["retryCount"]),
        (&json!("dead_letter"), &json!("poison"), &json!(0)),
        "{v}"
    );
    assert_eq!(v["mode"]["type"], "hybrid", "{v}");
    let groups = v["consumerGroups"].as_array().unwrap();
    let by_name = |n: &str| groups.iter().find(|g| g["name"] == n).cloned();
    assert_eq!(by_name("g").unwrap()["consumed"], true, "{v}");
    let queue_mode = by_name("__QUEUE_MODE__").unwrap();
    assert_eq!(queue_mode["consumed"], false, "{v}");
    assert!(queue_mode["leaseExpiresAt"].is_string(), "{v}");
    assert_eq!(v["queueConfig"]["retryLimit"], 3);

    let (s, v) = b.get(&format!("/api/v1/messages/{pid}/nope")).await;
    assert_eq!(
        (s, v),
        (StatusCode::NOT_FOUND, json!({"error": "Message not found"}))
    );
    let (s, v) = b.get("/api/v1/messages/not-a-uuid/a1").await;
    assert_eq!(
        (s, v),
        (
            StatusCode::BAD_REQUEST,
            json!({"error": "partitionId must be a UUID"})
        )
    );
}

#[tokio::test]
async fn a_deleted_message_is_never_delivered_and_no_lease_waits_for_it() {
    let b = broker().await;
    let pid = partition_of(&b.push("q", "p", &["front", "m1", "mid", "m2", "end"]).await);
    for txid in ["front", "mid", "end"] {
        let (s, v) = b.delete(&format!("/api/v1/messages/{pid}/{txid}")).await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(
            v,
            json!({"success": true, "partitionId": pid, "transactionId": txid,
                   "message": "Message deleted successfully"})
        );
    }
    let (_, v) = b.delete(&format!("/api/v1/messages/{pid}/mid")).await;
    assert_eq!(
        (&v["success"], &v["message"]),
        (&json!(false), &json!("Message not found"))
    );
    let (s, _) = b.get(&format!("/api/v1/messages/{pid}/mid")).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(ids(&listing(&b, "queue=q").await), ["m2", "m1"]);

    for group in ["g", "h"] {
        let v = b.pop("q", &format!("consumerGroup={group}&batch=10")).await;
        assert_eq!(Broker::txids(&v), ["m1", "m2"], "{group}: {v}");
        // Acking the last live message ends the lease: it does not wait for `end`.
        let r = b
            .ack_batch(Some(group), ack("m2", &pid, &v["leaseId"], "completed"))
            .await;
        assert_eq!(
            (&r[0]["success"], &r[0]["leaseReleased"]),
            (&json!(true), &json!(true)),
            "{group}: {r:?}"
        );
    }
    // A deleted transaction id may be pushed again, as a new message.
    let again = b.push("q", "p", &["end", "m3"]).await;
    assert_eq!(again.len(), 2);
    let v = b.pop("q", "consumerGroup=g&batch=10").await;
    assert_eq!(Broker::txids(&v), ["end", "m3"], "{v}");

    // A partition whose every unread message is deleted moves its cursor over them.
    let pid2 = partition_of(&b.push("q", "p2", &["gone"]).await);
    b.delete(&format!("/api/v1/messages/{pid2}/gone")).await;
    let (_, v) = b
        .get("/api/v1/pop/queue/q/partition/p2?wait=false&consumerGroup=g")
        .await;
    assert_eq!(Broker::txids(&v), Vec::<String>::new(), "{v}");
    b.push("q", "p2", &["next"]).await;
    let (_, v) = b
        .get("/api/v1/pop/queue/q/partition/p2?wait=false&consumerGroup=g")
        .await;
    assert_eq!(Broker::txids(&v), ["next"], "{v}");
}

#[tokio::test]
async fn a_retry_appends_a_copy_that_every_group_reads_again() {
    let b = broker().await;
    let pid = partition_of(&b.push("q", "p", &["m1"]).await);
    let v = b.pop("q", "consumerGroup=g&autoAck=true").await;
    assert_eq!(Broker::txids(&v), ["m1"]);

    let (s, v) = b
        .post(&format!("/api/v1/messages/{pid}/m1/retry"), json!({}))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["success"], true);
    let copy_txid = v["copy"]["transactionId"].as_str().unwrap().to_string();
    assert!(copy_txid.starts_with("m1:retry:"), "{v}");
    for group in ["g", "h"] {
        let got = b.pop("q", &format!("consumerGroup={group}&batch=10")).await;
        let want: Vec<&str> = if group == "g" {
            vec![&copy_txid]
        } else {
            vec!["m1", &copy_txid]
        };
        assert_eq!(Broker::txids(&got), want, "{group}: {got}");
        assert_eq!(Broker::data(&got).last().unwrap(), &json!({"tx": "m1"}));
    }
    let (_, t) = b.get(&format!("/api/v1/traces/{pid}/{copy_txid}")).await;
    let traces = t["traces"].as_array().unwrap();
    assert_eq!(traces.len(), 1, "{t}");
    assert_eq!(traces[0]["event_type"], "retried");
    assert_eq!(traces[0]["data"]["retriedFrom"]["transactionId"], "m1");
    let (s, _) = b
        .post(&format!("/api/v1/messages/{pid}/nope/retry"), json!({}))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_move_to_the_dead_letter_queue_files_it_and_deletes_it_from_the_log() {
    let b = broker().await;
    let pid = partition_of(&b.push("q", "p", &["m1", "m2"]).await);
    let (s, v) = b
        .post(
            &format!("/api/v1/messages/{pid}/m1/dlq?consumerGroup=g"),
            json!({}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["success"], &v["consumerGroup"]),
        (&json!(true), &json!("g"))
    );
    let (_, d) = b.get("/api/v1/dlq?queue=q").await;
    assert_eq!(d["total"], 1, "{d}");
    let row = &d["messages"][0];
    assert_eq!(
        (&row["transactionId"], &row["consumerGroup"], &row["data"]),
        (&json!("m1"), &json!("g"), &json!({"tx": "m1"}))
    );
    assert_eq!(
        row["errorMessage"],
        "Moved to the dead-letter queue by an operator"
    );
    for group in ["g", "other"] {
        let v = b.pop("q", &format!("consumerGroup={group}&batch=10")).await;
        assert_eq!(Broker::txids(&v), ["m2"], "{group}: {v}");
    }
    let (s, _) = b
        .post(&format!("/api/v1/messages/{pid}/m1/dlq"), json!({}))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "already gone from the log");
}

/// Moves of one message to the DLQ sent together through two brokers (and a delete among
/// them): one moves or deletes it, the others find it gone, and it is filed at most once.
#[tokio::test]
async fn racing_moves_to_the_dead_letter_queue_file_the_message_once() {
    let (a, b) = two_brokers().await;
    for round in 0..6 {
        let q = format!("race{round}");
        let pid = partition_of(&a.push(&q, "p", &["m1"]).await);
        let path = format!("/api/v1/messages/{pid}/m1/dlq?consumerGroup=g");
        let moves = alternating(&a, &b, 6, |on, _| {
            let path = path.clone();
            async move { on.post(&path, json!({})).await.0 }
        });
        let one = format!("/api/v1/messages/{pid}/m1");
        let delete = a.delete(&one);
        let (statuses, (_, deleted)) = tokio::join!(moves, delete);
        let deleted = deleted["success"] == true;
        let moved = statuses.iter().filter(|s| **s == StatusCode::OK).count();
        assert!(
            statuses
                .iter()
                .all(|s| *s == StatusCode::OK || *s == StatusCode::NOT_FOUND),
            "{statuses:?}"
        );
        let (_, d) = a.get(&format!("/api/v1/dlq?queue={q}")).await;
        assert_eq!(
            d["total"].as_i64(),
            Some(moved as i64),
            "round {round}: {moved} moves answered 200 (delete {deleted}): {d}"
        );
        assert!(
            moved <= 1,
            "round {round}: moved {moved} times: {statuses:?}"
        );
        assert_eq!(
            moved + usize::from(deleted),
            1,
            "round {round}: either a move or the delete took it (moves {statuses:?}, delete {deleted})"
        );
    }
}

/// A payload is the client's own JSON text on every route that shows it: a number no double
/// holds (`1e400`, a 400-digit integer, valid JSON a Python client sends as a big `int`) is
/// shown as sent by the message detail, the traces by name and the dead-letter listing, as
/// pop does, never as `null` and never as a 500 for the whole page.
#[tokio::test]
async fn a_payload_beyond_a_double_is_shown_as_sent_everywhere() {
    let b = broker().await;
    let int = "1".repeat(400);
    let payload = format!(r#"{{"big":1e400,"int":{int},"price":1.50}}"#);
    let body =
        format!(r#"{{"items":[{{"queue":"big","transactionId":"b-1","payload":{payload}}}]}}"#);
    let (s, pushed) = b.post_raw("/api/v1/push", &body).await;
    assert_eq!(s, StatusCode::CREATED, "{pushed}");
    let pid = pushed[0]["partition_id"].as_str().unwrap().to_string();
    let (s, v) = b
        .post(
            "/api/v1/traces",
            json!({"transactionId": "b-1", "partitionId": pid, "traceNames": ["big"],
                   "data": {"step": 1}}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");

    let text = |path: String| {
        let b = &b;
        async move {
            let res = b.http.get(format!("{}{path}", b.url)).send().await.unwrap();
            (res.status(), res.text().await.unwrap())
        }
    };
    let (s, detail) = text(format!("/api/v1/messages/{pid}/b-1")).await;
    assert_eq!(s, StatusCode::OK, "{detail}");
    assert!(
        detail.contains(&format!(r#""payload":{payload}"#)),
        "{detail}"
    );
    let (s, named) = text("/api/v1/traces/by-name/big".into()).await;
    assert_eq!(s, StatusCode::OK, "{named}");
    assert!(named.contains(&payload), "{named}");

    let path = format!("/api/v1/messages/{pid}/b-1/dlq?consumerGroup=ledger");
    let (s, v) = b.post(&path, json!({})).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, letters) = text("/api/v1/dlq?queue=big".into()).await;
    assert_eq!(s, StatusCode::OK, "{letters}");
    assert!(
        letters.contains(&format!(r#""data":{payload}"#)),
        "{letters}"
    );
}
