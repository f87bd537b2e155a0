//! `GET /api/v1/analytics/queue-parked-replicas` (spec §13.7): long-polling pops parked per
//! queue and broker, from the brokers' samples, for the caller's tenant's queues only.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{authed_broker_with, broker_with, token, Broker};

/// The background sampler never writes during a test: the tests sample when they mean to.
const NEVER: u64 = 3_600_000;
const ROUTE: &str = "/api/v1/analytics/queue-parked-replicas";

async fn get(b: &Broker, tenant: &str, path: &str) -> Value {
    let (s, v) = b
        .request_as(
            Some(&token("read-only").tenant(tenant).mint()),
            Method::GET,
            path,
            None,
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{path}: {v}");
    v
}

/// A long-poll of `tenant` on `queue` that finds nothing for `ms`.
async fn park(b: &Broker, tenant: &str, queue: &str, ms: u64) {
    let path = format!("/api/v1/pop/queue/{queue}?wait=true&timeout={ms}");
    let (s, v) = b
        .request_as(
            Some(&token("read-write").tenant(tenant).mint()),
            Method::GET,
            &path,
            None,
        )
        .await;
    assert_eq!(
        (s, &v["messages"]),
        (StatusCode::OK, &json!([])),
        "{path}: {v}"
    );
}

/// Waits, when the current minute has less than 10 s left, for the next one, so that
/// samples taken in the next few seconds share one 1-minute bucket.
async fn early_in_a_minute() {
    use chrono::Timelike;
    let second = chrono::Utc::now().second();
    if second >= 50 {
        tokio::time::sleep(Duration::from_secs(u64::from(61 - second))).await;
    }
}

/// Waits until this broker counts `n` queues with a parked pop.
async fn parked_queues(b: &Broker, n: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while b.runtime().parked.len() != n {
        assert!(tokio::time::Instant::now() < deadline, "pops never parked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// (queue, parkedCount, maxParkedCount) of each point of an answer.
fn points(v: &Value) -> Vec<(String, f64, i64)> {
    v["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["queueName"].as_str().unwrap().to_string(),
                p["parkedCount"].as_f64().unwrap(),
                p["maxParkedCount"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parked_pops_are_counted_per_queue_and_broker_for_their_tenant_only() {
    let b = authed_broker_with(|c| {
        c.metrics_sample_interval = NEVER;
    })
    .await;
    // Nothing sampled yet: the keys, empty.
    let v = get(&b, "acme", ROUTE).await;
    assert_eq!(
        (&v["bucketMinutes"], &v["series"], &v["replicas"]),
        (&json!(1), &json!([]), &json!([])),
        "{v}"
    );
    assert!(v["timeRange"]["from"].is_string(), "{v}");

    early_in_a_minute().await;
    // Acme parks two pops on `orders` and one on `jobs`; zenith one on its own `orders`.
    let pops = async {
        tokio::join!(
            park(&b, "acme", "orders", 2500),
            park(&b, "acme", "orders", 2500),
            park(&b, "acme", "jobs", 2500),
            park(&b, "zenith", "orders", 2500),
        )
    };
    let sampled = async {
        parked_queues(&b, 3).await;
        while b
            .runtime()
            .parked
            .top(10)
            .iter()
            .map(|q| q.parked)
            .sum::<usize>()
            < 4
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        b.sample_now().await;
    };
    tokio::join!(pops, sampled);
    parked_queues(&b, 0).await;
    // A second sample with nothing parked: the bucket's average halves, its most stays.
    b.sample_now().await;

    let port: i64 = b.url.rsplit(':').next().unwrap().parse().unwrap();
    let v = get(&b, "acme", ROUTE).await;
    assert_eq!(
        points(&v),
        [("jobs".to_string(), 0.5, 1), ("orders".to_string(), 1.0, 2)],
        "{v}"
    );
    let host = regent::memory::activity::hostname();
    for p in v["series"].as_array().unwrap() {
        assert_eq!(
            (&p["hostname"], &p["port"], &p["workerId"]),
            (&json!(host), &json!(port), &json!(b.broker_id())),
            "{p}"
        );
        assert!(p["bucket"].as_str().unwrap().ends_with(":00.000Z"), "{p}");
    }
    assert_eq!(
        v["replicas"],
        json!([{"hostname": host, "port": port, "workerId": b.broker_id()}]),
        "{v}"
    );
    let v = get(&b, "acme", &format!("{ROUTE}?queue=jobs")).await;
    assert_eq!(points(&v), [("jobs".to_string(), 0.5, 1)], "{v}");

    // Zenith sees its own `orders` alone, and nothing of acme's under any name.
    let v = get(&b, "zenith", ROUTE).await;
    assert_eq!(points(&v), [("orders".to_string(), 0.5, 1)], "{v}");
    let v = get(&b, "zenith", &format!("{ROUTE}?queue=jobs")).await;
    assert_eq!(
        (&v["series"], &v["replicas"]),
        (&json!([]), &json!([])),
        "{v}"
    );
    let v = get(&b, "nobody", ROUTE).await;
    assert_eq!(
        (&v["series"], &v["replicas"]),
        (&json!([]), &json!([])),
        "{v}"
    );

    // A window before the samples holds nothing; a reversed one is refused.
    let v = get(
        &b,
        "acme",
        &format!("{ROUTE}?from=2020-01-01T00:00:00Z&to=2020-01-01T06:00:00Z"),
    )
    .await;
    assert_eq!(
        (&v["series"], &v["bucketMinutes"]),
        (&json!([]), &json!(5)),
        "{v}"
    );
    let (s, v) = b
        .request_as(
            Some(&token("read-only").tenant("acme").mint()),
            Method::GET,
            &format!("{ROUTE}?from=2020-01-02T00:00:00Z&to=2020-01-01T00:00:00Z"),
            None,
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
}

/// The parked counts expire with the samples, in bounded batches.
#[tokio::test]
async fn parked_counts_expire_with_the_samples() {
    let b = broker_with(|c| c.metrics_sample_interval = NEVER).await;
    let db = b.db().await;
    db.execute(
        "INSERT INTO broker_parked (tenant, sampled_at, broker_id, queue, parked)
         SELECT 'default', now() - interval '25 hours' - make_interval(secs => i),
                gen_random_uuid(), 'q', 1
           FROM generate_series(1, 10050) i",
        &[],
    )
    .await
    .unwrap();
    let left = || async {
        db.query_one("SELECT count(*) FROM broker_parked", &[])
            .await
            .unwrap()
            .get::<_, i64>(0)
    };
    b.expire_samples().await;
    assert_eq!(left().await, 50, "one batch at most");
    b.expire_samples().await;
    assert_eq!(left().await, 0);
}
