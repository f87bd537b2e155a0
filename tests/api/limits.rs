//! Per-tenant limits (`TENANT_LIMITS`): a request rate and a stored-message cap, answered
//! with 429, `Retry-After` and a JSON error, and never half-written.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{authed_broker_with, broker_with, push_body, token, with_retry_after, Broker};

async fn limited(limits: Value) -> Broker {
    authed_broker_with(|c| c.tenant_limits = Some(limits.to_string())).await
}

/// Status, `Retry-After` and body of one request.
async fn send(
    b: &Broker,
    tenant: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Option<String>, Value) {
    let mut req = b.http.request(method, format!("{}{path}", b.url)).header(
        "Authorization",
        format!("Bearer {}", token("admin").tenant(tenant).mint()),
    );
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.unwrap();
    with_retry_after(res).await
}

async fn push(b: &Broker, tenant: &str, queue: &str, txids: &[&str]) -> (StatusCode, Value) {
    let body = push_body(queue, "p", txids);
    let (s, _, v) = send(b, tenant, reqwest::Method::POST, "/api/v1/push", Some(body)).await;
    (s, v)
}

/// A non-waiting pop of one message in queue mode.
async fn pop_one(b: &Broker, tenant: &str, queue: &str) -> Value {
    let path = format!("/api/v1/pop/queue/{queue}?wait=false");
    let (s, _, v) = send(b, tenant, reqwest::Method::GET, &path, None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

async fn list(b: &Broker, tenant: &str) -> (StatusCode, Option<String>, Value) {
    send(
        b,
        tenant,
        reqwest::Method::GET,
        "/api/v1/resources/queues",
        None,
    )
    .await
}

/// Transaction ids stored for a tenant, read from the database's frames through a pop of
/// everything in a fresh group.
async fn stored(b: &Broker, tenant: &str, queue: &str) -> Vec<String> {
    let (s, _, v) = send(
        b,
        tenant,
        reqwest::Method::GET,
        &format!(
            "/api/v1/pop/queue/{queue}?wait=false&batch=100&consumerGroup=audit-{}&subscriptionMode=all",
            uuid::Uuid::now_v7().simple()
        ),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["transactionId"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_tenant_over_its_rate_gets_429_with_retry_after() {
    let b = limited(json!({"acme": {"rate": 1, "burst": 3}, "*": {"rate": 1000}})).await;
    for _ in 0..3 {
        assert_eq!(list(&b, "acme").await.0, StatusCode::OK);
    }
    let (s, retry, v) = list(&b, "acme").await;
    assert_eq!(s, StatusCode::TOO_MANY_REQUESTS, "{v}");
    assert_eq!(retry.as_deref(), Some("1"));
    assert_eq!(
        v,
        json!({"error": "Rate limit exceeded", "code": "rate_limited", "retryAfter": 1})
    );
    // A refused push writes nothing.
    let (s, v) = push(&b, "acme", "q", &["refused"]).await;
    assert_eq!(s, StatusCode::TOO_MANY_REQUESTS, "{v}");
    // Other tenants have their own buckets; public routes take no token.
    for _ in 0..20 {
        assert_eq!(list(&b, "zenith").await.0, StatusCode::OK);
    }
    let health = b
        .http
        .get(format!("{}/health", b.url))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    // A second later one request fits again, and only one.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (s, v) = push(&b, "acme", "q", &["later"]).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(list(&b, "acme").await.0, StatusCode::TOO_MANY_REQUESTS);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(stored(&b, "acme", "q").await, vec!["later"]);
}

#[tokio::test]
async fn the_default_entry_covers_unnamed_tenants_and_an_empty_entry_lifts_it() {
    let b = limited(json!({"*": {"rate": 0.5, "burst": 1}, "vip": {}})).await;
    assert_eq!(list(&b, "anyone").await.0, StatusCode::OK);
    let (s, retry, _) = list(&b, "anyone").await;
    assert_eq!(
        (s, retry.as_deref()),
        (StatusCode::TOO_MANY_REQUESTS, Some("2"))
    );
    assert_eq!(list(&b, "someone-else").await.0, StatusCode::OK);
    for _ in 0..20 {
        assert_eq!(list(&b, "vip").await.0, StatusCode::OK);
    }
}

#[tokio::test]
async fn limits_apply_to_tenant_default_with_authentication_off() {
    let b = broker_with(|c| {
        c.tenant_limits = Some(json!({"default": {"rate": 1, "burst": 2}}).to_string())
    })
    .await;
    assert_eq!(b.get("/api/v1/resources/queues").await.0, StatusCode::OK);
    assert_eq!(b.get("/api/v1/resources/queues").await.0, StatusCode::OK);
    let (s, v) = b.get("/api/v1/resources/queues").await;
    assert_eq!(
        (s, &v["code"]),
        (StatusCode::TOO_MANY_REQUESTS, &json!("rate_limited"))
    );
}

#[tokio::test]
async fn a_push_past_the_stored_message_cap_is_refused_whole() {
    let b = limited(json!({"acme": {"maxMessages": 5}})).await;
    assert_eq!(
        push(&b, "acme", "q", &["a", "b", "c"]).await.0,
        StatusCode::CREATED
    );
    // Three more would make six: nothing of the request is written.
    let (s, retry, v) = send(
        &b,
        "acme",
        reqwest::Method::POST,
        "/api/v1/push",
        Some(json!({"items": [
            {"queue": "q", "partition": "p", "transactionId": "d", "payload": 1},
            {"queue": "q", "partition": "p", "transactionId": "e", "payload": 1},
            {"queue": "other", "partition": "p", "transactionId": "f", "payload": 1}]})),
    )
    .await;
    assert_eq!(s, StatusCode::TOO_MANY_REQUESTS, "{v}");
    assert_eq!(retry.as_deref(), Some("60"));
    assert_eq!(
        v,
        json!({"error": "Stored message limit reached: 3 of 5 messages",
               "code": "quota_exceeded", "retryAfter": 60})
    );
    assert_eq!(stored(&b, "acme", "q").await, vec!["a", "b", "c"]);
    let (_, _, queues) = list(&b, "acme").await;
    assert_eq!(
        queues["queues"].as_array().unwrap().len(),
        1,
        "no queue `other`: {queues}"
    );

    // The transaction route counts its pushes too, and a refused bundle acks nothing.
    let popped = pop_one(&b, "acme", "q").await;
    let (pid, lease) = (&popped["partitionId"], &popped["leaseId"]);
    let (s, _, v) = send(
        &b,
        "acme",
        reqwest::Method::POST,
        "/api/v1/transaction",
        Some(json!({"operations": [
            {"type": "ack", "transactionId": "a", "partitionId": pid, "leaseId": lease},
            {"type": "push", "items": [
                {"queue": "q", "partition": "p", "transactionId": "t1", "payload": 1},
                {"queue": "q", "partition": "p", "transactionId": "t2", "payload": 1},
                {"queue": "q", "partition": "p", "transactionId": "t3", "payload": 1}]}]})),
    )
    .await;
    assert_eq!(
        (s, &v["code"]),
        (StatusCode::TOO_MANY_REQUESTS, &json!("quota_exceeded"))
    );
    let db = b.db().await;
    let committed: i64 = db
        .query_one(
            "SELECT committed FROM cursor_state WHERE partition_id = $1::text::uuid AND consumer_group = '__QUEUE_MODE__'",
            &[&pid.as_str().unwrap()],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(committed, -1, "the bundle's ack was not applied");

    // Up to the cap exactly is fine; one more is not; other tenants are not capped.
    assert_eq!(
        push(&b, "acme", "q", &["d", "e"]).await.0,
        StatusCode::CREATED
    );
    assert_eq!(
        push(&b, "acme", "q", &["f"]).await.0,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        push(&b, "zenith", "q", &["a", "b", "c", "d", "e", "f"])
            .await
            .0,
        StatusCode::CREATED
    );

    // Deleting a queue gives its room back (seen at the next read of the log, within 1 s).
    let (s, _, _) = send(
        &b,
        "acme",
        reqwest::Method::DELETE,
        "/api/v1/resources/queues/q",
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        push(&b, "acme", "q", &["g", "h", "i", "j", "k"]).await.0,
        StatusCode::CREATED
    );
    assert_eq!(stored(&b, "acme", "q").await, vec!["g", "h", "i", "j", "k"]);
}

/// Over the cap, acks still go through (an ack-only transaction stores nothing), and a push
/// that alone holds more than the cap is a client error, not a reason to wait.
#[tokio::test]
async fn acks_pass_over_the_cap_and_a_push_larger_than_it_is_a_400() {
    let b = limited(json!({"acme": {"maxMessages": 2}})).await;
    assert_eq!(
        push(&b, "acme", "q", &["a", "b"]).await.0,
        StatusCode::CREATED
    );
    let (s, v) = push(&b, "acme", "q", &["c"]).await;
    assert_eq!(
        (s, &v["code"]),
        (StatusCode::TOO_MANY_REQUESTS, &json!("quota_exceeded"))
    );
    let (s, v) = push(&b, "acme", "q", &["c", "d", "e"]).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(
        v["error"],
        "A push of 3 messages exceeds the stored message limit of 2"
    );
    let popped = pop_one(&b, "acme", "q").await;
    let (s, _, v) = send(
        &b,
        "acme",
        reqwest::Method::POST,
        "/api/v1/transaction",
        Some(json!({"operations": [{"type": "ack", "transactionId": "a",
            "partitionId": popped["partitionId"], "leaseId": popped["leaseId"]}]})),
    )
    .await;
    assert_eq!((s, &v["success"]), (StatusCode::OK, &json!(true)), "{v}");
}

/// The cap holds under concurrent pushes through one broker: room is reserved before the
/// write, so requests in flight cannot all squeeze under it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_pushes_do_not_overshoot_the_cap() {
    let b = limited(json!({"acme": {"maxMessages": 50}})).await;
    let bearer = format!("Bearer {}", token("admin").tenant("acme").mint());
    let mut tasks = Vec::new();
    for i in 0..40 {
        let (url, http, bearer) = (b.url.clone(), b.http.clone(), bearer.clone());
        tasks.push(tokio::spawn(async move {
            let items: Vec<Value> = (0..3)
                .map(|k| json!({"queue": "q", "partition": format!("p{}", i % 4), "transactionId": format!("{i}-{k}"), "payload": 1}))
                .collect();
            http.post(format!("{url}/api/v1/push"))
                .header("Authorization", bearer)
                .json(&json!({ "items": items }))
                .send()
                .await
                .unwrap()
                .status()
        }));
    }
    let mut accepted = 0;
    for t in tasks {
        match t.await.unwrap() {
            StatusCode::CREATED => accepted += 1,
            StatusCode::TOO_MANY_REQUESTS => {}
            other => panic!("{other}"),
        }
    }
    assert_eq!(
        accepted, 16,
        "16 pushes of 3 fit under 50, the 17th would not"
    );
    let db = b.db().await;
    let total: i64 = db
        .query_one(
            "SELECT sum(next_offset)::bigint FROM partition_heads WHERE tenant = 'acme'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(total, 48);
}

/// Issue 36 (noisy neighbours): a tenant with `"concurrency": 1` has one request worked on at
/// a time in a broker. Its second request waits for the first, without a 429, while another
/// tenant's request runs at once; when the first ends, the second runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_past_its_concurrency_waits_its_turn_and_others_do_not() {
    let b = std::sync::Arc::new(limited(json!({"heavy": {"concurrency": 1}})).await);
    assert_eq!(
        push(&b, "heavy", "q", &["warm"]).await.0,
        StatusCode::CREATED
    );
    // heavy's first request reads `traces`, held locked here: it holds heavy's one turn.
    let mut db = b.db().await;
    let lock = db.transaction().await.unwrap();
    lock.batch_execute("LOCK TABLE traces IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let first = {
        let path = format!("/api/v1/traces/{}/tx", uuid::Uuid::now_v7());
        let b = b.clone();
        tokio::spawn(async move { send(&b, "heavy", reqwest::Method::GET, &path, None).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = {
        let b = b.clone();
        tokio::spawn(async move { push(&b, "heavy", "q", &["second"]).await })
    };
    // Another tenant's push (the same tables but `traces`) is answered at once.
    let other = tokio::time::timeout(Duration::from_secs(10), push(&b, "light", "q", &["x"]))
        .await
        .expect("another tenant does not wait for heavy's turn");
    assert_eq!(other.0, StatusCode::CREATED, "{}", other.1);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !second.is_finished(),
        "heavy's second request waits its turn"
    );
    lock.rollback().await.unwrap();
    let (s, _, v) = first.await.unwrap();
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, v) = second.await.unwrap();
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v[0]["status"], "queued", "{v}");
}

/// A long-poll waiting for messages holds no turn: with `"concurrency": 1`, a tenant's parked
/// pop does not keep its own push (the one that wakes it) waiting until the pop times out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_long_poll_holds_no_turn() {
    let b = std::sync::Arc::new(limited(json!({"*": {"concurrency": 1}})).await);
    assert_eq!(
        push(&b, "acme", "q", &["first"]).await.0,
        StatusCode::CREATED
    );
    // Delivered and done, so the partition is free for the long-poll below.
    let path = "/api/v1/pop/queue/q?wait=false&autoAck=true";
    let (s, _, first) = send(&b, "acme", reqwest::Method::GET, path, None).await;
    assert_eq!(s, StatusCode::OK, "{first}");
    assert_eq!(first["messages"][0]["transactionId"], "first", "{first}");
    let pop = {
        let b = b.clone();
        tokio::spawn(async move {
            let path = "/api/v1/pop/queue/q?wait=true&timeout=20000";
            send(&b, "acme", reqwest::Method::GET, path, None).await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pushed = tokio::time::timeout(Duration::from_secs(10), push(&b, "acme", "q", &["wake"]))
        .await
        .expect("the parked pop gave its turn back");
    assert_eq!(pushed.0, StatusCode::CREATED, "{}", pushed.1);
    let (s, _, v) = tokio::time::timeout(Duration::from_secs(10), pop)
        .await
        .expect("the pop woke")
        .unwrap();
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["messages"][0]["transactionId"], "wake", "{v}");
}
