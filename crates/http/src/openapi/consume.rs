//! Pop, ack and lease extension (spec §5, §6, §8).

use axum::http::Method;
use serde_json::json;

use regent_broker::naming::QUEUE_MODE;
use regent_config::Config;
use regent_service::lease::MAX_EXTEND_SECONDS;

use super::schemas::{about, array, flag_param, int, int_param, obj, r, string};
use super::Entry;

pub(super) const TAGS: &[(&str, &str)] = &[(
    "consume",
    "Claiming messages under a lease, acknowledging them (an offset commit per partition and group), extending the lease.",
)];

const POP: &str = r#"
Claims up to `partitions` partitions with something to read for `consumerGroup` under ONE lease (queue's `leaseTime`) and answers up to `batch` messages, oldest first per partition. `wait=true` long-polls until messages arrive or `timeout` ms pass, answering before the deadline; a push through any broker of the database wakes it. A named group's first pop decides where it starts (`subscriptionMode`, `subscriptionFrom`), once per queue. Always 200 with a body, empty answers included (Queen 0.15 sends 204 for some, which the Python client reads the same way). Never cache it: it takes a lease."#;

pub(super) fn entries() -> Vec<Entry> {
    let c = Config::defaults();
    let pop_params = |e: Entry, partitions: bool| {
        let e = e
            .query("batch", int_param(c.default_batch_size, Some(1), Some(c.max_batch_size)),
                &format!("Most messages in the answer, over every claimed partition. Absent: `DEFAULT_BATCH_SIZE` ({}), or `AUTOPILOT_BATCH_SIZE` ({}) with `autopilot=true`; larger values are clamped to `MAX_BATCH_SIZE` ({}).", c.default_batch_size, c.autopilot_batch_size, c.max_batch_size));
        let e = if partitions {
            e.query(
                "partitions",
                int_param(1, Some(1), Some(1000)),
                "Most partitions claimed under the lease.",
            )
        } else {
            e
        };
        e.query("wait", flag_param(false), "`true` or `1`: long-poll until messages arrive or `timeout` passes.")
            .query("timeout", json!({"type": "integer", "minimum": 0, "default": c.default_timeout, "x-clamped-to": c.max_timeout}),
                "The long-poll deadline in ms (`DEFAULT_TIMEOUT`), clamped to `MAX_TIMEOUT`; the Python client gives up at `timeout` + 5 s.")
            .query("consumerGroup", json!({"type": "string", "default": QUEUE_MODE}), "The group whose cursor is read; absent or empty: queue mode.")
            .query("autoAck", flag_param(false), "Commit at delivery: no lease, `leaseId` is `\"\"`, nothing to ack (at-most-once).")
            .query("subscriptionMode", string(), "A named group's first-join start: `new`, `new-only` or `now` start at the end; anything else (`all`, `from_beginning`) from the first message, as in Queen 0.15. Absent: `DEFAULT_SUBSCRIPTION_MODE`.")
            .query("subscriptionFrom", json!({"type": "string", "examples": ["2026-04-26T10:00:00Z", "now"]}), "A named group's first-join start instant (ISO-8601, or `now`); wins over `subscriptionMode`. Unparsable: 400 (Queen 0.15 silently starts from the beginning).")
            .query("autopilot", flag_param(false), "1.2+ clients: the broker picks the `batch` and `partitions` left out, and echoes them under `autopilot`.")
            .reply(200, "Messages, or an empty shape.", r("PopAnswer"))
    };
    let ack = |e: Entry| {
        e.reply(
            200,
            "One result per item, in request order (all per-item outcomes live inside a 200).",
            array(r("AckResult")),
        )
    };
    vec![
        pop_params(Entry::new("consume", Method::GET, "/api/v1/pop/queue/{queue}", "Pop from any partition of a queue")
            .about(&format!("{POP} An unknown queue answers `no_available_partition`. Python: `queue(name).pop()` and `consume(handler)` (a partition named `Default` also uses this route).")), true)
            .fails(400, "`subscriptionFrom` unparsable; an undecodable query string or path segment."),
        pop_params(Entry::new("consume", Method::GET, "/api/v1/pop/queue/{queue}/partition/{partition}", "Pop from one named partition")
            .about(&format!("{POP} One partition (by name), so `partitions` does not apply; an unknown one answers `partition_not_found`, one leased to another consumer of the group `lease_held`. Python: `queue(name).partition(p).pop()` / `consume` when `p` is not `Default`.")), false)
            .fails(400, "`subscriptionFrom` unparsable; an undecodable query string or path segment."),
        pop_params(Entry::new("consume", Method::GET, "/api/v1/pop", "Pop across a namespace or task")
            .about(&format!("{POP} Across every queue whose namespace and/or task match, highest `priority` first; each message names its `queue`. Documented by Queen but not routed by Queen 0.15; the Python client calls it for a consumer that names no queue.")), true)
            .query("namespace", string(), "The queues' namespace (this or `task` is required).")
            .query("task", string(), "The queues' task.")
            .fails(400, "`namespace or task is required`; `subscriptionFrom` unparsable."),
        ack(Entry::new("consume", Method::POST, "/api/v1/ack", "Acknowledge one message")
            .about(r#"
The seed ack contract (it replaces Queen 0.15's): the message is named by `transactionId` within `partitionId` and resolved to its offset; `completed` commits the group's cursor up to it (acking a batch's last message completes the batch), `failed` clamps the cursor below it and charges the retry budget (`retryLimit`, then a dead letter), `retry` redelivers without charging, `dlq` dead-letters at once. An ack with a `leaseId` is checked against the live lease; one without is not. The answer is a one-element array saying exactly what happened. An ack that ends a lease with messages left to read wakes one parked pop of the same group, on every broker. Queen differs: its texts are `bad body: …` here, an odd status is a nack (Queen ignores it), a late ack never moves a cursor backwards. Python: `queen.ack(message, status)`.
"#)
            .body(true, "The ack.", r("AckItem"))
            .fails(400, "`bad body: empty request body`, `bad body: expected a JSON object`, `bad body: <parser message>`.")),
        ack(Entry::new("consume", Method::POST, "/api/v1/ack/batch", "Acknowledge several messages")
            .about(r#"
As the single route for every item: items are grouped by (partition, lease) and each group is committed on its own (a failure in one group changes no other's). Within one group, items above the lowest explicit signal (`failed`, `retry`, `dlq`) redeliver: a `completed` above it is answered `success: false` (`superseded: …`). The array key is spelled `acknowledgments`; `consumerGroup` is read at the top level only. Python: `queen.ack([messages], status)`.
"#)
            .body(true, "The acks.", obj(&["acknowledgments"], json!({
                "acknowledgments": array(r("AckItem")),
                "consumerGroup": about(json!({"type": ["string", "null"], "default": QUEUE_MODE}), "The group of every item."),
            })))
            .fails(400, "`bad body: acknowledgments array is required`, `bad body: acknowledgments[<i>] must be an object`, `bad body: empty request body`, `bad body: <parser message>`.")),
        Entry::new("consume", Method::POST, "/api/v1/lease/{lease_id}/extend", "Extend a lease")
            .about(r#"
Every (partition, group) whose live lease is this id gets expiry = max(current, now + `seconds`); an expired, released or unknown lease is not revived (`success: false`). An empty body is `{}` (the Python client sends none). The answer is an object with every alias (`newExpiresAt`, `expiresAt`, `lease_expires_at`): Queen 0.15 answers an array, which client 1.3.0 cannot read. Python: `queen.renew(message | leaseId)`.
"#)
            .body(false, "Optional; an empty body is `{}`.", json!({
                "type": "object",
                "properties": {
                    "seconds": about(json!({"type": ["integer", "null"], "minimum": 1, "maximum": MAX_EXTEND_SECONDS, "default": 60}), "From now; larger values are clamped."),
                },
            }))
            .fails(400, "`seconds must be a positive integer`, `body must be a JSON object`, `Invalid JSON: …`.")
            .reply(200, "Renewed, or not (`success: false`, the expiry keys null).", obj(
                &["leaseId", "success", "renewed", "newExpiresAt", "expiresAt", "lease_expires_at", "error"],
                json!({
                    "leaseId": string(), "success": {"type": "boolean"},
                    "renewed": about(int(), "(partition, group) rows renewed."),
                    "newExpiresAt": {"type": ["string", "null"], "format": "date-time"},
                    "expiresAt": {"type": ["string", "null"], "format": "date-time"},
                    "lease_expires_at": {"type": ["string", "null"], "format": "date-time"},
                    "error": {"enum": [null, "Lease not found", "Lease already expired"]},
                }),
            )),
    ]
}
