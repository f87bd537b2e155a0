//! Consumer groups (spec §14.1–14.8).

use axum::http::Method;
use serde_json::json;

use super::schemas::{
    about, array, flag_param, int, int_param, num, obj, r, string, ts, ts_or_null, uuid,
};
use super::Entry;

pub(super) const TAGS: &[(&str, &str)] = &[(
    "consumer groups",
    "What each group is doing on each queue; seeking its cursors (skip or replay); deleting it.",
)];

pub(super) fn entries() -> Vec<Entry> {
    let deleted = |queue: bool| {
        let mut props = json!({
            "success": {"const": true}, "consumerGroup": string(),
            "deletedPartitions": about(int(), "Cursors deleted."),
            "metadataDeleted": about(json!({"type": "boolean"}), "Whether its stored start points were deleted (`deleteMetadata`)."),
        });
        let mut required = vec![
            "success",
            "consumerGroup",
            "deletedPartitions",
            "metadataDeleted",
        ];
        if queue {
            props["queueName"] = string();
            required.push("queueName");
        }
        obj(&required, props)
    };
    let delete_metadata = "Also forget the group's stored start point (its next pop starts it afresh); only `true` or `1` are true, so anything else sent keeps it.";
    vec![
        Entry::new("consumer groups", Method::GET, "/api/v1/consumer-groups", "Consumer groups on each queue")
            .about(r#"
A top-level array with one element per (group, queue) the group has cursors on, `__QUEUE_MODE__` included, from the stats snapshot, a page at a time (by group, then queue): `members` (partitions), `partitionsWithLag`, `totalLag` (messages after the cursors; Queen 0.15 always sends null), `maxTimeLag` (seconds since the last push to a partition it has not read to the end), `state` (`Lagging` past 300 s, else `Stable` while it consumes, else `Dead`) and its subscription. `[]` with no groups (Queen 0.15 sends an empty body). Python: `Admin.list_consumer_groups()`.
"#)
            .query("queue", string(), "Only this queue's groups (a Regent extension).")
            .query("search", string(), "Only groups whose name contains this (a Regent extension).")
            .query("limit", int_param(1000, Some(1), Some(10_000)), "Page size.")
            .query("offset", int_param(0, Some(0), None), "(group, queue) pairs to skip.")
            .reply(200, "The groups.", array(obj(
                &["name", "topics", "queueName", "members", "partitionsWithLag", "totalLag", "maxTimeLag", "state",
                  "subscriptionMode", "subscriptionTimestamp", "subscriptionCreatedAt"],
                json!({
                    "name": string(), "topics": array(string()), "queueName": string(),
                    "members": int(), "partitionsWithLag": int(), "totalLag": int(), "maxTimeLag": int(),
                    "state": {"enum": ["Stable", "Lagging", "Dead"]},
                    "subscriptionMode": {"enum": ["new", null]},
                    "subscriptionTimestamp": ts_or_null(), "subscriptionCreatedAt": ts_or_null(),
                }),
            ))),
        Entry::new("consumer groups", Method::GET, "/api/v1/consumer-groups/lagging", "Cursors lagging past a threshold")
            .about(r#"
The cursors whose first unread message is older than `minLagSeconds`, longest first, in the route's snake_case, from the stats snapshot (which keeps each tenant's 1,000 oldest; the ages are computed when asked); `limit` and `offset` page it. A non-number is a 400 (Queen 0.15: 500). Python: `Admin.get_lagging_consumers()` (which sends 60).
"#)
            .query("minLagSeconds", json!({"type": "number", "minimum": 0, "default": 3600}), "The threshold in seconds.")
            .query("limit", int_param(1000, Some(1), Some(1000)), "Page size.")
            .query("offset", int_param(0, Some(0), None), "Cursors to skip.")
            .fails(400, "`minLagSeconds must be a non-negative number, got '<v>'`.")
            .reply(200, "The lagging cursors.", array(obj(
                &["consumer_group", "queue_name", "partition_name", "partition_id", "worker_id", "offset_lag",
                  "time_lag_seconds", "lag_hours", "oldest_unconsumed_at", "last_consumed_at"],
                json!({
                    "consumer_group": string(), "queue_name": string(), "partition_name": string(),
                    "partition_id": uuid(), "worker_id": {"type": "null"}, "offset_lag": int(),
                    "time_lag_seconds": int(), "lag_hours": num(),
                    "oldest_unconsumed_at": ts(), "last_consumed_at": {"type": "null"},
                }),
            ))),
        Entry::new("consumer groups", Method::GET, "/api/v1/consumer-groups/{group}", "One group's cursors, by queue")
            .about(r#"
A page of the group's cursors (`limit`, `offset`; pages in the order partitions were created, so a page is read off the cursors' index; within a page by queue, then partition), counted now, as an object keyed by queue name: per partition `totalConsumed`, `offsetLag`, `timeLagSeconds` (since its first unread message was appended), `leaseActive`. Regent keeps no worker ids or consumption times (`workerId`, `lastConsumedAt` null). `{}` for an unknown group. Python: `Admin.get_consumer_group(name)`.
"#)
            .query("limit", int_param(1000, Some(1), Some(10_000)), "Cursors per page.")
            .query("offset", int_param(0, Some(0), None), "Cursors to skip.")
            .reply(200, "The cursors by queue.", json!({
                "type": "object",
                "additionalProperties": obj(&["partitions"], json!({
                    "partitions": array(obj(
                        &["partition", "workerId", "lastConsumedAt", "totalConsumed", "offsetLag", "timeLagSeconds", "leaseActive"],
                        json!({
                            "partition": string(), "workerId": {"type": "null"}, "lastConsumedAt": {"type": "null"},
                            "totalConsumed": int(), "offsetLag": int(), "timeLagSeconds": int(),
                            "leaseActive": {"type": "boolean"},
                        }),
                    )),
                })),
            })),
        Entry::new("consumer groups", Method::DELETE, "/api/v1/consumer-groups/{group}", "Delete a group on every queue")
            .about(r#"
The group's cursors and leases on every queue, and (unless `deleteMetadata` says otherwise) its stored start points; its dead letters stay. Idempotent. Python: `queen.delete_consumer_group(group, delete_metadata)`.
"#)
            .query("deleteMetadata", flag_param(true), delete_metadata)
            .reply(200, "Deleted.", deleted(false)),
        Entry::new("consumer groups", Method::POST, "/api/v1/consumer-groups/{group}/subscription", "Set a group's start instant")
            .about(r#"
The group's start instant on every queue it has joined, for the partitions it meets from then on (new partitions start after it); cursors it already has stay where they are (seek moves those). `rowsUpdated` is the number of queues. Python: `queen.update_consumer_group_timestamp(group, timestamp)`.
"#)
            .body(true, "The instant.", obj(&["subscriptionTimestamp"], json!({
                "subscriptionTimestamp": json!({"type": "string", "format": "date-time"}),
            })))
            .fails(400, "`Missing subscriptionTimestamp in request body`, `subscriptionTimestamp must be an ISO-8601 timestamp, got …` (Queen 0.15: 500); `Invalid JSON: …`.")
            .reply(200, "Updated.", obj(&["success", "consumerGroup", "newTimestamp", "rowsUpdated"], json!({
                "success": {"const": true}, "consumerGroup": string(),
                "newTimestamp": about(string(), "As sent."), "rowsUpdated": int(),
            }))),
        Entry::new("consumer groups", Method::DELETE, "/api/v1/consumer-groups/{group}/queues/{queue}", "Delete a group on one queue")
            .about("As the delete on every queue, on one. Python: `Admin.delete_consumer_group_for_queue(group, queue, delete_metadata)`.")
            .query("deleteMetadata", flag_param(true), delete_metadata)
            .reply(200, "Deleted.", deleted(true)),
        Entry::new("consumer groups", Method::POST, "/api/v1/consumer-groups/{group}/queues/{queue}/seek", "Seek a group's cursors on a queue")
            .about(r#"
Moves the group's cursor on every partition of the queue it has read: `{"toEnd": true}` skips the backlog, `{"timestamp": "<ISO-8601>"}` replays everything appended after that instant (`toEnd` wins when both are sent). Their leases are released (acks under them are then refused) and the group's parked pops are woken. A group that never popped is left to its subscription. Python: `Admin.seek_consumer_group(group, queue, options)`.
"#)
            .body(true, "Where to.", json!({
                "type": "object",
                "properties": {
                    "toEnd": {"type": "boolean"},
                    "timestamp": {"type": "string", "format": "date-time"},
                },
            }))
            .fails(400, "`Must specify either 'toEnd': true or 'timestamp'` (an empty body too), `timestamp must be an ISO-8601 timestamp, got …`; `Invalid JSON: …`.")
            .fails(404, "`Queue not found`.")
            .reply(200, "Moved.", obj(&["success", "consumerGroup", "queueName", "seekToEnd", "targetTimestamp", "partitionsUpdated"], json!({
                "success": {"const": true}, "consumerGroup": string(), "queueName": string(),
                "seekToEnd": {"type": "boolean"}, "targetTimestamp": ts_or_null(), "partitionsUpdated": int(),
            }))),
        Entry::new("consumer groups", Method::POST, "/api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek", "Seek one partition's cursor to its end")
            .about(r#"
One partition's cursor onto its newest message, its lease released. No body. Unknown queue or partition: 404 in the route's own shape (Queen 0.15: 200 with it). No Python client method.
"#)
            .reply(404, "`Partition not found`.", r("Failure"))
            .reply(200, "Moved.", obj(&["success", "consumerGroup", "queueName", "partitionName", "updated", "cursorMovedTo"], json!({
                "success": {"const": true}, "consumerGroup": string(), "queueName": string(),
                "partitionName": string(),
                "updated": about(json!({"type": "boolean"}), "The group had a cursor there."),
                "cursorMovedTo": about(ts_or_null(), "When the message the cursor is now on was appended."),
            }))),
    ]
}
