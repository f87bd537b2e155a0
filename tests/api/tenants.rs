//! Tenants taken from tokens: two tenants share queue names, and one tenant naming the other's
//! queues, partition ids, transaction ids, lease ids and dead letters sees nothing and changes
//! nothing (issue 4's isolation matrix).

use jsonwebtoken::Algorithm;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{authed_broker, authed_broker_with, signed, token, Broker, SECRET};

const NOT_OWNED: &str = "partition not owned by tenant";

/// One caller: a broker and a token.
struct As<'a> {
    b: &'a Broker,
    token: String,
}

impl As<'_> {
    async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.b
            .request_as(Some(&self.token), Method::GET, path, None)
            .await
    }
    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        let body = body.to_string();
        self.b
            .request_as(Some(&self.token), Method::POST, path, Some(&body))
            .await
    }
    async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.b
            .request_as(Some(&self.token), Method::DELETE, path, None)
            .await
    }
    async fn push(&self, queue: &str, partition: &str, txids: &[&str]) -> Vec<Value> {
        self.b
            .push_as(Some(&self.token), queue, partition, txids)
            .await
    }
    /// A pop that must answer 200; its body.
    async fn pop(&self, path_and_query: &str) -> Value {
        let (s, v) = self.get(path_and_query).await;
        assert_eq!(s, StatusCode::OK, "{path_and_query}: {v}");
        v
    }
    /// The tenant's queues with their message totals, counted by a stats round now.
    async fn queue_names(&self) -> Vec<(String, i64)> {
        self.b.refresh_stats().await;
        let (s, v) = self.get("/api/v1/resources/queues").await;
        assert_eq!(s, StatusCode::OK, "{v}");
        v["queues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| {
                let name = q["name"].as_str().unwrap().to_string();
                (name, q["messages"]["total"].as_i64().unwrap())
            })
            .collect()
    }
}

/// Callers of tenants `acme` and `zenith`, both with `role`.
fn acme_and_zenith<'a>(b: &'a Broker, role: &str) -> (As<'a>, As<'a>) {
    let caller = |tenant| As {
        b,
        token: token(role).tenant(tenant).sub(tenant).mint(),
    };
    (caller("acme"), caller("zenith"))
}

fn txids(pop: &Value) -> Vec<&str> {
    pop["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .map(|x| x["transactionId"].as_str().unwrap())
                .collect()
        })
        .unwrap_or_default()
}

/// Every stored row of one tenant, as text: queues, partitions, log segments, cursors (with
/// their leases), subscriptions, dead letters and traces.
async fn snapshot(b: &Broker, tenant: &str) -> String {
    let db = b.db().await;
    let row = db
        .query_one(
            "SELECT concat_ws(E'\\n',
               (SELECT string_agg(concat_ws(',', id, name, namespace, task, options::text, created_at), ';' ORDER BY id)
                  FROM queues WHERE tenant = $1),
               (SELECT string_agg(concat_ws(',', id, queue_id, name, next_offset, last_push_at), ';' ORDER BY id)
                  FROM partition_heads WHERE tenant = $1),
               (SELECT string_agg(concat_ws(',', s.partition_id, s.base_offset, s.end_offset, md5(s.frames)), ';'
                                  ORDER BY s.partition_id, s.end_offset)
                  FROM segments s JOIN partitions p ON p.id = s.partition_id WHERE p.tenant = $1),
               (SELECT string_agg(concat_ws(',', c.partition_id, c.consumer_group, c.committed, c.lease_id,
                                            c.lease_expires_at, c.lease_end, c.retry_count), ';'
                                  ORDER BY c.partition_id, c.consumer_group)
                  FROM cursor_state c JOIN partitions p ON p.id = c.partition_id WHERE p.tenant = $1),
               (SELECT string_agg(concat_ws(',', s.queue_id, s.consumer_group, s.start_after), ';'
                                  ORDER BY s.queue_id, s.consumer_group)
                  FROM subscriptions s JOIN queues q ON q.id = s.queue_id WHERE q.tenant = $1),
               (SELECT string_agg(concat_ws(',', id, partition_id, consumer_group, \"offset\", transaction_id,
                                            md5(frame), error, retry_count), ';' ORDER BY id)
                  FROM dead_letters WHERE tenant = $1),
               (SELECT string_agg(concat_ws(',', id, partition_id, transaction_id, \"offset\", event_type,
                                            data::text, consumer_group, trace_names::text), ';' ORDER BY id)
                  FROM traces WHERE tenant = $1),
               (SELECT string_agg(concat_ws(',', t.partition_id, t.\"offset\"), ';'
                                  ORDER BY t.partition_id, t.\"offset\")
                  FROM tombstones t JOIN partitions p ON p.id = t.partition_id WHERE p.tenant = $1),
               (SELECT string_agg(concat_ws(',', m.queue_id, m.minute, m.pushed, m.completed), ';'
                                  ORDER BY m.queue_id, m.minute)
                  FROM queue_minutes m JOIN queues q ON q.id = m.queue_id WHERE q.tenant = $1),
               (SELECT string_agg(concat_ws(',', id, name, source_queue, config_hash, updated_at), ';' ORDER BY id)
                  FROM stream_queries WHERE tenant = $1),
               (SELECT string_agg(concat_ws(',', s.partition_id, s.key, s.value, s.updated_at), ';'
                                  ORDER BY s.partition_id, s.key)
                  FROM stream_state s JOIN stream_queries q ON q.id = s.query_id WHERE q.tenant = $1),
               (SELECT string_agg(concat_ws(',', c.partition_id, c.last_digest, c.cycles), ';'
                                  ORDER BY c.partition_id)
                  FROM stream_partitions c JOIN stream_queries q ON q.id = c.query_id WHERE q.tenant = $1),
               (SELECT string_agg(concat_ws(',', ns, key, value, version, expires_at, updated_at), ';'
                                  ORDER BY ns, key)
                  FROM kv WHERE tenant = $1),
               (SELECT string_agg(concat_ws(',', queue, timer_key, txn, message_id, partition, payload,
                                            deliver_at, updated_at), ';' ORDER BY queue, timer_key)
                  FROM timers WHERE tenant = $1))",
            &[&tenant],
        )
        .await
        .unwrap();
    row.get(0)
}

#[tokio::test]
async fn two_tenants_each_have_their_own_orders_queue() {
    let b = authed_broker().await;
    let (a, z) = acme_and_zenith(&b, "admin");
    a.push("orders", "p", &["a1", "a2"]).await;
    // The same transaction id in the other tenant is a new message, not a duplicate.
    let pushed = z.push("orders", "p", &["a1"]).await;
    assert_eq!(pushed[0]["status"], "queued", "{pushed:?}");

    assert_eq!(a.queue_names().await, vec![("orders".to_string(), 2)]);
    assert_eq!(z.queue_names().await, vec![("orders".to_string(), 1)]);
    let popped = a.pop("/api/v1/pop/queue/orders?wait=false&batch=10").await;
    assert_eq!(txids(&popped), vec!["a1", "a2"], "{popped}");
    assert_eq!(popped["messages"][0]["producerSub"], "acme");
    let popped = z.pop("/api/v1/pop/queue/orders?wait=false&batch=10").await;
    assert_eq!(txids(&popped), vec!["a1"], "{popped}");
    assert_eq!(popped["messages"][0]["producerSub"], "zenith");

    // Deleting is per tenant too.
    let (s, v) = z.delete("/api/v1/resources/queues/orders").await;
    assert_eq!((s, &v["existed"]), (StatusCode::OK, &json!(true)), "{v}");
    assert!(z.queue_names().await.is_empty());
    assert_eq!(a.queue_names().await, vec![("orders".to_string(), 2)]);
}

/// A long-poll of one tenant is not answered with another tenant's push to the same name.
#[tokio::test]
async fn a_long_poll_is_not_answered_by_another_tenants_push() {
    let b = authed_broker().await;
    let (a, z) = acme_and_zenith(&b, "read-write");
    a.push("orders", "p", &["seed"]).await;
    let first = a.pop("/api/v1/pop/queue/orders?wait=false").await;
    let pid = first["messages"][0]["partitionId"].clone();
    let lease = first["messages"][0]["leaseId"].clone();
    let (s, v) = a
        .post(
            "/api/v1/ack",
            json!({"transactionId": "seed", "partitionId": pid, "leaseId": lease, "status": "completed"}),
        )
        .await;
    assert_eq!((s, &v[0]["success"]), (StatusCode::OK, &json!(true)), "{v}");

    let parked = a.pop("/api/v1/pop/queue/orders?wait=true&timeout=1500");
    let other = async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        z.push("orders", "p", &["theirs"]).await;
    };
    let (answer, ()) = tokio::join!(parked, other);
    assert!(txids(&answer).is_empty(), "{answer}");
}

#[tokio::test]
async fn another_tenant_sees_nothing_and_changes_nothing() {
    let b = authed_broker().await;
    let (a, z) = acme_and_zenith(&b, "admin");

    // Tenant A: a configured queue, two partitions, a live lease in a named group and a
    // dead letter.
    let (s, v) = a
        .post(
            "/api/v1/configure",
            json!({"queue": "orders", "namespace": "shop", "task": "fulfil",
                   "options": {"retryLimit": 3, "leaseTime": 300}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    a.push("orders", "p1", &["a1", "a2", "a3"]).await;
    a.push("orders", "p2", &["b1"]).await;
    let held = a
        .pop("/api/v1/pop/queue/orders/partition/p1?wait=false&consumerGroup=workers")
        .await;
    assert_eq!(txids(&held), vec!["a1"], "{held}");
    let p1 = held["messages"][0]["partitionId"]
        .as_str()
        .unwrap()
        .to_string();
    let lease = held["messages"][0]["leaseId"].as_str().unwrap().to_string();
    let dead = a
        .pop("/api/v1/pop/queue/orders/partition/p2?wait=false")
        .await;
    let p2 = dead["messages"][0]["partitionId"]
        .as_str()
        .unwrap()
        .to_string();
    let dead_lease = dead["messages"][0]["leaseId"].as_str().unwrap().to_string();
    let (s, v) = a
        .post(
            "/api/v1/ack",
            json!({"transactionId": "b1", "partitionId": p2, "leaseId": dead_lease, "status": "dlq",
                   "error": "poison"}),
        )
        .await;
    assert_eq!((s, &v[0]["dlq"]), (StatusCode::OK, &json!(true)), "{v}");
    let trace = json!({"transactionId": "a1", "partitionId": p1, "data": {"step": "seen"},
                       "traceNames": "order-flow"});
    let (s, v) = a.post("/api/v1/traces", trace.clone()).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, v) = a.get("/api/v1/dlq").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let dead_letter_id = v["messages"][0]["deadLetterId"].clone();
    assert!(dead_letter_id.is_i64(), "{v}");
    // A long-poll of A's parked in a sample of the broker (on a name A has no queue by, so
    // it writes nothing), and A sees it.
    let parked_path = "/api/v1/analytics/queue-parked-replicas?queue=orders-later";
    let long_poll = a.pop("/api/v1/pop/queue/orders-later?wait=true&timeout=1000");
    let sampled = async {
        while b.runtime().parked.is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        b.sample_now().await;
    };
    let (answer, ()) = tokio::join!(long_poll, sampled);
    assert!(txids(&answer).is_empty(), "{answer}");
    let (s, v) = a.get(parked_path).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["series"][0]["queueName"], "orders-later", "{v}");
    // A stream query of A's with state on p1 (a cycle without an ack: the lease is held).
    let (s, reg) = a
        .post(
            "/streams/v1/queries",
            json!({"name": "orders-sum", "source_queue": "orders", "config_hash": "h"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{reg}");
    let query = reg["query_id"].clone();
    let stream_cycle = json!({"query_id": query, "partition_id": p1, "ack": null,
        "state_ops": [{"type": "upsert", "key": "sum", "value": {"acc": 6}}],
        "push_items": [{"queue": "orders-sums", "payload": {"sum": 6}, "transactionId": "s-1"}]});
    let (s, v) = a.post("/streams/v1/cycle", stream_cycle.clone()).await;
    assert_eq!((s, &v["success"]), (StatusCode::OK, &json!(true)), "{v}");
    // Key/value rows of A's.
    let kv = |ops: Value| json!({ "operations": ops });
    let (s, v) = a
        .post(
            "/api/v1/kv",
            kv(json!([
                {"op": "put", "ns": "cfg", "key": "limit", "value": 10, "forever": true},
                {"op": "incr", "ns": "cfg", "key": "hits", "ttlSeconds": 3600},
            ])),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    // A pending timer of A's, its key holding `/`.
    let a_timer = json!({"op": "schedule", "queue": "orders", "timerKey": "expire/a1",
        "payload": "eyJuIjogMX0=", "delayMs": 3_600_000, "txn": "timer-a1"});
    let (s, v) = a
        .post("/api/v1/timers", json!({"operations": [a_timer.clone()]}))
        .await;
    assert_eq!(
        (s, &v["results"][0]["status"]),
        (StatusCode::OK, &json!("scheduled")),
        "{v}"
    );
    // A's counts so far in the series, so that the snapshot holds them.
    b.flush_series().await;
    let before = snapshot(&b, "acme").await;

    // Tenant B, with an admin token, tries every route against A's names and ids.
    let (s, v) = z.get("/api/v1/whoami").await;
    assert_eq!((s, &v["tenant"]), (StatusCode::OK, &json!("zenith")), "{v}");
    assert!(z.queue_names().await.is_empty());
    let (s, v) = z.get("/api/v1/resources/queues?search=orders").await;
    assert_eq!((s, &v["queues"]), (StatusCode::OK, &json!([])), "{v}");
    for path in [
        "/api/v1/resources/queues/orders",
        "/api/v1/resources/queues/orders/depth",
    ] {
        let (s, v) = z.get(path).await;
        assert_eq!(
            (s, v),
            (StatusCode::NOT_FOUND, json!({"error": "Queue not found"})),
            "{path}"
        );
    }
    let (s, v) = z
        .post(
            "/api/v1/consumer-groups/__QUEUE_MODE__/queues/orders/seek",
            json!({"toEnd": true}),
        )
        .await;
    assert_eq!(
        (s, v),
        (StatusCode::NOT_FOUND, json!({"error": "Queue not found"}))
    );
    for (path, nothing) in [
        ("/api/v1/consumer-groups", json!([])),
        ("/api/v1/consumer-groups/workers", json!({})),
        ("/api/v1/consumer-groups/lagging?minLagSeconds=0", json!([])),
    ] {
        let (s, v) = z.get(path).await;
        assert_eq!((s, v), (StatusCode::OK, nothing), "{path}");
    }
    for path in [
        "/api/v1/consumer-groups/workers",
        "/api/v1/consumer-groups/__QUEUE_MODE__/queues/orders",
    ] {
        let (s, v) = z.delete(path).await;
        assert_eq!(
            (s, &v["deletedPartitions"]),
            (StatusCode::OK, &json!(0)),
            "{path}: {v}"
        );
    }
    // A's timer: B peeks, lists, cancels (by either route, with its txn or not) and finds
    // nothing; B's schedule of the same key is a timer of its own.
    let (s, v) = z.get("/api/v1/timers/orders/expire/a1").await;
    assert_eq!((s, v), (StatusCode::OK, json!({"found": false})));
    let (s, v) = z.get("/api/v1/timers/orders").await;
    assert_eq!((s, &v["rows"]), (StatusCode::OK, &json!([])), "{v}");
    let (s, v) = z.get("/api/v1/timers").await;
    assert_eq!((s, &v["queues"]), (StatusCode::OK, &json!([])), "{v}");
    for cancel in [
        "/api/v1/timers/orders/expire/a1",
        "/api/v1/timers/orders/expire/a1?txn=timer-a1",
    ] {
        let (s, v) = z.delete(cancel).await;
        assert_eq!(
            (s, &v["status"]),
            (StatusCode::OK, &json!("absent")),
            "{cancel}: {v}"
        );
    }
    let (s, v) = z
        .post(
            "/api/v1/timers",
            json!({"operations": [
            {"op": "cancel", "queue": "orders", "timerKey": "expire/a1"},
            {"op": "reschedule", "queue": "orders", "timerKey": "expire/a1", "payload": "MQ==",
             "delayMs": 7_200_000, "txn": "timer-z1"}]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["results"][0]["status"], &v["results"][1]["status"]),
        (&json!("absent"), &json!("scheduled")),
        "{v}"
    );
    // A's stream query: B finds no query by its id, reads none of its state, cannot cycle
    // on A's partition with a query of its own, and registers the same name afresh.
    let (s, v) = z.post("/streams/v1/cycle", stream_cycle.clone()).await;
    assert_eq!(
        (s, &v["error"]),
        (StatusCode::OK, &json!("query not found")),
        "{v}"
    );
    let (s, v) = z
        .post(
            "/streams/v1/state/get",
            json!({"query_id": query, "partition_id": p1}),
        )
        .await;
    assert_eq!((s, &v["rows"]), (StatusCode::OK, &json!([])), "{v}");
    let (s, v) = z
        .get(&format!(
            "/streams/v1/queries/{}/partitions",
            query.as_str().unwrap()
        ))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    let (s, v) = z.get("/streams/v1/queries").await;
    assert_eq!((s, &v["queries"]), (StatusCode::OK, &json!([])), "{v}");
    let (s, mine) = z
        .post(
            "/streams/v1/queries",
            json!({"name": "orders-sum", "source_queue": "orders", "config_hash": "other", "reset": true}),
        )
        .await;
    assert_eq!(
        (s, &mine["fresh"]),
        (StatusCode::OK, &json!(true)),
        "{mine}"
    );
    assert_ne!(mine["query_id"], query);
    let mut theirs = stream_cycle.clone();
    theirs["query_id"] = mine["query_id"].clone();
    let (s, v) = z.post("/streams/v1/cycle", theirs).await;
    assert_eq!(
        (s, &v["error"]),
        (
            StatusCode::OK,
            &json!("partition not found in the query's source queue")
        ),
        "{v}"
    );
    // A's key/value rows: B reads none, deletes none, fences against none, and writes its
    // own under the same names.
    let (s, v) = z
        .post(
            "/api/v1/kv",
            kv(json!([
                {"op": "get", "ns": "cfg", "key": "limit"},
                {"op": "getMany", "ns": "cfg", "keys": ["limit", "hits"]},
                {"op": "getPrefix", "ns": "cfg", "prefix": "h"},
                {"op": "delete", "ns": "cfg", "key": "limit"},
                {"op": "put", "ns": "cfg", "key": "hits", "value": 0, "forever": true, "expect": 1},
                {"op": "putIfAbsent", "ns": "cfg", "key": "limit", "value": 99, "forever": true},
                {"op": "incr", "ns": "cfg", "key": "hits", "forever": true},
            ])),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let r = &v["results"];
    assert_eq!(r[0]["found"], false, "{v}");
    assert_eq!(r[1]["missing"], json!(["limit", "hits"]), "{v}");
    assert_eq!(r[2]["rows"], json!([]), "{v}");
    assert_eq!(
        (&r[3]["applied"], &r[4]["reason"]),
        (&json!(false), &json!("absent")),
        "{v}"
    );
    assert_eq!(
        (&r[5]["applied"], &r[6]["value"]),
        (&json!(true), &json!(1)),
        "{v}"
    );
    // The tenant-wide figures of B count nothing of A's (A's pushes in the series
    // included), and B cannot clear A's queue.
    b.flush_series().await;
    let (s, v) = z.get("/api/v1/resources/overview").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (
            &v["queues"],
            &v["partitions"],
            &v["messages"]["total"],
            &v["messages"]["deadLetter"]
        ),
        (&json!(0), &json!(0), &json!(0), &json!(0)),
        "{v}"
    );
    assert_eq!(v["throughput"]["ingestedPerSecond"], json!(0.0), "{v}");
    for (path, key) in [
        ("/api/v1/resources/namespaces", "namespaces"),
        ("/api/v1/resources/tasks", "tasks"),
        ("/api/v1/resources/partitions", "partitions"),
        ("/api/v1/resources/partitions?queue=orders", "partitions"),
        ("/api/v1/analytics/worker-metrics", "queues"),
        ("/api/v1/status", "depth"),
        ("/api/v1/analytics/queue-parked-replicas", "series"),
        ("/api/v1/analytics/queue-parked-replicas", "replicas"),
        (parked_path, "series"),
    ] {
        let (s, v) = z.get(path).await;
        assert_eq!((s, &v[key]), (StatusCode::OK, &json!([])), "{path}: {v}");
    }
    // B's per-queue metrics name none of A's queues or stream queries, only its own query's
    // refused cycle (the exposition is text).
    let (s, v) = z.get("/api/v1/metrics/queues").await;
    let text = v.as_str().unwrap_or_default();
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(
        text.contains("# TYPE regent_queue_depth gauge")
            && !text.contains("acme")
            && !text.contains("queue=")
            && text
                .contains("regent_stream_failures_total{tenant=\"zenith\",query=\"orders-sum\"} 1"),
        "{text}"
    );
    for path in [
        "/api/v1/queues/orders/clear",
        "/api/v1/queues/orders/clear?partition=p1",
    ] {
        let (s, v) = z.delete(path).await;
        assert_eq!(
            (s, v),
            (StatusCode::NOT_FOUND, json!({"error": "Queue not found"})),
            "{path}"
        );
    }
    // A's messages cannot be listed, read, deleted, retried or dead-lettered by B.
    let (s, v) = z.get("/api/v1/messages?queue=orders").await;
    assert_eq!((s, &v["messages"]), (StatusCode::OK, &json!([])), "{v}");
    let (s, v) = z.get("/api/v1/messages").await;
    assert_eq!((s, &v["messages"]), (StatusCode::OK, &json!([])), "{v}");
    for txid in ["a1", "a2", "b1"] {
        for pid in [&p1, &p2] {
            let one = format!("/api/v1/messages/{pid}/{txid}");
            let (s, v) = z.get(&one).await;
            assert_eq!(s, StatusCode::NOT_FOUND, "{one}: {v}");
            let (s, v) = z.delete(&one).await;
            assert_eq!(
                (s, &v["success"]),
                (StatusCode::OK, &json!(false)),
                "{one}: {v}"
            );
            for op in ["retry", "dlq"] {
                let (s, v) = z.post(&format!("{one}/{op}"), json!({})).await;
                assert_eq!(s, StatusCode::NOT_FOUND, "{one}/{op}: {v}");
            }
        }
    }
    for path in ["/api/v1/dlq", "/api/v1/dlq?queue=orders"] {
        let (s, v) = z.get(path).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(
            (&v["messages"], &v["total"]),
            (&json!([]), &json!(0)),
            "{v}"
        );
    }
    // B's bulk requeue and deletion take nothing of A's: not everything of B's, not by A's
    // queue name, not by A's dead-letter id (gone, naming nothing).
    for (route, done) in [
        ("/api/v1/dlq/requeue", "requeued"),
        ("/api/v1/dlq/delete", "deleted"),
    ] {
        for body in [
            json!({"all": true, "dryRun": true}),
            json!({"all": true}),
            json!({"queue": "orders", "consumerGroup": "__QUEUE_MODE__", "reason": "poison"}),
            json!({"ids": [dead_letter_id]}),
        ] {
            let (s, v) = z.post(route, body.clone()).await;
            assert_eq!(s, StatusCode::OK, "{route} {body}: {v}");
            assert_eq!(
                (&v[done], &v["duplicates"], &v["more"]),
                (&json!(0), &json!(0), &json!(false)),
                "{route} {body}: {v}"
            );
            for i in v["items"].as_array().unwrap() {
                assert_eq!(i["verdict"], "gone", "{route}: {i}");
                assert_eq!(
                    (&i["partitionId"], &i["transactionId"]),
                    (&Value::Null, &Value::Null),
                    "{route}: {i}"
                );
            }
        }
    }
    for path in [
        "/api/v1/pop/queue/orders?wait=false&batch=10",
        "/api/v1/pop/queue/orders?wait=false&batch=10&consumerGroup=workers",
        "/api/v1/pop/queue/orders/partition/p1?wait=false&consumerGroup=workers",
        "/api/v1/pop/queue/orders/partition/p1?wait=false&consumerGroup=fresh&subscriptionMode=all",
        "/api/v1/pop?namespace=shop&wait=false",
        "/api/v1/pop?task=fulfil&wait=false&consumerGroup=workers",
    ] {
        let v = z.pop(path).await;
        assert!(txids(&v).is_empty(), "{path}: {v}");
    }
    // B moving "workers"' start instant moves no group of A's.
    let (s, v) = z
        .post(
            "/api/v1/consumer-groups/workers/subscription",
            json!({"subscriptionTimestamp": "2030-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!((s, &v["rowsUpdated"]), (StatusCode::OK, &json!(0)), "{v}");
    // A's message cannot be traced by B, and B reads no trace of A's.
    let (s, v) = z.post("/api/v1/traces", trace).await;
    assert_eq!(
        (s, v),
        (
            StatusCode::NOT_FOUND,
            json!({"success": false, "error": "Message not found"})
        )
    );
    for (path, key) in [
        (format!("/api/v1/traces/{p1}/a1"), "traces"),
        ("/api/v1/traces/by-name/order-flow".into(), "traces"),
        ("/api/v1/traces/names".into(), "trace_names"),
    ] {
        let (s, v) = z.get(&path).await;
        assert_eq!((s, &v[key]), (StatusCode::OK, &json!([])), "{path}: {v}");
    }
    // Acks naming A's partition, with and without A's lease, in A's group and queue mode.
    for (group, lease_id) in [
        (json!("workers"), json!(lease)),
        (json!("workers"), Value::Null),
        (Value::Null, Value::Null),
    ] {
        for status in ["completed", "failed", "retry", "dlq"] {
            let (s, v) = z
                .post(
                    "/api/v1/ack",
                    json!({"transactionId": "a1", "partitionId": p1, "leaseId": lease_id,
                           "consumerGroup": group, "status": status}),
                )
                .await;
            assert_eq!(s, StatusCode::OK, "{v}");
            let r = &v[0];
            let got = (&r["success"], &r["error"]);
            assert_eq!(got, (&json!(false), &json!(NOT_OWNED)), "{status}: {v}");
        }
    }
    let (s, v) = z
        .post(
            "/api/v1/ack/batch",
            json!({"consumerGroup": "workers", "acknowledgments": [
                {"transactionId": "a1", "partitionId": p1, "leaseId": lease, "status": "completed"},
                {"transactionId": "a2", "partitionId": p1, "status": "failed"},
                {"transactionId": "b1", "partitionId": p2, "status": "dlq"}]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    for r in v.as_array().unwrap() {
        assert_eq!(
            (&r["success"], &r["error"]),
            (&json!(false), &json!(NOT_OWNED)),
            "{r}"
        );
    }
    // A transaction acking A's message next to a push of B's own is refused whole.
    let (s, v) = z
        .post(
            "/api/v1/transaction",
            json!({"operations": [
                {"type": "ack", "transactionId": "a1", "partitionId": p1, "leaseId": lease,
                 "consumerGroup": "workers", "status": "completed"},
                {"type": "push", "items": [{"queue": "orders", "partition": "p1",
                                            "transactionId": "z1", "payload": {}}]}]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["success"], &v["error"]),
        (
            &json!(false),
            &json!(format!("ACK operation failed: {NOT_OWNED}"))
        ),
        "{v}"
    );
    // A's lease is not a live lease of B's.
    let (s, v) = z
        .post(
            "/api/v1/transaction",
            json!({"operations": [{"type": "push", "items": [
                       {"queue": "orders", "transactionId": "z2", "payload": {}}]}],
                   "requiredLeases": [lease]}),
        )
        .await;
    assert_eq!((s, &v["success"]), (StatusCode::OK, &json!(false)), "{v}");
    assert!(
        z.queue_names().await.is_empty(),
        "refused transactions wrote nothing"
    );
    let (s, v) = z
        .post(
            &format!("/api/v1/lease/{lease}/extend"),
            json!({"seconds": 3600}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["success"], &v["error"]),
        (&json!(false), &json!("Lease not found"))
    );

    // B's own writes under A's names land in B's tenant.
    let (s, v) = z
        .post(
            "/api/v1/configure",
            json!({"queue": "orders", "options": {"retryLimit": 9}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_ne!(v["partitionId"].as_str(), Some(p1.as_str()));
    let pushed = z.push("orders", "p1", &["a1", "a2", "a3", "b1"]).await;
    for r in &pushed {
        assert_eq!(r["status"], "queued", "not A's duplicates: {r}");
        assert_ne!(r["partitionId"].as_str(), Some(p1.as_str()), "{r}");
    }
    let mine = z
        .pop("/api/v1/pop/queue/orders?wait=false&batch=10&consumerGroup=workers")
        .await;
    assert_eq!(txids(&mine), vec!["a1", "a2", "a3", "b1"], "{mine}");
    let (s, v) = z.delete("/api/v1/resources/queues/orders").await;
    assert_eq!((s, &v["existed"]), (StatusCode::OK, &json!(true)), "{v}");
    let (s, v) = z.delete("/api/v1/resources/queues/orders").await;
    assert_eq!((s, &v["existed"]), (StatusCode::OK, &json!(false)), "{v}");

    // A's data is exactly as it was, and A carries on.
    assert_eq!(snapshot(&b, "acme").await, before);
    assert_eq!(
        a.queue_names().await,
        vec![("orders-sums".to_string(), 1), ("orders".to_string(), 4)]
    );
    let (s, v) = a
        .post(
            "/streams/v1/state/get",
            json!({"query_id": query, "partition_id": p1}),
        )
        .await;
    assert_eq!(
        (s, &v["rows"][0]["value"]),
        (StatusCode::OK, &json!({"acc": 6})),
        "{v}"
    );
    let (s, v) = a.get("/api/v1/dlq?queue=orders").await;
    assert_eq!((s, &v["total"]), (StatusCode::OK, &json!(1)), "{v}");
    assert_eq!(v["messages"][0]["transactionId"], "b1");
    let (s, v) = a
        .post(
            &format!("/api/v1/lease/{lease}/extend"),
            json!({"seconds": 60}),
        )
        .await;
    assert_eq!((s, &v["success"]), (StatusCode::OK, &json!(true)), "{v}");
    let (s, v) = a
        .post(
            "/api/v1/ack",
            json!({"transactionId": "a1", "partitionId": p1, "leaseId": lease,
                   "consumerGroup": "workers", "status": "completed"}),
        )
        .await;
    assert_eq!((s, &v[0]["success"]), (StatusCode::OK, &json!(true)), "{v}");
    let next = a
        .pop("/api/v1/pop/queue/orders/partition/p1?wait=false&consumerGroup=workers")
        .await;
    assert_eq!(txids(&next), vec!["a2"], "{next}");
    let (s, v) = a.get("/api/v1/traces/by-name/order-flow").await;
    assert_eq!((s, &v["total"]), (StatusCode::OK, &json!(1)), "{v}");
}

#[tokio::test]
async fn a_token_without_a_tenant_is_refused_unless_a_default_is_configured() {
    let b = authed_broker().await;
    let no_tenant = token("admin").mint();
    for t in [
        no_tenant.clone(),
        signed(
            Algorithm::HS256,
            SECRET,
            None,
            json!({"role": "admin", "tenant": 7}),
        ),
        signed(
            Algorithm::HS256,
            SECRET,
            None,
            json!({"role": "admin", "tenant": ""}),
        ),
    ] {
        let (s, v) = b
            .request_as(Some(&t), Method::GET, "/api/v1/resources/queues", None)
            .await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{v}");
        assert_eq!(v, json!({"error": "Token has no tenant: claim `tenant`"}));
    }
    // Role is checked first: a read-only token without a tenant still gets Queen's text on a
    // write route.
    let (s, v) = b
        .request_as(
            Some(&token("read-only").mint()),
            Method::POST,
            "/api/v1/push",
            Some("{}"),
        )
        .await;
    assert_eq!(
        (s, v),
        (
            StatusCode::FORBIDDEN,
            json!({"error": "Insufficient permissions"})
        )
    );

    // With a default tenant, a token without the claim acts for it.
    let b = authed_broker_with(|c| c.jwt_default_tenant = Some("shared".into())).await;
    let anonymous = As {
        b: &b,
        token: token("read-write").mint(),
    };
    let shared = As {
        b: &b,
        token: token("read-write").tenant("shared").sub("shared").mint(),
    };
    let other = As {
        b: &b,
        token: token("read-write").tenant("other").sub("other").mint(),
    };
    anonymous.push("jobs", "p", &["j1"]).await;
    assert_eq!(shared.queue_names().await, vec![("jobs".to_string(), 1)]);
    assert!(other.queue_names().await.is_empty());
}

#[tokio::test]
async fn the_tenant_claim_is_configurable() {
    let b = authed_broker_with(|c| c.jwt_tenant_claim = "org".into()).await;
    let org = As {
        b: &b,
        token: signed(
            Algorithm::HS256,
            SECRET,
            None,
            json!({"role": "read-write", "org": "acme"}),
        ),
    };
    org.push("jobs", "p", &["j1"]).await;
    assert_eq!(org.queue_names().await, vec![("jobs".to_string(), 1)]);
    // `tenant` is now an ordinary claim.
    let (s, v) = b
        .request_as(
            Some(&token("read-write").tenant("acme").sub("acme").mint()),
            Method::GET,
            "/api/v1/resources/queues",
            None,
        )
        .await;
    assert_eq!(
        (s, v),
        (
            StatusCode::FORBIDDEN,
            json!({"error": "Token has no tenant: claim `org`"})
        )
    );
}

/// Every ephemeral row of one tenant, as text: declarations and contents.
async fn ephemeral_snapshot(b: &Broker, tenant: &str) -> String {
    let db = b.db().await;
    db.query_one(
        "SELECT concat_ws(E'\\n',
           (SELECT string_agg(concat_ws(',', name, max_length, policy, updated_at), ';' ORDER BY name)
              FROM ephemeral_queues WHERE tenant = $1),
           (SELECT string_agg(concat_ws(',', queue, epoch, next_seq, length, bytes, dropped_retry), ';' ORDER BY queue)
              FROM ephemeral_live WHERE tenant = $1),
           (SELECT string_agg(concat_ws(',', queue, seq, partition, payload), ';' ORDER BY queue, seq)
              FROM ephemeral_messages WHERE tenant = $1),
           (SELECT string_agg(concat_ws(',', queue, grp, partition, next_seq), ';' ORDER BY queue, grp, partition)
              FROM ephemeral_cursors WHERE tenant = $1),
           (SELECT string_agg(concat_ws(',', queue, grp, seq, attempts, lease_until), ';' ORDER BY queue, grp, seq)
              FROM ephemeral_deliveries WHERE tenant = $1))",
        &[&tenant],
    )
    .await
    .unwrap()
    .get(0)
}

#[tokio::test]
async fn ephemeral_queues_belong_to_their_tenant() {
    let b = authed_broker().await;
    let (a, z) = acme_and_zenith(&b, "admin");
    let (s, v) = a
        .post(
            "/api/v1/ephemeral/configure",
            json!({"queue": "inbox", "options": {"maxLength": 5}}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, v) = a
        .post(
            "/api/v1/ephemeral/push",
            json!({"queue": "inbox", "messages": [{"payload": "a1"}, {"payload": "a2"}]}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (_, popped) = a.get("/api/v1/ephemeral/pop?queue=inbox&group=g").await;
    let id = popped["messages"][0]["id"].as_str().unwrap().to_string();
    let before = ephemeral_snapshot(&b, "acme").await;

    // B sees none of A's queues, and names them in vain.
    let (s, v) = z.get("/api/v1/ephemeral/queues").await;
    assert_eq!((s, v), (StatusCode::OK, json!({"queues": [], "count": 0})));
    let (s, v) = z.get("/api/v1/ephemeral/queues/inbox/depth").await;
    assert_eq!(
        (s, &v["code"]),
        (StatusCode::NOT_FOUND, &json!("ephemeral_queue_not_found")),
        "{v}"
    );
    let (s, v) = z
        .post(
            "/api/v1/ephemeral/ack",
            json!({"queue": "inbox", "group": "g", "acks": [{"id": id, "status": "completed"}]}),
        )
        .await;
    assert_eq!(
        (s, &v["results"][0]["outcome"]),
        (StatusCode::OK, &json!("stale")),
        "{v}"
    );
    let (s, v) = z
        .post("/api/v1/ephemeral/reset", json!({"queue": "inbox"}))
        .await;
    assert_eq!(
        (s, v),
        (StatusCode::OK, json!({"queue": "inbox", "dropped": 0}))
    );
    let (s, v) = z.delete("/api/v1/ephemeral/queue/inbox").await;
    assert_eq!(
        (s, v),
        (StatusCode::OK, json!({"queue": "inbox", "deleted": false}))
    );
    // B's own queue of the same name is another queue: its pops see only its messages, and
    // A's id is stale in it.
    let (s, _) = z
        .post(
            "/api/v1/ephemeral/push",
            json!({"queue": "inbox", "messages": [{"payload": "z1"}]}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED);
    let (_, v) = z
        .get("/api/v1/ephemeral/pop?queue=inbox&group=g&batch=10")
        .await;
    let got: Vec<&Value> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["payload"])
        .collect();
    assert_eq!(got, vec![&json!("z1")], "{v}");
    let (_, v) = z
        .post(
            "/api/v1/ephemeral/ack",
            json!({"queue": "inbox", "group": "g", "acks": [{"id": id}]}),
        )
        .await;
    assert_eq!(v["results"][0]["outcome"], "stale", "{v}");
    let (_, v) = z.get("/api/v1/ephemeral/queues/inbox/depth").await;
    assert_eq!(
        (&v["tier"], &v["depth"]),
        (&json!("implicit"), &json!(1)),
        "{v}"
    );
    assert_eq!(
        ephemeral_snapshot(&b, "acme").await,
        before,
        "A's rows are untouched"
    );
    // A's queue is as A left it.
    let (_, v) = a.get("/api/v1/ephemeral/queues/inbox/depth").await;
    assert_eq!(
        (&v["tier"], &v["depth"]),
        (&json!("declared"), &json!(2)),
        "{v}"
    );
    let (_, v) = a
        .post(
            "/api/v1/ephemeral/ack",
            json!({"queue": "inbox", "group": "g", "acks": [{"id": id}]}),
        )
        .await;
    assert_eq!(v["results"][0]["outcome"], "acked", "{v}");
}

/// A tenant's push never waits for another tenant's flush: with both of one tenant's flushes
/// stuck (its partition row locked by someone else), another tenant's push is answered at
/// once. With one set of flushers for every tenant it waited until the lock was gone.
#[tokio::test]
async fn a_tenants_push_does_not_wait_for_another_tenants_stuck_flushes() {
    let b = authed_broker().await;
    let (a, z) = acme_and_zenith(&b, "admin");
    let pushed = a.push("orders", "p", &["a0"]).await;
    let db = b.db().await;
    lock_partition(&db, &pushed[0]).await;
    // Two pushes of acme's, far enough apart to be flushed separately: both wait on the lock.
    let mut stuck = Vec::new();
    for t in ["a1", "a2"] {
        stuck.push(push_in_background(&b, &a, "p", t));
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    let zenith = answered_soon(z.push("orders", "p", &["z1"])).await;
    db.batch_execute("COMMIT").await.unwrap();
    assert!(zenith, "zenith's push waited for acme's stuck flushes");
    for pushed in stuck {
        pushed.await.unwrap();
    }
}

/// A tenant's push to one partition does not wait for its own flush stuck on another (that
/// partition's row locked by someone else): the lane runs a second flush beside it. A lane of
/// one flush at a time fuses more pushes per commit (measured in BENCHMARKS.md, "Issue 49,
/// step 6"), and with it every push of the tenant waited for the lock.
#[tokio::test]
async fn a_push_does_not_wait_for_its_own_tenants_flush_stuck_on_another_partition() {
    let b = authed_broker().await;
    let (a, _) = acme_and_zenith(&b, "admin");
    let pushed = a.push("orders", "locked", &["l0"]).await;
    a.push("orders", "free", &["f0"]).await;
    let db = b.db().await;
    lock_partition(&db, &pushed[0]).await;
    let stuck = push_in_background(&b, &a, "locked", "l1");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!stuck.is_finished(), "the push waits on the lock");
    let free = answered_soon(a.push("orders", "free", &["f1"])).await;
    db.batch_execute("COMMIT").await.unwrap();
    assert!(
        free,
        "the push to another partition waited for the stuck flush"
    );
    stuck.await.unwrap();
}

/// Locks the row of the partition a push answered with, in a transaction `db` leaves open.
/// By id: on Citus a row lock must name the row's shard.
async fn lock_partition(db: &tokio_postgres::Client, pushed: &Value) {
    let partition = pushed["partition_id"].as_str().unwrap();
    db.batch_execute(&format!(
        "BEGIN; SELECT 1 FROM partitions WHERE id = '{partition}' FOR UPDATE"
    ))
    .await
    .unwrap();
}

/// A push of `who`'s to queue `orders` in a task of its own, which a lock may hold up.
fn push_in_background(
    b: &Broker,
    who: &As<'_>,
    partition: &'static str,
    txid: &'static str,
) -> tokio::task::JoinHandle<()> {
    let handle = Broker {
        url: b.url.clone(),
        db_url: b.db_url.clone(),
        http: b.http.clone(),
        server: None,
    };
    let token = who.token.clone();
    tokio::spawn(async move {
        handle
            .push_as(Some(&token), "orders", partition, &[txid])
            .await;
    })
}

/// Whether `answer` came within five seconds.
async fn answered_soon<T>(answer: impl std::future::Future<Output = T>) -> bool {
    tokio::time::timeout(std::time::Duration::from_secs(5), answer)
        .await
        .is_ok()
}
