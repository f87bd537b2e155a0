//! The per-queue Prometheus families: off on the public `/metrics/prometheus` unless
//! `METRICS_PER_QUEUE` turns them on (every tenant's queues), always on the admin route
//! `/api/v1/metrics/queues` (the token's tenant's queues), the deepest `METRICS_TOP_QUEUES`
//! by name and the rest summed into `queue="_other"`.

use std::collections::HashSet;

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::support::{authed_broker_with, broker, token, Broker};

/// An exposition's text, checked: the Prometheus content type, every sample after its
/// family's TYPE, every series once.
async fn scrape(b: &Broker, path: &str, token: Option<&str>) -> String {
    let mut req = b.http.get(format!("{}{path}", b.url));
    if let Some(t) = token {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    let res = req.send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    assert_eq!(
        res.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = res.text().await.unwrap();
    let (mut typed, mut series) = (HashSet::new(), HashSet::new());
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            typed.insert(rest.split(' ').next().unwrap().to_string());
        } else if !line.starts_with("# HELP ") {
            let (name, value) = line.rsplit_once(' ').unwrap();
            let family = name.split('{').next().unwrap();
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| family.strip_suffix(s).filter(|f| typed.contains(*f)))
                .unwrap_or(family);
            assert!(typed.contains(family), "{line}: no TYPE before it");
            assert!(series.insert(name.to_string()), "{line}: a series twice");
            value.parse::<f64>().unwrap_or_else(|_| panic!("{line}"));
        }
    }
    text
}

/// The value of one series, if the exposition has it.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.parse().unwrap())
}

fn q(family: &str, tenant: &str, queue: &str) -> String {
    format!("{family}{{tenant=\"{tenant}\",queue=\"{queue}\"}}")
}

fn lag(tenant: &str, queue: &str, group: &str) -> String {
    format!("regent_queue_lag_messages{{tenant=\"{tenant}\",queue=\"{queue}\",group=\"{group}\"}}")
}

#[tokio::test]
async fn the_public_exposition_names_queues_only_when_the_broker_is_told_to() {
    let plain = broker().await;
    plain.push("secret-q", "p", &["a", "b", "c"]).await;
    let text = scrape(&plain, "/metrics/prometheus", None).await;
    assert!(
        !text.contains("secret-q") && !text.contains("regent_queue_depth"),
        "no setting, no queue: {text}"
    );

    // A second broker of the database with the setting on.
    let open = Broker::attach_with(&plain.db_url, |c| {
        c.db_pool_size = 4;
        c.metrics_per_queue = true;
    })
    .await;
    open.push("secret-q", "p", &["d"]).await;
    // Queue mode holds a lease on two messages; group `g` dead-letters one.
    let leased = open.pop("secret-q", "batch=2").await;
    assert_eq!(Broker::txids(&leased).len(), 2);
    let g = open.pop("secret-q", "consumerGroup=g").await;
    let acks = json!([{"transactionId": "a", "partitionId": g["messages"][0]["partitionId"],
                       "leaseId": g["messages"][0]["leaseId"], "status": "dlq", "error": "bad"}]);
    assert_eq!(open.ack_batch(Some("g"), acks).await[0]["dlq"], true);
    open.flush_series().await;
    // The gauges come from the stats snapshot.
    open.refresh_stats().await;

    // The totals follow the series flush: the background one may hold the counts a moment.
    let delivered = q("regent_queue_delivered_total", "default", "secret-q");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let text = loop {
        let text = scrape(&open, "/metrics/prometheus", None).await;
        if value(&text, &delivered) == Some(3.0) || tokio::time::Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let at = |series: String| value(&text, &series).unwrap_or_else(|| panic!("{series}"));
    assert_eq!(at(q("regent_queue_depth", "default", "secret-q")), 4.0);
    assert_eq!(at(lag("default", "secret-q", "__QUEUE_MODE__")), 4.0);
    assert_eq!(at(lag("default", "secret-q", "g")), 3.0);
    assert_eq!(
        at(q("queen_dlq_depth_by_queue", "default", "secret-q")),
        1.0
    );
    // This broker's own counts: one push, three messages delivered.
    assert_eq!(
        at(q("regent_queue_pushed_total", "default", "secret-q")),
        1.0
    );
    assert_eq!(
        at(q("regent_queue_delivered_total", "default", "secret-q")),
        3.0
    );
    assert!(
        text.contains("queen_uptime_seconds"),
        "the rest is still there"
    );

    // The broker without the setting still names nothing.
    let text = scrape(&plain, "/metrics/prometheus", None).await;
    assert!(!text.contains("secret-q"), "{text}");
}

#[tokio::test]
async fn the_admin_route_shows_the_tenants_deepest_queues_and_sums_the_rest() {
    let b = authed_broker_with(|c| {
        c.metrics_top_queues = 1;
    })
    .await;
    let acme = token("admin").tenant("acme").mint();
    let zenith = token("admin").tenant("zenith").mint();
    b.push_as(Some(&acme), "big", "p", &["1", "2", "3"]).await;
    b.push_as(Some(&acme), "small", "p", &["1"]).await;
    // A queue named like the sum is always in it, never a second `_other` series.
    b.push_as(Some(&acme), "_other", "p", &["1", "2", "3", "4", "5"])
        .await;
    b.push_as(Some(&zenith), "theirs", "p", &["1", "2"]).await;
    let pop = |path: String| {
        let (b, acme) = (&b, &acme);
        async move {
            let (s, v) = b.request_as(Some(acme), Method::GET, &path, None).await;
            assert_eq!(s, StatusCode::OK, "{v}");
        }
    };
    // Group `g` holds a lease on one of big's messages and has read small to its end.
    pop("/api/v1/pop/queue/big?wait=false&consumerGroup=g".into()).await;
    pop("/api/v1/pop/queue/small?wait=false&consumerGroup=g&autoAck=true".into()).await;

    let route = "/api/v1/metrics/queues";
    b.refresh_stats().await;
    let text = scrape(&b, route, Some(&acme)).await;
    let at = |series: String| value(&text, &series).unwrap_or_else(|| panic!("{series}: {text}"));
    assert_eq!(at(q("regent_queue_depth", "acme", "big")), 3.0);
    assert_eq!(at(lag("acme", "big", "g")), 3.0);
    assert_eq!(
        at(q("regent_queue_depth", "acme", "_other")),
        5.0,
        "small + _other"
    );
    // small read to its end; the queue named _other never read, its 5 messages behind in
    // queue mode (issue 50).
    assert_eq!(at(lag("acme", "_other", "_other")), 5.0);
    assert_eq!(at(q("queen_dlq_depth_by_queue", "acme", "_other")), 0.0);
    for absent in ["small", "zenith", "theirs", "default"] {
        assert!(!text.contains(absent), "{absent} in {text}");
    }
    let text = scrape(&b, route, Some(&zenith)).await;
    assert_eq!(
        value(&text, &q("regent_queue_depth", "zenith", "theirs")),
        Some(2.0)
    );
    assert!(!text.contains("acme") && !text.contains("big"), "{text}");
    // An admin of a tenant without queues gets the families, empty.
    let text = scrape(&b, route, Some(&token("admin").tenant("nobody").mint())).await;
    assert!(text.contains("# TYPE regent_queue_depth gauge"), "{text}");
    assert!(!text.contains("tenant="), "{text}");

    // Admin only; and the public exposition, without the setting, names nothing.
    for role in ["read-only", "read-write"] {
        let (s, v) = b
            .request_as(
                Some(&token(role).tenant("acme").mint()),
                Method::GET,
                route,
                None,
            )
            .await;
        assert_eq!(
            (s, v),
            (
                StatusCode::FORBIDDEN,
                json!({"error": "Insufficient permissions"})
            ),
            "{role}"
        );
    }
    let (s, _) = b.get(route).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let text = scrape(&b, "/metrics/prometheus", None).await;
    assert!(!text.contains("tenant=") && !text.contains("big"), "{text}");
}
