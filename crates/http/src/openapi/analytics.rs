//! The time series (spec §13.7): the queue series per queue and bucket, and the fleet's own
//! samples and PostgreSQL's statistics (admin: they span every tenant and name hosts).

use axum::http::Method;
use serde_json::{json, Value};

use super::schemas::{about, array, boolean, int, nullable, num, obj, string, ts};
use super::Entry;

pub(super) const TAGS: &[(&str, &str)] = &[
    (
        "analytics",
        "Time series: the per-minute queue series per queue and bucket and the parked pops per queue and broker (the caller's tenant's queues), and the fleet's samples and PostgreSQL's statistics (admin).",
    ),
];

fn window(e: Entry, default: &str) -> Entry {
    e.query(
        "from",
        json!({"type": "string", "format": "date-time"}),
        &format!("Start of the window; default: {default} before `to`."),
    )
    .query(
        "to",
        json!({"type": "string", "format": "date-time"}),
        "End of the window; default now.",
    )
    .fails(
        400,
        "`from must be before to`, `from must be an ISO-8601 timestamp`, `to must be an ISO-8601 timestamp`.",
    )
}

fn queue_filters(e: Entry) -> Entry {
    e.query("queue", string(), "Only this queue.")
        .query("namespace", string(), "Only this namespace's queues.")
        .query("task", string(), "Only this task's queues.")
}

fn fleet_filters(e: Entry) -> Entry {
    e.query("hostname", string(), "Only brokers on this host.")
        .query(
            "workerId",
            string(),
            "Only this broker (its id, new at every start).",
        )
}

fn time_range() -> Value {
    obj(&["from", "to"], json!({ "from": ts(), "to": ts() }))
}

fn ops(extra: &[&str]) -> Value {
    let mut required = vec!["push", "pop", "ack", "nack", "dlq", "expired"];
    required.extend_from_slice(extra);
    obj(
        &required,
        json!({
            "timestamp": ts(), "queue": string(),
            "push": about(int(), "Messages pushed."),
            "pop": about(int(), "Messages delivered."),
            "ack": about(int(), "Messages passed by a cursor."),
            "nack": about(int(), "Nacks."),
            "dlq": about(int(), "Dead letters filed."),
            "expired": about(int(), "Deleted by retention or eviction."),
        }),
    )
}

fn loose(what: &str) -> Value {
    about(json!({"type": "object"}), what)
}

fn queue_entries() -> Vec<Entry> {
    let per_rule = || nullable(int());
    vec![
        window(queue_filters(Entry::new("analytics", Method::GET, "/api/v1/analytics/queue-ops", "Operations per queue and bucket")), "1 h")
            .about("Per queue and bucket over the window: messages pushed, delivered, passed by a cursor, nacked, dead-lettered and expired (`series`), and each queue's totals (`queues`); the window's 100 busiest queues at most.")
            .reply(200, "The series.", obj(&["timeRange", "bucketMinutes", "series", "queues"], json!({
                "timeRange": time_range(), "bucketMinutes": int(),
                "series": array(ops(&["timestamp", "queue"])),
                "queues": array(ops(&["queue"])),
            }))),
        window(queue_filters(Entry::new("analytics", Method::GET, "/api/v1/analytics/queue-lag", "Delivery waits per queue and bucket")), "1 h")
            .about("A top-level array, per queue and bucket with deliveries: how many messages were delivered (`popCount`) and how long they had waited since their append (`avgLagMs`, `maxLagMs`); the window's 100 busiest queues at most.")
            .reply(200, "The waits.", array(obj(&["queueName", "popCount", "avgLagMs", "maxLagMs", "bucketTime"], json!({
                "queueName": string(), "popCount": int(), "avgLagMs": num(), "maxLagMs": int(),
                "bucketTime": ts(),
            })))),
        window(Entry::new("analytics", Method::GET, "/api/v1/analytics/queue-parked-replicas", "Parked long-polls per queue and broker"), "1 h")
            .query("queue", string(), "Only this queue.")
            .about("The caller's tenant's long-polling pops parked per queue, broker (replica) and bucket, from the brokers' samples (every `METRICS_SAMPLE_INTERVAL`; each names the 100 queues with the most parked): `parkedCount` is the average over the broker's samples of the bucket (a sample without the queue counts 0), `maxParkedCount` the most in one sample. A pop counts from its first empty attempt to its answer; pops across a namespace or task are not counted. `replicas` lists the brokers of the series. `from` after `to` is a 400 `from must not be after to`.")
            .fails(400, "`from must not be after to`, `from must be an ISO-8601 timestamp`, `to must be an ISO-8601 timestamp`.")
            .reply(200, "The series.", obj(&["timeRange", "bucketMinutes", "series", "replicas"], json!({
                "timeRange": time_range(), "bucketMinutes": int(),
                "series": array(obj(&["bucket", "queueName", "hostname", "port", "workerId", "parkedCount", "maxParkedCount"], json!({
                    "bucket": ts(), "queueName": string(), "hostname": string(), "port": int(),
                    "workerId": about(string(), "The broker's id, new at every start."),
                    "parkedCount": about(num(), "Average parked pops over the broker's samples of the bucket."),
                    "maxParkedCount": about(int(), "The most parked in one sample."),
                }))),
                "replicas": array(obj(&["hostname", "port", "workerId"], json!({
                    "hostname": string(), "port": int(), "workerId": string(),
                }))),
            }))),
        window(queue_filters(Entry::new("analytics", Method::GET, "/api/v1/analytics/retention", "Messages deleted by retention")), "24 h")
            .about("Messages deleted by retention per bucket (`expired`). Regent deletes by whichever rule is due first and does not count the rules apart: Queen's per-rule keys are null.")
            .reply(200, "The series.", obj(&["timeRange", "bucketMinutes", "series", "totals"], json!({
                "timeRange": time_range(), "bucketMinutes": int(),
                "series": array(obj(&["timestamp", "expired"], json!({
                    "timestamp": ts(), "expired": int(), "retention": per_rule(),
                    "completed_retention": per_rule(), "max_wait_time_eviction": per_rule(),
                }))),
                "totals": obj(&["expired"], json!({
                    "expired": int(), "retention": per_rule(),
                    "completed_retention": per_rule(), "max_wait_time_eviction": per_rule(),
                })),
            }))),
    ]
}

fn fleet_entries() -> Vec<Entry> {
    vec![
        window(fleet_filters(Entry::new("analytics", Method::GET, "/api/v1/analytics/system-metrics", "The fleet's system metrics")), "1 h")
            .about("Every broker's samples over the window, bucketed by its length, per broker (`replicas`): CPU, memory, the database pool and the broker's counters (README, \"Fleet metrics\", names each key). Admin: it names hosts and spans every tenant. Python: `Admin.get_system_metrics(**params)`.")
            .reply(200, "The fleet's series.", obj(&["timeRange", "replicas", "replicaCount", "bucketMinutes", "pointCount"], json!({
                "timeRange": time_range(), "replicaCount": int(), "bucketMinutes": int(), "pointCount": int(),
                "replicas": array(obj(&["hostname", "port", "workerId", "timeSeries"], json!({
                    "hostname": string(), "port": int(), "workerId": string(),
                    "timeSeries": array(obj(&["timestamp", "sampleCount", "metrics"], json!({
                        "timestamp": ts(), "sampleCount": int(), "metrics": loose("CPU, memory, database pool and counters of the bucket."),
                    }))),
                }))),
            }))),
        window(fleet_filters(Entry::new("analytics", Method::GET, "/api/v1/analytics/worker-metrics", "The fleet's request and message figures")), "1 h")
            .about("The fleet's requests, messages, CPU and pool per bucket (`timeSeries`, newest first), the brokers seen lately (`workers`), the caller's tenant's queues (`queues`) and the window's totals (`summary`). Fields of Queen's with no Regent meaning are null. Admin. Python: `Admin.get_worker_metrics(**params)`.")
            .reply(200, "The figures.", obj(&["timeRange", "bucketMinutes", "pointCount", "timeSeries", "workers", "queues", "summary"], json!({
                "timeRange": time_range(), "bucketMinutes": int(), "pointCount": int(),
                "timeSeries": array(loose("One bucket's figures.")),
                "workers": array(loose("A broker seen lately.")),
                "queues": array(loose("A queue of the caller's tenant.")),
                "summary": loose("The window's totals."),
            }))),
        Entry::new("analytics", Method::GET, "/api/v1/analytics/postgres-stats", "PostgreSQL's statistics")
            .about("From PostgreSQL's statistics views: cache hit ratios, dead tuples, HOT updates, statements running over 1 s (without their text, which can hold another tenant's payload), autovacuum, buffer settings and use, table sizes; every list at most 20. Admin. Python: `Admin.get_postgres_stats()`.")
            .reply(200, "The statistics.", obj(&["timestamp", "database", "databaseCache", "tableCache", "indexCache", "cacheSummary", "deadTuples", "hotUpdates", "activeQueries", "autovacuumStatus", "bufferConfig", "bufferUsage", "tableSizes"], json!({
                "timestamp": ts(), "database": loose("The database's size and counters."),
                "databaseCache": loose("Its cache hit ratio."), "tableCache": array(loose("A table's cache hits.")),
                "indexCache": array(loose("An index's cache hits.")), "cacheSummary": loose("Hit ratios in all."),
                "deadTuples": array(loose("A table's dead tuples.")), "hotUpdates": array(loose("A table's HOT updates.")),
                "activeQueries": array(loose("A statement running over 1 s: its kind, never its text.")),
                "autovacuumStatus": array(loose("A table past its autovacuum threshold.")),
                "bufferConfig": loose("Buffer settings."), "bufferUsage": array(loose("Buffer use by relation (needs pg_buffercache).")),
                "bufferUsageAvailable": boolean(), "tableSizes": array(loose("A table's sizes.")),
            }))),
        Entry::new("analytics", Method::GET, "/api/v1/status/buffers", "Pushes waiting in the push buffer")
            .about("Regent has no file buffer: `pending` is the caller's tenant's pushes held in the push buffer under push maintenance (null with `dbHealthy` false when the database does not answer).")
            .reply(200, "The buffer.", obj(&["pending", "failed", "dbHealthy", "worker"], json!({
                "pending": nullable(int()), "failed": int(), "dbHealthy": boolean(), "worker": int(),
            }))),
    ]
}

pub(super) fn entries() -> Vec<Entry> {
    queue_entries().into_iter().chain(fleet_entries()).collect()
}
