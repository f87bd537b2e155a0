//! Requests that race (issue 47): the same write sent together, half through each of two
//! brokers on one database, for every family where a decision could rest on a read that
//! found nothing. Every answer is checked against what was stored. (Timers, a group's first
//! pops, moves to the DLQ and ephemeral queue limits have theirs beside their families:
//! `timers::racing_*`, `consumer_groups::racing_*`, `messages::racing_*`,
//! `ephemeral::racing_*`.)

use std::collections::BTreeSet;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{alternating, two_brokers, Broker};

/// Sends `bodies[i]` to `path`, all at once, alternating between the brokers.
async fn together(
    a: &Broker,
    b: &Broker,
    path: &str,
    bodies: Vec<Value>,
) -> Vec<(StatusCode, Value)> {
    alternating(a, b, bodies.len(), |on, i| on.post(path, bodies[i].clone())).await
}

fn kv(op: Value) -> Value {
    json!({ "operations": [op] })
}

#[tokio::test]
async fn racing_put_if_absent_of_a_missing_key_applies_once() {
    let (a, b) = two_brokers().await;
    for round in 0..4 {
        let key = format!("k{round}");
        let bodies = (0..10)
            .map(|i| {
                kv(json!({"op": "putIfAbsent", "ns": "n", "key": key, "value": i, "forever": true}))
            })
            .collect();
        let answers = together(&a, &b, "/api/v1/kv", bodies).await;
        let applied: Vec<&Value> = answers
            .iter()
            .map(|(s, v)| {
                assert_eq!(*s, StatusCode::OK, "{v}");
                &v["results"][0]
            })
            .filter(|r| r["applied"] == true)
            .collect();
        assert_eq!(applied.len(), 1, "round {round}: {answers:?}");
        let (_, got) = a
            .post(
                "/api/v1/kv",
                kv(json!({"op": "get", "ns": "n", "key": key})),
            )
            .await;
        assert_eq!(got["results"][0]["value"], applied[0]["value"], "{got}");
        // Every refusal names the winner's row.
        for (_, v) in &answers {
            let r = &v["results"][0];
            if r["applied"] == false {
                assert_eq!(r["value"], applied[0]["value"], "{r}");
            }
        }
    }
}

#[tokio::test]
async fn racing_increments_of_a_missing_key_all_count_up_to_the_bound() {
    let (a, b) = two_brokers().await;
    let bodies = (0..10)
        .map(|_| {
            kv(json!({"op": "incr", "ns": "n", "key": "c", "delta": 1, "max": 6, "forever": true}))
        })
        .collect();
    let answers = together(&a, &b, "/api/v1/kv", bodies).await;
    let results: Vec<&Value> = answers.iter().map(|(_, v)| &v["results"][0]).collect();
    let applied = results.iter().filter(|r| r["applied"] == true).count();
    let refused = results.iter().filter(|r| r["reason"] == "max").count();
    assert_eq!((applied, refused), (6, 4), "{results:?}");
    // Each applied increment saw a different count.
    let seen: BTreeSet<String> = results
        .iter()
        .filter(|r| r["applied"] == true)
        .map(|r| r["value"].to_string())
        .collect();
    assert_eq!(seen.len(), 6, "{results:?}");
    let (_, got) = a
        .post(
            "/api/v1/kv",
            kv(json!({"op": "get", "ns": "n", "key": "c"})),
        )
        .await;
    assert_eq!(got["results"][0]["value"], 6, "{got}");
}

#[tokio::test]
async fn racing_registrations_of_a_stream_make_one_query() {
    let (a, b) = two_brokers().await;
    for round in 0..3 {
        let name = format!("q{round}");
        // Half ask for one configuration, half for another.
        let bodies = (0..10)
            .map(|i| json!({"name": name, "source_queue": "src", "config_hash": format!("h{}", i % 4 / 2)}))
            .collect();
        let answers = together(&a, &b, "/streams/v1/queries", bodies).await;
        let fresh = answers.iter().filter(|(_, v)| v["fresh"] == true).count();
        assert_eq!(fresh, 1, "round {round}: {answers:?}");
        let ids: BTreeSet<String> = answers
            .iter()
            .map(|(_, v)| {
                v["query_id"]
                    .as_str()
                    .expect("every answer names the query")
                    .to_string()
            })
            .collect();
        assert_eq!(ids.len(), 1, "round {round}: {answers:?}");
        // The registrations of the stored hash are accepted; the others refused, 409.
        let hashes_accepted: BTreeSet<String> = answers
            .iter()
            .enumerate()
            .filter(|(_, (s, _))| *s == StatusCode::OK)
            .map(|(i, _)| format!("h{}", i % 4 / 2))
            .collect();
        assert_eq!(hashes_accepted.len(), 1, "round {round}: {answers:?}");
        assert!(
            answers
                .iter()
                .all(|(s, _)| *s == StatusCode::OK || *s == StatusCode::CONFLICT),
            "{answers:?}"
        );
    }
}

#[tokio::test]
async fn racing_first_pushes_make_one_queue_and_each_partition_once() {
    let (a, b) = two_brokers().await;
    let bodies = (0..12)
        .map(|i| {
            json!({"items": [{"queue": "born", "partition": format!("p{}", i % 3),
                              "payload": {"i": i}, "transactionId": format!("t{i}")}]})
        })
        .collect();
    let answers = together(&a, &b, "/api/v1/push", bodies).await;
    for (s, v) in &answers {
        assert_eq!(*s, StatusCode::CREATED, "{v}");
        assert_eq!(v[0]["status"], "queued", "{v}");
    }
    let db = a.db().await;
    let count = |sql: &'static str| {
        let db = &db;
        async move { db.query_one(sql, &[]).await.unwrap().get::<_, i64>(0) }
    };
    assert_eq!(
        count("SELECT count(*) FROM queues WHERE name = 'born'").await,
        1
    );
    assert_eq!(
        count("SELECT count(*) FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE q.name = 'born'").await,
        3
    );
    let v = a.pop("born", "batch=100&partitions=3").await;
    assert_eq!(Broker::txids(&v).len(), 12, "{v}");
}

#[tokio::test]
async fn racing_requeues_of_a_dead_letter_append_one_copy() {
    let (a, b) = two_brokers().await;
    let pushed = a.push("dead", "p", &["d1"]).await;
    let pid = pushed[0]["partition_id"].as_str().unwrap().to_string();
    let (s, v) = a
        .post(&format!("/api/v1/messages/{pid}/d1/dlq"), json!({}))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (_, letters) = a.get("/api/v1/dlq?queue=dead").await;
    let id = letters["messages"][0]["deadLetterId"].clone();
    let bodies = (0..6).map(|_| json!({"ids": [id]})).collect();
    let answers = together(&a, &b, "/api/v1/dlq/requeue", bodies).await;
    let verdicts: Vec<&Value> = answers
        .iter()
        .map(|(s, v)| {
            assert_eq!(*s, StatusCode::OK, "{v}");
            &v["items"][0]["verdict"]
        })
        .collect();
    let requeued = verdicts.iter().filter(|v| **v == "requeued").count();
    let gone = verdicts.iter().filter(|v| **v == "gone").count();
    assert_eq!((requeued, gone), (1, 5), "{answers:?}");
    let v = a.pop("dead", "batch=10").await;
    assert_eq!(Broker::txids(&v).len(), 1, "one copy: {v}");
    let (_, letters) = a.get("/api/v1/dlq?queue=dead").await;
    assert_eq!(letters["total"], 0, "{letters}");
}

#[tokio::test]
async fn racing_declarations_and_pushes_of_a_new_ephemeral_queue_make_one_queue() {
    let (a, b) = two_brokers().await;
    let bodies: Vec<(String, Value)> = (0..10)
        // Declarations through A, pushes through B.
        .map(|i| match i % 2 {
            0 => (
                "/api/v1/ephemeral/configure".to_string(),
                json!({"queue": "e", "options": {"maxLength": 50}}),
            ),
            _ => (
                "/api/v1/ephemeral/push".to_string(),
                json!({"queue": "e", "messages": [{"payload": i}]}),
            ),
        })
        .collect();
    let answers = alternating(&a, &b, bodies.len(), |on, i| {
        let (path, body) = bodies[i].clone();
        async move { on.post(&path, body).await }
    })
    .await;
    for (s, v) in &answers {
        assert!(s.is_success(), "{s} {v}");
    }
    let (_, v) = a.get("/api/v1/ephemeral/queues").await;
    let named: Vec<&Value> = v["queues"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["queue"] == "e")
        .collect();
    assert_eq!(named.len(), 1, "{v}");
    let (_, depth) = a.get("/api/v1/ephemeral/queues/e/depth").await;
    assert_eq!(depth["depth"], 5, "every push kept: {depth}");
}
