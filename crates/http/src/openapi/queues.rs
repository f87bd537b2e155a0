//! Queues: configure, and the resources routes (spec §3, §9).

use axum::http::Method;
use serde_json::json;

use super::schemas::{
    about, array, int, int_param, nullable, num, obj, r, string, ts, ts_or_null, uuid,
};
use super::Entry;
use crate::push::MAX_NAME_BYTES;

pub(super) const TAGS: &[(&str, &str)] = &[(
    "queues",
    "Queues and their partitions: configuration, counts, deletion, clearing.",
)];

pub(super) fn entries() -> Vec<Entry> {
    let configure = obj(
        &["queue"],
        json!({
            "queue": about(json!({"type": "string", "maxLength": MAX_NAME_BYTES}), "The queue; `\"\"` is a name like any other (as in Queen 0.15)."),
            "namespace": about(json!({"type": ["string", "null"]}), "A non-string (null included) is stored as `\"\"`."),
            "task": about(json!({"type": ["string", "null"]}), "As `namespace`."),
            "options": r("QueueOptionsIn"),
        }),
    );
    let configured = obj(
        &[
            "configured",
            "queueId",
            "partitionId",
            "queue",
            "namespace",
            "task",
            "createdAt",
            "options",
        ],
        json!({
            "configured": {"const": true},
            "queueId": uuid(),
            "partitionId": about(uuid(), "The `Default` partition, created if missing."),
            "queue": string(), "namespace": string(), "task": string(),
            "createdAt": ts(),
            "options": r("QueueOptions"),
        }),
    );
    let rollup = |key: &str| {
        obj(
            &[key, "queues", "partitions", "messages"],
            json!({
                key: string(), "queues": int(), "partitions": int(),
                "messages": obj(&["total", "pending"], json!({ "total": int(), "pending": int() })),
            }),
        )
    };
    let partition = obj(
        &[
            "id",
            "name",
            "createdAt",
            "stats",
            "oldestMessage",
            "newestMessage",
        ],
        json!({
            "id": uuid(), "name": string(), "createdAt": ts(),
            "stats": r("Counts"),
            "oldestMessage": ts_or_null(), "newestMessage": ts_or_null(),
        }),
    );
    vec![
        Entry::new("queues", Method::POST, "/api/v1/configure", "Create a queue or replace its configuration")
            .about(r#"
Creates the queue (and its `Default` partition) or replaces its WHOLE configuration: an option left out falls back to its default (as in Queen 0.15; not a patch). Messages and cursors are not touched. The echo gives every option's effective value, with the dead-letter flags as stored (`null` = never set; dead-lettering is off only when both are explicitly false). Queen differs: a type error is a 400 naming the field (Queen 0.15 answers 200 with the database's error); `encryptionEnabled` without `QUEEN_ENCRYPTION_KEY` is a 400 rather than stored in the clear. Python: `queue(name).config(...).create()` (`QueueBuilder.create`).
"#)
            .body(true, "The queue and its options.", configure)
            .fails(400, "`queue is required` (missing or not a string); `options must be an object`; `<option> must be an integer` / `must be a boolean` / `must not be negative`; `queue must be at most 512 bytes`; encryption asked without a key; `Empty request body`, `Invalid JSON: …`.")
            .reply(200, "The queue as configured.", configured),
        Entry::new("queues", Method::GET, "/api/v1/resources/overview", "The tenant at a glance")
            .about(r#"
The tenant's queues, partitions, namespaces, tasks and message counts, the spread of its cursors' time lag (seconds since the first unread message was appended) and offset lag, and `throughput` over the last 5 minutes of the per-minute series. The counts come from the stats snapshot one broker of the fleet refreshes every `STATS_INTERVAL_MS` (10 s), as Queen 0.15 reads its stats table: `statsAge` says how old they are (-1 before the first round); `POST /api/v1/stats/refresh` counts now. With several queues, the lag median is the cursor-weighted median of the queues' medians. Python: `Admin.get_overview()`.
"#)
            .reply(200, "The overview.", obj(
                &["queues", "partitions", "namespaces", "tasks", "messages", "lag", "throughput", "timestamp", "statsAge"],
                json!({
                    "queues": int(), "partitions": int(), "namespaces": int(), "tasks": int(),
                    "messages": obj(&["total", "pending", "processing", "completed", "failed", "deadLetter"], json!({
                        "total": int(), "pending": int(), "processing": int(), "completed": int(),
                        "failed": int(), "deadLetter": int(),
                    })),
                    "lag": obj(&["time", "offset"], json!({
                        "time": about(r("Spread"), "Seconds."), "offset": about(r("Spread"), "Messages."),
                    })),
                    "throughput": obj(&["ingestedPerSecond", "processedPerSecond"], json!({
                        "ingestedPerSecond": about(num(), "Pushed."),
                        "processedPerSecond": about(num(), "Passed by a cursor."),
                    })),
                    "timestamp": ts(),
                    "statsAge": about(int(), "Seconds since a stats round counted these figures (`STATS_INTERVAL_MS`); -1 before the first."),
                }),
            )),
        Entry::new("queues", Method::GET, "/api/v1/resources/queues", "List queues")
            .about(r#"
Queues with partition and message counts (from the stats snapshot, as the overview), newest first. Queen 0.15 ignores the query; Regent honours `search`, `limit` and `offset` (the spec's recommendation). Python: `Admin.list_queues(**params)`.
"#)
            .query("search", string(), "Only queues whose name contains this.")
            .query("limit", int_param(1000, Some(1), Some(10_000)), "Page size.")
            .query("offset", int_param(0, Some(0), None), "Queues to skip.")
            .reply(200, "The queues.", obj(&["queues"], json!({ "queues": array(r("QueueSummary")) }))),
        Entry::new("queues", Method::GET, "/api/v1/resources/queues/{queue}", "One queue with each partition's counts")
            .about(r#"
The queue and a page of its partitions (by name; `limit`, `offset`), each with its `stats` counted now (`total`, `pending`, `processing` under a live lease, `completed`, `failed` = 1 while a nacked message waits for its retry, `deadLetter`; each the largest over consumer groups) and its oldest and newest message times; `totals` over every partition come from the stats snapshot (`statsAge`). Queen 0.15 lists every partition; Regent pages them so the answer stays bounded at 100,000 partitions (`pagination.total` says how many there are). Unknown queue: 404 (Queen 0.15: 200 with the error body). Python: `Admin.get_queue(name)`.
"#)
            .query("limit", int_param(1000, Some(1), Some(10_000)), "Partitions per page.")
            .query("offset", int_param(0, Some(0), None), "Partitions to skip.")
            .fails(404, "`Queue not found`.")
            .reply(200, "The queue.", obj(
                &["id", "name", "namespace", "task", "createdAt", "partitions", "totals", "pagination", "statsAge"],
                json!({
                    "id": uuid(), "name": string(), "namespace": string(), "task": string(),
                    "createdAt": ts(), "partitions": array(partition), "totals": r("Counts"),
                    "pagination": r("PartitionPage"), "statsAge": about(int(), "Seconds since a stats round counted these figures (`STATS_INTERVAL_MS`); -1 before the first."),
                }),
            )),
        Entry::new("queues", Method::DELETE, "/api/v1/resources/queues/{queue}", "Delete a queue")
            .about(r#"
Deletes the queue with its partitions, log, cursors, leases, buffered pushes, traces and dead letters; its transaction-index entries match nothing afterwards and expire with the purge clock. Idempotent: `existed` says whether there was one. Python: `queue(name).delete()` (`QueueBuilder.delete`).
"#)
            .reply(200, "Deleted (or never there).", obj(&["deleted", "queue", "existed"], json!({
                "deleted": {"const": true}, "queue": string(), "existed": {"type": "boolean"},
            }))),
        Entry::new("queues", Method::GET, "/api/v1/resources/namespaces", "Namespaces with their counts")
            .about(r#"
A page of the namespaces, each with its `queues`, `partitions` and `messages` (`total`, `pending`, from the stats snapshot), by name; queues without one are not listed. Python: `Admin.get_namespaces()`.
"#)
            .query("limit", int_param(1000, Some(1), Some(10_000)), "Page size.")
            .query("offset", int_param(0, Some(0), None), "Namespaces to skip.")
            .reply(200, "The namespaces.", obj(&["namespaces"], json!({ "namespaces": array(rollup("namespace")) }))),
        Entry::new("queues", Method::GET, "/api/v1/resources/tasks", "Tasks with their counts")
            .about("As the namespaces, by task. Python: `Admin.get_tasks()`.")
            .query("limit", int_param(1000, Some(1), Some(10_000)), "Page size.")
            .query("offset", int_param(0, Some(0), None), "Tasks to skip.")
            .reply(200, "The tasks.", obj(&["tasks"], json!({ "tasks": array(rollup("task")) }))),
        Entry::new("queues", Method::GET, "/api/v1/resources/queues/{queue}/depth", "A queue's backlog")
            .about(r#"
The backlog of `group` (or, without one, of each partition's furthest-behind cursor): `pending`, `partitionsPending` and the 100 partitions with the most pending, most first, from the stats snapshot (a group no round has seen on the queue is counted now, `statsAge` 0). Regent does not conflate, so `conflation` is false and `effectivePending` = `pending`. A 1.x-broker extension (absent from Queen 0.15). Python: `Admin.get_queue_depth(name, group)`.
"#)
            .query("group", string(), "The consumer group; absent: the furthest-behind cursor of each partition.")
            .fails(404, "`Queue not found`.")
            .reply(200, "The backlog.", obj(
                &["queue", "group", "pending", "partitionsPending", "conflation", "effectivePending", "partitions", "statsAge"],
                json!({
                    "statsAge": about(int(), "Seconds since a stats round counted these figures (`STATS_INTERVAL_MS`); -1 before the first."),
                    "queue": string(), "group": {"type": ["string", "null"]},
                    "pending": int(), "partitionsPending": int(),
                    "conflation": {"const": false}, "effectivePending": int(),
                    "partitions": array(obj(&["partition", "pending"], json!({ "partition": string(), "pending": int() }))),
                }),
            )),
        Entry::new("queues", Method::GET, "/api/v1/resources/partitions", "A page of partitions")
            .about(r#"
Partitions by queue and name, each with `messages` and `lastActivity` (its last push), and `total`. A 1.x-broker extension with no reference shape. Python: `Admin.get_partitions(**params)`.
"#)
            .query("queue", string(), "Only this queue's partitions.")
            .query("limit", int_param(100, Some(1), Some(1000)), "Page size.")
            .query("offset", int_param(0, Some(0), None), "Partitions to skip.")
            .reply(200, "The page.", obj(&["partitions", "total", "pagination"], json!({
                "partitions": array(obj(&["id", "name", "queue", "createdAt", "lastActivity", "messages"], json!({
                    "id": uuid(), "name": string(), "queue": string(), "createdAt": ts(),
                    "lastActivity": ts_or_null(), "messages": r("MessageCounts"),
                }))),
                "total": int(),
                "pagination": r("Pagination"),
            }))),
        Entry::new("queues", Method::DELETE, "/api/v1/queues/{queue}/clear", "Delete every message of a queue")
            .about(r#"
Deletes every message of the queue (or of `partition`): its segments go, its cursors move to the end, their leases released and retry counts reset. Dead letters and the transaction index stay: a retried push of a cleared message is answered `duplicate` without a `message_id`. A 1.x-broker extension (admin). Python: `Admin.clear_queue(name, partition)`.
"#)
            .query("partition", string(), "Only this partition.")
            .fails(404, "`Queue not found`, `Partition not found`.")
            .reply(200, "Cleared.", obj(&["success", "queue", "partition", "deleted"], json!({
                "success": {"const": true}, "queue": string(),
                "partition": nullable(string()),
                "deleted": about(int(), "Messages deleted."),
            }))),
    ]
}
