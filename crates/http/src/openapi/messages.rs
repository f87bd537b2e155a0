//! Single messages (spec §10).

use axum::http::Method;
use serde_json::{json, Value};

use super::schemas::{
    about, all_required, array, int, int_param, obj, r, string, ts, ts_or_null, uuid,
};
use super::Entry;

pub(super) const TAGS: &[(&str, &str)] = &[(
    "messages",
    "Single messages: the listing, one message, and what an operator does to one (delete, retry, move to the dead-letter queue).",
)];

const STATUS: &str = "`dead_letter` when a dead letter was filed for it; else as queue mode reads the partition: `completed` at or below its cursor, `processing` under its live lease, `pending` otherwise; with named groups only, `completed` once every one passed it.";

/// The fields the listing and the detail share.
fn common() -> Vec<(&'static str, Value)> {
    vec![
        ("id", uuid()),
        ("transactionId", string()),
        ("partitionId", uuid()),
        ("queuePath", about(string(), "`<queue>/<partition>`.")),
        ("queue", string()),
        ("partition", string()),
        ("namespace", string()),
        ("task", string()),
        (
            "status",
            about(
                json!({"enum": ["pending", "processing", "completed", "dead_letter"]}),
                STATUS,
            ),
        ),
        (
            "traceId",
            json!({"type": ["string", "null"], "format": "uuid"}),
        ),
        ("producerSub", json!({"type": ["string", "null"]})),
        ("createdAt", ts()),
        ("leaseExpiresAt", ts_or_null()),
    ]
}

fn with_common(extra: Vec<(&'static str, Value)>) -> Value {
    let all: Vec<(&str, Value)> = common().into_iter().chain(extra).collect();
    let required: Vec<&str> = all.iter().map(|(k, _)| *k).collect();
    let props: serde_json::Map<String, Value> =
        all.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    obj(&required, Value::Object(props))
}

pub(super) fn entries() -> Vec<Entry> {
    let listed = with_common(vec![
        (
            "queueStatus",
            about(
                json!({"enum": ["pending", "processing", "completed"]}),
                "Queue mode's view alone.",
            ),
        ),
        (
            "busStatus",
            obj(
                &["consumedBy", "totalGroups"],
                json!({ "consumedBy": int(), "totalGroups": int() }),
            ),
        ),
        ("queuePriority", int()),
    ]);
    let detail = with_common(vec![
        ("payload", about(json!({}), "The payload (the key is `payload` here, `data` on pop and the dead-letter listing).")),
        ("isEncrypted", about(json!({"type": "boolean"}), "The queue seals payloads at rest (shown opened).")),
        ("errorMessage", about(json!({"type": ["string", "null"]}), "From its dead letter, if one was filed.")),
        ("retryCount", json!({"type": ["integer", "null"]})),
        ("queueConfig", obj(&["leaseTime", "retryLimit", "priority"], json!({ "leaseTime": int(), "retryLimit": int(), "priority": int() }))),
        ("mode", r("MessageMode")),
        ("consumerGroups", array(obj(&["name", "consumed", "leaseExpiresAt"], json!({
            "name": string(), "consumed": {"type": "boolean"}, "leaseExpiresAt": ts_or_null(),
        })))),
    ]);
    let acted = |extra: Value| {
        let mut props = json!({
            "success": {"const": true}, "partitionId": string(), "transactionId": string(), "message": string(),
        });
        for (k, v) in extra.as_object().expect("an object") {
            props[k] = v.clone();
        }
        all_required(props)
    };
    let bad_pid = "`partitionId must be a UUID`.";
    vec![
        Entry::new("messages", Method::GET, "/api/v1/messages", "List messages, newest first")
            .about(r#"
The tenant's messages newest first across partitions, without payloads, each with its status computed from the cursors. Reads the tenant's partitions most recently pushed first (at most 2,048), each one's newest segments in the window. `mode` describes the first message's partition (`type` `none` for an empty page). Python: `Admin.list_messages(**params)`.
"#)
            .query("queue", string(), "Exact queue name.")
            .query("partition", string(), "Exact partition name.")
            .query("ns", string(), "Namespace (the key is `ns`, not `namespace`).")
            .query("task", string(), "Task.")
            .query("status", json!({"enum": ["pending", "processing", "completed", "dead_letter"]}), "On the computed status; another value matches nothing.")
            .query("from", json!({"type": "string", "format": "date-time"}), "Inclusive; default an hour ago.")
            .query("to", json!({"type": "string", "format": "date-time"}), "Rounded up to the end of its minute; default now.")
            .query("limit", int_param(200, Some(1), Some(1000)), "Page size.")
            .query("offset", int_param(0, Some(0), None), "Messages to skip.")
            .fails(400, "`from must be an ISO-8601 timestamp`, `to must be an ISO-8601 timestamp`.")
            .reply(200, "A page of messages.", obj(&["messages", "mode"], json!({
                "messages": array(listed),
                "mode": r("MessageMode"),
            }))),
        Entry::new("messages", Method::GET, "/api/v1/messages/{partition_id}/{transaction_id}", "One message")
            .about(r#"
The message with its payload, status, each consumer group's view (`consumed`, `leaseExpiresAt`), `errorMessage`/`retryCount` from its dead letter, `queueConfig` and `mode`. Found through the transaction index within its window, else by a search of the partition's newest 200 segments. Queen differs: 404 for an unknown message and 400 for a partition id that is not a UUID (Queen 0.15: 200 with an error body). Python: `Admin.get_message(partition_id, transaction_id)`.
"#)
            .fails(400, bad_pid)
            .fails(404, "`Message not found`.")
            .reply(200, "The message.", detail),
        Entry::new("messages", Method::DELETE, "/api/v1/messages/{partition_id}/{transaction_id}", "Delete a message")
            .about(r#"
Deletes the message: a tombstone every pop skips (no lease waits for a deleted message), its transaction id free to be pushed again, its traces gone. The log is never rewritten; counts include the message until a cursor passes it. 200 whether or not it was there, as in Queen (`success` says which). Python: `Admin.delete_message(partition_id, transaction_id)`.
"#)
            .fails(400, bad_pid)
            .reply(200, "Deleted (`success: true`), or not found (`success: false`, `Message not found`).", obj(
                &["success", "partitionId", "transactionId", "message"],
                json!({
                    "success": {"type": "boolean"}, "partitionId": string(), "transactionId": string(),
                    "message": {"enum": ["Message deleted successfully", "Message not found"]},
                }),
            )),
        Entry::new("messages", Method::POST, "/api/v1/messages/{partition_id}/{transaction_id}/retry", "Retry a message as a copy")
            .about(r#"
Appends a copy of the message to its partition through the push path (limits, encryption, maintenance): a new message id and the transaction id `<id>:retry:<uuid>`, marked by a `retried` trace naming the original. On the shared log every group of the queue reads the copy. A 1.x-broker extension with no reference shape. The body is ignored. Python: `Admin.retry_message(partition_id, transaction_id)`.
"#)
            .quota()
            .fails(400, "`partitionId must be a UUID`; a sealed payload this broker's key cannot open.")
            .fails(404, "`Message not found`.")
            .reply(200, "The copy.", acted(json!({
                "copy": obj(&["messageId", "transactionId"], json!({ "messageId": uuid(), "transactionId": string() })),
            }))),
        Entry::new("messages", Method::POST, "/api/v1/messages/{partition_id}/{transaction_id}/dlq", "Move a message to the dead-letter queue")
            .about(r#"
Files a dead letter for `consumerGroup` (queue mode by default) with the reason `Moved to the dead-letter queue by an operator`, and deletes the message from the log (a tombstone), in one transaction: it leaves every group's path. A 1.x-broker extension with no reference shape. The body is ignored. Python: `Admin.move_message_to_dlq(partition_id, transaction_id)`.
"#)
            .query("consumerGroup", json!({"type": "string", "default": "__QUEUE_MODE__"}), "The group the dead letter is filed for.")
            .fails(400, bad_pid)
            .fails(404, "`Message not found`.")
            .reply(200, "Dead-lettered.", acted(json!({ "consumerGroup": string() }))),
    ]
}
