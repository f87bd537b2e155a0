//! Push and the transaction bundle (spec §4, §7).

use axum::http::Method;
use serde_json::json;

use super::schemas::{about, array, obj, r};
use super::Entry;

pub(super) const TAGS: &[(&str, &str)] = &[(
    "produce",
    "Pushing messages, alone or with acks in one transaction.",
)];

pub(super) fn entries() -> Vec<Entry> {
    vec![
        Entry::new("produce", Method::POST, "/api/v1/push", "Push messages")
            .about(r#"
Appends the items to their queues' partitions in one PostgreSQL transaction, creating queues and partitions on first use, and answers one verdict per item, in request order. Deduplicated by (partition, `transactionId`) within `TX_INDEX_RETENTION_SECONDS`: a repeat is `duplicate` naming the existing message, so a client's retry after a 5xx is harmless. Validation is all-or-nothing: one bad item refuses the request with 400 before anything is written; `items: []` answers 201 `[]`. The verified token's `sub` is stamped as `producerSub`. Under push maintenance the items are `buffered`. Queen differs: 201 on the wire (Queen 0.15 sends 200), `index` is always the request position, a non-UUID `traceId` is a 400 (Queen fails the whole database call), and a database outage is a 503 (Queen spills to a file buffer). Python: `queue(name).push(items)` (`PushBuilder`), and the client's buffered producer.
"#)
            .body(true, "The messages.", obj(&["items"], json!({
                "items": about(array(r("PushItem")), "Not an array: 400 `items array is required`."),
            })))
            .quota()
            .fails(400, "`items array is required`, `Queue must be a string`, `Partition must be a string`, `TransactionId must be a string`, `TraceId must be a string`, `TraceId must be a UUID`, `<field> must be at most 512 bytes`, `<field> must not contain NUL`, `A push of <n> messages exceeds the stored message limit of <cap>`; `Empty request body`, `Invalid JSON: …`.")
            .reply(201, "One verdict per item, in request order.", array(r("PushResult"))),
        Entry::new("produce", Method::POST, "/api/v1/transaction", "Acks and pushes in one transaction")
            .about(r#"
Everything in the bundle commits in ONE PostgreSQL transaction, or nothing does: the exactly-once hand-off between pipeline stages. Pushes behave as on the push route (deduplicated, so a retried bundle is harmless; `producerSub` stamped); acks follow the ack contract per (partition, lease), and any refusal other than a duplicate `completed` rolls the bundle back (200 with `success: false`). `requiredLeases` must all be live. Queen 0.15 differs: it ignores `requiredLeases`, does not deduplicate pushes (a repeat aborts the bundle), dead-letters `failed` acks at once, and stamps no `producerSub`; the KV and timer riders of 1.x brokers are not supported. Python: `queen.transaction()...commit()` (`TransactionBuilder.commit`).
"#)
            .body(true, "The bundle.", r("TransactionRequest"))
            .quota()
            .fails(400, "`operations array required`, `operations array cannot be empty`, `Unknown operation type: <type>`, `items array is required`, `requiredLeases must be an array`, a push item's texts (as on the push route); `Empty request body`, `Invalid JSON: …`.")
            .reply(200, "Committed (`success: true`) or refused with nothing written (`success: false`).", r("TransactionAnswer")),
    ]
}
