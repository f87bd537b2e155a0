//! `POST /api/v1/transaction`: acks and pushes in ONE PostgreSQL transaction (see
//! `regent_service::transaction`).

use axum::extract::State as AxState;
use axum::http::Method;
use axum::Extension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use uuid::Uuid;

use regent_service::push::Verdict;
use regent_service::transaction::{Bundle, BundleOp, BundleOutcome, OpOutcome};

use super::ack::{group_of, parse_ack, AckItem};
use super::answer::{Answer, Null, True};
use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::kv::{self, KvResult, Precondition};
use super::openapi::Doc;
use super::push::{self, parse_item};
use super::read;
use super::routes::{route, Entry, Level::ReadWrite};
use super::timers::{parse_timer_ops, TimerOperation, TimerResult};
use super::State;

pub(crate) fn routes() -> Vec<Entry> {
    vec![route(Method::POST, "/api/v1/transaction", ReadWrite, transaction)
        .doc(Doc::op(push::TAG, "Acks and pushes in one transaction")
            .body_of::<TransactionRequest>(true, "The bundle.")
            .quota()
            .fails(400, "`operations array required`, `operations array cannot be empty`, `Unknown operation type: <type>`, `items array is required`, `requiredLeases must be an array`, a push item's texts (as on the push route), a KV operation's (as on `POST /api/v1/kv`); `Empty request body`, `Invalid JSON: …`.")
            .answers::<TransactionAnswer>(200, "Committed (`success: true`) or refused with nothing written (`success: false`)."))
        .reads_body(
            &[
                r#"{"operations": [
                    {"type": "ack", "transactionId": "in-1", "partitionId": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d",
                     "status": "completed", "consumerGroup": "stage2", "leaseId": "l-1"},
                    {"type": "push", "items": [{"queue": "invoices.render", "partition": "acct-9",
                     "payload": {"total": 42}, "transactionId": "out-1"}]}],
                   "requiredLeases": ["l-1"]}"#,
                r#"{"operations": [{"type": "push", "queue": "q", "data": {"x": 1}}], "requiredLeases": null}"#,
                r#"{"operations": [], "kv": [{"op": "putIfAbsent", "ns": "seen", "key": "in-1", "value": true, "ttlSeconds": 60, "required": true}],
                    "timers": [{"op": "schedule", "queue": "q", "timerKey": "k/1", "payload": "eyJ4IjoxfQ==", "delayMs": 500, "txn": "t-1"},
                               {"op": "cancel", "queue": "q", "timerKey": "k/0"}]}"#,
            ],
            |b| parse_bundle(b, &push::fuzz_principal(), push::FUZZ_MAX_ITEMS),
        )]
}

/// `POST /api/v1/transaction`: operations (acks and pushes) and riders (KV and timer
/// operations), in one transaction.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct TransactionRequest {
    /// Required unless `kv` holds operations. Not an array: 400 `operations array required`;
    /// empty without a `kv` rider: 400 `operations array cannot be empty`; another `type`: 400
    /// `Unknown operation type: <type>`.
    #[schemars(with = "Vec<Operation>", default)]
    operations: Option<Value>,
    /// Leases that must all be live (the Python client sends its acked messages' leases); an
    /// ack without its own `leaseId` is fenced by the single one named here.
    #[schemars(with = "Option<Vec<String>>")]
    required_leases: Option<Value>,
    /// Key/value operations as `POST /api/v1/kv` takes them (not `getPrefix`), in the bundle's
    /// transaction; results follow the operations'.
    // Read from the body's text by `kv_rider`, values kept as sent.
    #[schemars(with = "Option<Vec<kv::Fields>>")]
    #[allow(dead_code)]
    kv: Option<Value>,
    /// Timer operations as `POST /api/v1/timers` takes them, in the bundle's transaction;
    /// results follow the KV results.
    #[schemars(with = "Option<Vec<TimerOperation>>")]
    timers: Option<Value>,
}

/// One operation of the bundle: an ack, pushes nested under `items`, or one push item.
// Written out: the wire tells the three shapes apart by `type` and by `items`, two of them
// being `type: push`, which no serde enum representation says; each shape is a type.
struct Operation;

impl JsonSchema for Operation {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TransactionOperation".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let shapes = [
            g.subschema_for::<AckOperation>(),
            g.subschema_for::<PushesOperation>(),
            g.subschema_for::<PushOperation>(),
        ];
        schemars::json_schema!({ "oneOf": shapes })
    }
}

/// An ack, with the ack route's defaults and normalisation.
#[derive(JsonSchema)]
#[schemars(rename = "TransactionAck")]
#[allow(dead_code)]
struct AckOperation {
    #[serde(rename = "type")]
    #[schemars(with = "String", extend("const" = "ack"))]
    kind: (),
    #[serde(flatten)]
    ack: AckItem,
}

/// Pushes, nested.
#[derive(JsonSchema)]
#[schemars(rename = "TransactionPushes")]
#[allow(dead_code)]
struct PushesOperation<'a> {
    #[serde(rename = "type")]
    #[schemars(with = "String", extend("const" = "push"))]
    kind: (),
    /// Each item is one operation of the result's index space; `data` is accepted as an
    /// alias of `payload`.
    items: Vec<push::Fields<'a>>,
}

/// One push item as an operation.
#[derive(JsonSchema)]
#[schemars(rename = "TransactionPush")]
#[allow(dead_code)]
struct PushOperation<'a> {
    #[serde(rename = "type")]
    #[schemars(with = "String", extend("const" = "push"))]
    kind: (),
    #[serde(flatten)]
    item: push::Fields<'a>,
    /// An alias of `payload`.
    #[schemars(with = "Value", default)]
    data: (),
}

/// The transaction body is read as a tree (its shape is small and irregular); push items go
/// back to JSON text for the shared item parser.
fn raw(v: &Value) -> Result<Box<serde_json::value::RawValue>, ApiError> {
    serde_json::value::to_raw_value(v)
        .map_err(|e| ApiError::bad_request(format!("Invalid JSON: {e}")))
}

/// `riders`: whether the bundle carries KV or timer operations, when `operations` may be empty
/// (a KV-only bundle, as client 1.3.0 sends).
fn parse_ops(
    t: Option<&TransactionRequest>,
    who: &Principal,
    riders: bool,
) -> Result<Vec<BundleOp>, ApiError> {
    let ops = match t.and_then(|t| t.operations.as_ref()) {
        Some(Value::Array(ops)) => ops,
        None if riders => return Ok(vec![]),
        _ => return Err(ApiError::bad_request("operations array required")),
    };
    if ops.is_empty() && !riders {
        return Err(ApiError::bad_request("operations array cannot be empty"));
    }
    let push = |item: &Value| -> Result<BundleOp, ApiError> {
        Ok(BundleOp::Push(parse_item(
            &raw(item)?,
            &["payload", "data"],
            who,
        )?))
    };
    let mut out = Vec::new();
    for op in ops {
        match op.get("type").and_then(Value::as_str) {
            Some("ack") => out.push(BundleOp::Ack {
                ack: parse_ack(op),
                group: group_of(op),
            }),
            Some("push") => match op.get("items") {
                Some(Value::Array(items)) => {
                    for i in items {
                        out.push(push(i)?);
                    }
                }
                Some(_) => return Err(ApiError::bad_request("items array is required")),
                None => out.push(push(op)?),
            },
            other => {
                let t = other
                    .map(str::to_string)
                    .unwrap_or_else(|| op.get("type").map(Value::to_string).unwrap_or_default());
                return Err(ApiError::bad_request(format!(
                    "Unknown operation type: {t}"
                )));
            }
        }
    }
    Ok(out)
}

/// The leases named; an element that is not a string names none.
fn required_leases(t: Option<&TransactionRequest>) -> Result<Vec<String>, ApiError> {
    let leases = t.and_then(|t| t.required_leases.as_ref());
    Ok(read::array(leases, "requiredLeases")?
        .unwrap_or_default()
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect())
}

/// The transaction body: its operations (push items flattened), its riders, at most `max`
/// of them in all, and required leases.
pub(crate) fn parse_bundle(
    body: &RawBody,
    who: &Principal,
    max: usize,
) -> Result<Bundle, ApiError> {
    let v = body.json()?;
    // A body that is not an object has no fields: Queen's `operations array required`.
    let t = read::fields::<TransactionRequest>(&v).ok();
    let t = t.as_ref();
    let kv = kv_rider(body)?;
    let timers = match read::array(t.and_then(|t| t.timers.as_ref()), "timers")? {
        None => vec![],
        Some(list) => parse_timer_ops(list, who, "timers")?,
    };
    let ops = parse_ops(t, who, !kv.is_empty() || !timers.is_empty())?;
    let items = ops.len() + kv.len() + timers.len();
    if items > max {
        return Err(ApiError::TooManyItems { items, max });
    }
    Ok(Bundle {
        ops,
        required_leases: required_leases(t)?,
        kv,
        timers,
    })
}

/// The `kv` rider, its values kept as the client's text; `getPrefix` refused. A body that is
/// not an object has no rider: the operations' reading refuses it with Queen's text.
fn kv_rider(body: &RawBody) -> Result<Vec<regent_service::kv::KvOp>, ApiError> {
    #[derive(Deserialize)]
    struct Rider<'a> {
        #[serde(borrow)]
        kv: Option<&'a RawValue>,
    }
    let Ok(r) = serde_json::from_str::<Rider<'_>>(body.raw_json()?.get()) else {
        return Ok(vec![]);
    };
    match r.kv {
        None => Ok(vec![]),
        Some(raw) if raw.get() == "null" => Ok(vec![]),
        Some(raw) => kv::parse_ops(raw, false),
    }
}

/// The bundle's answer.
#[derive(Serialize, JsonSchema)]
pub(crate) struct TransactionAnswer {
    /// A fresh id of the bundle, not a message id.
    #[serde(rename = "transactionId")]
    transaction_id: Uuid,
    /// false: nothing committed, `error` says why (the Python client raises it).
    success: bool,
    /// Why the bundle was refused: `invalid or expired lease`, `unresolvable: …`, `already
    /// committed: …`, `consumer not found`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// `kv_precondition` when a `required` KV operation did not apply (the client returns
    /// this answer instead of raising).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("const" = "kv_precondition"))]
    reason: Option<&'static str>,
    /// Which KV operation, in the flat result positions, and the row it found.
    #[serde(flatten)]
    precondition: Option<Precondition>,
    /// One per ack and per pushed item (pushes flattened), in request order, then one per KV
    /// operation; empty when refused.
    results: Vec<OpResult>,
}

/// One operation's result.
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
enum OpResult {
    Acked(Acked),
    Pushed(Pushed),
    NotPushed(NotPushed),
    Kv(KvRider),
    Timer(TimerRider),
}

/// A timer operation of the bundle: its result, as `POST /api/v1/timers` answers it.
#[derive(Serialize, JsonSchema)]
struct TimerRider {
    index: usize,
    #[serde(rename = "type")]
    #[schemars(extend("const" = "timer"))]
    kind: &'static str,
    #[serde(flatten)]
    result: TimerResult,
}

/// A KV operation of the bundle: its result, as `POST /api/v1/kv` answers it.
#[derive(Serialize, JsonSchema)]
struct KvRider {
    index: usize,
    #[serde(rename = "type")]
    #[schemars(extend("const" = "kv"))]
    kind: &'static str,
    #[serde(flatten)]
    result: KvResult,
}

/// An ack of the bundle, carried out.
#[derive(Serialize, JsonSchema)]
struct Acked {
    index: usize,
    #[serde(rename = "type")]
    #[schemars(extend("const" = "ack"))]
    kind: &'static str,
    success: True,
    #[serde(rename = "transactionId")]
    transaction_id: String,
    error: Null,
    dlq: bool,
    #[serde(rename = "leaseReleased")]
    lease_released: bool,
    noop: bool,
}

/// A pushed item of the bundle.
#[derive(Serialize, JsonSchema)]
struct Pushed {
    index: usize,
    #[serde(rename = "type")]
    #[schemars(extend("const" = "push"))]
    kind: &'static str,
    success: True,
    #[serde(rename = "transactionId")]
    transaction_id: String,
    /// The new message, or the one a duplicate names.
    #[serde(rename = "messageId")]
    message_id: Option<Uuid>,
    #[serde(rename = "partitionId")]
    partition_id: Uuid,
    #[serde(rename = "queueName")]
    queue_name: String,
    #[schemars(extend("enum" = ["queued", "duplicate", "buffered"]))]
    status: &'static str,
}

/// A push item of the bundle that failed.
#[derive(Serialize, JsonSchema)]
struct NotPushed {
    index: usize,
    #[serde(rename = "type")]
    #[schemars(extend("const" = "push"))]
    kind: &'static str,
    #[schemars(extend("const" = false))]
    success: bool,
    #[serde(rename = "transactionId")]
    transaction_id: String,
    error: String,
    #[serde(rename = "queueName")]
    queue_name: String,
}

async fn transaction(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Answer<TransactionAnswer>, ApiError> {
    let bundle = parse_bundle(&body, &who, s.config.max_push_items)?;
    // The bundle owns copies of what it needs: the body's bytes are not kept while it runs.
    drop(body);
    let total = bundle.ops.len();
    let keys_only = kv::keys_only(&bundle.kv);
    let refused = |error: String| TransactionAnswer {
        transaction_id: Uuid::now_v7(),
        success: false,
        error: Some(error),
        reason: None,
        precondition: None,
        results: vec![],
    };
    Ok(Answer(
        match s.service.transaction(&who.tenant, bundle).await? {
            BundleOutcome::Refused(error) => refused(error),
            BundleOutcome::KvPrecondition(failed) => {
                let p = Precondition::of(failed, total)?;
                TransactionAnswer {
                    reason: Some("kv_precondition"),
                    precondition: Some(p),
                    ..refused("KV precondition failed: a required operation did not apply".into())
                }
            }
            BundleOutcome::Committed(done) => {
                let mut results: Vec<OpResult> =
                    done.ops.into_iter().enumerate().map(result).collect();
                for r in kv::results(&keys_only, done.kv)? {
                    results.push(OpResult::Kv(KvRider {
                        index: results.len(),
                        kind: "kv",
                        result: r,
                    }));
                }
                for o in done.timers {
                    results.push(OpResult::Timer(TimerRider {
                        index: results.len(),
                        kind: "timer",
                        result: o.into(),
                    }));
                }
                TransactionAnswer {
                    success: true,
                    error: None,
                    results,
                    ..refused(String::new())
                }
            }
        },
    ))
}

fn result((index, o): (usize, OpOutcome)) -> OpResult {
    match o {
        OpOutcome::Ack {
            transaction_id,
            outcome: o,
        } => OpResult::Acked(Acked {
            index,
            kind: "ack",
            success: True,
            transaction_id,
            error: Null,
            dlq: o.dlq,
            lease_released: o.lease_released,
            noop: o.noop,
        }),
        OpOutcome::Push { item, verdict } => {
            let transaction_id = item.message.transaction_id;
            let status = match verdict {
                Verdict::Queued { .. } => "queued",
                Verdict::Buffered { .. } => "buffered",
                Verdict::Duplicate { .. } => "duplicate",
                Verdict::Failed { .. } => "failed",
            };
            match verdict {
                Verdict::Failed { error } => OpResult::NotPushed(NotPushed {
                    index,
                    kind: "push",
                    success: false,
                    transaction_id,
                    error,
                    queue_name: item.queue,
                }),
                stored => {
                    let (message_id, partition_id) = stored.stored().unwrap_or_default();
                    OpResult::Pushed(Pushed {
                        index,
                        kind: "push",
                        success: True,
                        transaction_id,
                        message_id,
                        partition_id,
                        queue_name: item.queue,
                        status,
                    })
                }
            }
        }
    }
}
