//! Maintenance modes through HTTP (spec §15): pop maintenance answers `paused`; push
//! maintenance holds pushes in PostgreSQL, deduplicated and invisible, and appends them in
//! arrival order, exactly once, when it ends; both switches reach every broker of the
//! database within a second.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::push_pop::woken_now;
use crate::support::{broker, Broker};

const PUSH: &str = "/api/v1/system/maintenance";
const POP: &str = "/api/v1/system/maintenance/pop";

async fn switch(b: &Broker, path: &str, on: bool) -> Value {
    let (s, v) = b.post(path, json!({ "enabled": on })).await;
    assert_eq!(s, StatusCode::OK, "{path}: {v}");
    v
}

/// Pushes and answers the per-item statuses.
async fn push(b: &Broker, queue: &str, partition: &str, txids: &[&str]) -> Vec<String> {
    b.push_verdicts(queue, partition, txids)
        .await
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect()
}

/// Polls `check` every 20 ms until it holds; panics after `within`.
async fn eventually<F, Fut>(within: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !check().await {
        assert!(start.elapsed() < within, "{what} not within {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn pop_maintenance_answers_paused_at_once_and_ends_cleanly() {
    let b = broker().await;
    b.push("jobs", "Default", &["j1"]).await;
    let v = switch(&b, POP, true).await;
    assert_eq!(v["popMaintenanceMode"], true, "{v}");
    let (_, v) = b.get(POP).await;
    assert_eq!(v["popMaintenanceMode"], true, "{v}");
    for path in [
        "/api/v1/pop/queue/jobs?wait=false",
        "/api/v1/pop/queue/jobs/partition/Default?wait=false&consumerGroup=g",
        "/api/v1/pop?namespace=jobs&wait=false",
    ] {
        let start = Instant::now();
        let (s, v) = b.get(&format!("{path}&wait=true&timeout=5000")).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(
            (&v["messages"], &v["paused"]),
            (&json!([]), &json!(true)),
            "{path}: {v}"
        );
        assert!(start.elapsed() < Duration::from_secs(2), "{path} waited");
    }
    // Pushes and acks go on.
    b.push("jobs", "Default", &["j2"]).await;
    switch(&b, POP, false).await;
    let v = b.pop("jobs", "batch=10").await;
    assert_eq!(Broker::txids(&v), vec!["j1", "j2"], "{v}");
    assert!(v.get("paused").is_none(), "{v}");
    let (s, v) = b.post(POP, json!({"enabled": "yes"})).await;
    assert_eq!(
        (s, &v["error"]),
        (
            StatusCode::BAD_REQUEST,
            &json!("enabled (boolean) is required")
        )
    );
}

#[tokio::test]
async fn push_maintenance_holds_pushes_and_appends_them_in_order_exactly_once() {
    let b = broker().await;
    b.push("orders", "p", &["before"]).await;
    let v = switch(&b, PUSH, true).await;
    assert_eq!(v["maintenanceMode"], true, "{v}");

    assert_eq!(
        push(&b, "orders", "p", &["m1", "m2"]).await,
        ["buffered", "buffered"]
    );
    // Deduplicated as usual: against the log, against the buffer, within the request.
    assert_eq!(
        push(&b, "orders", "p", &["before", "m1", "m3", "m3"]).await,
        ["duplicate", "duplicate", "buffered", "duplicate"]
    );
    assert_eq!(push(&b, "orders.new", "q", &["n1"]).await, ["buffered"]);
    let (s, v) = b
        .post(
            "/api/v1/push",
            json!({"items": [{"queue": "orders", "partition": "p", "transactionId": "m4", "payload": 1}]}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED);
    assert_eq!(
        (
            &v[0]["status"],
            &v[0]["queue"],
            &v[0]["partition"],
            &v[0]["transactionId"]
        ),
        (
            &json!("buffered"),
            &json!("orders"),
            &json!("p"),
            &json!("m4")
        )
    );
    // Invisible to pops while held.
    let v = b.pop("orders", "batch=10").await;
    assert_eq!(Broker::txids(&v), vec!["before"], "{v}");
    let (_, v) = b.get(PUSH).await;
    assert_eq!(
        (&v["maintenanceMode"], &v["bufferedMessages"]),
        (&json!(true), &json!(5)),
        "{v}"
    );

    switch(&b, PUSH, false).await;
    let g = "consumerGroup=after&batch=100";
    eventually(Duration::from_secs(30), "the buffer drained", || async {
        b.get(PUSH).await.1["bufferedMessages"] == 0
    })
    .await;
    let v = b.pop("orders", g).await;
    assert_eq!(
        Broker::txids(&v),
        vec!["before", "m1", "m2", "m3", "m4"],
        "{v}"
    );
    let v = b.pop("orders.new", g).await;
    assert_eq!(Broker::txids(&v), vec!["n1"], "{v}");
    // Pushes go straight to the log again, after the drained ones.
    assert_eq!(
        push(&b, "orders", "p", &["m5", "m1"]).await,
        ["queued", "duplicate"]
    );
    let v = b.pop("orders", "consumerGroup=later&batch=100").await;
    assert_eq!(
        Broker::txids(&v),
        vec!["before", "m1", "m2", "m3", "m4", "m5"],
        "{v}"
    );
    let (_, v) = b.get(PUSH).await;
    assert_eq!(
        (&v["maintenanceMode"], &v["bufferedMessages"]),
        (&json!(false), &json!(0)),
        "{v}"
    );
}

#[tokio::test]
async fn the_switches_reach_the_other_broker_which_drains_nothing_twice() {
    let a = broker().await;
    let b = Broker::attach(&a.db_url).await;
    switch(&a, PUSH, true).await;
    switch(&a, POP, true).await;
    eventually(Duration::from_secs(1), "b sees pop maintenance", || async {
        b.get("/api/v1/pop/queue/any?wait=false").await.1["paused"] == true
    })
    .await;
    let (_, v) = b.get("/api/v1/system/shared-state").await;
    assert_eq!(
        (&v["maintenance_mode"], &v["pop_maintenance_mode"]),
        (&json!(true), &json!(true)),
        "{v}"
    );
    let mut sent = Vec::new();
    for i in 0..40 {
        let t = format!("t{i:02}");
        let on = if i % 2 == 0 { &a } else { &b };
        let status = push(on, "shared", "Default", &[&t]).await;
        assert_eq!(status, ["buffered"], "{t}");
        sent.push(t);
    }
    switch(&b, PUSH, false).await;
    switch(&b, POP, false).await;
    eventually(Duration::from_secs(30), "drained", || async {
        a.get(PUSH).await.1["bufferedMessages"] == 0
    })
    .await;
    // a sees pop maintenance end at its next poll.
    let on_a = a.runtime();
    eventually(Duration::from_secs(1), "a sees pops resume", || {
        let paused = on_a.switches.pop_paused("default");
        async move { !paused }
    })
    .await;
    let v = a.pop("shared", "batch=100").await;
    assert_eq!(Broker::txids(&v), sent, "each once, in arrival order: {v}");
    let stored: i64 = a
        .db()
        .await
        .query_one("SELECT count(*) AS n FROM tx_index", &[])
        .await
        .unwrap()
        .get("n");
    assert_eq!(stored, 40);
}

#[tokio::test]
async fn a_transaction_under_push_maintenance_acks_and_buffers_in_one_commit() {
    let b = broker().await;
    b.push("src", "Default", &["s1"]).await;
    let v = b.pop("src", "").await;
    let (pid, lease) = (
        v["messages"][0]["partitionId"].clone(),
        v["leaseId"].clone(),
    );
    switch(&b, PUSH, true).await;
    let (s, v) = b
        .post(
            "/api/v1/transaction",
            json!({"operations": [
                {"type": "ack", "transactionId": "s1", "partitionId": pid, "leaseId": lease, "status": "completed"},
                {"type": "push", "items": [{"queue": "dst", "transactionId": "d1", "payload": {}}]}]}),
        )
        .await;
    assert_eq!((s, &v["success"]), (StatusCode::OK, &json!(true)), "{v}");
    assert_eq!(v["results"][1]["status"], "buffered", "{v}");
    assert!(Broker::txids(&b.pop("dst", "").await).is_empty());
    switch(&b, PUSH, false).await;
    eventually(Duration::from_secs(30), "d1 appended", || async {
        Broker::txids(&b.pop("dst", "consumerGroup=late").await) == ["d1"]
    })
    .await;
}

/// Pop maintenance wakes the pops parked on every broker of the database, so they answer
/// `paused` now, not at their next recheck: at once on the broker that flips it, at its next
/// poll on the others. The notifiers watched here fire only for pushes, acks and this.
#[tokio::test]
async fn pop_maintenance_wakes_parked_pops_on_every_broker() {
    let a = broker().await;
    let b = Broker::attach(&a.db_url).await;
    let (on_a, on_b) = (a.runtime(), b.runtime());
    let waiters = [
        on_a.wakeups.for_group("default", "q", "g"),
        on_a.wakeups.for_tenant("default"),
        on_a.wakeups.for_group("other", "q", "g"),
    ];
    let remote = on_b.wakeups.for_group("default", "q", "");
    let mut local: Vec<_> = waiters[..2]
        .iter()
        .map(|w| Box::pin(w.notified()))
        .collect();
    let mut foreign = vec![Box::pin(waiters[2].notified())];
    let mut far = vec![Box::pin(remote.notified())];
    for n in local.iter_mut().chain(&mut foreign).chain(&mut far) {
        n.as_mut().enable();
    }
    // A real parked pop on b, which must answer `paused` rather than wait out its timeout.
    let parked = {
        let b = Broker::attach(&a.db_url).await;
        tokio::spawn(async move {
            b.get("/api/v1/pop/queue/q?wait=true&timeout=30000&consumerGroup=g")
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    switch(&a, POP, true).await;
    assert_eq!(woken_now(&mut local), 2, "this tenant's parked pops on a");
    assert_eq!(woken_now(&mut foreign), 0, "another tenant's");
    eventually(Duration::from_secs(1), "b's parked pop is woken", || {
        let n = woken_now(&mut far);
        async move { n == 1 }
    })
    .await;
    let (s, v) = tokio::time::timeout(Duration::from_secs(5), parked)
        .await
        .expect("the parked pop answers")
        .unwrap();
    assert_eq!((s, &v["paused"]), (StatusCode::OK, &json!(true)), "{v}");
}

/// A broker that has not yet seen push maintenance end (its poll is up to 250 ms behind)
/// asks the database before buffering: a producer pushing through it and then through the
/// broker that ended maintenance gets its messages in the order it sent them.
#[tokio::test]
async fn a_broker_behind_on_the_switch_does_not_buffer_after_maintenance_ended() {
    let a = broker().await;
    let b = Broker::attach(&a.db_url).await;
    let behind = b.runtime();
    // b must still be behind when the push reaches it; should its poll land in between,
    // which is rare, the test starts over.
    for attempt in 1.. {
        assert!(attempt <= 5, "b was never behind on the switch");
        switch(&a, PUSH, true).await;
        eventually(Duration::from_secs(1), "b sees push maintenance", || {
            let on = behind.switches.buffering("default");
            async move { on }
        })
        .await;
        switch(&a, PUSH, false).await;
        if behind.switches.buffering("default") {
            break;
        }
    }
    assert_eq!(push(&b, "ordered", "Default", &["first"]).await, ["queued"]);
    assert_eq!(
        push(&a, "ordered", "Default", &["second"]).await,
        ["queued"]
    );
    let v = a.pop("ordered", "batch=10").await;
    assert_eq!(Broker::txids(&v), vec!["first", "second"], "{v}");
    let (_, v) = a.get(PUSH).await;
    assert_eq!(v["bufferedMessages"], 0, "{v}");
}
