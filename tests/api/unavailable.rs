//! When the database cannot serve: every 503 says when to retry (`Retry-After`), and says
//! which it is: the pool exhausted (busy: retry soon) or the database unreachable (retry
//! later, about as long as a restart or a failover takes). Then the broker serves again.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{broker_with, sample, with_retry_after, Broker};

/// A connection to the cluster's `postgres` database, beside the broker's.
async fn admin(b: &Broker) -> tokio_postgres::Client {
    let (base, _) = b.db_url.rsplit_once('/').unwrap();
    let (c, conn) = tokio_postgres::connect(&format!("{base}/postgres"), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    c
}

async fn get(b: &Broker, path: &str) -> (StatusCode, Option<String>, Value) {
    let res = b.http.get(format!("{}{path}", b.url)).send().await.unwrap();
    with_retry_after(res).await
}

/// The broker's database refuses connections (and its sessions are cut): 503 "Database
/// unavailable" with `Retry-After: 5` on the API and 503 on `/health`, each counted in
/// `regent_unavailable_total` (the alert rules' "503s above 1/s") while `regent_database_up`
/// says 0; once it accepts them again, the broker serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_is_a_503_that_says_when_to_retry() {
    let b = broker_with(|_| {}).await;
    b.push("q", "p", &["a"]).await;
    // From another database: a database cannot refuse connections to itself.
    let name = b.db_url.rsplit('/').next().unwrap().to_string();
    let admin = admin(&b).await;
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {name} WITH ALLOW_CONNECTIONS false;
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}';"
        ))
        .await
        .unwrap();
    // The pool's connections are gone: a request may meet one closed under it first.
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(get(&b, "/api/v1/resources/queues").await);
    }
    let last = seen.last().unwrap();
    assert_eq!(
        (last.0, last.1.as_deref(), &last.2),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Some("5"),
            &json!({"error": "Database unavailable"})
        ),
        "{seen:?}"
    );
    for (s, retry, _) in &seen {
        assert!(*s != StatusCode::INTERNAL_SERVER_ERROR, "{seen:?}");
        assert!(
            *s != StatusCode::SERVICE_UNAVAILABLE || retry.is_some(),
            "{seen:?}"
        );
    }
    let (s, retry, _) = get(&b, "/health").await;
    assert_eq!(
        (s, retry.is_some()),
        (StatusCode::SERVICE_UNAVAILABLE, true)
    );
    let answered_503 = 1 + seen
        .iter()
        .filter(|(s, _, _)| *s == StatusCode::SERVICE_UNAVAILABLE)
        .count();
    let (s, text) = b.get("/metrics/prometheus").await;
    let text = text.as_str().expect("an exposition").to_string();
    assert_eq!(
        s,
        StatusCode::OK,
        "the scrape is served without the database"
    );
    assert_eq!(sample(&text, "regent_database_up"), 0.0);
    assert_eq!(
        sample(&text, "regent_unavailable_total"),
        answered_503 as f64,
        "every 503 answered, and nothing else"
    );

    admin
        .batch_execute(&format!(
            "ALTER DATABASE {name} WITH ALLOW_CONNECTIONS true"
        ))
        .await
        .unwrap();
    let mut back = get(&b, "/api/v1/resources/queues").await.0;
    for _ in 0..50 {
        if back == StatusCode::OK {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        back = get(&b, "/api/v1/resources/queues").await.0;
    }
    assert_eq!(back, StatusCode::OK, "serving again");
}

/// Every connection of the pool busy for the pool's whole wait: 503 "Database busy" with
/// `Retry-After: 1` (a moment is enough: nothing is down), not a 500.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_exhausted_pool_is_a_503_that_says_retry_soon() {
    let b = broker_with(|c| c.db_pool_size = 2).await;
    b.push("q", "p", &["a"]).await;
    let (mut holder, conn) = tokio_postgres::connect(&b.db_url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let tx = holder.transaction().await.unwrap();
    tx.batch_execute("LOCK TABLE queues IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    // Two requests take both connections and wait on the lock; the third finds none.
    let blocked: Vec<_> = (0..2)
        .map(|_| {
            let (http, url) = (b.http.clone(), format!("{}/api/v1/resources/queues", b.url));
            tokio::spawn(async move { http.get(url).send().await.map(|r| r.status()) })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (s, retry, body) = get(&b, "/api/v1/resources/queues").await;
    assert_eq!(
        (s, retry.as_deref(), &body),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Some("1"),
            &json!({"error": "Database busy"})
        )
    );
    tx.rollback().await.unwrap();
    for h in blocked {
        let s = h.await.unwrap().unwrap();
        assert!(
            s == StatusCode::OK || s == StatusCode::SERVICE_UNAVAILABLE,
            "{s}"
        );
    }
    let (s, _, _) = get(&b, "/api/v1/resources/queues").await;
    assert_eq!(s, StatusCode::OK);
}
