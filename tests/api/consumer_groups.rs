//! Consumer groups: the list of what each is doing; seek and replay
//! (`/consumer-groups/:group/queues/:queue/seek`, and the one-partition form: a group's
//! cursors move to the end of each partition or back to an instant, leases on the moved
//! cursors are released, groups without cursors are left alone); deleting a group.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::SecondsFormat;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{broker, lease_of, sample, two_brokers, Broker};
use crate::wire::{self, GroupDeleted, GroupListed, LaggingCursor, Popped, QueueCursors};

const SEEK: &str = "/api/v1/consumer-groups/g/queues/sq/seek";

fn txids_of(v: &Value) -> Vec<String> {
    Broker::txids(v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seek_to_the_end_skips_and_back_to_an_instant_replays() {
    let b = broker().await;
    let pid = b.push_pid("sq", "p", &["a1"]).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mark = chrono::Utc::now();
    tokio::time::sleep(Duration::from_millis(50)).await;
    b.push("sq", "p", &["a2", "a3"]).await;

    let popped = b.pop("sq", "consumerGroup=g&batch=1").await;
    assert_eq!(txids_of(&popped), ["a1"]);

    // To the end: the backlog is skipped and the lease is released.
    let (s, v) = b.post(SEEK, json!({"toEnd": true})).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v,
        json!({"success": true, "consumerGroup": "g", "queueName": "sq", "seekToEnd": true,
               "targetTimestamp": null, "partitionsUpdated": 1})
    );
    assert_eq!(b.cursor(&pid, "g").await, Some((2, false, 0)));
    let late = b
        .acked(
            Some("g"),
            json!([{"transactionId": "a1", "partitionId": pid, "leaseId": lease_of(&popped)}]),
        )
        .await;
    assert!(!late[0].success, "the old lease is gone: {late:?}");
    assert!(txids_of(&b.pop("sq", "consumerGroup=g").await).is_empty());
    b.push("sq", "p", &["a4"]).await;
    assert_eq!(
        txids_of(&b.pop("sq", "consumerGroup=g&autoAck=true").await),
        ["a4"]
    );

    // Back to the instant between the pushes: consumption resumes after a1, and a parked pop
    // of the group is told at once.
    let state = b.runtime();
    let notify = state.wakeups.for_group("default", "sq", "g");
    let woken = notify.notified();
    tokio::pin!(woken);
    woken.as_mut().enable();
    let (s, v) = b.post(SEEK, json!({"timestamp": mark.to_rfc3339()})).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    // The instant sent, in UTC to the millisecond; the cursor on a1, the last message
    // appended before it.
    let target = mark.to_rfc3339_opts(SecondsFormat::Millis, true);
    assert_eq!(
        v,
        json!({"success": true, "consumerGroup": "g", "queueName": "sq", "seekToEnd": false,
               "targetTimestamp": target, "partitionsUpdated": 1})
    );
    assert_eq!(b.cursor(&pid, "g").await, Some((0, false, 0)));
    assert!(
        futures::FutureExt::now_or_never(woken.as_mut()).is_some(),
        "the group's parked pops are woken"
    );
    assert_eq!(
        txids_of(&b.pop("sq", "consumerGroup=g&batch=10&autoAck=true").await),
        ["a2", "a3", "a4"]
    );

    // Before the first message: everything again.
    let (s, _) = b
        .post(SEEK, json!({"timestamp": "2000-01-01T00:00:00Z"}))
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(b.cursor(&pid, "g").await, Some((-1, false, 0)));
    assert_eq!(
        txids_of(&b.pop("sq", "consumerGroup=g&batch=10&autoAck=true").await),
        ["a1", "a2", "a3", "a4"]
    );

    // A group with no cursor yet is left to its subscription.
    let (s, v) = b
        .post(
            "/api/v1/consumer-groups/never/queues/sq/seek",
            json!({"toEnd": true}),
        )
        .await;
    assert_eq!(
        (s, wire::read::<wire::QueueSought>(&v).partitions_updated),
        (StatusCode::OK, 0)
    );
    assert_eq!(
        txids_of(&b.pop("sq", "consumerGroup=never&batch=10").await).len(),
        4
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seek_refuses_bad_input_and_unknown_queues() {
    let b = broker().await;
    b.push("sq", "p", &["a1"]).await;
    for (body, want) in [
        ("", "Must specify either 'toEnd': true or 'timestamp'"),
        ("{}", "Must specify either 'toEnd': true or 'timestamp'"),
        (
            r#"{"toEnd": false}"#,
            "Must specify either 'toEnd': true or 'timestamp'",
        ),
        (
            r#"{"timestamp": "yesterday"}"#,
            "timestamp must be an ISO-8601 timestamp, got 'yesterday'",
        ),
        (
            r#"{"timestamp": 5}"#,
            "timestamp must be an ISO-8601 timestamp, got 5",
        ),
        (
            "{",
            "Invalid JSON: EOF while parsing an object at line 1 column 1",
        ),
    ] {
        let (s, v) = b.post_raw(SEEK, body).await;
        assert_eq!(
            (s, v),
            (StatusCode::BAD_REQUEST, json!({"error": want})),
            "{body}"
        );
    }
    let (s, v) = b
        .post(
            "/api/v1/consumer-groups/g/queues/nope/seek",
            json!({"toEnd": true}),
        )
        .await;
    assert_eq!(
        (s, v),
        (StatusCode::NOT_FOUND, json!({"error": "Queue not found"}))
    );
}

/// The one-partition form: that partition's cursor onto its newest message, its lease
/// released; the same lease on another partition is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seek_one_partition_to_its_end() {
    let b = broker().await;
    // Appended 10 ms apart, so that the answer's instant tells a2 from a1.
    b.push("sq", "p1", &["a1"]).await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    b.push("sq", "p1", &["a2"]).await;
    b.push("sq", "p2", &["b1"]).await;
    let popped = b.pop("sq", "consumerGroup=g&batch=10&partitions=2").await;
    assert_eq!(txids_of(&popped).len(), 3, "{popped}");
    let read: Popped = wire::read(&popped);
    let pid_of = |tx: &str| {
        read.messages
            .iter()
            .find(|m| m.transaction_id == tx)
            .unwrap()
            .partition_id
            .clone()
    };
    let (p1, p2) = (pid_of("a2"), pid_of("b1"));

    let (s, v) = b
        .post(
            "/api/v1/consumer-groups/g/queues/sq/partitions/p1/seek",
            json!({}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    // The cursor is on a2, p1's newest message: the answer says when a2 was appended.
    let appended = |tx: &'static str| {
        let (b, p1) = (&b, &p1);
        async move {
            let (_, v) = b.get(&format!("/api/v1/messages/{p1}/{tx}")).await;
            wire::read::<wire::MessageDetail>(&v).listed.created_at
        }
    };
    // Read, each is a string.
    let (a1, a2) = (appended("a1").await, appended("a2").await);
    assert!(a1 != a2, "{a1} {a2}");
    assert_eq!(
        v,
        json!({"success": true, "consumerGroup": "g", "queueName": "sq", "partitionName": "p1",
               "updated": true, "cursorMovedTo": a2})
    );
    assert_eq!(b.cursor(&p1, "g").await, Some((1, false, 0)));
    assert_eq!(
        b.cursor(&p2, "g").await,
        Some((-1, true, 0)),
        "p2 still leased"
    );
    let acked = b
        .acked(
            Some("g"),
            json!([{"transactionId": "b1", "partitionId": p2, "leaseId": read.lease_id}]),
        )
        .await;
    assert!(acked[0].success, "{acked:?}");

    let (s, v) = b
        .post(
            "/api/v1/consumer-groups/other/queues/sq/partitions/p1/seek",
            json!({}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let v: wire::PartitionSought = wire::read(&v);
    assert_eq!((v.updated, v.cursor_moved_to), (false, None));
    for path in [
        "/api/v1/consumer-groups/g/queues/sq/partitions/nope/seek",
        "/api/v1/consumer-groups/g/queues/nope/partitions/p1/seek",
    ] {
        let (s, v) = b.post(path, json!({})).await;
        assert_eq!(
            (s, v),
            (
                StatusCode::NOT_FOUND,
                json!({"success": false, "error": "Partition not found"})
            ),
            "{path}"
        );
    }
}

/// `DELETE /consumer-groups/:group` and its one-queue form: the group's cursors and leases go,
/// and with them (by default) its stored start point, so its next pop starts it afresh; with
/// `deleteMetadata=false` the start point stays. Other groups are untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_group_forgets_where_it_was() {
    let b = broker().await;
    b.push("d1", "p1", &["a1", "a2"]).await;
    b.push("d1", "p2", &["b1"]).await;
    b.push("d2", "p", &["c1"]).await;
    for q in ["d1", "d2"] {
        b.pop(q, "consumerGroup=g&batch=10&partitions=2&autoAck=true")
            .await;
        b.pop(q, "consumerGroup=keep&batch=10&partitions=2&autoAck=true")
            .await;
    }
    let held = b.pop("d1", "consumerGroup=g").await;
    assert!(txids_of(&held).is_empty(), "g has read everything");
    let db = b.db().await;
    let cursors = |group: &'static str| {
        let db = &db;
        async move {
            db.query_one(
                "SELECT count(*) FROM cursors WHERE consumer_group = $1",
                &[&group],
            )
            .await
            .unwrap()
            .get::<_, i64>(0)
        }
    };
    assert_eq!(cursors("g").await, 3);

    // One queue, keeping the start point.
    let (s, v) = b
        .delete("/api/v1/consumer-groups/g/queues/d2?deleteMetadata=false")
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v,
        json!({"success": true, "consumerGroup": "g", "queueName": "d2",
               "deletedPartitions": 1, "metadataDeleted": false})
    );
    assert_eq!(cursors("g").await, 2);
    assert_eq!(
        txids_of(&b.pop("d2", "consumerGroup=g&autoAck=true").await),
        ["c1"],
        "d2 is read again at once, from the beginning"
    );

    // Everywhere. A group subscribed to new messages only, deleted, starts afresh.
    b.pop("d1", "consumerGroup=late&subscriptionMode=new").await;
    let (s, v) = b.delete("/api/v1/consumer-groups/g").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let deleted: GroupDeleted = wire::read(&v);
    assert_eq!(
        (deleted.deleted_partitions, deleted.metadata_deleted),
        (3, true),
        "{v}"
    );
    assert_eq!(cursors("g").await, 0);
    assert_eq!(cursors("keep").await, 3, "other groups are untouched");
    assert_eq!(
        txids_of(
            &b.pop("d1", "consumerGroup=g&batch=10&partitions=2&autoAck=true")
                .await
        )
        .len(),
        3
    );
    let (s, v) = b.delete("/api/v1/consumer-groups/late").await;
    assert_eq!(
        (s, wire::read::<GroupDeleted>(&v).deleted_partitions),
        (StatusCode::OK, 2)
    );
    assert_eq!(
        txids_of(
            &b.pop("d1", "consumerGroup=late&batch=10&partitions=2")
                .await
        )
        .len(),
        3,
        "its start point went with it: the next pop reads from the beginning"
    );

    // Idempotent.
    let (s, v) = b.delete("/api/v1/consumer-groups/nobody").await;
    assert_eq!(
        (s, wire::read::<GroupDeleted>(&v).deleted_partitions),
        (StatusCode::OK, 0)
    );
}

/// A group is listed as soon as a pop gives it cursors on a queue, on every broker: its counts
/// come with the next stats round, its existence does not wait for one. A group's depth is
/// counted now until a round has counted it.
#[tokio::test]
async fn a_group_is_listed_as_soon_as_it_has_cursors_on_every_broker() {
    let b = broker().await;
    b.push("fresh", "p1", &["a1", "a2"]).await;
    b.push("fresh", "p2", &["b1"]).await;
    let got = b.pop("fresh", "consumerGroup=newcomer&batch=1").await;
    assert_eq!(txids_of(&got).len(), 1, "{got}");
    b.pop("fresh", "batch=1").await;
    let other = Broker::attach(&b.db_url).await;
    for (who, at) in [("this broker", &b), ("another broker", &other)] {
        let (s, v) = at.get("/api/v1/consumer-groups").await;
        assert_eq!(s, StatusCode::OK, "{v}");
        let pairs: Vec<(String, String)> = wire::read::<Vec<GroupListed>>(&v)
            .into_iter()
            .map(|g| (g.name, g.topics.first().cloned().unwrap_or_default()))
            .collect();
        for group in ["newcomer", "__QUEUE_MODE__"] {
            assert!(
                pairs.iter().any(|(g, _)| g == group),
                "{who}: {group} listed before any stats round: {v}"
            );
        }
    }
    // Deleted, it leaves the list at once too.
    let (s, _) = other.delete("/api/v1/consumer-groups/newcomer").await;
    assert_eq!(s, StatusCode::OK);
    let (_, v) = b.get("/api/v1/consumer-groups").await;
    assert!(
        wire::read::<Vec<GroupListed>>(&v)
            .iter()
            .all(|g| g.name != "newcomer"),
        "deleted, still listed: {v}"
    );
    b.pop("fresh", "consumerGroup=newcomer&batch=1").await;
    // Its depth is not the listing's placeholder zeros: no round has counted it yet.
    let (s, v) = b
        .get("/api/v1/resources/queues/fresh/depth?group=newcomer")
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        wire::read::<wire::QueueDepth>(&v).pending,
        3,
        "counted now (the leased one unacked): {v}"
    );
}

/// Every message of the database as if pushed ten minutes ago. (The last push is the newest
/// segment's, or on Citus the partition row's: both move.)
async fn pushed_ten_minutes_ago(b: &Broker) {
    b.db()
        .await
        .batch_execute(
            "UPDATE partitions SET last_push_at = now() - interval '10 minutes';
             UPDATE segments SET created_at = now() - interval '10 minutes'",
        )
        .await
        .unwrap();
}

/// `GET /consumer-groups`: one element per (group, queue) with cursors, with the real lag, its
/// age from the lagging partitions' last push, and the dashboard's state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_group_list_says_how_far_behind_each_group_is() {
    let b = broker().await;
    let (s, v) = b.get("/api/v1/consumer-groups").await;
    assert_eq!((s, v), (StatusCode::OK, json!([])));

    b.push("l1", "p1", &["a1", "a2"]).await;
    b.push("l1", "p2", &["b1", "b2", "b3"]).await;
    b.push("l2", "p", &["c1"]).await;
    // g reads p1 of l1 to its end and nothing of l2; late joins l2 for new messages only.
    let got = b.pop("l1", "consumerGroup=g&batch=10&autoAck=true").await;
    let read = txids_of(&got).len() as i64;
    b.pop("l2", "consumerGroup=late&subscriptionMode=new").await;

    // Listed at once, with the partitions each pop gave it cursors on; the lag comes from
    // the stats snapshot, with the next round.
    let (_, v) = b.get("/api/v1/consumer-groups").await;
    let before: Vec<(String, i64, i64)> = wire::read::<Vec<GroupListed>>(&v)
        .into_iter()
        .map(|g| (g.name, g.members, g.total_lag))
        .collect();
    assert_eq!(
        before,
        [("g".to_string(), 2, 0), ("late".to_string(), 1, 0)],
        "no round yet: {v}"
    );
    b.refresh_stats().await;
    let (s, v) = b.get("/api/v1/consumer-groups").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let list: Vec<GroupListed> = wire::read(&v);
    assert_eq!(list.len(), 2, "{v}");
    let g = &list[0];
    assert_eq!(
        (
            g.name.as_str(),
            g.queue_name.as_str(),
            &g.topics[..],
            g.members
        ),
        ("g", "l1", &["l1".to_string()][..], 2)
    );
    assert_eq!((g.partitions_with_lag, g.total_lag), (1, 5 - read), "{g:?}");
    assert_eq!(
        (g.state.as_str(), g.subscription_mode.as_deref()),
        ("Stable", None)
    );
    assert!(g.max_time_lag < 300, "{g:?}");
    assert!(g.subscription_created_at.is_some(), "{g:?}");
    let late = &list[1];
    assert_eq!(
        (
            late.name.as_str(),
            late.queue_name.as_str(),
            late.total_lag,
            late.subscription_mode.as_deref()
        ),
        ("late", "l2", 0, Some("new"))
    );
    assert!(late.subscription_timestamp.is_some(), "{late:?}");
    // Paged, by group then queue.
    let (_, v) = b.get("/api/v1/consumer-groups?limit=1&offset=1").await;
    let names: Vec<String> = wire::read::<Vec<GroupListed>>(&v)
        .into_iter()
        .map(|g| g.name)
        .collect();
    assert_eq!(names, ["late"], "{v}");
    // One queue's groups, and groups by a part of their name (Regent's filters).
    for (query, want) in [
        ("queue=l2", vec![("late", "l2")]),
        ("queue=l1", vec![("g", "l1")]),
        ("queue=nosuch", vec![]),
        ("search=at", vec![("late", "l2")]),
        ("search=", vec![("g", "l1"), ("late", "l2")]),
        ("search=g&queue=l2", vec![]),
    ] {
        let (s, v) = b.get(&format!("/api/v1/consumer-groups?{query}")).await;
        let listed: Vec<GroupListed> = wire::read(&v);
        let got: Vec<(&str, &str)> = listed
            .iter()
            .map(|g| (g.name.as_str(), g.queue_name.as_str()))
            .collect();
        assert_eq!((s, got), (StatusCode::OK, want), "{query}");
    }

    // The unread partition's last push ten minutes ago: g is lagging.
    pushed_ten_minutes_ago(&b).await;
    b.refresh_stats().await;
    let (_, v) = b.get("/api/v1/consumer-groups").await;
    let list: Vec<GroupListed> = wire::read(&v);
    assert_eq!(list[0].state, "Lagging", "{v}");
    assert!(list[0].max_time_lag >= 600, "{v}");
    assert_eq!(list[1].state, "Stable", "nothing unread: {v}");
}

/// `GET /consumer-groups/:group` (the group's cursors by queue) and `/consumer-groups/lagging`
/// (cursors whose first unread message is older than a threshold, longest first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_groups_cursors_and_the_lagging_list() {
    let b = broker().await;
    b.push("k1", "p1", &["a1", "a2"]).await;
    b.push("k1", "p2", &["b1", "b2", "b3"]).await;
    let got = b.pop("k1", "consumerGroup=g&batch=10&autoAck=true").await;
    let done = if txids_of(&got)[0] == "a1" {
        "p1"
    } else {
        "p2"
    };
    let (unread, unread_lag) = if done == "p1" { ("p2", 3) } else { ("p1", 2) };
    let held = b.pop("k1", "consumerGroup=g&batch=1").await;
    assert_eq!(txids_of(&held).len(), 1, "{held}");

    let (s, v) = b.get("/api/v1/consumer-groups/g").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let by_queue: BTreeMap<String, QueueCursors> = wire::read(&v);
    let parts = &by_queue.get("k1").expect("keyed by queue").partitions;
    assert_eq!(parts.len(), 2, "{v}");
    let of = |name: &str| parts.iter().find(|p| p.partition == name).unwrap().clone();
    let full = of(done);
    assert_eq!(
        (full.offset_lag, full.time_lag_seconds, full.lease_active),
        (0, 0, false),
        "{full:?}"
    );
    let behind = of(unread);
    assert_eq!(
        (
            behind.total_consumed,
            behind.offset_lag,
            behind.lease_active
        ),
        (0, unread_lag, true),
        "{behind:?}"
    );
    assert_eq!((behind.worker_id, behind.last_consumed_at), (None, None));
    let (s, v) = b.get("/api/v1/consumer-groups/nobody").await;
    assert_eq!((s, v), (StatusCode::OK, json!({})));

    // Nothing is an hour behind yet; then the log is two hours old.
    b.refresh_stats().await;
    let (_, v) = b
        .get("/api/v1/consumer-groups/lagging?minLagSeconds=0")
        .await;
    assert_eq!(
        wire::read::<Vec<LaggingCursor>>(&v).len(),
        1,
        "the unread partition: {v}"
    );
    let (s, v) = b.get("/api/v1/consumer-groups/lagging").await;
    assert_eq!((s, v), (StatusCode::OK, json!([])));
    b.db()
        .await
        .execute(
            "UPDATE segments SET created_at = now() - interval '2 hours'",
            &[],
        )
        .await
        .unwrap();
    let (_, v) = b
        .get("/api/v1/consumer-groups/lagging?minLagSeconds=3600")
        .await;
    assert_eq!(v, json!([]), "the snapshot is older than the change: {v}");
    b.refresh_stats().await;
    let (s, v) = b
        .get("/api/v1/consumer-groups/lagging?minLagSeconds=3600")
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    // Read, each row has an oldest_unconsumed_at, a string.
    let rows: Vec<LaggingCursor> = wire::read(&v);
    assert_eq!(rows.len(), 1, "only the partition g has not read: {v}");
    let r = &rows[0];
    assert_eq!(
        (
            r.consumer_group.as_str(),
            r.queue_name.as_str(),
            r.partition_name.as_str(),
            r.offset_lag
        ),
        ("g", "k1", unread, unread_lag)
    );
    assert!(r.time_lag_seconds >= 7200, "{r:?}");
    assert!(r.lag_hours >= 2.0, "{r:?}");
    let (_, v) = b
        .get("/api/v1/consumer-groups/lagging?minLagSeconds=10800")
        .await;
    assert_eq!(v, json!([]), "three hours is more than its lag");
    let (s, v) = b
        .get("/api/v1/consumer-groups/lagging?minLagSeconds=soon")
        .await;
    assert_eq!(
        (s, v),
        (
            StatusCode::BAD_REQUEST,
            json!({"error": "minLagSeconds must be a non-negative number, got 'soon'"})
        )
    );
}

/// `POST /consumer-groups/:group/subscription` moves the group's start instant on every
/// queue it has joined: partitions it meets later start after that instant, and the cursors
/// it already has stay put.
#[tokio::test]
async fn a_new_subscription_timestamp_places_the_partitions_the_group_meets_later() {
    let b = broker().await;
    b.push("subs", "first", &["f-1"]).await;
    b.push("other", "Default", &["x-1"]).await;
    // The group joins both queues from the beginning, and consumes `subs` so far.
    b.pop("other", "consumerGroup=g&batch=10").await;
    let v = b.pop("subs", "consumerGroup=g&batch=10").await;
    assert_eq!(Broker::txids(&v), vec!["f-1"], "{v}");
    let v: Popped = wire::read(&v);
    let item = json!({"transactionId": "f-1", "partitionId": v.messages[0].partition_id,
                      "leaseId": v.lease_id, "status": "completed"});
    assert!(b.acked(Some("g"), json!([item])).await[0].success);
    // Before the new instant: a message on the partition the group has a cursor on, and a
    // partition created after the join.
    b.push("subs", "first", &["f-2"]).await;
    // A partition created after the join, with a message before the new instant.
    b.push("subs", "second", &["s-early"]).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let at = chrono::Utc::now().to_rfc3339();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (s, v) = b
        .post(
            "/api/v1/consumer-groups/g/subscription",
            json!({"subscriptionTimestamp": at}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v,
        json!({"success": true, "consumerGroup": "g", "newTimestamp": at, "rowsUpdated": 2})
    );
    b.push("subs", "second", &["s-late"]).await;

    let v = b.pop("subs", "consumerGroup=g&batch=10&partitions=5").await;
    let mut got = Broker::txids(&v);
    got.sort();
    assert_eq!(got, vec!["f-2", "s-late"], "{v}");

    let (_, v) = b
        .post(
            "/api/v1/consumer-groups/nobody/subscription",
            json!({"subscriptionTimestamp": at}),
        )
        .await;
    assert_eq!(wire::read::<wire::Resubscribed>(&v).rows_updated, 0, "{v}");
    for (body, text) in [
        (json!({}), "Missing subscriptionTimestamp in request body"),
        (
            json!({"subscriptionTimestamp": null}),
            "Missing subscriptionTimestamp in request body",
        ),
        (
            json!({"subscriptionTimestamp": "soon"}),
            "subscriptionTimestamp must be an ISO-8601 timestamp, got 'soon'",
        ),
        (
            json!({"subscriptionTimestamp": 5}),
            "subscriptionTimestamp must be an ISO-8601 timestamp, got 5",
        ),
    ] {
        let (s, v) = b.post("/api/v1/consumer-groups/g/subscription", body).await;
        assert_eq!((s, &v["error"]), (StatusCode::BAD_REQUEST, &json!(text)));
    }
}

#[tokio::test]
async fn a_stats_refresh_succeeds_with_nothing_to_do() {
    let b = broker().await;
    let (s, v) = b.post_raw("/api/v1/stats/refresh", "").await;
    let r: wire::Refreshed = wire::read(&v);
    assert_eq!((s, r.success, r.queues), (StatusCode::OK, true, 0), "{v}");
}

/// Two first pops of a new group sent together, one of one partition and one of the whole
/// queue, through two brokers: both ask to start at the end, so neither may deliver what was
/// pushed before the group existed. (The second's sweep once read the subscription the first
/// was committing as missing, and started the partitions it swept from the beginning.)
#[tokio::test]
async fn racing_first_pops_of_a_new_group_both_start_at_the_end() {
    let (a, b) = two_brokers().await;
    let partitions: Vec<String> = (0..8).map(|i| format!("p{i}")).collect();
    for p in &partitions {
        a.push("joined", p, &[&format!("old-{p}")]).await;
    }
    let mut delivered = Vec::new();
    for round in 0..40 {
        let group = format!("g{round}");
        let q_one = format!("consumerGroup={group}&subscriptionMode=new&batch=10");
        let q_all = format!("{q_one}&partitions=8");
        let (one, all) = tokio::join!(
            a.pop("joined/partition/p0", &q_one),
            b.pop("joined", &q_all)
        );
        for v in [one, all] {
            delivered.extend(
                Broker::txids(&v)
                    .into_iter()
                    .map(|t| format!("{group}: {t}")),
            );
        }
    }
    assert!(
        delivered.is_empty(),
        "messages pushed before their group joined, delivered: {delivered:?}"
    );
}

/// A queue nobody has read (issue 50): its queue-mode group is listed with every partition's
/// messages as its lag, in the group list, the lagging list and the per-queue metrics, so an
/// alert on lag fires when the consumers never started. A named group counts the partitions it
/// has no cursor on from where its first pop would start; once a queue has a named group and no
/// queue-mode cursor, queue mode is no longer implied (a publish/subscribe queue is not
/// "behind" in a mode nobody uses).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_nobody_has_read_lags_in_queue_mode() {
    let b = broker().await;
    b.push("never", "p1", &["a1", "a2"]).await;
    b.push("never", "p2", &["b1"]).await;
    b.push("never", "p3", &["c1"]).await;
    pushed_ten_minutes_ago(&b).await;
    b.refresh_stats().await;

    let (s, v) = b.get("/api/v1/consumer-groups").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let list: Vec<GroupListed> = wire::read(&v);
    let got: Vec<(&str, &str, i64, i64, i64)> = list
        .iter()
        .map(|g| {
            let n = (g.members, g.partitions_with_lag, g.total_lag);
            (g.name.as_str(), g.queue_name.as_str(), n.0, n.1, n.2)
        })
        .collect();
    assert_eq!(got, [("__QUEUE_MODE__", "never", 3, 3, 4)], "{v}");
    assert_eq!(list[0].state, "Lagging", "{v}");

    let (s, v) = b
        .get("/api/v1/consumer-groups/lagging?minLagSeconds=300")
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let mut rows: Vec<(String, String, i64)> = wire::read::<Vec<LaggingCursor>>(&v)
        .into_iter()
        .inspect(|r| assert!(r.time_lag_seconds >= 600, "{r:?}"))
        .map(|r| (r.consumer_group, r.partition_name, r.offset_lag))
        .collect();
    rows.sort();
    let qm = "__QUEUE_MODE__".to_string();
    assert_eq!(
        rows,
        [
            (qm.clone(), "p1".into(), 2),
            (qm.clone(), "p2".into(), 1),
            (qm.clone(), "p3".into(), 1)
        ],
        "{v}"
    );

    let res = b.http.get(format!("{}/api/v1/metrics/queues", b.url));
    let text = res.send().await.unwrap().text().await.unwrap();
    let series =
        r#"regent_queue_lag_messages{tenant="default",queue="never",group="__QUEUE_MODE__"}"#;
    assert_eq!(sample(&text, series), 4.0, "{text}");

    // Queue mode reads p1 only: the other two partitions still count.
    let got = b.pop("never", "partition=p1&batch=10&autoAck=true").await;
    assert_eq!(txids_of(&got).len(), 2, "{got}");
    b.refresh_stats().await;
    let (_, v) = b.get("/api/v1/consumer-groups?queue=never").await;
    let list: Vec<GroupListed> = wire::read(&v);
    assert_eq!(
        (
            list.len(),
            list[0].members,
            list[0].partitions_with_lag,
            list[0].total_lag
        ),
        (1, 3, 2, 2),
        "{v}"
    );

    // A publish/subscribe queue: a named group read one partition of two; it lags by the
    // other, and queue mode is not listed for it.
    b.push("fanout", "p1", &["f1"]).await;
    b.push("fanout", "p2", &["f2", "f3"]).await;
    b.pop("fanout", "consumerGroup=audit&partition=p1&autoAck=true")
        .await;
    b.refresh_stats().await;
    let (_, v) = b.get("/api/v1/consumer-groups?queue=fanout").await;
    let got: Vec<(String, i64, i64, i64)> = wire::read::<Vec<GroupListed>>(&v)
        .into_iter()
        .map(|g| (g.name, g.members, g.partitions_with_lag, g.total_lag))
        .collect();
    assert_eq!(got, [("audit".to_string(), 2, 1, 2)], "{v}");
    let (_, v) = b
        .get("/api/v1/consumer-groups/lagging?minLagSeconds=0")
        .await;
    let fanout: Vec<(String, String, i64)> = wire::read::<Vec<LaggingCursor>>(&v)
        .into_iter()
        .filter(|r| r.queue_name == "fanout")
        .map(|r| (r.consumer_group, r.partition_name, r.offset_lag))
        .collect();
    assert_eq!(fanout, [("audit".to_string(), "p2".to_string(), 2)], "{v}");
}
