//! Dead letters: the listing (spec §11) and Regent's bulk routes.

use axum::http::Method;
use serde_json::json;

use super::schemas::{array, int, int_param, obj, r, string};
use super::Entry;

pub(super) const TAGS: &[(&str, &str)] = &[(
    "dead letters",
    "Dead letters: payload snapshots of messages a consumer group gave up on, which outlive the log; listed, requeued and deleted.",
)];

const BULK: &str = r#"
The body selects dead letters by `ids`, by a filter (`queue`, `partition`, `consumerGroup`, `reason`, `from`/`to` on `failedAt`), both (ids AND filter), or `"all": true`; at most `limit` (10,000) per call, oldest failure first, `more` saying more matched. `"dryRun": true` answers exactly what the call would do and writes nothing. Each dead letter considered is one item (in the order of the ids sent, else oldest failure first), `gone` when no dead letter of the tenant with that id matches any more. A Regent extension: not in Queen, no Python client method."#;

pub(super) fn entries() -> Vec<Entry> {
    vec![
        Entry::new("dead letters", Method::GET, "/api/v1/dlq", "List dead letters")
            .about(r#"
Dead letters newest failure first, each with its payload snapshot (`data`), reason (`errorMessage`), `retryCount`, and Regent's `deadLetterId` for the bulk routes; `total` counts every match. Queen differs: `total` is given (the Python client reads it; Queen 0.15 omits it), `partition`, `from`, `to`, `limit` and `offset` work (Queen 0.15 ignores or mishandles them), and a dead letter survives retention of its message (a snapshot). Python: `queue(name).dlq(group).get()` (`DLQBuilder.get`).
"#)
            .query("queue", string(), "Exact queue name.")
            .query("consumerGroup", string(), "Exact group name.")
            .query("partition", string(), "Exact partition name.")
            .query("from", json!({"type": "string", "format": "date-time"}), "On the failure time, inclusive.")
            .query("to", json!({"type": "string", "format": "date-time"}), "On the failure time.")
            .query("reason", string(), "The reason exactly, as the bulk requeue and delete select it (a Regent extension).")
            .query("limit", int_param(100, Some(1), Some(1000)), "Page size.")
            .query("offset", int_param(0, Some(0), None), "Dead letters to skip.")
            .fails(400, "`from must be an ISO-8601 timestamp`, `to must be an ISO-8601 timestamp`.")
            .reply(200, "A page of dead letters.", obj(&["messages", "pagination", "total"], json!({
                "messages": array(r("DeadLetter")),
                "pagination": r("Pagination"),
                "total": int(),
            }))),
        Entry::new("dead letters", Method::POST, "/api/v1/dlq/requeue", "Requeue dead letters as new messages")
            .about(&format!(r#"
Each selected dead letter's snapshot (payload as stored, `traceId`, `producerSub`; a sealed payload stays sealed) is appended to its own partition as a NEW message (new id, transaction id `requeue:<original message id>`) and the dead letter removed, all in one PostgreSQL transaction for the whole call: a call sent again after a lost answer finds its dead letters `gone`. Copies deduplicate like pushes: the same message dead-lettered by two groups gets one copy (the second is a `duplicate`, removed too). The log is shared by every consumer group: the copy is read by every group of the queue, not only the one that gave up. Each copy gets a `requeued` trace; parked pops are woken as by a push. Counts against `maxMessages` as a push (429, nothing moves).{BULK}
"#))
            .body(true, "The selection.", r("BulkSelector"))
            .quota()
            .fails(400, "`ids or a filter is required`, `unknown field <k>: expected one of …`, `ids must be an array of dead-letter ids (integers)`, `<key> must be a string`, `<key> must be true or false`, `<key> must be an ISO-8601 timestamp`, `limit must be an integer from 1 to 10000`, `the body must be a JSON object`; `Invalid JSON: …`.")
            .fails(409, "Under push maintenance, or while its buffered pushes wait to be appended, a requeue (dry run included) is refused whole: `Push maintenance is on: dead letters cannot be requeued until it is switched off and the buffered pushes are appended`.")
            .reply(200, "What was (or, dry, would be) done.", r("RequeueAnswer")),
        Entry::new("dead letters", Method::POST, "/api/v1/dlq/delete", "Delete dead letters")
            .about(&format!(r#"
The selected dead letters deleted, in one transaction; goes on under push maintenance.{BULK}
"#))
            .body(true, "The selection.", r("BulkSelector"))
            .fails(400, "`ids or a filter is required`, `unknown field <k>: expected one of …`, the field texts of the requeue route; `Invalid JSON: …`.")
            .reply(200, "What was (or, dry, would be) done.", r("DeleteAnswer")),
    ]
}
