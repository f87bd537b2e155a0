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

use super::ack::{group_of, parse_ack};
use super::answer::{Answer, Null, True};
use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::kv::{self, KvResult, Precondition};
use super::openapi::{schemas, Doc};
use super::push::{self, parse_item};
use super::read;
use super::routes::{route, Entry, Level::ReadWrite};
use super::timers::{parse_timer_ops, TimerResult};
use super::State;

pub(crate) fn routes() -> Vec<Entry> {
    vec![route(Method::POST, "/api/v1/transaction", ReadWrite, transaction)
        .doc(Doc::op(push::TAG, "Acks and pushes in one transaction")
            .body(true, "The bundle.", schemas::r("TransactionRequest"))
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

/// The transaction body is read as a tree (its shape is small and irregular); push items go
/// back to JSON text for the shared item parser.
fn raw(v: &Value) -> Result<Box<serde_json::value::RawValue>, ApiError> {
    serde_json::value::to_raw_value(v)
        .map_err(|e| ApiError::bad_request(format!("Invalid JSON: {e}")))
}

/// `riders`: whether the bundle carries KV or timer operations, when `operations` may be empty
/// (a KV-only bundle, as client 1.3.0 sends).
fn parse_ops(v: &Value, who: &Principal, riders: bool) -> Result<Vec<BundleOp>, ApiError> {
    let ops = match v.get("operations") {
        Some(Value::Array(ops)) => ops,
        None | Some(Value::Null) if riders => return Ok(vec![]),
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
fn required_leases(v: &Value) -> Result<Vec<String>, ApiError> {
    Ok(read::array(v.get("requiredLeases"), "requiredLeases")?
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
    let kv = kv_rider(body)?;
    let timers = match read::array(v.get("timers"), "timers")? {
        None => vec![],
        Some(list) => parse_timer_ops(list, who, "timers")?,
    };
    let ops = parse_ops(&v, who, !kv.is_empty() || !timers.is_empty())?;
    let items = ops.len() + kv.len() + timers.len();
    if items > max {
        return Err(ApiError::TooManyItems { items, max });
    }
    Ok(Bundle {
        ops,
        required_leases: required_leases(&v)?,
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
