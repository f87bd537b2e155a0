//! `/api/v1/timers`: Queen's timers (spec §18.2; the client's `queen/timers/`): schedule,
//! reschedule and cancel in one batch, the cancel route no limit blocks, peek, and a queue's
//! pending timers page by page; the transaction route's timer operations are parsed and
//! answered here too ([`parse_timer_op`], [`TimerResult`]). Keys are camelCase, as the
//! client's. Firing is the service's (`regent_service::timers`).

use axum::extract::State as AxState;
use axum::http::Method;
use axum::Extension;
use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use regent_rules::naming::DEFAULT_PARTITION;
use regent_rules::timers::{delay_ok, MAX_DELAY_MS};
use regent_service::timers::{Cancel, QueueTimers, Schedule, StoredTimer, TimerOp, TimerOutcome};

use super::answer::{Answer, Millis};
use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::openapi::schemas::{int_param, string};
use super::openapi::{Doc, Tag};
use super::params::{Paging, Params};
use super::path::PathParams;
use super::push::{self, fuzz_principal, FUZZ_MAX_ITEMS};
use super::read;
use super::routes::{route, Entry, Level::*};
use super::State;

const TAG: Tag = (
    "timers",
    "Queen's timers: messages scheduled under a key, delivered to their queue once their delay has passed.",
);

/// A queue's timers page 100 at a time by default, at most 1,000 (a larger `limit` is
/// clamped, never refused).
const LIST: Paging = Paging {
    default: 100,
    max: 1000,
};

/// Fields the server owns (the client's `queen.timers.ops.SERVER_OWNED`): refused with their
/// name, never dropped. So is any field starting with `_`.
const SERVER_OWNED: &[&str] = &[
    "producerSub",
    "producer_sub",
    "messageId",
    "message_id",
    "tenant",
    "tenantId",
    "tenant_id",
    "deliverAt",
    "deliver_at",
    "delaySeconds",
    "delay_seconds",
    "attempts",
    "claimToken",
    "claim_token",
    "claimedUntil",
];

const SEEDS: &[&str] = &[
    r#"{"operations": [{"op": "schedule", "queue": "orders", "timerKey": "order:9f1:expire",
        "payload": "eyJvcmRlcklkIjogIjlmMSJ9", "delayMs": 1800000,
        "txn": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "partition": "customer-42"}]}"#,
    r#"{"operations": [{"op": "reschedule", "queue": "q", "timerKey": "a/b", "payload": "MQ==", "delayMs": -5},
        {"op": "cancel", "queue": "q", "timerKey": "a/b", "txn": "t-1"}]}"#,
    r#"{"operations": []}"#,
];

pub(crate) fn routes() -> Vec<Entry> {
    use Method as M;
    let op = |summary| Doc::op(TAG, summary);
    vec![
        route(M::POST, "/api/v1/timers", ReadWrite, batch)
            .doc(op("Schedule, reschedule or cancel timers")
                .body_of::<TimerBatch>(true, "The operations.")
                .quota()
                .fails(400, "`operations array is required`, `operations[<i>] must be an object`, `operations[<i>]: `<field>` is server-owned and cannot be supplied`, `operations[<i>]: op must be schedule, reschedule or cancel`, `operations[<i>]: queue is required`, `operations[<i>]: timerKey is required`, `operations[<i>]: payload is required`, `operations[<i>]: payload must be base64`, `operations[<i>]: payload must be the base64 of a JSON document`, `operations[<i>]: delayMs is required`, `operations[<i>]: delayMs must be a number of milliseconds from -<max> to <max>`, `operations[<i>]: payloadZstd is not supported by this broker: send the payload uncompressed`, `operations[<i>]: <field> must be a string`, `operations[<i>]: <field> must be at most 512 bytes`, `operations[<i>]: <field> must not contain NUL`; `Empty request body`, `Invalid JSON: …`.")
                .fails(413, "`A request of <n> items is over the limit of <max> items (MAX_PUSH_ITEMS)`.")
                .answers::<BatchAnswer>(200, "One result per operation, in order."))
            .reads_body(SEEDS, |b| parse_batch(b, &fuzz_principal(), FUZZ_MAX_ITEMS)),
        route(M::DELETE, "/api/v1/timers/{queue}/{*timer_key}", ReadWrite, cancel)
            .unrated()
            .doc(op("Cancel a timer")
                .query("txn", string(), "Only the timer scheduled under this txn.")
                .fails(400, "`txn must be at most 512 bytes`, `txn must not contain NUL`.")
                .answers::<TimerResult>(200, "What the cancel did."))
            .reads_request(&["orders/order:9f1/expire?txn=0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d"],
                |PathParams((q, k)): PathParams<(String, String)>, p: Params| async move {
                    let _ = parse_cancel(q, k, p.str("txn"));
                }),
        route(M::GET, "/api/v1/timers/{queue}/{*timer_key}", ReadOnly, peek)
            .doc(op("Peek at a timer")
                .answers::<PeekAnswer>(200, "The timer, or `found: false`."))
            .reads_request(&["orders/order:9f1/expire"],
                |PathParams((_, _)): PathParams<(String, String)>| async {}),
        route(M::GET, "/api/v1/timers/{queue}", ReadOnly, list)
            .doc(op("A queue's pending timers")
                .query("after", string(), "Keys after this one (exclusive).")
                .query("limit", int_param(LIST.default, Some(1), Some(LIST.max)), "Timers per page.")
                .answers::<ListAnswer>(200, "A page of timers."))
            .reads_request(&["orders?after=order:1&limit=10"],
                |PathParams(_): PathParams<String>, p: Params| async move {
                    let _ = (p.str("after"), p.page(LIST));
                }),
        route(M::GET, "/api/v1/timers", ReadOnly, queues)
            .doc(op("Queues with pending timers")
                .answers::<QueuesAnswer>(200, "The queues."))
            .reads_nothing(),
    ]
}

/// The operations of `POST /api/v1/timers`, carried out in order.
#[derive(Deserialize, JsonSchema)]
struct TimerBatch {
    #[schemars(with = "Vec<TimerOperation>")]
    operations: Option<Value>,
}

/// One timer operation: `op` names it; a field the server owns (or starting with `_`) is
/// refused.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TimerOperation {
    #[schemars(with = "String", extend("enum" = ["schedule", "reschedule", "cancel"]))]
    op: Option<Value>,
    #[schemars(with = "String")]
    queue: Option<Value>,
    /// Any text (`/` included), at most 512 bytes.
    #[schemars(with = "String")]
    timer_key: Option<Value>,
    /// schedule: the base64 of the message's JSON document.
    #[schemars(with = "String", default)]
    payload: Option<Value>,
    /// schedule: milliseconds from now.
    #[schemars(with = "i64", default)]
    #[schemars(extend("minimum" = -MAX_DELAY_MS, "maximum" = MAX_DELAY_MS))]
    delay_ms: Option<Value>,
    /// The message's transaction id (a new UUID when absent); cancel: only the timer
    /// scheduled under it.
    #[schemars(with = "String", default)]
    txn: Option<Value>,
    #[schemars(with = "Option<String>", extend("default" = DEFAULT_PARTITION))]
    partition: Option<Value>,
    /// `true` is refused (400): send the payload uncompressed.
    #[schemars(with = "Option<bool>")]
    payload_zstd: Option<Value>,
}

/// A required non-empty string, checked as a name.
fn text(v: &Option<Value>, field: &str) -> Result<String, ApiError> {
    push::name(field, read::required(v.as_ref(), field)?)
}

/// An optional string, checked as a name; empty is absent.
fn optional(v: &Option<Value>, field: &str) -> Result<Option<String>, ApiError> {
    read::optional(v.as_ref(), field)?
        .map(|s| push::name(field, s))
        .transpose()
}

/// One timer operation, as `POST /api/v1/timers` and the transaction route's `timers` carry
/// them; the message's `producerSub` is `who`'s. Errors name the field, not the position.
pub(crate) fn parse_timer_op(v: &Value, who: &Principal) -> Result<TimerOp, ApiError> {
    let o = v
        .as_object()
        .ok_or_else(|| ApiError::bad_request("must be an object"))?;
    if let Some(field) = o
        .keys()
        .find(|k| SERVER_OWNED.contains(&k.as_str()) || k.starts_with('_'))
    {
        return Err(ApiError::bad_request(format!(
            "`{field}` is server-owned and cannot be supplied"
        )));
    }
    let f: TimerOperation = read::fields(v)?;
    let kind = f.op.as_ref().and_then(Value::as_str);
    if !matches!(kind, Some("schedule" | "reschedule" | "cancel")) {
        return Err(ApiError::bad_request(
            "op must be schedule, reschedule or cancel",
        ));
    }
    let queue = text(&f.queue, "queue")?;
    let key = text(&f.timer_key, "timerKey")?;
    if kind == Some("cancel") {
        let txn = optional(&f.txn, "txn")?;
        return Ok(TimerOp::Cancel(Cancel { queue, key, txn }));
    }
    if f.payload_zstd
        .as_ref()
        .is_some_and(|z| z != &Value::Bool(false))
    {
        return Err(ApiError::bad_request(
            "payloadZstd is not supported by this broker: send the payload uncompressed",
        ));
    }
    Ok(TimerOp::Schedule(Schedule {
        payload: payload(f.payload.as_ref())?,
        delay_ms: delay(f.delay_ms.as_ref())?,
        txn: optional(&f.txn, "txn")?.unwrap_or_else(|| Uuid::now_v7().to_string()),
        partition: optional(&f.partition, "partition")?
            .unwrap_or_else(|| DEFAULT_PARTITION.to_string()),
        producer_sub: who.sub.clone(),
        queue,
        key,
    }))
}

/// The payload: base64 of a JSON document, which becomes the message's payload as its text.
fn payload(v: Option<&Value>) -> Result<String, ApiError> {
    let encoded = match v {
        None | Some(Value::Null) => return Err(ApiError::bad_request("payload is required")),
        Some(Value::String(s)) => s,
        Some(_) => return Err(ApiError::bad_request("payload must be base64")),
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| ApiError::bad_request("payload must be base64"))?;
    let not_json = || ApiError::bad_request("payload must be the base64 of a JSON document");
    let text = String::from_utf8(bytes).map_err(|_| not_json())?;
    serde_json::from_str::<serde::de::IgnoredAny>(&text).map_err(|_| not_json())?;
    Ok(text)
}

/// `delayMs`: a number of milliseconds (a fraction is dropped), within reach.
fn delay(v: Option<&Value>) -> Result<i64, ApiError> {
    let out_of_range = || {
        ApiError::bad_request(format!(
            "delayMs must be a number of milliseconds from -{MAX_DELAY_MS} to {MAX_DELAY_MS}"
        ))
    };
    let ms = match v {
        None | Some(Value::Null) => return Err(ApiError::bad_request("delayMs is required")),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(ms) => ms,
            None => n
                .as_f64()
                .filter(|f| f.is_finite() && f.abs() <= MAX_DELAY_MS as f64)
                .ok_or_else(out_of_range)? as i64,
        },
        Some(_) => return Err(out_of_range()),
    };
    if !delay_ok(ms) {
        return Err(out_of_range());
    }
    Ok(ms)
}

/// The batch's operations, all valid or the first one's error; at most `max` of them.
fn parse_batch(body: &RawBody, who: &Principal, max: usize) -> Result<Vec<TimerOp>, ApiError> {
    let v = body.json_fields_first()?;
    // A body that is not an object has no operations either.
    let b = read::fields::<TimerBatch>(&v).ok();
    let ops = b
        .as_ref()
        .and_then(|b| b.operations.as_ref())
        .and_then(Value::as_array)
        .ok_or_else(|| ApiError::bad_request("operations array is required"))?;
    if ops.len() > max {
        return Err(ApiError::TooManyItems {
            items: ops.len(),
            max,
        });
    }
    let parsed = parse_timer_ops(ops, who, "operations")?;
    body.no_nul(&v)?;
    Ok(parsed)
}

/// A list of timer operations, each error naming its position in `field` (the batch's
/// `operations`, the transaction route's `timers`).
pub(crate) fn parse_timer_ops(
    ops: &[Value],
    who: &Principal,
    field: &str,
) -> Result<Vec<TimerOp>, ApiError> {
    ops.iter()
        .enumerate()
        .map(|(i, op)| {
            parse_timer_op(op, who).map_err(|e| match e {
                ApiError::BadRequest(t) if t == "must be an object" => {
                    ApiError::bad_request(format!("{field}[{i}] must be an object"))
                }
                ApiError::BadRequest(t) => ApiError::bad_request(format!("{field}[{i}]: {t}")),
                other => other,
            })
        })
        .collect()
}

/// What one timer operation did, as the client's `TimerResult` reads it.
#[derive(Serialize, JsonSchema)]
pub(crate) struct TimerResult {
    /// True for `scheduled`, `rescheduled` and `cancelled`.
    ok: bool,
    #[schemars(extend("enum" = ["scheduled", "rescheduled", "cancelled", "absent", "too_late"]))]
    status: &'static str,
    queue: String,
    #[serde(rename = "timerKey")]
    timer_key: String,
    /// The timer's transaction id (the message's); a cancel's own on `absent` (null when it
    /// sent none).
    txn: Option<String>,
    /// The id the message is (or was) delivered with; null on `absent`.
    #[serde(rename = "messageId")]
    message_id: Option<Uuid>,
    /// Not before this; null on `absent`.
    #[serde(rename = "deliverAt")]
    deliver_at: Option<Millis>,
}

impl From<TimerOutcome> for TimerResult {
    fn from(o: TimerOutcome) -> TimerResult {
        TimerResult {
            ok: o.status.ok(),
            status: o.status.as_str(),
            queue: o.queue,
            timer_key: o.key,
            txn: o.txn,
            message_id: o.message_id,
            deliver_at: o.deliver_at.map(Millis),
        }
    }
}

/// Results index-aligned with the operations.
#[derive(Serialize, JsonSchema)]
struct BatchAnswer {
    results: Vec<TimerResult>,
}

async fn batch(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Answer<BatchAnswer>, ApiError> {
    let ops = parse_batch(&body, &who, s.config.max_push_items)?;
    drop(body);
    let out = s.service.timers().apply(&who.tenant, ops).await?;
    Ok(Answer(BatchAnswer {
        results: out.into_iter().map(TimerResult::from).collect(),
    }))
}

fn parse_cancel(queue: String, key: String, txn: Option<&str>) -> Result<Cancel, ApiError> {
    Ok(Cancel {
        txn: txn.map(|t| push::name("txn", t)).transpose()?,
        queue,
        key,
    })
}

async fn cancel(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((queue, key)): PathParams<(String, String)>,
    p: Params,
) -> Result<Answer<TimerResult>, ApiError> {
    let c = parse_cancel(queue, key, p.str("txn"))?;
    let out = s.service.timers().cancel(&who.tenant, c).await?;
    Ok(Answer(out.into()))
}

/// A pending timer, as a page of them lists it.
#[derive(Serialize, JsonSchema)]
struct TimerRow {
    queue: String,
    #[serde(rename = "timerKey")]
    timer_key: String,
    txn: String,
    #[serde(rename = "messageId")]
    message_id: Uuid,
    partition: String,
    #[serde(rename = "deliverAt")]
    deliver_at: Millis,
    /// Fires refused so far (each put the timer off).
    attempts: i32,
    #[serde(rename = "createdAt")]
    created_at: Millis,
    #[serde(rename = "updatedAt")]
    updated_at: Millis,
}

impl From<&StoredTimer> for TimerRow {
    fn from(t: &StoredTimer) -> TimerRow {
        TimerRow {
            queue: t.queue.clone(),
            timer_key: t.key.clone(),
            txn: t.txn.clone(),
            message_id: t.message_id,
            partition: t.partition.clone(),
            deliver_at: t.deliver_at.into(),
            attempts: t.attempts,
            created_at: t.created_at.into(),
            updated_at: t.updated_at.into(),
        }
    }
}

/// A peek: `found`, and the timer when it is.
#[derive(Serialize, JsonSchema)]
struct PeekAnswer {
    found: bool,
    #[serde(flatten)]
    timer: Option<Peeked>,
}

/// A pending timer with its payload.
#[derive(Serialize, JsonSchema)]
struct Peeked {
    #[serde(flatten)]
    row: TimerRow,
    /// The base64 of the payload as stored: the message's JSON text.
    payload: String,
    /// Whether the payload is sealed (never, on this broker: a timer's payload is sealed
    /// when it fires into an encrypting queue).
    encrypted: bool,
}

async fn peek(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((queue, key)): PathParams<(String, String)>,
) -> Result<Answer<PeekAnswer>, ApiError> {
    let t = s.service.timers().peek(&who.tenant, &queue, &key).await?;
    Ok(Answer(PeekAnswer {
        found: t.is_some(),
        timer: t.map(|t| Peeked {
            row: TimerRow::from(&t),
            payload: base64::engine::general_purpose::STANDARD.encode(t.payload.get()),
            encrypted: false,
        }),
    }))
}

/// A page of a queue's timers.
#[derive(Serialize, JsonSchema)]
struct ListAnswer {
    rows: Vec<TimerRow>,
    /// More timers follow this page.
    truncated: bool,
    /// The last key of the page, for `after`; null on an empty page.
    #[serde(rename = "nextAfter")]
    next_after: Option<String>,
}

async fn list(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(queue): PathParams<String>,
    p: Params,
) -> Result<Answer<ListAnswer>, ApiError> {
    let limit = p.page(LIST).limit;
    let (rows, truncated) = s
        .service
        .timers()
        .list(&who.tenant, &queue, p.str("after"), limit)
        .await?;
    Ok(Answer(ListAnswer {
        next_after: rows.last().map(|t| t.key.clone()),
        rows: rows.iter().map(TimerRow::from).collect(),
        truncated,
    }))
}

/// A queue with pending timers.
#[derive(Serialize, JsonSchema)]
struct QueueView {
    queue: String,
    pending: i64,
    #[serde(rename = "nextDeliverAt")]
    next_deliver_at: Millis,
}

impl From<QueueTimers> for QueueView {
    fn from(q: QueueTimers) -> QueueView {
        QueueView {
            queue: q.queue,
            pending: q.pending,
            next_deliver_at: q.next_deliver_at.into(),
        }
    }
}

/// The tenant's queues with pending timers.
#[derive(Serialize, JsonSchema)]
struct QueuesAnswer {
    queues: Vec<QueueView>,
}

async fn queues(
    AxState(s): State,
    Extension(who): Extension<Principal>,
) -> Result<Answer<QueuesAnswer>, ApiError> {
    let queues = s.service.timers().queues(&who.tenant).await?;
    Ok(Answer(QueuesAnswer {
        queues: queues.into_iter().map(QueueView::from).collect(),
    }))
}
