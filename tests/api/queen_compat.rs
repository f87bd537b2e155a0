//! What Queen 0.15's clients send, accepted as 0.15 accepts it (issue 12): calls the clients'
//! documentation shows that Regent once refused.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::{broker, broker_with, Broker};

/// Every mode but `new` (and Regent's aliases `new-only`, `now`) starts a new named group at
/// the first message, as 0.15's SQL does: the clients send `from_beginning`.
const FROM_THE_FIRST: [&str; 5] = ["from_beginning", "all", "", "garbage", "NEW"];

/// One pop on each route that takes a subscription mode, for a fresh group each.
async fn pops_on_every_route(b: &Broker, mode: &str, tag: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for (route, path) in [
        ("queue", "/api/v1/pop/queue/subs".to_string()),
        (
            "partition",
            "/api/v1/pop/queue/subs/partition/Default".into(),
        ),
        ("namespace", "/api/v1/pop?namespace=subs-ns".into()),
    ] {
        let sep = if path.contains('?') { '&' } else { '?' };
        let group = format!("g-{tag}-{route}");
        let url =
            format!("{path}{sep}wait=false&batch=10&consumerGroup={group}&subscriptionMode={mode}");
        let (s, v) = b.get(&url).await;
        assert_eq!(s, StatusCode::OK, "{url}: {v}");
        out.push((url, Broker::txids(&v)));
    }
    out
}

async fn queue_with_history(b: &Broker) {
    let body = json!({"queue": "subs", "namespace": "subs-ns", "options": {}});
    assert_eq!(b.post("/api/v1/configure", body).await.0, StatusCode::OK);
    b.push("subs", "Default", &["old"]).await;
}

#[tokio::test]
async fn every_subscription_mode_but_new_starts_a_group_at_the_first_message() {
    let b = broker().await;
    queue_with_history(&b).await;
    for (i, mode) in FROM_THE_FIRST.iter().enumerate() {
        for (url, got) in pops_on_every_route(&b, mode, &format!("first{i}")).await {
            assert_eq!(got, vec!["old"], "{url}");
        }
    }
    for (i, mode) in ["new", "new-only", "now"].iter().enumerate() {
        for (url, got) in pops_on_every_route(&b, mode, &format!("end{i}")).await {
            assert!(got.is_empty(), "{url}: {got:?}");
        }
    }
    // Queue mode (no group) always reads from the beginning, whatever the mode says.
    for mode in ["from_beginning", "new"] {
        let queue = format!("qm-{mode}");
        b.push(&queue, "Default", &["old"]).await;
        let v = b.pop(&queue, &format!("subscriptionMode={mode}")).await;
        assert_eq!(Broker::txids(&v), vec!["old"], "{mode}: {v}");
    }
}

#[tokio::test]
async fn the_default_subscription_mode_follows_the_same_rule() {
    for (default, history) in [("from_beginning", true), ("garbage", true), ("new", false)] {
        let b = broker_with(|c| c.default_subscription_mode = default.into()).await;
        queue_with_history(&b).await;
        // An empty mode, like an absent one, takes the broker's default.
        for query in [
            "consumerGroup=absent",
            "consumerGroup=empty&subscriptionMode=",
        ] {
            let v = b.pop("subs", query).await;
            let want: Vec<&str> = if history { vec!["old"] } else { vec![] };
            assert_eq!(Broker::txids(&v), want, "default {default}, {query}");
        }
    }
}

/// 0.15 refuses only a missing or non-string `queue`; an empty name is a queue like any other
/// (a push may name it too), and a JS client's `queue('').create()` relies on that.
#[tokio::test]
async fn configure_accepts_an_empty_queue_name_as_queen_does() {
    let b = broker().await;
    let body = json!({"queue": "", "namespace": "blank", "options": {"leaseTime": 7}});
    let (s, v) = b.post("/api/v1/configure", body).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["queue"], &v["namespace"]),
        (&json!(""), &json!("blank"))
    );
    assert_eq!(v["options"]["leaseTime"], 7);

    b.push("", "Default", &["into-blank"]).await;
    let (s, v) = b.get("/api/v1/pop?namespace=blank&wait=false").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(Broker::txids(&v), vec!["into-blank"], "{v}");
    assert_eq!(v["messages"][0]["queue"], "");
    // The lease is the configured one: the push found the queue configure made.
    let row = b
        .db()
        .await
        .query_one(
            "SELECT extract(epoch FROM c.lease_expires_at - now())::float8 AS left_s
               FROM cursor_state c JOIN partitions p ON p.id = c.partition_id
               JOIN queues q ON q.id = p.queue_id WHERE q.name = ''",
            &[],
        )
        .await
        .unwrap();
    let left: f64 = row.get("left_s");
    assert!(
        left > 0.0 && left <= 7.0,
        "lease of {left} s for leaseTime 7"
    );
}
