//! The shared parts of the document: `components` (the error responses, the headers, the
//! bearer scheme, the queue options' schemas built from the broker's option constants) and
//! the path parameters' meanings.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Map, Value};

use regent_rules::options::{BOOL_DEFAULTS, DLQ_FLAGS, INT_DEFAULTS};

use super::object::{headers, Content, ResponseObject};
use crate::push::MAX_NAME_BYTES;

// The JSON Schema literals below are the few schemas no Rust type describes: a reference, a
// path segment, a bare string or integer parameter, and the queue options, whose schema is
// built from the option constants the broker reads them with (`regent_rules::options`).

/// A reference to a shared schema.
pub(crate) fn r(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

pub(crate) fn uuid() -> Value {
    json!({ "type": "string", "format": "uuid" })
}

pub(crate) fn string() -> Value {
    json!({ "type": "string" })
}

pub(crate) fn int() -> Value {
    json!({ "type": "integer" })
}

/// A query parameter's integer schema with its default and bounds.
pub(crate) fn int_param(default: i64, min: Option<i64>, max: Option<i64>) -> Value {
    let mut s = json!({ "type": "integer", "default": default });
    if let Some(m) = min {
        s["minimum"] = json!(m);
    }
    if let Some(m) = max {
        s["maximum"] = json!(m);
    }
    s
}

/// What a path parameter of the route table means, and its schema.
pub(crate) fn path_param(name: &str) -> (&'static str, Value) {
    let name_schema = json!({ "type": "string", "maxLength": MAX_NAME_BYTES });
    match name {
        "queue" => ("The queue's name, percent-decoded once (a name holding `/` cannot be addressed by path).", name_schema),
        "partition" => ("The partition's name (not its id), percent-decoded once.", name_schema),
        "group" => ("The consumer group's name; `__QUEUE_MODE__` is queue mode's.", name_schema),
        "lease_id" => ("The `leaseId` a pop answered (one lease may cover several partitions).", string()),
        "partition_id" => ("The partition's id (`partitionId`, a UUID), not its name.", uuid()),
        "transaction_id" => ("The message's `transactionId` (unique per partition).", string()),
        "name" => ("A trace name, percent-decoded once.", string()),
        "query_id" => ("A stream query's id (`query_id`, a UUID), as its registration answered.", uuid()),
        "file" => ("The file's path under `assets/`, as `index.html` names it.", string()),
        "timer_key" => ("The timer's key: the rest of the path, `/` included, percent-decoded once.", json!({ "type": "string", "maxLength": MAX_NAME_BYTES })),
        _ => ("", string()),
    }
}

/// What each queue option does (spec §3.1).
fn option_description(key: &str) -> &'static str {
    match key {
        "priority" => "Orders queues in a namespace or task pop (`GET /api/v1/pop`), higher first.",
        "leaseTime" => "Seconds a pop's lease lasts (0 means 60).",
        "retryLimit" => "Nacks (`failed` acks) a (partition, group) may spend before the message is dead-lettered: 3 means three redeliveries, the fourth `failed` dead-letters.",
        "retryDelay" => "Milliseconds; stored and echoed, not used (as in Queen).",
        "maxSize" => "Stored and echoed, not enforced (as in Queen; `TENANT_LIMITS` caps stored messages).",
        "ttl" => "Seconds; stored and echoed, not used (as in Queen).",
        "delayedProcessing" => "Seconds a message stays invisible to pops after its push.",
        "windowBuffer" => "Seconds: a partition is poppable only once its newest message is at least this old.",
        "retentionSeconds" => "With `retentionEnabled` (or `IMPLICIT_RETENTION`): messages older than this are deleted, consumed or not.",
        "completedRetentionSeconds" => "With `retentionEnabled` (or `IMPLICIT_RETENTION`): messages older than this that every group has passed are deleted.",
        "maxWaitTimeSeconds" => "Messages older than this are evicted (deleted, not dead-lettered), with or without `retentionEnabled`.",
        "deadLetterQueue" => "With `dlqAfterMaxRetries`: dead-lettering of exhausted messages is off only when both are explicitly false; never set is `null` in the echo (and dead-letters).",
        "dlqAfterMaxRetries" => "See `deadLetterQueue`.",
        "retentionEnabled" => "The switch of `retentionSeconds` and `completedRetentionSeconds`.",
        "encryptionEnabled" => "Payloads sealed at rest with AES-256-GCM (`QUEEN_ENCRYPTION_KEY`), opened on the way out; refused with 400 when the broker has no key.",
        _ => "",
    }
}

/// The queue options a configure reads (`configure::OptionsIn`), from the constants the
/// broker echoes them with.
pub(crate) fn options_in() -> Value {
    let mut props = Map::new();
    for (k, d) in INT_DEFAULTS {
        let s = json!({ "type": ["integer", "string", "null"], "default": d,
            "description": format!("{} An integer, or a numeric string (Queen casts through text).", option_description(k)) });
        props.insert(k.into(), s);
    }
    for k in DLQ_FLAGS.iter().chain(BOOL_DEFAULTS.iter()) {
        let s = json!({ "anyOf": [{ "type": ["boolean", "null"] }, { "enum": ["true", "false"] }],
            "description": option_description(k) });
        props.insert((*k).into(), s);
    }
    json!({
        "type": "object",
        "description": "Every option the broker reads; others are ignored. A configure replaces the whole configuration: an option left out falls back to its default (not a patch). `null` is the same as absent.",
        "properties": props,
    })
}

/// The options as a configure echoes them: each effective value, the dead-letter flags as
/// stored.
pub(crate) fn options_echo() -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    for (k, d) in INT_DEFAULTS {
        props.insert(
            k.into(),
            json!({ "type": "integer", "default": d, "description": option_description(k) }),
        );
        required.push(k);
    }
    for k in DLQ_FLAGS {
        props.insert(
            k.into(),
            json!({ "type": ["boolean", "null"], "description": option_description(k) }),
        );
        required.push(k);
    }
    for k in BOOL_DEFAULTS {
        props.insert(
            k.into(),
            json!({ "type": "boolean", "default": false, "description": option_description(k) }),
        );
        required.push(k);
    }
    json!({ "type": "object", "required": required, "properties": props })
}

fn error_response(description: &str, schema: &str, retry_after: bool) -> ResponseObject {
    ResponseObject {
        description: description.to_string(),
        headers: headers(retry_after),
        content: Content::json(r(schema)),
    }
}

/// The document's `components`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Components {
    schemas: Value,
    responses: BTreeMap<&'static str, ResponseObject>,
    headers: BTreeMap<&'static str, Header>,
    security_schemes: BTreeMap<&'static str, SecurityScheme>,
}

/// A header object.
#[derive(Serialize)]
struct Header {
    description: &'static str,
    schema: Value,
}

/// A security scheme object (HTTP authentication).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SecurityScheme {
    #[serde(rename = "type")]
    kind: &'static str,
    scheme: &'static str,
    bearer_format: &'static str,
    description: &'static str,
}

/// Every component of the document.
pub(crate) fn components() -> Value {
    let c = Components {
        // Every schema is a type's, added by `document`.
        schemas: json!({}),
        responses: BTreeMap::from([
            ("BadRequest", error_response("The request is malformed; the text says how, in Queen's words where Queen has them: a body that is not JSON (`Empty request body`, `Invalid JSON: …`), a field of the wrong type (the text names it), a query string or path segment that does not decode.", "Error", false)),
            ("Unauthorized", error_response("Authentication is on (`JWT_ENABLED=true`) and the token is missing or not valid: `Authentication required`, `Empty token`, `Token has expired`, `Invalid token signature`, `Token uses HS384, expected HS256`, `Unknown key ID: <kid>`, `Token subject (sub) is <n> bytes; at most 1024 are accepted`, …", "Error", false)),
            ("Forbidden", error_response("`Insufficient permissions`: the token's role is below the route's level; or `Token has no tenant: claim `tenant`` when neither the claim nor `JWT_DEFAULT_TENANT` names a tenant.", "Error", false)),
            ("NotFound", error_response("Not found; the text says what.", "Error", false)),
            ("Conflict", error_response("Valid, but refused by the tenant's state for now.", "Error", false)),
            ("PayloadTooLarge", error_response("The body is larger than `MAX_BODY_BYTES` (16 MiB by default): `request body too large`; a `Content-Length` over it is refused before the body is read. Also a push or transaction bundle of more than `MAX_PUSH_ITEMS` items (100,000 by default).", "Error", false)),
            ("HeadersTooLarge", error_response("More than 100 header fields, or more than 128 KiB of them: `Request header fields too large`.", "Error", false)),
            ("TooManyRequests", error_response("Over the tenant's request rate (`TENANT_LIMITS`): `Rate limit exceeded`, `code: rate_limited`; retry after `Retry-After` seconds (the Python client does not retry it on its own).", "LimitError", true)),
            ("OverLimit", error_response("Over a tenant limit (`TENANT_LIMITS`), and nothing of the request was written: the request rate (`Rate limit exceeded`, `code: rate_limited`), or the stored-message cap this request would pass (`Stored message limit reached: <n> of <cap> messages`, `code: quota_exceeded`, `Retry-After: 60`: room comes back only when a queue is deleted). The Python client does not retry it on its own.", "LimitError", true)),
            ("InternalError", error_response("`Internal server error`: a fault of the broker's own (a panic included: it answers that request alone); the detail is logged with the request's id, never sent. Also Queen's 500s of a misconfigured authentication (`HS256 secret not configured`, `Failed to fetch JWKS`).", "Error", false)),
            ("Unavailable", error_response("Nothing was done; safe to retry after `Retry-After` seconds (pushes are deduplicated; a retried ack moves nothing): `Database unavailable` (5 s), `Database busy` (1 s), `Server is shutting down` (1 s), or `Server busy: too many large requests at once` (1 s: a body over 1 MiB found no turn, `MAX_LARGE_REQUESTS`).", "Error", true)),
        ]),
        headers: BTreeMap::from([
            (
                "RequestId",
                Header {
                    description: "The request's id: the client's own `x-request-id`, else a new UUID; every log line of the request names it.",
                    schema: string(),
                },
            ),
            (
                "RetryAfter",
                Header {
                    description: "Seconds to wait before retrying.",
                    schema: int(),
                },
            ),
        ]),
        security_schemes: BTreeMap::from([(
            "bearer",
            SecurityScheme {
                kind: "http",
                scheme: "bearer",
                bearer_format: "JWT",
                description: BEARER,
            },
        )]),
    };
    serde_json::to_value(c).expect("the components serialise")
}

const BEARER: &str = "Only with `JWT_ENABLED=true` (off by default: then no route needs a token). `Authorization: Bearer <token>`, or the bare token. HS256 (`JWT_SECRET`), RS256 or EdDSA (`JWT_PUBLIC_KEY`, `JWT_JWKS_URL`), or `auto`. The role (`role` claim, or the `roles` array) must reach the route's level, named in the requirement: `read-only` < `read-write` < `admin`, each including the ones before it. The `tenant` claim (`JWT_TENANT_CLAIM`, else `JWT_DEFAULT_TENANT`) decides whose queues the request sees; `sub` is stamped on pushed messages as `producerSub`.";
