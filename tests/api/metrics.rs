//! `/metrics` (Queen's JSON snapshot) and `/metrics/prometheus` (text exposition): real
//! counts of what this broker did, its pool, its process; nothing a tenant owns.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::{broker, Broker};

/// The value of one sample line `name{labels} value` of an exposition.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
        .parse()
        .unwrap()
}

#[tokio::test]
async fn metrics_count_what_this_broker_did() {
    let b = broker().await;
    b.push("tenant-secret-queue", "p", &["a", "b", "c"]).await;
    // A duplicate stores nothing, so it counts as a request without messages.
    let (s, _) = b
        .post(
            "/api/v1/push",
            json!({"items": [{"queue": "tenant-secret-queue", "partition": "p",
                              "transactionId": "a", "payload": {}}]}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED);
    let popped = b.pop("tenant-secret-queue", "batch=2").await;
    assert_eq!(Broker::txids(&popped).len(), 2);
    let acks: Vec<_> = popped["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                        "leaseId": m["leaseId"], "status": "completed"})
        })
        .collect();
    b.ack_batch(None, json!(acks)).await;

    let (s, v) = b.get("/metrics").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["requests"]["total"], 4, "{v}");
    assert_eq!(v["messages"]["total"], 3, "messages stored by pushes: {v}");
    assert_eq!(v["database"]["poolSize"], 8, "{v}");
    assert!(v["memory"]["rss"].as_u64().unwrap() > 1_000_000, "{v}");
    assert!(v["cpu"]["user"].as_u64().unwrap() > 0, "{v}");
    for key in [
        "uptime", "requests", "messages", "database", "memory", "cpu",
    ] {
        assert!(v.get(key).is_some(), "{key} in {v}");
    }

    let res = b
        .http
        .get(format!("{}/metrics/prometheus", b.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    assert_eq!(res.headers()["cache-control"], "no-cache");
    let text = res.text().await.unwrap();
    assert_eq!(sample(&text, "regent_requests_total{op=\"push\"}"), 2.0);
    assert_eq!(sample(&text, "regent_messages_total{op=\"push\"}"), 3.0);
    assert_eq!(sample(&text, "regent_messages_total{op=\"pop\"}"), 2.0);
    assert_eq!(sample(&text, "regent_messages_total{op=\"ack\"}"), 2.0);
    assert_eq!(
        sample(&text, "regent_messages_total{op=\"transaction\"}"),
        0.0
    );
    assert_eq!(sample(&text, "queen_db_pool_size"), 8.0);
    assert!(sample(&text, "queen_process_resident_memory_bytes") > 1e6);
    assert_eq!(sample(&text, "regent_pending_handovers"), 0.0);
    // Every sample belongs to a family with HELP and TYPE, and parses.
    let mut typed = std::collections::HashSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(["gauge", "counter"].contains(&kind), "{line}");
            typed.insert(name.to_string());
        } else if !line.starts_with("# HELP ") {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let name = series.split('{').next().unwrap();
            assert!(typed.contains(name), "{line}: no TYPE before it");
            value.parse::<f64>().unwrap_or_else(|_| panic!("{line}"));
        }
    }
    assert!(
        !text.contains("tenant-secret-queue") && !text.contains("default"),
        "public metrics name no queue or tenant"
    );
}
