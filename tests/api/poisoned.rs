//! Input PostgreSQL would refuse, NUL in a string above all, is a 400 with a clear text
//! before any SQL. Sent alongside good requests that the broker fuses into one statement or
//! one transaction (pushes in a flusher, pops in a lane, acks, transaction bundles), a
//! poisoned request fails alone: the good ones succeed.

use futures::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{broker, Broker};

/// Panics unless the answer is a 400 whose text names the NUL character.
fn refused(what: &str, (s, v): &(StatusCode, Value)) {
    assert_eq!(*s, StatusCode::BAD_REQUEST, "{what}: {v}");
    let text = v["error"].as_str().unwrap_or_default();
    assert!(text.contains("NUL"), "{what}: {v}");
}

async fn rows(b: &Broker, table: &str) -> i64 {
    let db = b.db().await;
    let sql = format!("SELECT count(*) FROM {table}");
    db.query_one(&sql, &[]).await.unwrap().get(0)
}

#[tokio::test]
async fn a_nul_anywhere_is_a_400_before_any_sql() {
    let b = broker().await;
    let pid = "00000000-0000-0000-0000-000000000001";
    let push = |item: Value| json!({ "items": [item] });
    let bodies: Vec<(&str, &str, Value)> = vec![
        (
            "push: queue",
            "/api/v1/push",
            push(json!({"queue": "a\0b", "payload": 1})),
        ),
        (
            "push: partition",
            "/api/v1/push",
            push(json!({"queue": "q", "partition": "p\0", "payload": 1})),
        ),
        (
            "push: transaction id",
            "/api/v1/push",
            push(json!({"queue": "q", "transactionId": "t\0", "payload": 1})),
        ),
        (
            "ack",
            "/api/v1/ack",
            json!({"transactionId": "t\0", "partitionId": pid, "consumerGroup": "g", "status": "completed"}),
        ),
        (
            "ack batch: group",
            "/api/v1/ack/batch",
            json!({"consumerGroup": "g\0", "acknowledgments": [{"transactionId": "t", "partitionId": pid, "status": "completed"}]}),
        ),
        (
            "transaction",
            "/api/v1/transaction",
            json!({"operations": [{"type": "push", "items": [{"queue": "q", "partition": "\0", "payload": 1}]}]}),
        ),
        (
            "configure",
            "/api/v1/configure",
            json!({"queue": "q\0", "options": {}}),
        ),
        (
            "traces",
            "/api/v1/traces",
            json!({"transactionId": "t", "partitionId": pid, "data": {}, "traceNames": "n\0"}),
        ),
        // A trace's data is stored as jsonb, which cannot hold NUL: not a payload.
        (
            "traces: data",
            "/api/v1/traces",
            json!({"transactionId": "t", "partitionId": pid, "data": {"step": "a\0b"}}),
        ),
        (
            "traces: data key",
            "/api/v1/traces",
            json!({"transactionId": "t", "partitionId": pid, "data": {"k\0": 1}}),
        ),
        (
            "kv",
            "/api/v1/kv",
            json!({"operations": [{"op": "put", "ns": "n", "key": "k\0", "value": 1, "forever": true}]}),
        ),
        (
            "timers",
            "/api/v1/timers",
            json!({"operations": [{"op": "schedule", "queue": "q", "timerKey": "k\0", "delayMs": 1000, "payload": 1}]}),
        ),
    ];
    for (what, path, body) in bodies {
        refused(what, &b.post(path, body).await);
    }
    let paths = [
        "/api/v1/pop/queue/a%00b?wait=false",
        "/api/v1/pop/queue/q/partition/p%00?wait=false",
        "/api/v1/pop/queue/q?wait=false&consumerGroup=g%00",
        "/api/v1/pop?namespace=n%00&wait=false",
        "/api/v1/resources/queues/q%00",
        "/api/v1/timers/q/k%00",
    ];
    for path in paths {
        refused(path, &b.get(path).await);
    }
    refused(
        "delete queue",
        &b.request(Method::DELETE, "/api/v1/resources/queues/q%00", None)
            .await,
    );
    for table in ["queues", "partitions", "segments", "cursors", "traces"] {
        assert_eq!(rows(&b, table).await, 0, "{table}");
    }
    // The broker is whole: a good request after them all. A payload is the client's bytes,
    // NUL and all (stored as sent, never in a text column), through both push routes.
    let payload = json!({"k\0": "v\0"});
    let item = json!({"queue": "q", "partition": "p", "transactionId": "nul-in-payload", "payload": payload});
    let (s, v) = b.post("/api/v1/push", json!({ "items": [item] })).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let op = json!({"type": "push", "items": [{"queue": "q", "partition": "p", "transactionId": "nul-too", "payload": payload}]});
    let (s, v) = b
        .post("/api/v1/transaction", json!({ "operations": [op] }))
        .await;
    assert_eq!((s, &v["success"]), (StatusCode::OK, &json!(true)), "{v}");
    let v = b.pop("q", "batch=10").await;
    assert_eq!(Broker::data(&v), vec![payload.clone(), payload], "{v}");
}

#[tokio::test]
async fn a_poisoned_request_fused_with_good_ones_fails_alone() {
    let b = broker().await;
    let b = &b;
    // Pushes: one flusher batch takes what arrives together.
    let pushes = (0..24).map(|i| async move {
        let partition = if i % 6 == 5 { format!("bad\0{i}") } else { format!("p{i}") };
        let item = json!({"queue": "fused", "partition": partition, "transactionId": format!("m{i}"), "payload": {"i": i}});
        (i, b.post("/api/v1/push", json!({ "items": [item] })).await)
    });
    let mut good = 0;
    for (i, answer) in join_all(pushes).await {
        if i % 6 == 5 {
            refused("push", &answer);
        } else {
            let (s, v) = &answer;
            assert_eq!(*s, StatusCode::CREATED, "push {i}: {v}");
            assert_eq!(v[0]["status"], "queued", "push {i}: {v}");
            good += 1;
        }
    }
    assert_eq!(good, 20);

    // Pops: good ones and poisoned ones of the same queue and group at once, round after
    // round, until every good message is out.
    let mut popped: Vec<Value> = Vec::new();
    for _ in 0..20 {
        if popped.len() == 20 {
            break;
        }
        let pops = (0..8).map(|i| async move {
            let path = match i {
                6 => "/api/v1/pop/queue/fused?wait=false&consumerGroup=g%00".to_string(),
                7 => {
                    "/api/v1/pop/queue/fused/partition/p%001?wait=false&consumerGroup=g".to_string()
                }
                _ => "/api/v1/pop/queue/fused?wait=false&consumerGroup=g&batch=2".to_string(),
            };
            (i, b.get(&path).await)
        });
        for (i, answer) in join_all(pops).await {
            if i >= 6 {
                refused("pop", &answer);
                continue;
            }
            let (s, v) = answer;
            assert!(
                s == StatusCode::OK || s == StatusCode::NO_CONTENT,
                "pop: {s} {v}"
            );
            for m in v["messages"].as_array().cloned().unwrap_or_default() {
                popped.push(
                    json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                                   "leaseId": m["leaseId"], "status": "completed"}),
                );
            }
        }
    }
    assert_eq!(popped.len(), 20, "every good message popped once");

    // Acks: each good one its own request, beside poisoned ones.
    let acks = popped
        .iter()
        .cloned()
        .map(|a| (true, a))
        .chain((0..4).map(|i| (false, json!({"transactionId": format!("x\0{i}"), "partitionId": popped[0]["partitionId"], "status": "completed"}))))
        .map(|(ok, mut item)| async move {
            item["consumerGroup"] = json!("g");
            (ok, b.post("/api/v1/ack", item).await)
        });
    for (ok, answer) in join_all(acks).await {
        if ok {
            let (s, v) = &answer;
            assert_eq!(*s, StatusCode::OK, "ack: {v}");
            let one = if v.is_array() { &v[0] } else { v };
            assert_eq!(one["success"], true, "ack: {v}");
        } else {
            refused("ack", &answer);
        }
    }
    let v = b.pop("fused", "consumerGroup=g&batch=100").await;
    assert_eq!(
        Broker::txids(&v),
        Vec::<String>::new(),
        "all acknowledged: {v}"
    );

    // Transaction bundles: good ones push, poisoned ones name a NUL partition.
    let bundles = (0..12).map(|i| async move {
        let partition = if i % 4 == 3 { "bad\0".to_string() } else { format!("n{i}") };
        let op = json!({"type": "push", "items": [{"queue": "next", "partition": partition, "transactionId": format!("n{i}"), "payload": {"i": i}}]});
        (i, b.post("/api/v1/transaction", json!({ "operations": [op] })).await)
    });
    for (i, answer) in join_all(bundles).await {
        if i % 4 == 3 {
            refused("transaction", &answer);
        } else {
            let (s, v) = &answer;
            assert_eq!(*s, StatusCode::OK, "bundle {i}: {v}");
            assert_eq!(v["success"], true, "bundle {i}: {v}");
        }
    }
    let v = b.pop("next", "batch=100&consumerGroup=check").await;
    let mut got = Broker::txids(&v);
    while got.len() < 9 {
        let more = b.pop("next", "batch=100&consumerGroup=check").await;
        let ids = Broker::txids(&more);
        if ids.is_empty() {
            break;
        }
        got.extend(ids);
    }
    assert_eq!(got.len(), 9, "every good bundle's push: {got:?}");
}

/// An ack whose statement fails for a reason of the broker's, not the client's, answers the
/// contract's fixed text; the database's words (here, a table's name) stay in the log.
#[tokio::test]
async fn an_ack_failing_inside_the_database_does_not_tell_the_client_why() {
    if crate::support::single_only("renames a table of the broker's").await {
        return;
    }
    let b = broker().await;
    b.push("internal", "p", &["m"]).await;
    let v = b.pop("internal", "").await;
    let item = json!({"transactionId": "m", "partitionId": v["messages"][0]["partitionId"],
                      "leaseId": v["leaseId"], "status": "completed"});
    let db = b.db().await;
    db.batch_execute("ALTER TABLE cursors RENAME TO cursors_away")
        .await
        .unwrap();
    let answer = b.ack_batch(None, json!([item])).await;
    db.batch_execute("ALTER TABLE cursors_away RENAME TO cursors")
        .await
        .unwrap();
    assert_eq!(answer[0]["success"], false, "{answer:?}");
    assert_eq!(
        answer[0]["error"], "ack flush failed; lease will expire and redeliver",
        "{answer:?}"
    );
    // Still the client's own mistake is named: a partition id that is not a UUID.
    let bad = json!({"transactionId": "m", "partitionId": "zzz", "status": "completed"});
    let answer = b.ack_batch(None, json!([bad])).await;
    let text = answer[0]["error"].as_str().unwrap_or_default();
    assert!(
        text.contains("invalid input syntax for type uuid"),
        "{answer:?}"
    );
}
