//! Queen's timers through HTTP (spec §18.2): every status of the client's taxonomy, delivery
//! as a message with the promised ids not before `deliverAt`, keys holding `/`, peek and
//! paging, refused fields and payloads, the cancel route that no limit blocks, exactly once
//! across two brokers, and a queue's deletion taking its timers.

use std::time::{Duration, Instant};

use base64::Engine as _;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{alternating, broker, broker_with, two_brokers, Broker};
use crate::wire::{self, Popped, PoppedMessage, TimerList, TimerPeek, TimerResult, Transacted};

fn b64(v: &Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(v.to_string())
}

fn schedule_op(queue: &str, key: &str, payload: &Value, delay_ms: i64, txn: &str) -> Value {
    json!({"op": "schedule", "queue": queue, "timerKey": key, "payload": b64(payload),
           "delayMs": delay_ms, "txn": txn})
}

/// Posts operations; the status and the results.
async fn ops(b: &Broker, ops: Value) -> (StatusCode, Value) {
    let (s, v) = b.post("/api/v1/timers", json!({ "operations": ops })).await;
    (s, v.get("results").cloned().unwrap_or(v))
}

/// The results [`ops`] answered, read.
fn results(v: &Value) -> Vec<TimerResult> {
    wire::read(v)
}

/// One schedule that must succeed; its result.
async fn schedule(
    b: &Broker,
    queue: &str,
    key: &str,
    payload: Value,
    delay_ms: i64,
    txn: &str,
) -> TimerResult {
    let (s, v) = ops(b, json!([schedule_op(queue, key, &payload, delay_ms, txn)])).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    results(&v).remove(0)
}

/// A timer route's answer of one timer (a cancel through the path), read.
fn one(v: &Value) -> TimerResult {
    wire::read(v)
}

fn path(queue: &str, key: &str) -> String {
    format!("/api/v1/timers/{queue}/{key}")
}

/// Pops `queue` (queue mode) until messages come or `wait_ms` has passed. A pop of a queue
/// with no partition yet answers at once, as it does before a first push: it is asked again.
/// Acknowledged as popped (`autoAck`).
async fn pop(b: &Broker, queue: &str, wait_ms: u64) -> Vec<PoppedMessage> {
    let until = Instant::now() + Duration::from_millis(wait_ms);
    loop {
        let left = until
            .saturating_duration_since(Instant::now())
            .as_millis()
            .max(1);
        let v = b
            .pop(
                queue,
                &format!("wait=true&timeout={left}&batch=100&autoAck=true"),
            )
            .await;
        let got = wire::read::<Popped>(&v).messages;
        if !got.is_empty() || Instant::now() >= until {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn pending(b: &Broker) -> i64 {
    b.db()
        .await
        .query_one("SELECT count(*) FROM timers", &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_timer_becomes_its_queues_message_with_the_promised_ids_not_before_its_deadline() {
    let b = broker().await;
    let r = schedule(
        &b,
        "reminders",
        "order:9f1:expire",
        json!({"orderId": "9f1", "n": 1.50}),
        700,
        "tx-9f1",
    )
    .await;
    assert_eq!((r.ok, r.status.as_str()), (true, "scheduled"), "{r:?}");
    assert_eq!(
        (r.queue.as_str(), r.timer_key.as_str(), r.txn.as_deref()),
        ("reminders", "order:9f1:expire", Some("tx-9f1"))
    );
    let deliver_at =
        chrono::DateTime::parse_from_rfc3339(r.deliver_at.as_deref().unwrap()).unwrap();
    // Not before deliverAt: a pop that waits less than the delay gets nothing.
    assert!(pop(&b, "reminders", 200).await.is_empty());
    let start = Instant::now();
    let got = pop(&b, "reminders", 30_000).await;
    // Lateness is measured by `bench/timers.sh`; here only that it comes at all.
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "fired late: {:?}",
        start.elapsed()
    );
    assert_eq!(got.len(), 1, "{got:?}");
    let m = &got[0];
    assert_eq!(Some(&m.id), r.message_id.as_ref(), "{m:?}");
    assert_eq!(m.transaction_id, "tx-9f1");
    assert_eq!(m.partition, "Default");
    // The payload as the client's JSON text: its numbers as sent.
    assert_eq!(m.data, json!({"orderId": "9f1", "n": 1.50}));
    let created = chrono::DateTime::parse_from_rfc3339(&m.created_at).unwrap();
    assert!(
        created >= deliver_at,
        "appended at {created}, due {deliver_at}"
    );
    assert_eq!(pending(&b).await, 0, "the row went with the fire");
    // Cancelling a delivered timer: absent, with the txn echoed for the log lookup.
    let (s, v) = b
        .delete(&format!(
            "{}?txn=tx-9f1",
            path("reminders", "order:9f1:expire")
        ))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v,
        json!({"ok": false, "status": "absent", "queue": "reminders",
        "timerKey": "order:9f1:expire", "txn": "tx-9f1", "messageId": null, "deliverAt": null})
    );
    let (_, metrics) = b.get("/api/v1/metrics/queues").await;
    let text = metrics.as_str().unwrap_or_default();
    assert!(
        text.contains("regent_timers_scheduled_total{tenant=\"default\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("regent_timers_fired_total{tenant=\"default\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("regent_timer_lateness_seconds_count{tenant=\"default\"} 1"),
        "{text}"
    );
}

#[tokio::test]
async fn every_status_of_the_taxonomy() {
    let b = broker().await;
    let far = 3_600_000;
    let first = schedule(&b, "q", "k", json!(1), far, "t1").await;
    assert_eq!(first.status, "scheduled");
    // The same upsert under either name: a new timer under an old name.
    let (s, v) = ops(
        &b,
        json!([{"op": "reschedule", "queue": "q", "timerKey": "k",
        "payload": b64(&json!(2)), "delayMs": far * 2, "txn": "t2", "partition": "p"}]),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let again = &results(&v)[0];
    assert_eq!(
        (again.status.as_str(), again.ok, again.txn.as_deref()),
        ("rescheduled", true, Some("t2"))
    );
    assert_ne!(again.message_id, first.message_id);
    assert!(again.deliver_at > first.deliver_at);
    let (_, peek) = b.get(&path("q", "k")).await;
    let read: TimerPeek = wire::read(&peek);
    let timer = read.timer.as_ref();
    assert_eq!(
        (
            read.found,
            timer.map(|t| t.row.txn.as_str()),
            timer.map(|t| t.row.partition.as_str())
        ),
        (true, Some("t2"), Some("p")),
        "{peek}"
    );
    assert_eq!(timer.map(|t| t.payload.clone()), Some(b64(&json!(2))));
    assert_eq!(timer.map(|t| t.encrypted), Some(false));
    // A cancel naming a txn that is no longer pending finds nothing, and changes nothing.
    let (_, v) = ops(
        &b,
        json!([{"op": "cancel", "queue": "q", "timerKey": "k", "txn": "t1"}]),
    )
    .await;
    let r = results(&v);
    assert_eq!(
        (r[0].status.as_str(), r[0].txn.as_deref()),
        ("absent", Some("t1")),
        "{v}"
    );
    // Held by a fire (a transaction holding the row): too_late, and nothing changes.
    let mut db = b.db().await;
    let held = db.transaction().await.unwrap();
    held.execute("SELECT 1 FROM timers WHERE tenant = 'default' AND queue = 'q' AND timer_key = 'k' FOR UPDATE", &[])
        .await
        .unwrap();
    let (_, v) = ops(&b, json!([schedule_op("q", "k", &json!(3), 5, "t3")])).await;
    let r = results(&v);
    assert_eq!(
        (r[0].status.as_str(), r[0].ok, r[0].txn.as_deref()),
        ("too_late", false, Some("t2")),
        "{v}"
    );
    let (s, v) = b.delete(&path("q", "k")).await;
    let r = one(&v);
    assert_eq!(
        (s, r.status.as_str(), &r.message_id),
        (StatusCode::OK, "too_late", &again.message_id),
        "{v}"
    );
    held.rollback().await.unwrap();
    // Cancelled through the batch, then absent (no txn sent: null).
    let (_, v) = ops(
        &b,
        json!([{"op": "cancel", "queue": "q", "timerKey": "k", "txn": "t2"},
                                {"op": "cancel", "queue": "q", "timerKey": "k"}]),
    )
    .await;
    let r = results(&v);
    assert_eq!(
        (r[0].status.as_str(), r[0].ok, r[0].txn.as_deref()),
        ("cancelled", true, Some("t2")),
        "{v}"
    );
    assert_eq!(
        (r[1].status.as_str(), r[1].txn.as_deref()),
        ("absent", None),
        "{v}"
    );
    // Scheduled and cancelled in one batch: in order.
    let (_, v) = ops(
        &b,
        json!([schedule_op("q", "k2", &json!(1), 50, "t4"),
                                {"op": "cancel", "queue": "q", "timerKey": "k2"}]),
    )
    .await;
    let r = results(&v);
    assert_eq!(
        (r[0].status.as_str(), r[1].status.as_str()),
        ("scheduled", "cancelled"),
        "{v}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        pop(&b, "q", 100).await.is_empty(),
        "a cancelled timer never fires"
    );
    assert_eq!(pending(&b).await, 0);
}

#[tokio::test]
async fn keys_with_slashes_peek_and_cancel_through_the_path() {
    let b = broker().await;
    schedule(&b, "q", "a/b/c", json!({"x": 1}), 3_600_000, "t").await;
    let (s, v) = b.get(&path("q", "a/b/c")).await;
    let peek: TimerPeek = wire::read(&v);
    assert_eq!(
        (
            s,
            peek.found,
            peek.timer.as_ref().map(|t| t.row.timer_key.as_str())
        ),
        (StatusCode::OK, true, Some("a/b/c")),
        "{v}"
    );
    let (s, v) = b.get(&path("q", "a/b")).await;
    assert_eq!((s, v), (StatusCode::OK, json!({"found": false})));
    let (s, v) = b.get(&path("other", "a/b/c")).await;
    assert_eq!((s, v), (StatusCode::OK, json!({"found": false})));
    let (s, v) = b.delete(&path("q", "a/b/c")).await;
    let r = one(&v);
    assert_eq!(
        (s, r.status.as_str(), r.txn.as_deref()),
        (StatusCode::OK, "cancelled", Some("t")),
        "{v}"
    );
    let (_, v) = b.get(&path("q", "a/b/c")).await;
    assert_eq!(v, json!({"found": false}));
}

#[tokio::test]
async fn a_queues_timers_page_by_key_after_an_exclusive_cursor() {
    let b = broker().await;
    for k in ["k1", "k2", "k3", "k4", "k5"] {
        schedule(&b, "q", k, json!(k), 3_600_000, k).await;
    }
    schedule(&b, "elsewhere", "k0", json!(0), 3_600_000, "x").await;
    let list = |v: &Value| wire::read::<TimerList>(v);
    let keys =
        |v: &Value| -> Vec<String> { list(v).rows.into_iter().map(|r| r.timer_key).collect() };
    let page = |v: &Value| {
        let l = list(v);
        (l.truncated, l.next_after)
    };
    let (s, v) = b.get("/api/v1/timers/q?limit=2").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (keys(&v), page(&v)),
        (
            vec!["k1".to_string(), "k2".into()],
            (true, Some("k2".into()))
        )
    );
    // Absent, on the JSON itself.
    assert!(
        v["rows"][0].get("payload").is_none(),
        "rows carry no payload: {v}"
    );
    let (_, v) = b.get("/api/v1/timers/q?limit=2&after=k2").await;
    assert_eq!(
        (keys(&v), page(&v).0),
        (vec!["k3".to_string(), "k4".into()], true)
    );
    let (_, v) = b.get("/api/v1/timers/q?limit=2&after=k4").await;
    assert_eq!(
        (keys(&v), page(&v)),
        (vec!["k5".to_string()], (false, Some("k5".into())))
    );
    let (_, v) = b.get("/api/v1/timers/q?after=k5").await;
    assert_eq!((keys(&v).len(), page(&v)), (0, (false, None)));
    // A limit out of range is clamped, never refused.
    let (s, v) = b.get("/api/v1/timers/q?limit=0").await;
    assert_eq!((s, keys(&v).len()), (StatusCode::OK, 1));
    let (s, v) = b.get("/api/v1/timers/q?limit=99999999").await;
    assert_eq!((s, keys(&v).len()), (StatusCode::OK, 5));
    let (s, v) = b.get("/api/v1/timers/q?limit=lots").await;
    assert_eq!((s, keys(&v).len()), (StatusCode::OK, 5));
    // The console's count per queue.
    let (_, v) = b.get("/api/v1/timers").await;
    let queues = wire::read::<wire::TimerQueues>(&v).queues;
    let counts: Vec<(&str, i64)> = queues
        .iter()
        .map(|q| (q.queue.as_str(), q.pending))
        .collect();
    assert_eq!(counts, [("elsewhere", 1), ("q", 5)]);
}

#[tokio::test]
async fn server_owned_fields_and_bad_payloads_are_refused_by_name() {
    let b = broker().await;
    let good = schedule_op("q", "k", &json!({"a": 1}), 10, "t");
    for field in [
        "producerSub",
        "messageId",
        "tenant",
        "tenantId",
        "deliverAt",
        "delaySeconds",
        "attempts",
        "claimToken",
        "_internal",
    ] {
        let mut op = good.clone();
        op[field] = json!("x");
        let (s, v) = ops(&b, json!([op])).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{field}: {v}");
        assert_eq!(
            v["error"],
            format!("operations[0]: `{field}` is server-owned and cannot be supplied")
        );
    }
    let cases = [
        (json!({"payload": "not base64!"}), "payload must be base64"),
        (
            json!({"payload": base64::engine::general_purpose::STANDARD.encode("{not json")}),
            "payload must be the base64 of a JSON document",
        ),
        (json!({"payload": null}), "payload is required"),
        (json!({"delayMs": null}), "delayMs is required"),
        (
            json!({"delayMs": "soon"}),
            "delayMs must be a number of milliseconds from -315360000000 to 315360000000",
        ),
        (
            json!({"delayMs": 1e300}),
            "delayMs must be a number of milliseconds from -315360000000 to 315360000000",
        ),
        (
            json!({"payloadZstd": true}),
            "payloadZstd is not supported by this broker: send the payload uncompressed",
        ),
        (
            json!({"op": "fire"}),
            "op must be schedule, reschedule or cancel",
        ),
        (json!({"queue": ""}), "queue is required"),
        (json!({"timerKey": 7}), "timerKey must be a string"),
        (
            json!({"timerKey": "a\u{0}b"}),
            "timerKey must not contain NUL",
        ),
        (
            json!({"partition": "p".repeat(513)}),
            "partition must be at most 512 bytes",
        ),
    ];
    for (patch, text) in cases {
        let mut op = good.clone();
        for (k, v) in patch.as_object().unwrap() {
            op[k] = v.clone();
        }
        // Second in the batch: the error names its index, and nothing of the batch is stored.
        let (s, v) = ops(
            &b,
            json!([schedule_op("q", "first", &json!(1), 10, "f"), op]),
        )
        .await;
        assert_eq!(
            (s, v["error"].as_str()),
            (
                StatusCode::BAD_REQUEST,
                Some(format!("operations[1]: {text}").as_str())
            ),
            "{patch}"
        );
    }
    let (s, v) = ops(&b, json!(["x"])).await;
    assert_eq!(
        (s, &v["error"]),
        (
            StatusCode::BAD_REQUEST,
            &json!("operations[0] must be an object")
        )
    );
    let (s, v) = b.post("/api/v1/timers", json!({"ops": []})).await;
    assert_eq!(
        (s, &v["error"]),
        (
            StatusCode::BAD_REQUEST,
            &json!("operations array is required")
        )
    );
    let (s, v) = ops(&b, json!([])).await;
    assert_eq!((s, v), (StatusCode::OK, json!([])));
    // payloadZstd: false is the default, and a delay in the past is legal (fires at once).
    let mut op = good.clone();
    op["payloadZstd"] = json!(false);
    op["delayMs"] = json!(-60_000);
    let (s, v) = ops(&b, json!([op])).await;
    assert_eq!(
        (s, &v[0]["status"]),
        (StatusCode::OK, &json!("scheduled")),
        "{v}"
    );
    // The fire is at once; the bound is for a loaded machine (the Citus pass once took more
    // than 5 s here with every other test running), and a miss says where the timer is.
    let fired = pop(&b, "q", 20_000).await;
    if fired.len() != 1 {
        let (_, peek) = b.get(&path("q", "k")).await;
        panic!("the timer due at once was not delivered: {fired:?}; still pending: {peek}");
    }
    assert_eq!(
        pending(&b).await,
        0,
        "nothing of the refused batches was stored"
    );
}

/// Sends as tenant `default` with no token and reads `Retry-After`.
async fn send(b: &Broker, method: Method, path: &str, body: Option<Value>) -> StatusCode {
    let body = body.map(|v| v.to_string());
    b.request_as(None, method, path, body.as_deref()).await.0
}

#[tokio::test]
async fn the_cancel_route_is_never_blocked_by_the_rate_or_the_cap_or_maintenance() {
    let b = broker_with(|c| {
        c.tenant_limits =
            Some(json!({"default": {"rate": 0.01, "burst": 2, "maxMessages": 1}}).to_string())
    })
    .await;
    let s = send(
        &b,
        Method::POST,
        "/api/v1/timers",
        Some(json!({"operations": [schedule_op("q", "k", &json!(1), 3_600_000, "t")]})),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    // One push fills the cap: a schedule is refused as a push would be.
    let s = send(
        &b,
        Method::POST,
        "/api/v1/push",
        Some(json!({"items": [{"queue": "q", "payload": 1}]})),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let s = send(
        &b,
        Method::POST,
        "/api/v1/timers",
        Some(json!({"operations": [schedule_op("q", "k2", &json!(1), 10, "t2")]})),
    )
    .await;
    assert_eq!(
        s,
        StatusCode::TOO_MANY_REQUESTS,
        "the rate (burst 2) is spent"
    );
    // Rate spent, cap full: the cancel route still cancels.
    let (s, v) = b.delete(&path("q", "k")).await;
    assert_eq!(
        (s, one(&v).status.as_str()),
        (StatusCode::OK, "cancelled"),
        "{v}"
    );
    let (s, v) = b.delete(&path("q", "k")).await;
    assert_eq!(
        (s, one(&v).status.as_str()),
        (StatusCode::OK, "absent"),
        "{v}"
    );
    assert_eq!(pending(&b).await, 0);
}

#[tokio::test]
async fn a_schedule_past_the_cap_is_refused_and_maintenance_buffers_the_fire() {
    let b =
        broker_with(|c| c.tenant_limits = Some(json!({"default": {"maxMessages": 1}}).to_string()))
            .await;
    b.push("full", "Default", &["m1"]).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (s, v) = b
        .post(
            "/api/v1/timers",
            json!({"operations": [schedule_op("q", "k", &json!(1), 10, "t")]}),
        )
        .await;
    assert_eq!(
        (s, &v["code"]),
        (StatusCode::TOO_MANY_REQUESTS, &json!("quota_exceeded")),
        "{v}"
    );
    // Under push maintenance a schedule is taken, its fire buffered, and a cancel works.
    let b = broker().await;
    let (s, _) = b
        .post("/api/v1/system/maintenance", json!({"enabled": true}))
        .await;
    assert_eq!(s, StatusCode::OK);
    schedule(&b, "q", "fires", json!({"n": 1}), 10, "tf").await;
    schedule(&b, "q", "stays", json!({"n": 2}), 3_600_000, "ts").await;
    let (s, v) = b.delete(&path("q", "stays")).await;
    assert_eq!(
        (s, one(&v).status.as_str()),
        (StatusCode::OK, "cancelled"),
        "{v}"
    );
    let start = Instant::now();
    while pending(&b).await > 0 {
        assert!(start.elapsed() < Duration::from_secs(30), "not fired");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(pop(&b, "q", 100).await.is_empty(), "held in the buffer");
    let (s, _) = b
        .post("/api/v1/system/maintenance", json!({"enabled": false}))
        .await;
    assert_eq!(s, StatusCode::OK);
    let got = pop(&b, "q", 30_000).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].transaction_id, "tf");
}

#[tokio::test]
async fn two_brokers_fire_each_timer_exactly_once() {
    let a = broker().await;
    let b = Broker::attach(&a.db_url).await;
    let n = 400;
    for chunk in 0..4 {
        let ops_: Vec<Value> = (0..n / 4)
            .map(|i| {
                let k = chunk * (n / 4) + i;
                schedule_op(
                    "many",
                    &format!("k{k}"),
                    &json!({"k": k}),
                    300 + (k % 7) * 50,
                    &format!("t{k}"),
                )
            })
            .collect();
        let on = if chunk % 2 == 0 { &a } else { &b };
        let (s, v) = ops(on, json!(ops_)).await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut total = 0;
    let start = Instant::now();
    while seen.len() < n as usize {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{} of {n} delivered",
            seen.len()
        );
        for m in pop(&a, "many", 500).await {
            total += 1;
            seen.insert(m.transaction_id);
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    total += pop(&b, "many", 100).await.len();
    assert_eq!(
        (seen.len(), total),
        (n as usize, n as usize),
        "each timer delivered once"
    );
    assert_eq!(pending(&a).await, 0);
    // Every message stored once: the log holds n.
    let stored: i64 = a
        .db()
        .await
        .query_one(
            "SELECT sum(p.next_offset - p.first_offset)::bigint FROM partition_heads p",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(stored, n);
}

#[tokio::test]
async fn deleting_a_queue_deletes_its_pending_timers() {
    let b = broker().await;
    b.push("doomed", "Default", &["m"]).await;
    schedule(&b, "doomed", "k", json!(1), 3_600_000, "t").await;
    schedule(&b, "kept", "k", json!(1), 3_600_000, "t").await;
    let (s, v) = b.delete("/api/v1/resources/queues/doomed").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (_, v) = b.get(&path("doomed", "k")).await;
    assert_eq!(v, json!({"found": false}));
    let (_, v) = b.get(&path("kept", "k")).await;
    assert!(wire::read::<TimerPeek>(&v).found);
}

#[tokio::test]
async fn the_timers_rider_commits_with_the_ack_after_the_kv_rider_and_not_without_it() {
    let b = broker().await;
    let (partition, lease, txid) = b.popped("txsrc").await;
    let ack = json!({"type": "ack", "transactionId": txid, "partitionId": partition});
    let bundle = |timer: Value, lease: &str| {
        json!({
            "operations": [ack.clone()],
            "requiredLeases": [lease],
            "kv": [{"op": "incr", "ns": "reminders", "key": "set", "forever": true}],
            "timers": [timer],
        })
    };
    // Refused (another lease is required): nothing of it is scheduled.
    let refused = schedule_op("txrem", "r-1", &json!({"n": 0}), 0, "txn-0");
    let (s, v) = b
        .post("/api/v1/transaction", bundle(refused, "not-a-live-lease"))
        .await;
    assert_eq!(
        (s, wire::read::<Transacted>(&v).success),
        (StatusCode::OK, false),
        "{v}"
    );
    assert_eq!(pending(&b).await, 0);
    // Committed: the ack, then the KV result, then the timer's, in one index space.
    let timer = schedule_op("txrem", "r-1", &json!({"n": 1}), 200, "txn-1");
    let (s, v) = b.post("/api/v1/transaction", bundle(timer, &lease)).await;
    let t: Transacted = wire::read(&v);
    assert_eq!((s, t.success), (StatusCode::OK, true), "{v}");
    let kinds: Vec<String> = t
        .results
        .iter()
        .map(|x| wire::read::<wire::TxRider>(x).kind)
        .collect();
    assert_eq!(kinds, ["ack", "kv", "timer"], "{v}");
    let rider: wire::TxRider = wire::read(&t.results[2]);
    assert_eq!(rider.index, 2);
    let timer: TimerResult = wire::read(&rider.result);
    assert_eq!(
        (timer.status.as_str(), timer.ok),
        ("scheduled", true),
        "{v}"
    );
    let promised = timer.message_id;
    let got = pop(&b, "txrem", 10_000).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        (Some(&got[0].id), got[0].transaction_id.as_str()),
        (promised.as_ref(), "txn-1")
    );
    // A timers-only bundle is a bundle too, and a bad timer op refuses it whole, named.
    let cancel = json!({"op": "cancel", "queue": "txrem", "timerKey": "r-1"});
    let (s, v) = b
        .post(
            "/api/v1/transaction",
            json!({"operations": [], "timers": [cancel]}),
        )
        .await;
    let t: Transacted = wire::read(&v);
    let rider: wire::TxRider = wire::read(&t.results[0]);
    assert_eq!(
        (s, wire::read::<TimerResult>(&rider.result).status.as_str()),
        (StatusCode::OK, "absent"),
        "{v}"
    );
    let bad = json!({"op": "schedule", "queue": "txrem", "timerKey": "k", "payload": "%%", "delayMs": 1, "txn": "t"});
    let (s, v) = b
        .post(
            "/api/v1/transaction",
            json!({"operations": [], "timers": [bad]}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .starts_with("timers[0]: payload"),
        "{v}"
    );
}

/// Ten schedules of one key sent together, five through each of two brokers: each result
/// for `key`, in no particular order.
async fn racing_schedules(a: &Broker, b: &Broker, key: &str, delay_ms: i64) -> Vec<TimerResult> {
    alternating(a, b, 10, |on, i| {
        let op = schedule_op(
            "race",
            key,
            &json!({"i": i}),
            delay_ms,
            &format!("{key}-t{i}"),
        );
        racing_op(on, op)
    })
    .await
}

/// One operation of a race: its result.
async fn racing_op(on: &Broker, op: Value) -> TimerResult {
    let (s, v) = ops(on, json!([op])).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    results(&v).remove(0)
}

/// The results' statuses, counted.
fn statuses(results: &[TimerResult]) -> std::collections::BTreeMap<String, usize> {
    let mut n = std::collections::BTreeMap::new();
    for r in results {
        *n.entry(r.status.clone()).or_default() += 1;
    }
    n
}

#[tokio::test]
async fn racing_schedules_of_a_new_key_on_two_brokers_tell_exactly_one_scheduled() {
    let (a, b) = two_brokers().await;
    for round in 0..8 {
        let key = format!("k{round}");
        let results = racing_schedules(&a, &b, &key, 60_000).await;
        let n = statuses(&results);
        assert_eq!(
            (n.get("scheduled"), n.get("rescheduled")),
            (Some(&1), Some(&9)),
            "round {round}: one new timer, nine replacing it: {results:?}"
        );
        // What is stored is one of the racers' timers, with the ids its answer promised.
        let (_, peek) = a.get(&path("race", &key)).await;
        let stored = wire::read::<TimerPeek>(&peek).timer.map(|t| t.row);
        let txn = stored.as_ref().map(|t| t.txn.clone());
        let kept: Vec<&TimerResult> = results.iter().filter(|r| r.txn == txn).collect();
        assert_eq!(kept.len(), 1, "{peek} among {results:?}");
        assert_eq!(kept[0].message_id, stored.map(|t| t.message_id), "{peek}");
    }
    assert_eq!(pending(&a).await, 8);
}

#[tokio::test]
async fn racing_reschedules_of_a_pending_key_on_two_brokers_all_replace_it() {
    let (a, b) = two_brokers().await;
    for round in 0..4 {
        let key = format!("p{round}");
        schedule(&a, "race", &key, json!(0), 60_000, &format!("{key}-first")).await;
        let results = racing_schedules(&a, &b, &key, 60_000).await;
        assert_eq!(
            statuses(&results).get("rescheduled"),
            Some(&10),
            "round {round}: no fire holds the key, so none is too late: {results:?}"
        );
    }
}

#[tokio::test]
async fn racing_cancels_of_a_pending_key_on_two_brokers_cancel_it_once() {
    let (a, b) = two_brokers().await;
    for round in 0..4 {
        let key = format!("c{round}");
        schedule(&a, "race", &key, json!(0), 60_000, &format!("{key}-t")).await;
        let cancel = json!({"op": "cancel", "queue": "race", "timerKey": key});
        let results = alternating(&a, &b, 10, |on, _| racing_op(on, cancel.clone())).await;
        let n = statuses(&results);
        assert_eq!(
            (n.get("cancelled"), n.get("absent")),
            (Some(&1), Some(&9)),
            "round {round}: cancelled once, then gone: {results:?}"
        );
    }
    assert_eq!(pending(&a).await, 0);
}
