//! `POST /api/v1/push`, and the push items of `/api/v1/transaction`.

use std::collections::HashMap;
use std::ops::Range;

use axum::body::Body;
use axum::extract::State as AxState;
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use uuid::Uuid;

use regent_rules::naming::DEFAULT_PARTITION;
use regent_service::push::{PushItem, Verdict};
use regent_service::Message;

use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::openapi::{Doc, Tag};
use super::read;
use super::routes::{route, Entry, Level, Level::ReadWrite};
use super::State;

/// Pushing, alone or with acks (`crate::transaction`).
pub(crate) const TAG: Tag = (
    "produce",
    "Pushing messages, alone or with acks in one transaction.",
);

pub(crate) fn routes() -> Vec<Entry> {
    vec![route(Method::POST, "/api/v1/push", ReadWrite, push)
        .doc(Doc::op(TAG, "Push messages")
            .body_of::<PushBody>(true, "The messages.")
            .quota()
            .fails(400, "`items array is required`, `Queue must be a string`, `Partition must be a string`, `TransactionId must be a string`, `TraceId must be a string`, `TraceId must be a UUID`, `<field> must be at most 512 bytes`, `<field> must not contain NUL`, `A push of <n> messages exceeds the stored message limit of <cap>`; `Empty request body`, `Invalid JSON: …`.")
            .answers::<Vec<PushResult<'static>>>(201, "One verdict per item, in request order."))
        .reads_body(
            PUSH_SEEDS,
            |b| parse_push(b, &fuzz_principal(), FUZZ_MAX_ITEMS),
        )]
}

/// Valid push bodies (the spec's examples), for the fuzzer.
const PUSH_SEEDS: &[&str] = &[
    r#"{"items": [{"queue": "orders", "partition": "customer-42", "payload": {"id": 1},
        "transactionId": "ord-77-created", "traceId": "5f0c2a9e-1b7d-4c3e-9a21-6d4b8e0f1a23"}]}"#,
    r#"{"items": []}"#,
    r#"{"items": [{"queue": "q", "payload": null},
        {"queue": "q", "partition": "", "transactionId": "", "traceId": ""}]}"#,
    r#"{"items": [{"queue": "a", "payload": [1, "two", {"three": 3.0}], "producerSub": "x"}],
        "bufferMs": 10}"#,
];

/// A small `MAX_PUSH_ITEMS` for the fuzzer, so that generated arrays reach the limit too.
pub(crate) const FUZZ_MAX_ITEMS: usize = 64;

/// Who pushes when the fuzzer does: the parsers stamp the token's `sub` on pushed messages.
pub(crate) fn fuzz_principal() -> Principal {
    Principal {
        sub: Some("fuzz".into()),
        tenant: std::sync::Arc::from("fuzz"),
        level: Level::Admin,
        verified: false,
        expires: None,
    }
}

/// Names and transaction ids are index keys: PostgreSQL cannot store a NUL in text, and a
/// btree entry must fit in a page, so both are refused here rather than by the database.
pub(crate) const MAX_NAME_BYTES: usize = 512;

pub(crate) fn name(field: &str, v: &str) -> Result<String, ApiError> {
    read::short(field, v, MAX_NAME_BYTES).map(str::to_string)
}

/// The messages of `POST /api/v1/push`, in order.
// Read as a map, not through this type (`parse_push`): a key sent twice is its last value, as
// JavaScript reads it, where a struct would refuse the body.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct PushBody<'a> {
    /// Not an array: 400 `items array is required`.
    #[schemars(with = "Vec<Fields>")]
    items: Option<&'a RawValue>,
}

// Each field is read as the JSON text sent.
/// One message to push; a field not named here is ignored.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "PushItem")]
pub(crate) struct Fields<'a> {
    /// The queue; created with defaults on first push (namespace and task derived from the
    /// name: `billing.invoices` is namespace `billing`, task `invoices`). `""` is a name like
    /// any other. Not a string: 400 `Queue must be a string`.
    #[serde(borrow)]
    #[schemars(with = "String", length(max = MAX_NAME_BYTES))]
    queue: Option<&'a RawValue>,
    /// The partition's name; created on first push. Not a string: 400 `Partition must be a
    /// string`.
    #[serde(borrow)]
    #[schemars(with = "Option<String>", length(max = MAX_NAME_BYTES))]
    #[schemars(extend("default" = DEFAULT_PARTITION))]
    partition: Option<&'a RawValue>,
    /// The deduplication key within the partition; absent or `""`: the broker mints a UUID.
    /// Not a string: 400 `TransactionId must be a string`.
    #[serde(borrow)]
    #[schemars(with = "Option<String>", length(max = MAX_NAME_BYTES))]
    transaction_id: Option<&'a RawValue>,
    /// A UUID, returned on pop; `""` is absent. 400 `TraceId must be a string` / `TraceId
    /// must be a UUID`.
    #[serde(borrow)]
    #[schemars(with = "Option<Uuid>")]
    trace_id: Option<&'a RawValue>,
    /// Any JSON, stored as the exact text sent and popped back as `data`; absent is `{}`,
    /// `null` is stored as `null`.
    #[serde(borrow, default)]
    #[schemars(with = "Value")]
    payload: Present<'a>,
    /// The transaction route's alias of `payload` (documented there).
    #[serde(borrow, default)]
    #[schemars(skip)]
    data: Present<'a>,
    /// Ignored: the broker stamps the verified token's `sub`.
    // Never read (nor is any field not named here); documented, as the client may send it.
    #[serde(skip_deserializing)]
    #[schemars(!skip_deserializing, with = "Value", default)]
    #[allow(dead_code)]
    producer_sub: (),
}

/// Validates one item with Queen's texts. Only the small fields are parsed: the payload stays
/// the JSON text the client sent, all the way into the log and back out on pop.
/// `payload_keys` lists where the payload may sit (the transaction route also takes `data`).
pub(crate) fn parse_item(
    item: &RawValue,
    payload_keys: &[&str],
    who: &Principal,
) -> Result<PushItem, ApiError> {
    let f: Fields<'_> = serde_json::from_str(item.get())
        .map_err(|_| ApiError::bad_request("Queue must be a string"))?;
    // A small field as a JSON value; `null` and absent are the same.
    let field = |k: &str| -> Value {
        let raw = match k {
            "queue" => f.queue,
            "partition" => f.partition,
            "transactionId" => f.transaction_id,
            _ => f.trace_id,
        };
        raw.and_then(|r| serde_json::from_str(r.get()).ok())
            .unwrap_or(Value::Null)
    };
    let fields = |k: &str| match k {
        "payload" => f.payload.0,
        _ => f.data.0,
    };
    let queue = match field("queue") {
        // An empty name is a name, as in Queen 0.15 (`configure` takes it too).
        Value::String(q) => name("Queue", &q)?,
        _ => return Err(ApiError::bad_request("Queue must be a string")),
    };
    let partition = match field("partition") {
        Value::Null => DEFAULT_PARTITION.to_string(),
        Value::String(p) if p.is_empty() => DEFAULT_PARTITION.to_string(),
        Value::String(p) => name("Partition", &p)?,
        _ => return Err(ApiError::bad_request("Partition must be a string")),
    };
    let transaction_id = match field("transactionId") {
        Value::Null => Uuid::now_v7().to_string(),
        Value::String(t) if t.is_empty() => Uuid::now_v7().to_string(),
        Value::String(t) => name("TransactionId", &t)?,
        _ => return Err(ApiError::bad_request("TransactionId must be a string")),
    };
    let trace_id = match field("traceId") {
        Value::Null => None,
        Value::String(t) if t.is_empty() => None,
        Value::String(t) => {
            Some(Uuid::parse_str(&t).map_err(|_| ApiError::bad_request("TraceId must be a UUID"))?)
        }
        _ => return Err(ApiError::bad_request("TraceId must be a string")),
    };
    let payload = match payload_keys.iter().find_map(|k| fields(k)) {
        Some(raw) => raw.to_owned(),
        None => RawValue::from_string("{}".into()).expect("valid JSON"),
    };
    Ok(PushItem {
        queue,
        partition,
        message: Message {
            message_id: Uuid::now_v7(),
            transaction_id,
            trace_id,
            // The verified token's `sub`, never the body's (a client's own `producerSub` is
            // ignored).
            producer_sub: who.sub.clone(),
            encrypted: false,
            payload,
        },
    })
}

/// A field that may be absent, where an explicit `null` is a value (a `null` payload is stored
/// as `null`; only an absent one becomes `{}`), unlike `Option`, which folds the two.
#[derive(Default)]
struct Present<'a>(Option<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for Present<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(d).map(|r| Present(Some(r)))
    }
}

async fn push(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Response, ApiError> {
    let items = parse_push(&body, &who, s.config.max_push_items)?;
    // The items own copies of everything they need: the body's bytes are not kept while the
    // push is stored and answered.
    drop(body);
    let (items, verdicts) = s.service.push(&who.tenant, items).await?;
    Ok((StatusCode::CREATED, answer(items, verdicts)).into_response())
}

/// The push body's items, all valid or the first one's error (nothing is pushed then); at
/// most `max` of them.
pub(crate) fn parse_push(
    body: &RawBody,
    who: &Principal,
    max: usize,
) -> Result<Vec<PushItem>, ApiError> {
    let raw = body.raw_json()?;
    let items_required = || ApiError::bad_request("items array is required");
    let top: HashMap<String, &RawValue> =
        serde_json::from_str(raw.get()).map_err(|_| items_required())?;
    let list: Vec<&RawValue> = top
        .get("items")
        .and_then(|r| serde_json::from_str(r.get()).ok())
        .ok_or_else(items_required)?;
    if list.len() > max {
        return Err(ApiError::TooManyItems {
            items: list.len(),
            max,
        });
    }
    list.into_iter()
        .map(|i| parse_item(i, &["payload"], who))
        .collect()
}

/// Results rendered per chunk: a small answer is one chunk with its length; a large one is
/// streamed, so its text (about 170 bytes an item) never sits whole in memory.
const ANSWER_CHUNK: usize = 1000;

/// The answer's JSON array, one [`PushResult`] per item.
fn answer(items: Vec<PushItem>, verdicts: Vec<Verdict>) -> Response {
    let json = [(header::CONTENT_TYPE, "application/json")];
    if items.len() <= ANSWER_CHUNK {
        return (json, render(&items, &verdicts, 0..items.len())).into_response();
    }
    let len = items.len();
    let chunks = (0..len).step_by(ANSWER_CHUNK).map(move |start| {
        let text = render(&items, &verdicts, start..len.min(start + ANSWER_CHUNK));
        Ok::<_, std::convert::Infallible>(text)
    });
    (json, Body::from_stream(futures::stream::iter(chunks))).into_response()
}

/// The results of items `range` as JSON text: with the array's opening bracket on the
/// first chunk, its closing one on the last, and commas between.
fn render(items: &[PushItem], verdicts: &[Verdict], range: Range<usize>) -> Vec<u8> {
    let mut out = Vec::with_capacity(range.len() * 180 + 2);
    out.push(if range.start == 0 { b'[' } else { b',' });
    for (n, index) in range.clone().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        let r = PushResult::of(index, &items[index], &verdicts[index]);
        serde_json::to_writer(&mut out, &r).expect("push results serialise");
    }
    if range.end == items.len() {
        out.push(b']');
    }
    out
}

/// One element of the push answer, with Queen's mixed key casing. Written straight to the
/// wire (the push path's answer is streamed), so its keys come in this declared order.
#[derive(Serialize, JsonSchema)]
pub(crate) struct PushResult<'a> {
    /// The item's position in the request (the answer has one element per item, in order).
    index: usize,
    transaction_id: &'a str,
    /// `queued`: stored; `duplicate`: the partition already had this transaction id
    /// (nothing stored); `buffered`: held under push maintenance, appended when it ends;
    /// `failed`: not stored, `error` says why.
    #[schemars(extend("enum" = ["queued", "duplicate", "buffered", "failed"]))]
    status: &'static str,
    /// queued, buffered: the new message's id; duplicate: the message it duplicates
    /// (absent once that message is gone: cleared or expired).
    #[serde(skip_serializing_if = "Option::is_none")]
    message_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    partition_id: Option<Uuid>,
    /// Queued items only (possibly null).
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_id: Option<Option<Uuid>>,
    /// Queued and duplicate items (Queen's one camelCase key).
    #[serde(rename = "queueName", skip_serializing_if = "Option::is_none")]
    queue_name: Option<&'a str>,
    /// Buffered and failed items.
    #[serde(skip_serializing_if = "Option::is_none")]
    queue: Option<&'a str>,
    /// Buffered and failed items.
    #[serde(skip_serializing_if = "Option::is_none")]
    partition: Option<&'a str>,
    /// Failed items.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    /// Buffered items carry Queen's camelCase key as well.
    #[serde(rename = "transactionId", skip_serializing_if = "Option::is_none")]
    transaction_id_camel: Option<&'a str>,
}

impl<'a> PushResult<'a> {
    pub(crate) fn of(index: usize, item: &'a PushItem, v: &'a Verdict) -> PushResult<'a> {
        let mut r = PushResult {
            index,
            transaction_id: &item.message.transaction_id,
            status: "queued",
            message_id: None,
            partition_id: None,
            trace_id: None,
            queue_name: None,
            queue: None,
            partition: None,
            error: None,
            transaction_id_camel: None,
        };
        match v {
            Verdict::Queued {
                message_id,
                partition,
            } => {
                r.message_id = Some(*message_id);
                r.partition_id = Some(*partition);
                r.trace_id = Some(item.message.trace_id);
                r.queue_name = Some(&item.queue);
            }
            Verdict::Buffered {
                message_id,
                partition,
            } => {
                r.status = "buffered";
                r.message_id = Some(*message_id);
                r.partition_id = Some(*partition);
                r.queue = Some(&item.queue);
                r.partition = Some(&item.partition);
                r.transaction_id_camel = Some(&item.message.transaction_id);
            }
            Verdict::Duplicate {
                message_id,
                partition,
            } => {
                r.status = "duplicate";
                r.message_id = *message_id;
                r.partition_id = Some(*partition);
                r.queue_name = Some(&item.queue);
            }
            Verdict::Failed { error } => {
                r.status = "failed";
                r.queue = Some(&item.queue);
                r.partition = Some(&item.partition);
                r.error = Some(error);
            }
        }
        r
    }
}
