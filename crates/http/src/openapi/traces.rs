//! Traces (spec §12): events a consumer attaches to a message. The read routes answer in
//! snake_case, as Queen's.

use axum::http::Method;
use serde_json::json;

use regent_broker::naming::QUEUE_MODE;

use super::schemas::{about, array, int, int_param, obj, r, string, ts, uuid};
use super::Entry;

pub(super) const TAGS: &[(&str, &str)] = &[(
    "traces",
    "Trace events attached to messages, optionally labelled with trace names.",
)];

pub(super) fn entries() -> Vec<Entry> {
    let page = |e: Entry, limit: i64| {
        e.query("limit", int_param(limit, Some(1), Some(1000)), "Page size.")
            .query("offset", int_param(0, Some(0), None), "Entries to skip.")
    };
    vec![
        Entry::new("traces", Method::POST, "/api/v1/traces", "Record a trace event")
            .about(r#"
Records an event on a message the log holds (it resolves to the message's offset). Queen differs: 201 (Queen 0.15: 200 on the wire), 404 for an unknown message (Queen 0.15: 500), and a null `consumerGroup` is the default (Queen 0.15: 500). Python: `message.trace({...})` inside `consume` (never raises).
"#)
            .body(true, "The event.", obj(&["transactionId", "partitionId", "data"], json!({
                "transactionId": string(),
                "partitionId": about(string(), "The partition's UUID; one that is not a UUID names no message (404)."),
                "data": about(json!({}), "The event's body, any JSON (`null` is stored as `{}`)."),
                "consumerGroup": {"type": ["string", "null"], "default": QUEUE_MODE},
                "eventType": {"type": ["string", "null"], "default": "info"},
                "traceNames": about(json!({"anyOf": [{"type": "string"}, array(string()), {"type": "null"}]}), "One name or a list."),
                "workerId": {"type": ["string", "null"]},
            })))
            .fails(400, "`transactionId and partitionId are required`, `data is required`, `traceNames must be a string or an array of strings`, `<key> must be a string`; `Empty request body`, `Invalid JSON: …`.")
            .reply(201, "Recorded.", obj(&["success", "traceId"], json!({
                "success": {"const": true}, "traceId": about(uuid(), "The trace record's id."),
            })))
            .reply(404, "`Message not found`, in the shape the clients read.", r("Failure")),
        Entry::new("traces", Method::GET, "/api/v1/traces/{partition_id}/{transaction_id}", "A message's traces")
            .about(r#"
The message's traces, oldest first; `[]` for a partition id that is not a UUID. Python: `Admin.get_traces_for_message(partition_id, transaction_id)`.
"#)
            .reply(200, "The traces.", obj(&["traces"], json!({ "traces": array(r("Trace")) }))),
        page(Entry::new("traces", Method::GET, "/api/v1/traces/by-name/{name}", "Traces carrying a name")
            .about(r#"
Traces carrying the name, newest first, each with its message's queue, partition and payload (`null` once the log no longer holds it), `total`, and `pagination`. Python: `Admin.get_traces_by_name(name, **params)`.
"#), 100)
            .reply(200, "A page of traces.", obj(&["traces", "total", "pagination"], json!({
                "traces": array(r("NamedTrace")), "total": int(), "pagination": r("Pagination"),
            }))),
        page(Entry::new("traces", Method::GET, "/api/v1/traces/names", "Trace names")
            .about(r#"
Trace names with `trace_count`, `message_count` and `last_seen`, most recently seen first. Python: `Admin.get_trace_names(**params)`.
"#), 50)
            .reply(200, "A page of names.", obj(&["trace_names", "total", "pagination"], json!({
                "trace_names": array(obj(&["trace_name", "trace_count", "message_count", "last_seen"], json!({
                    "trace_name": string(), "trace_count": int(), "message_count": int(), "last_seen": ts(),
                }))),
                "total": int(), "pagination": r("Pagination"),
            }))),
    ]
}
