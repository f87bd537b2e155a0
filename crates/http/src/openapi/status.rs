//! The dashboard's status pages (spec §13.1–13.5).

use axum::http::Method;
use serde_json::{json, Value};

use super::schemas::{
    about, all_required, always_null, array, int, int_param, num, obj, r, string, ts, ts_or_null,
    uuid,
};
use super::Entry;

pub(super) const TAGS: &[(&str, &str)] = &[(
    "status",
    "What Queen's dashboard pages read, from the per-minute queue series and the current counts. Fields Queen fills from machinery Regent does not have (an event loop, worker slots, a stats refresh) are null, never invented.",
)];

fn window(e: Entry, default: &str) -> Entry {
    e.query("from", json!({"type": "string", "format": "date-time"}), &format!("Start of the window; default: {default} before `to`."))
        .query("to", json!({"type": "string", "format": "date-time"}), "End of the window; default now.")
        .query("queue", string(), "Only this queue.")
        .query("namespace", string(), "Only this namespace's queues.")
        .query("task", string(), "Only this task's queues.")
        .fails(400, "`from must be before to`, `from must be an ISO-8601 timestamp`, `to must be an ISO-8601 timestamp`.")
}

fn point() -> Value {
    let mut props = json!({
        "timestamp": about(ts(), "The bucket's start."),
        "ingested": about(int(), "Messages pushed."),
        "processed": about(int(), "Messages passed by a cursor (acked, dead-lettered, dropped or auto-acked)."),
        "popMessages": about(int(), "Messages delivered."),
        "ingestedPerSecond": num(), "processedPerSecond": num(), "popPerSecond": num(),
        "ackFailed": about(int(), "Nacks."),
        "dlqCount": about(int(), "Dead letters filed."),
        "expired": about(int(), "Messages deleted by retention or eviction."),
    });
    for k in [
        "avgLagMs",
        "maxLagMs",
        "avgEventLoopLagMs",
        "maxEventLoopLagMs",
        "minFreeSlots",
        "dbErrors",
        "queenCpuUserPct",
        "queenCpuSysPct",
        "queenRssMb",
        "dbPoolActive",
        "dbPoolIdle",
        "dbPoolSize",
    ] {
        props[k] = always_null("per-bucket figure of this kind");
    }
    all_required(props)
}

pub(super) fn entries() -> Vec<Entry> {
    let nulls = |keys: &[&str]| {
        let props: serde_json::Map<String, Value> = keys
            .iter()
            .map(|k| (k.to_string(), always_null("such counter")))
            .collect();
        obj(keys, Value::Object(props))
    };
    let status = obj(
        &[
            "timeRange",
            "bucketMinutes",
            "pointCount",
            "throughput",
            "depth",
            "queues",
            "messages",
            "leases",
            "deadLetterQueue",
            "workers",
            "errors",
            "statsAge",
        ],
        json!({
            "timeRange": obj(&["from", "to"], json!({ "from": ts(), "to": ts() })),
            "bucketMinutes": about(int(), "Up to 1 h: 1; 6 h: 5; 24 h: 15; 7 d: 60; else 360."),
            "pointCount": int(),
            "throughput": about(array(point()), "Newest bucket first."),
            "depth": about(
                json!({"type": ["array", "null"], "items": obj(
                    &["timestamp", "pending", "processing", "deadLetter", "lagMessages", "maxTimeLagSeconds"],
                    json!({
                        "timestamp": ts(),
                        "pending": about(int(), "Messages after each partition's furthest-behind cursor."),
                        "processing": int(), "deadLetter": int(),
                        "lagMessages": about(int(), "Messages behind every (partition, consumer group) cursor, summed."),
                        "maxTimeLagSeconds": about(num(), "Age of the oldest message a cursor has not read."),
                    }),
                )}),
                "A Regent extension: the tenant's backlog as the stats rounds counted it, newest bucket first, each bucket's latest minute with a round. `null` when filtered by queue, namespace or task: it is kept per tenant.",
            ),
            "queues": array(obj(&["id", "name", "namespace", "task", "partitions", "totalConsumed"], json!({
                "id": uuid(), "name": string(), "namespace": string(), "task": string(),
                "partitions": int(), "totalConsumed": about(int(), "Passed by a cursor in the window."),
            }))),
            "messages": obj(&["total", "pending", "processing", "completed", "failed", "deadLetter", "requests", "batchEfficiency"], json!({
                "total": int(), "pending": int(), "processing": int(), "completed": int(),
                "failed": int(), "deadLetter": int(),
                "requests": nulls(&["push", "pop", "ack"]),
                "batchEfficiency": nulls(&["push", "pop", "ack"]),
            })),
            "leases": obj(&["active", "partitionsWithLeases", "totalBatchSize", "totalAcked"], json!({
                "active": int(), "partitionsWithLeases": int(),
                "totalBatchSize": about(int(), "Messages under live leases."),
                "totalAcked": about(int(), "Passed by a cursor in the window."),
            })),
            "deadLetterQueue": obj(&["totalMessages", "affectedPartitions", "topErrors"], json!({
                "totalMessages": int(), "affectedPartitions": int(),
                "topErrors": about(array(obj(&["error", "count"], json!({ "error": string(), "count": int() }))), "The five commonest reasons."),
            })),
            "workers": about(json!({"type": "array", "maxItems": 0}), "Always empty: Regent has no workers."),
            "errors": obj(&["dbErrors", "ackFailed", "dlqMessages"], json!({
                "dbErrors": always_null("database error counter"), "ackFailed": int(), "dlqMessages": int(),
            })),
            "statsAge": about(int(), "Seconds since a stats round counted these figures (`STATS_INTERVAL_MS`); -1 before the first."),
        }),
    );
    let six = r("Counts");
    let mut totals = obj(
        &[
            "total",
            "pending",
            "processing",
            "completed",
            "failed",
            "deadLetter",
            "messages",
        ],
        json!({
            "total": int(), "pending": int(), "processing": int(), "completed": int(),
            "failed": int(), "deadLetter": int(),
        }),
    );
    totals["properties"]["messages"] = six.clone();
    let detail = obj(
        &["queue", "partitions", "totals", "pagination", "statsAge"],
        json!({
            "queue": obj(&["id", "name", "namespace", "task", "priority", "createdAt", "config", "options"], json!({
                "options": about(json!({"type": "object"}), "A Regent extension: every option with its effective value, exactly as `POST /api/v1/configure` echoes them, so a client editing one option can send the others back unchanged."),
                "id": uuid(), "name": string(), "namespace": string(), "task": string(),
                "priority": int(), "createdAt": ts(),
                "config": obj(&["leaseTime", "retryLimit", "retryDelay", "ttl", "maxQueueSize", "deadLetterQueue"], json!({
                    "leaseTime": int(), "retryLimit": int(), "retryDelay": int(), "ttl": int(),
                    "maxQueueSize": about(int(), "`maxSize` of configure (Queen's name here)."),
                    "deadLetterQueue": about(json!({"type": "boolean"}), "Whether exhausted messages are dead-lettered (the tri-state decided)."),
                })),
            })),
            "partitions": array(obj(&["id", "name", "createdAt", "messages", "stats", "cursor", "lastActivity", "oldestMessage", "newestMessage"], json!({
                "id": uuid(), "name": string(), "createdAt": ts(),
                "messages": six, "stats": six,
                "cursor": obj(&["totalConsumed", "batchesConsumed"], json!({
                    "totalConsumed": int(), "batchesConsumed": always_null("batch counter"),
                })),
                "lastActivity": ts_or_null(), "oldestMessage": ts_or_null(), "newestMessage": ts_or_null(),
            }))),
            "totals": totals,
            "pagination": r("PartitionPage"),
            "statsAge": about(int(), "Seconds since a stats round counted these figures (`STATS_INTERVAL_MS`); -1 before the first."),
        }),
    );
    vec![
        window(Entry::new("status", Method::GET, "/api/v1/status", "Throughput, leases and dead letters over a window")
            .about(r#"
Over `from`/`to` (the last hour), optionally one queue, namespace or task: `throughput` per bucket, newest first, with each point's pushed, delivered, processed, nacked, dead-lettered and expired counts and their per-second rates; `depth`, the tenant's backlog per bucket as the stats rounds counted it (a Regent extension; `null` when filtered); each queue's `totalConsumed`; `messages` now; `leases` now; `deadLetterQueue` with the five commonest reasons. Python: `Admin.get_status(**params)`.
"#), "1 h")
            .reply(200, "The status.", status),
        Entry::new("status", Method::GET, "/api/v1/status/queues", "A page of queues")
            .about(r#"
Queues with partition and message counts and `pagination`. `from`/`to` are accepted and ignored, as in Queen. Python: `Admin.get_queue_stats(**params)`.
"#)
            .query("namespace", string(), "Only this namespace.")
            .query("task", string(), "Only this task.")
            .query("limit", int_param(100, Some(1), Some(1000)), "Page size.")
            .query("offset", int_param(0, Some(0), None), "Queues to skip.")
            .reply(200, "The page.", obj(&["queues", "pagination"], json!({
                "queues": array(r("QueueSummary")), "pagination": r("Pagination"),
            }))),
        Entry::new("status", Method::GET, "/api/v1/status/queues/{queue}", "One queue's page")
            .about(r#"
The queue with its `config` (note `maxQueueSize`, where configure says `maxSize`), a page of its partitions (by name; `limit`, `offset`) with each one's `messages`/`stats` counted now, `cursor.totalConsumed`, oldest and newest message, and `totals` over every partition from the stats snapshot (`statsAge`). Queen 0.15 lists every partition; Regent pages them. Unknown queue: 404 (Queen 0.15: 200 with the error body). Python: `Admin.get_queue_detail(name)`.
"#)
            .query("limit", int_param(1000, Some(1), Some(10_000)), "Partitions per page.")
            .query("offset", int_param(0, Some(0), None), "Partitions to skip.")
            .fails(404, "`Queue not found`.")
            .reply(200, "The queue.", detail),
        Entry::new("status", Method::GET, "/api/v1/status/queues/{queue}/messages", "A queue's messages, newest first")
            .about(r#"
A top-level array (not an object) of the queue's messages, newest first, with queue mode's status of each. Real paging and a real `[]` (Queen 0.15 ignores `limit`, breaks on `offset` > 0 and sends an empty body for `[]`). No Python client method.
"#)
            .query("limit", int_param(50, Some(1), Some(1000)), "Page size.")
            .query("offset", int_param(0, Some(0), None), "Messages to skip.")
            .reply(200, "The messages.", array(obj(
                &["id", "transactionId", "partitionId", "queuePath", "queue", "partition", "status", "createdAt"],
                json!({
                    "id": uuid(), "transactionId": string(), "partitionId": uuid(),
                    "queuePath": string(), "queue": string(), "partition": string(),
                    "status": {"enum": ["pending", "processing", "completed", "dead_letter"]},
                    "createdAt": ts(),
                }),
            ))),
        window(Entry::new("status", Method::GET, "/api/v1/status/analytics", "Messages pushed per interval")
            .about(r#"
`dataPoints` of messages pushed per `interval` over `from`/`to` (the last 24 h), from the per-minute series. Python: `Admin.get_analytics(**params)`.
"#), "24 h")
            .query("interval", json!({"enum": ["minute", "hour", "day"], "default": "hour"}), "Bucket width; any other value is `hour`.")
            .reply(200, "The series.", obj(&["dataPoints", "interval", "from", "to"], json!({
                "dataPoints": array(obj(&["timestamp", "messages"], json!({ "timestamp": ts(), "messages": int() }))),
                "interval": {"enum": ["minute", "hour", "day"]},
                "from": ts(), "to": ts(),
            }))),
    ]
}
