//! Queen's ephemeral queues through HTTP (spec §18.3): declaring, resetting, deleting,
//! pushing, popping (FIFO per partition, groups, `autoAck`, long polls), acking (every
//! outcome), the bounds and policies, ttl, lease expiry, the retry limit, two brokers on one
//! database, and the refusals. Time is moved in the database (an aged message, a lapsed
//! lease) rather than waited for.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{alternating, broker, two_brokers, with_retry_after, Broker};
use crate::wire::{
    self, EphemeralAcks, EphemeralConfigured, EphemeralDepth, EphemeralGroup, EphemeralMessage,
    EphemeralOptions, EphemeralPartition, EphemeralPopped, EphemeralQueue, EphemeralQueues,
    WindowBuffer,
};

const NOT_FOUND: &str = "ephemeral_queue_not_found";

async fn configure(b: &Broker, queue: &str, options: Value) -> EphemeralConfigured {
    let (s, v) = b
        .post(
            "/api/v1/ephemeral/configure",
            json!({"queue": queue, "options": options}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    wire::read(&v)
}

/// Pushes `payloads` to `queue` (partition when given); the answer.
async fn push(
    b: &Broker,
    queue: &str,
    partition: Option<&str>,
    payloads: &[Value],
) -> (StatusCode, Value) {
    let messages: Vec<Value> = payloads.iter().map(|p| json!({"payload": p})).collect();
    let mut body = json!({"queue": queue, "messages": messages});
    if let Some(p) = partition {
        body["partition"] = json!(p);
    }
    b.post("/api/v1/ephemeral/push", body).await
}

async fn pushed(b: &Broker, queue: &str, partition: Option<&str>, payloads: &[Value]) {
    let (s, v) = push(b, queue, partition, payloads).await;
    assert_eq!(
        (s, &v),
        (StatusCode::CREATED, &json!({"pushed": payloads.len()}))
    );
}

/// A pop with `query` (after `queue=`); its messages.
async fn pop(b: &Broker, queue: &str, query: &str) -> Vec<EphemeralMessage> {
    let (s, v) = b
        .get(&format!("/api/v1/ephemeral/pop?queue={queue}&{query}"))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let popped: EphemeralPopped = wire::read(&v);
    assert_eq!(popped.queue, queue, "{v}");
    popped.messages
}

fn payloads(messages: &[EphemeralMessage]) -> Vec<Value> {
    messages.iter().map(|m| m.payload.clone()).collect()
}

fn ids(messages: &[EphemeralMessage]) -> Vec<String> {
    messages.iter().map(|m| m.id.clone()).collect()
}

/// Acks `acks` (id, status) for `group`; the outcomes.
async fn ack(b: &Broker, queue: &str, group: Option<&str>, acks: &[(&str, &str)]) -> Vec<String> {
    let acks: Vec<Value> = acks
        .iter()
        .map(|(id, status)| json!({"id": id, "status": status}))
        .collect();
    let mut body = json!({"queue": queue, "acks": acks});
    if let Some(g) = group {
        body["group"] = json!(g);
    }
    let (s, v) = b.post("/api/v1/ephemeral/ack", body).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    wire::read::<EphemeralAcks>(&v)
        .results
        .into_iter()
        .map(|r| r.outcome)
        .collect()
}

async fn depth(b: &Broker, queue: &str) -> EphemeralDepth {
    let (s, v) = b
        .get(&format!("/api/v1/ephemeral/queues/{queue}/depth"))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    wire::read(&v)
}

/// The listing's row of `queue`.
async fn listed(b: &Broker, queue: &str) -> EphemeralQueue {
    let (s, v) = b.get("/api/v1/ephemeral/queues").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    wire::read::<EphemeralQueues>(&v)
        .queues
        .into_iter()
        .find(|q| q.queue == queue)
        .unwrap_or_else(|| panic!("{queue} is not listed: {v}"))
}

#[tokio::test]
async fn a_declared_queue_is_listed_measured_reset_and_deleted() {
    let b = broker().await;
    let v = configure(
        &b,
        "presence",
        json!({"maxLength": 100, "policy": "dropOldest", "ttlSeconds": 60,
                                             "windowBuffer": {"ms": 10, "count": 5}}),
    )
    .await;
    assert_eq!(v.tier, "declared");
    assert_eq!(
        v.options,
        EphemeralOptions {
            lease_seconds: 30,
            max_bytes: 16777216,
            max_length: 100,
            policy: "dropOldest".into(),
            retry_limit: 5,
            ttl_seconds: 60,
            window_buffer: WindowBuffer { count: 5, ms: 10 },
        }
    );
    // Declared and empty: there, with nothing in it.
    let d = depth(&b, "presence").await;
    assert_eq!(
        (d.tier.as_str(), d.depth, d.pending),
        ("declared", 0, 0),
        "{d:?}"
    );
    pushed(&b, "presence", None, &[json!(1), json!(2)]).await;
    pushed(&b, "presence", Some("room-7"), &[json!({"typing": true})]).await;
    let d = depth(&b, "presence").await;
    assert_eq!(
        (d.depth, d.pending, d.partitions_pending),
        (3, 3, 2),
        "{d:?}"
    );
    assert_eq!(
        d.partitions[0],
        EphemeralPartition {
            partition: "Default".into(),
            pending: 2,
            bytes: 2
        },
        "{d:?}"
    );
    let row = listed(&b, "presence").await;
    assert_eq!(
        (row.tier.as_str(), row.depth, row.partitions),
        ("declared", 3, 2),
        "{row:?}"
    );
    assert_eq!(row.options.max_length, 100);

    // An implicit queue: created by a push, listed as such, with the defaults.
    pushed(&b, "inbox", None, &[json!("hi")]).await;
    let row = listed(&b, "inbox").await;
    assert_eq!(
        (row.tier.as_str(), row.options.policy.as_str()),
        ("implicit", "reject"),
        "{row:?}"
    );

    let (s, v) = b
        .post("/api/v1/ephemeral/reset", json!({"queue": "presence"}))
        .await;
    assert_eq!(
        (s, v),
        (StatusCode::OK, json!({"queue": "presence", "dropped": 3}))
    );
    assert!(pop(&b, "presence", "batch=10").await.is_empty());
    assert_eq!(
        listed(&b, "presence").await.options.max_length,
        100,
        "the declaration stays"
    );
    let (s, v) = b
        .post("/api/v1/ephemeral/reset", json!({"queue": "nothing-here"}))
        .await;
    assert_eq!(
        (s, v),
        (
            StatusCode::OK,
            json!({"queue": "nothing-here", "dropped": 0})
        )
    );

    for (queue, was) in [("presence", true), ("presence", false), ("inbox", true)] {
        let (s, v) = b.delete(&format!("/api/v1/ephemeral/queue/{queue}")).await;
        assert_eq!(
            (s, v),
            (StatusCode::OK, json!({"queue": queue, "deleted": was}))
        );
    }
    // Depth is the one verb that says a queue is not there, with the client's code.
    for queue in ["presence", "inbox", "never-was"] {
        let (s, v) = b
            .get(&format!("/api/v1/ephemeral/queues/{queue}/depth"))
            .await;
        assert_eq!(
            (s, &v["code"]),
            (StatusCode::NOT_FOUND, &json!(NOT_FOUND)),
            "{v}"
        );
    }
    let (_, v) = b.get("/api/v1/ephemeral/queues").await;
    assert_eq!(v, json!({"queues": [], "count": 0}));
}

#[tokio::test]
async fn messages_come_out_in_order_per_partition() {
    let b = broker().await;
    pushed(&b, "q", Some("a"), &[json!(1), json!(2), json!(3)]).await;
    pushed(&b, "q", Some("b"), &[json!("x"), json!({"k": [1, 2.50]})]).await;
    pushed(&b, "q", Some("a"), &[json!(4)]).await;
    let a = pop(&b, "q", "partition=a&batch=2").await;
    assert_eq!(payloads(&a), vec![json!(1), json!(2)]);
    assert!(
        a.iter().all(|m| m.partition == "a" && m.attempts == 1),
        "{a:?}"
    );
    let rest = pop(&b, "q", "batch=10").await;
    assert_eq!(
        payloads(&rest),
        vec![json!(3), json!("x"), json!({"k": [1, 2.50]}), json!(4)],
        "push order across partitions, FIFO within each"
    );
    let all: std::collections::HashSet<String> = ids(&a).into_iter().chain(ids(&rest)).collect();
    assert_eq!(all.len(), 6, "every message has its own id");
    // A pop without `batch` takes one.
    pushed(&b, "q", None, &[json!(5), json!(6)]).await;
    assert_eq!(payloads(&pop(&b, "q", "").await), vec![json!(5)]);
}

#[tokio::test]
async fn groups_compete_fan_out_or_share_queue_mode() {
    let b = broker().await;
    pushed(&b, "q", None, &[json!(1), json!(2), json!(3)]).await;
    // Fan-out: each group its own cursor over the one queue.
    for g in ["tail-a", "tail-b"] {
        let got = pop(&b, "q", &format!("group={g}&batch=10")).await;
        assert_eq!(payloads(&got), vec![json!(1), json!(2), json!(3)], "{g}");
    }
    // Competing consumers: the same group shares its cursor.
    let first = pop(&b, "q", "group=workers&batch=2").await;
    let second = pop(&b, "q", "group=workers&batch=2").await;
    assert_eq!(
        (payloads(&first), payloads(&second)),
        (vec![json!(1), json!(2)], vec![json!(3)])
    );
    // Queue mode: no group is one shared cursor of its own.
    assert_eq!(payloads(&pop(&b, "q", "batch=1").await), vec![json!(1)]);
    assert_eq!(
        payloads(&pop(&b, "q", "batch=5").await),
        vec![json!(2), json!(3)]
    );
    assert!(pop(&b, "q", "batch=5").await.is_empty());

    // A group that has popped keeps getting what is pushed later, even after every group
    // drained and acked the queue empty.
    let dq = "drained";
    for g in ["a", "b"] {
        assert!(pop(&b, dq, &format!("group={g}")).await.is_empty());
    }
    pushed(&b, dq, None, &[json!("late")]).await;
    let a = pop(&b, dq, "group=a&autoAck=true").await;
    assert_eq!(payloads(&a), vec![json!("late")]);
    let got = pop(&b, dq, "group=b").await;
    assert_eq!(payloads(&got), vec![json!("late")], "b was remembered");
    let d = depth(&b, dq).await;
    let group = |name: &str, leased| EphemeralGroup {
        group: name.into(),
        pending: 0,
        leased,
    };
    assert_eq!(d.groups, [group("a", 0), group("b", 1)], "{d:?}");
    assert_eq!(
        ack(&b, dq, Some("b"), &[(&ids(&got)[0], "completed")]).await,
        ["acked"]
    );
    assert_eq!(
        depth(&b, dq).await.depth,
        0,
        "every group is past it: it leaves the queue"
    );
}

#[tokio::test]
async fn auto_ack_is_done_at_delivery() {
    let b = broker().await;
    pushed(&b, "q", None, &[json!(1), json!(2)]).await;
    let got = pop(&b, "q", "autoAck=true&batch=10").await;
    assert_eq!(payloads(&got), vec![json!(1), json!(2)]);
    assert_eq!(
        depth(&b, "q").await.depth,
        0,
        "queue mode alone was owed them"
    );
    // Nothing to ack, nothing comes back when a lease would have lapsed.
    let outcomes = ack(&b, "q", None, &[(&ids(&got)[0], "completed")]).await;
    assert_eq!(outcomes, ["unknown"]);
    lapse_leases(&b, "q").await;
    assert!(pop(&b, "q", "batch=10").await.is_empty());
}

/// Makes every lease of `queue` lapse now.
async fn lapse_leases(b: &Broker, queue: &str) {
    b.db()
        .await
        .execute(
            "UPDATE ephemeral_deliveries SET lease_until = now() - interval '1 second' WHERE queue = $1",
            &[&queue],
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn acks_complete_redeliver_or_say_stale_or_unknown() {
    let b = broker().await;
    pushed(
        &b,
        "q",
        None,
        &[json!("a"), json!("b"), json!("c"), json!("d")],
    )
    .await;
    let got = pop(&b, "q", "group=g&batch=4").await;
    let id = ids(&got);
    let outcomes = ack(
        &b,
        "q",
        Some("g"),
        &[
            (&id[0], "completed"),
            (&id[1], "retry"),
            (&id[2], "failed"),
            (&id[0], "completed"),
            ("not-an-id", "completed"),
        ],
    )
    .await;
    assert_eq!(
        outcomes,
        ["acked", "redelivered", "redelivered", "unknown", "unknown"]
    );
    // Another group holds no delivery of them; a wrong group is not the pop's.
    assert_eq!(
        ack(&b, "q", Some("other"), &[(&id[3], "completed")]).await,
        ["unknown"]
    );
    assert_eq!(
        ack(&b, "q", None, &[(&id[3], "completed")]).await,
        ["unknown"]
    );
    // The nacked ones come back at once, attempts + 1, before anything newer.
    pushed(&b, "q", None, &[json!("e")]).await;
    let again = pop(&b, "q", "group=g&batch=10").await;
    assert_eq!(payloads(&again), vec![json!("b"), json!("c"), json!("e")]);
    assert_eq!(
        again.iter().map(|m| m.attempts).collect::<Vec<_>>(),
        vec![2, 2, 1]
    );
    assert_eq!(ids(&again)[..2], id[1..3], "a redelivery keeps its id");
    // `true`-style sugar the client sends: `failed`; a status it does not know fails too.
    assert_eq!(
        ack(&b, "q", Some("g"), &[(&ids(&again)[0], "typo")]).await,
        ["redelivered"]
    );

    // A queue deleted and made again is another incarnation: its old ids are stale.
    b.delete("/api/v1/ephemeral/queue/q").await;
    pushed(&b, "q", None, &[json!("new")]).await;
    assert_eq!(
        ack(&b, "q", Some("g"), &[(&id[3], "completed")]).await,
        ["stale"]
    );
    let fresh = pop(&b, "q", "group=g").await;
    assert_eq!(payloads(&fresh), vec![json!("new")]);
    assert_ne!(
        ids(&fresh)[0],
        id[0],
        "an id is never reused by the next incarnation"
    );
}

#[tokio::test]
async fn a_crash_empties_the_contents_and_keeps_the_declaration() {
    let b = broker().await;
    configure(&b, "q", json!({"maxLength": 7})).await;
    pushed(&b, "q", None, &[json!(1), json!(2)]).await;
    let got = pop(&b, "q", "group=g").await;
    // What PostgreSQL's crash recovery does to UNLOGGED tables: they come back empty.
    b.db()
        .await
        .batch_execute(
            "TRUNCATE ephemeral_live, ephemeral_rings, ephemeral_messages, ephemeral_groups,
                      ephemeral_cursors, ephemeral_deliveries",
        )
        .await
        .unwrap();
    assert_eq!(
        ack(&b, "q", Some("g"), &[(&ids(&got)[0], "completed")]).await,
        ["stale"]
    );
    let d = depth(&b, "q").await;
    assert_eq!((d.tier.as_str(), d.depth), ("declared", 0), "{d:?}");
    assert_eq!(listed(&b, "q").await.options.max_length, 7);
    assert!(pop(&b, "q", "group=g&batch=10").await.is_empty());
    pushed(&b, "q", None, &[json!(3)]).await;
    let again = pop(&b, "q", "group=g").await;
    assert_eq!(payloads(&again), vec![json!(3)]);
    assert_eq!(
        ack(&b, "q", Some("g"), &[(&ids(&got)[0], "completed")]).await,
        ["stale"]
    );
    assert_eq!(
        ack(&b, "q", Some("g"), &[(&ids(&again)[0], "completed")]).await,
        ["acked"]
    );
}

#[tokio::test]
async fn an_unacked_delivery_comes_back_after_its_lease_until_the_retry_limit() {
    let b = broker().await;
    configure(&b, "q", json!({"leaseSeconds": 60, "retryLimit": 3})).await;
    pushed(&b, "q", None, &[json!("job")]).await;
    let first = pop(&b, "q", "group=w").await;
    assert!(pop(&b, "q", "group=w").await.is_empty(), "leased");
    assert_eq!(depth(&b, "q").await.groups[0].leased, 1);
    lapse_leases(&b, "q").await;
    let second = pop(&b, "q", "group=w").await;
    assert_eq!((ids(&second), second[0].attempts), (ids(&first), 2));
    // A nack at the last allowed delivery drops it (no DLQ): acked, counted.
    assert_eq!(
        ack(&b, "q", Some("w"), &[(&ids(&second)[0], "failed")]).await,
        ["redelivered"]
    );
    let third = pop(&b, "q", "group=w").await;
    assert_eq!(third[0].attempts, 3);
    assert_eq!(
        ack(&b, "q", Some("w"), &[(&ids(&third)[0], "failed")]).await,
        ["acked"]
    );
    assert!(pop(&b, "q", "group=w").await.is_empty());
    let row = listed(&b, "q").await;
    assert_eq!((row.drops.retry, row.depth), (1, 0), "{row:?}");

    // A lease that lapses at the last delivery drops it too.
    configure(&b, "r", json!({"retryLimit": 1})).await;
    pushed(&b, "r", None, &[json!("once")]).await;
    assert_eq!(pop(&b, "r", "group=w").await.len(), 1);
    lapse_leases(&b, "r").await;
    assert!(pop(&b, "r", "group=w").await.is_empty());
    assert_eq!(listed(&b, "r").await.drops.retry, 1);
}

#[tokio::test]
async fn messages_past_their_ttl_are_never_delivered() {
    let b = broker().await;
    configure(&b, "q", json!({"ttlSeconds": 30})).await;
    pushed(&b, "q", None, &[json!("old"), json!("old2")]).await;
    b.db()
        .await
        .execute(
            "UPDATE ephemeral_messages SET enqueued_at = now() - interval '31 seconds' WHERE queue = 'q'",
            &[],
        )
        .await
        .unwrap();
    pushed(&b, "q", None, &[json!("new")]).await;
    assert_eq!(
        payloads(&pop(&b, "q", "batch=10&autoAck=true").await),
        vec![json!("new")]
    );
    let row = listed(&b, "q").await;
    assert_eq!((row.drops.ttl, row.depth), (2, 0), "{row:?}");
}

#[tokio::test]
async fn a_full_queue_rejects_or_drops_its_oldest() {
    let b = broker().await;
    configure(&b, "strict", json!({"maxLength": 3})).await;
    pushed(&b, "strict", None, &[json!(1), json!(2)]).await;
    let res = b
        .http
        .post(format!("{}/api/v1/ephemeral/push", b.url))
        .json(&json!({"queue": "strict", "messages": [{"payload": 3}, {"payload": 4}]}))
        .send()
        .await
        .unwrap();
    let (s, retry, v) = with_retry_after(res).await;
    assert_eq!(
        (s, retry.as_deref(), &v["code"]),
        (
            StatusCode::TOO_MANY_REQUESTS,
            Some("1"),
            &json!("queue_full")
        ),
        "{v}"
    );
    assert_eq!(depth(&b, "strict").await.depth, 2, "all or nothing");
    pushed(&b, "strict", None, &[json!(3)]).await;
    // A push that could never fit is the client's mistake, whatever the policy.
    let (s, v) = push(
        &b,
        "strict",
        None,
        &[json!(1), json!(2), json!(3), json!(4)],
    )
    .await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{v}");

    configure(&b, "feed", json!({"maxLength": 3, "policy": "dropOldest"})).await;
    pushed(&b, "feed", None, &[json!(1), json!(2), json!(3)]).await;
    pushed(&b, "feed", None, &[json!(4), json!(5)]).await;
    assert_eq!(
        payloads(&pop(&b, "feed", "batch=10").await),
        vec![json!(3), json!(4), json!(5)]
    );
    assert_eq!(listed(&b, "feed").await.drops.bounds, 2);
    // A leased message dropped to make room goes with its delivery: its ack finds nothing.
    pushed(&b, "feed", None, &[json!(6), json!(7), json!(8)]).await;
    let leased = pop(&b, "feed", "group=g").await;
    assert_eq!(payloads(&leased), vec![json!(6)]);
    pushed(&b, "feed", None, &[json!(9)]).await;
    assert_eq!(
        ack(&b, "feed", Some("g"), &[(&ids(&leased)[0], "completed")]).await,
        ["unknown"]
    );
    assert_eq!(
        payloads(&pop(&b, "feed", "group=g&batch=10").await),
        vec![json!(7), json!(8), json!(9)]
    );

    // Bytes: each payload `"xxxx"` is 6 bytes of JSON.
    let six = json!("xxxx");
    configure(&b, "bytes", json!({"maxBytes": 14, "policy": "dropOldest"})).await;
    pushed(&b, "bytes", None, &[json!("a"), six.clone()]).await;
    pushed(&b, "bytes", None, std::slice::from_ref(&six)).await;
    assert_eq!(
        payloads(&pop(&b, "bytes", "batch=10").await),
        vec![six.clone(), six.clone()]
    );
    configure(&b, "bytes-strict", json!({"maxBytes": 14})).await;
    pushed(&b, "bytes-strict", None, &[six.clone(), six.clone()]).await;
    let (s, v) = push(&b, "bytes-strict", None, &[json!("xx")]).await;
    assert_eq!(
        (s, &v["code"]),
        (StatusCode::TOO_MANY_REQUESTS, &json!("queue_full")),
        "{v}"
    );
}

#[tokio::test]
async fn a_waiting_pop_wakes_when_a_push_commits() {
    let b = broker().await;
    let url = format!(
        "{}/api/v1/ephemeral/pop?queue=inbox&wait=true&timeout=20000&group=g",
        b.url
    );
    let http = b.http.clone();
    let started = Instant::now();
    let waiting = tokio::spawn(async move {
        http.get(url)
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    pushed(&b, "inbox", None, &[json!("ping")]).await;
    let v = waiting.await.unwrap();
    assert_eq!(
        payloads(&wire::read::<EphemeralPopped>(&v).messages),
        vec![json!("ping")],
        "{v}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "woken, not timed out"
    );
    // With nothing coming, a waiting pop answers an empty list at its timeout.
    let (s, v) = b
        .get("/api/v1/ephemeral/pop?queue=inbox&wait=true&timeout=200&group=g")
        .await;
    assert_eq!(
        (s, v),
        (StatusCode::OK, json!({"queue": "inbox", "messages": []}))
    );
}

#[tokio::test]
async fn two_brokers_on_one_database_serve_the_same_queues() {
    let a = broker().await;
    let b = Broker::attach(&a.db_url).await;
    configure(&a, "shared", json!({"maxLength": 50})).await;
    pushed(&a, "shared", None, &[json!(1), json!(2)]).await;
    assert_eq!(listed(&b, "shared").await.options.max_length, 50);
    let one = pop(&b, "shared", "group=w").await;
    let two = pop(&a, "shared", "group=w").await;
    assert_eq!(
        (payloads(&one), payloads(&two)),
        (vec![json!(1)], vec![json!(2)])
    );
    assert_eq!(
        ack(&a, "shared", Some("w"), &[(&ids(&one)[0], "completed")]).await,
        ["acked"]
    );
    // A pop parked on one broker is woken by a push through the other.
    let url = format!(
        "{}/api/v1/ephemeral/pop?queue=other&wait=true&timeout=20000&group=late",
        b.url
    );
    let http = b.http.clone();
    let waiting = tokio::spawn(async move {
        http.get(url)
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    pushed(&a, "other", None, &[json!("hello")]).await;
    let v = waiting.await.unwrap();
    assert_eq!(
        payloads(&wire::read::<EphemeralPopped>(&v).messages),
        vec![json!("hello")],
        "{v}"
    );
}

#[tokio::test]
async fn bad_requests_are_refused_with_their_reason() {
    let b = broker().await;
    let cases = [
        ("/api/v1/ephemeral/configure", json!({"options": {}}), "queue is required"),
        ("/api/v1/ephemeral/configure", json!({"queue": 7}), "queue must be a string"),
        ("/api/v1/ephemeral/configure", json!({"queue": "q", "options": []}), "options must be an object"),
        ("/api/v1/ephemeral/configure", json!({"queue": "q", "options": {"ttlSecond": 5}}), "unknown option ttlSecond; known: maxBytes, maxLength, policy, ttlSeconds, leaseSeconds, retryLimit, windowBuffer"),
        ("/api/v1/ephemeral/configure", json!({"queue": "q", "options": {"maxLength": "10"}}), "maxLength must be an integer"),
        ("/api/v1/ephemeral/configure", json!({"queue": "q", "options": {"policy": "drop_oldest"}}), "policy must be reject or dropOldest"),
        ("/api/v1/ephemeral/configure", json!({"queue": "q", "options": {"windowBuffer": 5}}), "windowBuffer must be an object"),
        ("/api/v1/ephemeral/reset", json!({}), "queue is required"),
        ("/api/v1/ephemeral/reset", json!({"queue": "a\u{0}b"}), "queue must not contain NUL"),
        ("/api/v1/ephemeral/push", json!({"messages": []}), "queue is required"),
        ("/api/v1/ephemeral/push", json!({"queue": "q"}), "messages must be an array"),
        ("/api/v1/ephemeral/push", json!({"queue": "q", "messages": {}}), "messages must be an array"),
        ("/api/v1/ephemeral/push", json!({"queue": "q", "messages": [{"payload": 1}, {"data": 2}]}), "messages[1] must be an object with a payload"),
        ("/api/v1/ephemeral/push", json!({"queue": "q", "partition": 3, "messages": []}), "partition must be a string"),
        ("/api/v1/ephemeral/push", json!({"queue": "x".repeat(513), "messages": []}), "queue must be at most 512 bytes"),
        ("/api/v1/ephemeral/ack", json!({"queue": "q"}), "acks must be an array"),
        ("/api/v1/ephemeral/ack", json!({"queue": "q", "acks": [{"status": "completed"}]}), "acks[0].id is required"),
        ("/api/v1/ephemeral/ack", json!({"queue": "q", "group": 1, "acks": []}), "group must be a string"),
        ("/api/v1/ephemeral/ack", json!({"queue": "q", "acks": [{"id": "x", "status": 1}]}), "acks[0].status must be a string"),
    ];
    for (path, body, text) in cases {
        let (s, v) = b.post(path, body.clone()).await;
        assert_eq!(
            (s, v),
            (StatusCode::BAD_REQUEST, json!({"error": text})),
            "{path} {body}"
        );
    }
    for (path, text) in [
        ("/api/v1/ephemeral/pop", "queue is required"),
        ("/api/v1/ephemeral/pop?queue=", "queue is required"),
        (
            "/api/v1/ephemeral/pop?queue=q&group=a%00b",
            "group must not contain NUL",
        ),
    ] {
        let (s, v) = b.get(path).await;
        assert_eq!(
            (s, v),
            (StatusCode::BAD_REQUEST, json!({"error": text})),
            "{path}"
        );
    }
    let (s, v) = b.post_raw("/api/v1/ephemeral/push", "{").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    // Nothing refused made a queue.
    let (_, v) = b.get("/api/v1/ephemeral/queues").await;
    assert_eq!(wire::read::<EphemeralQueues>(&v).count, 0, "{v}");
    // An empty push is a push of nothing, as in the client.
    let (s, v) = push(&b, "q", None, &[]).await;
    assert_eq!((s, v), (StatusCode::CREATED, json!({"pushed": 0})));
}

#[tokio::test]
async fn the_counters_and_gauges_are_exposed() {
    let b = broker().await;
    configure(&b, "feed", json!({"maxLength": 1, "policy": "dropOldest"})).await;
    pushed(&b, "feed", None, &[json!(1)]).await;
    pushed(&b, "feed", None, &[json!(2)]).await;
    let got = pop(&b, "feed", "").await;
    ack(&b, "feed", None, &[(&ids(&got)[0], "completed")]).await;
    pushed(&b, "feed", None, &[json!(3)]).await;
    let text = b
        .http
        .get(format!("{}/api/v1/metrics/queues", b.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        "regent_ephemeral_pushed_total{tenant=\"default\"} 3",
        "regent_ephemeral_popped_total{tenant=\"default\"} 1",
        "regent_ephemeral_acked_total{tenant=\"default\"} 1",
        "regent_ephemeral_dropped_total{tenant=\"default\",reason=\"bounds\"} 1",
        "regent_ephemeral_queues{tenant=\"default\"} 1",
        "regent_ephemeral_messages{tenant=\"default\"} 1",
        "regent_ephemeral_bytes{tenant=\"default\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    }
}

/// New queues declared together through two brokers by a tenant two short of its limit: two
/// are made and the others refused, never more than the limit.
#[tokio::test]
async fn racing_new_queues_never_pass_the_tenants_queue_limit() {
    use futures::stream::{self, StreamExt};
    let (a, b) = two_brokers().await;
    let limit = regent::rules::ephemeral::MAX_QUEUES_PER_TENANT;
    let configure = |on: &Broker, q: String| {
        let (http, url) = (on.http.clone(), on.url.clone());
        async move {
            http.post(format!("{url}/api/v1/ephemeral/configure"))
                .json(&json!({"queue": q, "options": {}}))
                .send()
                .await
                .expect("sent")
                .status()
        }
    };
    let made: Vec<StatusCode> =
        stream::iter((0..limit - 2).map(|i| configure(&a, format!("q{i}"))))
            .buffer_unordered(8)
            .collect()
            .await;
    assert!(made.iter().all(StatusCode::is_success), "{made:?}");
    for round in 0..3 {
        let answers = alternating(&a, &b, 10, |on, i| {
            configure(on, format!("race{round}-{i}"))
        })
        .await;
        let accepted = answers.iter().filter(|s| s.is_success()).count();
        let expected = if round == 0 { 2 } else { 0 };
        assert_eq!(accepted, expected, "round {round}: {answers:?}");
        assert!(
            answers
                .iter()
                .all(|s| s.is_success() || *s == StatusCode::TOO_MANY_REQUESTS),
            "{answers:?}"
        );
    }
    let (_, v) = a.get("/api/v1/ephemeral/queues").await;
    let listed = wire::read::<EphemeralQueues>(&v).queues.len() as i64;
    assert_eq!(
        listed,
        limit,
        "{}",
        v.to_string().chars().take(300).collect::<String>()
    );
}
