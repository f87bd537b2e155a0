//! `/metrics` (Queen's JSON snapshot) and `/metrics/prometheus` (text exposition): real
//! counts of what this broker did, its pool, its process; nothing a tenant owns.

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::json;

use crate::support::{broker, broker_with, sample, Broker};

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
    b.ack_all(None, &popped).await;

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
            assert!(["gauge", "counter", "histogram"].contains(&kind), "{line}");
            typed.insert(name.to_string());
        } else if !line.starts_with("# HELP ") {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let name = series.split('{').next().unwrap();
            // A histogram's series are its family's name with a suffix.
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s).filter(|f| typed.contains(*f)))
                .unwrap_or(name);
            assert!(typed.contains(family), "{line}: no TYPE before it");
            value.parse::<f64>().unwrap_or_else(|_| panic!("{line}"));
        }
    }
    assert!(
        !text.contains("tenant-secret-queue") && !text.contains("default"),
        "public metrics name no queue or tenant"
    );
}

/// The broker's in-memory maps keyed by names clients send stay bounded: a client popping
/// with thousands of random consumer-group names leaves no notifier behind once its pops
/// are answered, and the ready list remembers at most its bound of groups per queue. (The
/// unit tests of `regent-memory` run each map through a million names.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_group_names_do_not_grow_the_runtime_maps() {
    let b = broker().await;
    b.push("bounded", "p", &["m"]).await;
    let names = 3 * regent::memory::ready::MAX_GROUPS;
    let pops = futures::stream::iter(0..names)
        .map(|i| {
            let b = &b;
            async move {
                let group = format!("random-{i}-{}", uuid::Uuid::new_v4());
                let v = b
                    .pop("bounded", &format!("consumerGroup={group}&autoAck=true"))
                    .await;
                assert_eq!(Broker::txids(&v), ["m"], "every group reads the message");
                // Its second look claims by the ready list, which now holds its place.
                let v = b.pop("bounded", &format!("consumerGroup={group}")).await;
                assert!(Broker::txids(&v).is_empty());
            }
        })
        .buffer_unordered(16);
    futures::StreamExt::collect::<Vec<()>>(pops).await;
    let (s, text) = b.get("/metrics/prometheus").await;
    assert_eq!(s, StatusCode::OK);
    let text = text.as_str().unwrap().to_string();
    let entries = |map: &str| sample(&text, &format!("regent_memory_entries{{map=\"{map}\"}}"));
    assert_eq!(entries("wakeups"), 0.0, "no pop in flight: no notifier");
    assert_eq!(entries("pop_lanes"), 0.0, "no pop in flight: no lane");
    assert_eq!(entries("ready_queues"), 1.0);
    let groups = entries("ready_groups");
    assert!(
        groups <= regent::memory::ready::MAX_GROUPS as f64,
        "{groups} group places for {names} names"
    );
    assert_eq!(entries("deliveries"), 0.0, "auto-acked pops hold no lease");
    assert!(entries("sweep_looks") <= names as f64);
}

/// The buckets of one histogram series, in order, as (le, cumulative count).
fn buckets(text: &str, prefix: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .map(|l| {
            let le = l.split("le=\"").nth(1).unwrap().split('"').next().unwrap();
            let n: f64 = l.rsplit(' ').next().unwrap().parse().unwrap();
            (le.to_string(), n)
        })
        .collect()
}

#[tokio::test]
async fn latency_histograms_and_outcomes_count_what_happened() {
    let b = broker().await;
    let pid = b.push("q", "p", &["m1", "m2"]).await[0]["partition_id"]
        .as_str()
        .unwrap()
        .to_string();
    let again =
        json!({"items": [{"queue": "q", "partition": "p", "transactionId": "m1", "payload": {}}]});
    assert_eq!(b.post("/api/v1/push", again).await.0, StatusCode::CREATED);
    let v = b.pop("q", "batch=2").await;
    let acks = json!([
        {"transactionId": "m1", "partitionId": pid, "leaseId": v["leaseId"], "status": "failed"},
    ]);
    b.ack_batch(None, acks).await;
    // m1 comes back: a redelivery, not a first delivery.
    let v = b.pop("q", "batch=2").await;
    assert_eq!(Broker::txids(&v), ["m1", "m2"], "{v}");
    let acks = json!([
        {"transactionId": "m1", "partitionId": pid, "leaseId": v["leaseId"], "status": "dlq"},
        {"transactionId": "m2", "partitionId": pid, "leaseId": v["leaseId"], "status": "completed"},
    ]);
    // m2's completion is superseded by the dead letter below it (the contract): refused.
    let r = b.ack_batch(None, acks).await;
    assert_eq!(
        (&r[0]["dlq"], &r[1]["success"]),
        (&json!(true), &json!(false)),
        "{r:?}"
    );
    let v = b.pop("q", "batch=2").await;
    assert_eq!(Broker::txids(&v), ["m2"], "{v}");
    let done = json!([{"transactionId": "m2", "partitionId": pid, "leaseId": v["leaseId"], "status": "completed"}]);
    assert_eq!(b.ack_batch(None, done).await[0]["success"], true);

    let (_, text) = b.get("/metrics/prometheus").await;
    let text = text.as_str().unwrap().to_string();
    for op in ["push", "pop", "ack"] {
        let prefix = format!("regent_request_duration_seconds_bucket{{op=\"{op}\",");
        let series = buckets(&text, &prefix);
        assert_eq!(series.last().unwrap().0, "+Inf", "{op}");
        assert!(
            series.windows(2).all(|w| w[0].1 <= w[1].1),
            "{op}: {series:?}"
        );
        let count = sample(
            &text,
            &format!("regent_request_duration_seconds_count{{op=\"{op}\"}}"),
        );
        assert_eq!(series.last().unwrap().1, count, "{op}");
        assert!(count >= 2.0, "{op}: {count}");
    }
    assert_eq!(
        sample(&text, "regent_first_delivery_seconds_count"),
        2.0,
        "m1 once, m2 once"
    );
    for (op, outcome, n) in [
        ("push", "queued", 2.0),
        ("push", "duplicate", 1.0),
        ("ack", "acked", 2.0),
        ("ack", "dead_lettered", 1.0),
        ("ack", "refused", 1.0),
    ] {
        let series = format!("regent_items_total{{op=\"{op}\",outcome=\"{outcome}\"}}");
        assert_eq!(sample(&text, &series), n, "{series}");
    }
}

/// `regent_pop_rechecks_total{by}` tells what ended each wait of a parked long-poll: its
/// recheck timer while nothing came, then the wakeup of a push.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rechecks_count_what_ended_a_long_polls_waits() {
    let b = broker().await;
    let parked = {
        let (url, http) = (b.url.clone(), b.http.clone());
        tokio::spawn(async move {
            let pop = format!("{url}/api/v1/pop/queue/q?wait=true&timeout=10000");
            let answer = http.get(pop).send().await.unwrap();
            answer.json::<serde_json::Value>().await.unwrap()
        })
    };
    while b.runtime().parked.is_empty() {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    // Past the rechecks at 100, 300 and 700 ms, the next at 1.5 s: the push's wakeup comes
    // first even on a loaded machine.
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    b.push("q", "p", &["m"]).await;
    assert_eq!(Broker::txids(&parked.await.unwrap()), ["m"]);
    let (_, text) = b.get("/metrics/prometheus").await;
    let text = text.as_str().unwrap().to_string();
    let rechecks = |by: &str| sample(&text, &format!("regent_pop_rechecks_total{{by=\"{by}\"}}"));
    assert_eq!(rechecks("wakeup"), 1.0, "the push woke it");
    assert!(rechecks("timer") >= 1.0, "the timer rechecked before");
}

/// The metric names a rule or dashboard expression uses (`regent_*`, `queen_*`), with a
/// histogram's `_bucket`, `_sum` and `_count` taken back to its family.
fn names_used(text: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        let starts = (rest.starts_with("regent_") || rest.starts_with("queen_"))
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'));
        if starts {
            let len = rest
                .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(rest.len());
            let name = &rest[..len];
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .unwrap_or(name);
            names.insert(family.to_string());
            i += len;
        } else {
            i += 1;
        }
    }
    names
}

#[tokio::test]
async fn every_metric_the_alert_rules_and_the_dashboard_use_is_served() {
    let b = broker_with(|c| c.metrics_per_queue = true).await;
    // Traffic of every kind the families count: a push, a pop and an ack, a dead letter.
    b.push("watched", "p", &["w1", "w2"]).await;
    let pop = b.pop("watched", "batch=1").await;
    let m = &pop["messages"][0];
    let ack = json!([{"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                      "leaseId": pop["leaseId"], "status": "dlq", "error": "bad"}]);
    b.ack_batch(None, ack).await;
    b.refresh_stats().await;
    let (s, scrape) = b.get("/metrics/prometheus").await;
    assert_eq!(s, StatusCode::OK);
    let scrape = scrape.as_str().unwrap().to_string();
    let served: std::collections::BTreeSet<&str> = scrape
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in [
        "deploy/prometheus/regent-alerts.yaml",
        "deploy/grafana/regent-dashboard.json",
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let used = names_used(&text);
        assert!(used.len() >= 5, "{file} uses {used:?}");
        let missing: Vec<&String> = used
            .iter()
            .filter(|n| !served.contains(n.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "{file} uses metrics the broker does not serve: {missing:?}"
        );
    }
    // The three families the rules added, with the values this traffic gives them.
    assert!(scrape.contains("\nregent_database_up 1\n"), "{scrape}");
    assert!(
        scrape.contains("\nregent_unavailable_total 0\n"),
        "{scrape}"
    );
    assert!(
        scrape.contains("\nregent_tenant_cap_fullest 0\n"),
        "{scrape}"
    );
}

#[test]
fn names_used_finds_families_not_their_series() {
    let found = names_used(
        "histogram_quantile(0.99, rate(regent_request_duration_seconds_bucket[5m])) + x_regent_no + queen_dlq_depth_by_queue",
    );
    let found: Vec<&str> = found.iter().map(String::as_str).collect();
    assert_eq!(
        found,
        [
            "queen_dlq_depth_by_queue",
            "regent_request_duration_seconds"
        ]
    );
}
