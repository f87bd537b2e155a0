//! `POST /api/v1/transaction`: acks and pushes in ONE PostgreSQL transaction (see
//! `regent_service::transaction`).

use axum::extract::State as AxState;
use axum::{Extension, Json};
use serde_json::{json, Value};
use uuid::Uuid;

use regent_service::push::Verdict;
use regent_service::transaction::{Bundle, BundleOp, BundleOutcome, OpOutcome};

use super::ack::{group_of, parse_ack};
use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::push::parse_item;
use super::State;

/// The transaction body is read as a tree (its shape is small and irregular); push items go
/// back to JSON text for the shared item parser.
fn raw(v: &Value) -> Result<Box<serde_json::value::RawValue>, ApiError> {
    serde_json::value::to_raw_value(v)
        .map_err(|e| ApiError::bad_request(format!("Invalid JSON: {e}")))
}

fn parse_ops(v: &Value, who: &Principal) -> Result<Vec<BundleOp>, ApiError> {
    let Some(Value::Array(ops)) = v.get("operations") else {
        return Err(ApiError::bad_request("operations array required"));
    };
    if ops.is_empty() {
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

fn required_leases(v: &Value) -> Result<Vec<String>, ApiError> {
    match v.get("requiredLeases") {
        None | Some(Value::Null) => Ok(vec![]),
        Some(Value::Array(a)) => Ok(a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()),
        Some(_) => Err(ApiError::bad_request("requiredLeases must be an array")),
    }
}

/// The transaction body: its operations (push items flattened), at most `max` of them, and
/// required leases.
pub(crate) fn parse_bundle(
    body: &RawBody,
    who: &Principal,
    max: usize,
) -> Result<Bundle, ApiError> {
    let v = body.json()?;
    let ops = parse_ops(&v, who)?;
    if ops.len() > max {
        return Err(ApiError::TooManyItems {
            items: ops.len(),
            max,
        });
    }
    Ok(Bundle {
        ops,
        required_leases: required_leases(&v)?,
    })
}

pub async fn transaction(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Json<Value>, ApiError> {
    let bundle = parse_bundle(&body, &who, s.config.max_push_items)?;
    // The bundle owns copies of what it needs: the body's bytes are not kept while it runs.
    drop(body);
    let bundle_id = Uuid::now_v7();
    let results = match s.service.transaction(&who.tenant, bundle).await? {
        BundleOutcome::Refused(error) => {
            return Ok(Json(json!({
                "transactionId": bundle_id, "success": false, "error": error, "results": [],
            })))
        }
        BundleOutcome::Committed(outcomes) => outcomes
            .iter()
            .enumerate()
            .map(|(index, o)| result(index, o))
            .collect::<Vec<Value>>(),
    };
    Ok(Json(
        json!({ "transactionId": bundle_id, "success": true, "results": results }),
    ))
}

fn result(index: usize, o: &OpOutcome) -> Value {
    match o {
        OpOutcome::Ack {
            transaction_id,
            outcome: o,
        } => json!({
            "index": index, "type": "ack", "success": true, "transactionId": transaction_id,
            "error": null, "dlq": o.dlq, "leaseReleased": o.lease_released, "noop": o.noop,
        }),
        OpOutcome::Push { item, verdict } => {
            let txid = &item.message.transaction_id;
            let status = match verdict {
                Verdict::Queued { .. } => "queued",
                Verdict::Buffered { .. } => "buffered",
                Verdict::Duplicate { .. } => "duplicate",
                Verdict::Failed { .. } => "failed",
            };
            match verdict {
                Verdict::Failed { error } => json!({
                    "index": index, "type": "push", "success": false, "transactionId": txid,
                    "error": error, "queueName": item.queue,
                }),
                stored => {
                    let (message_id, partition) = stored.stored().unwrap_or_default();
                    json!({
                        "index": index, "type": "push", "success": true, "transactionId": txid,
                        "messageId": message_id, "partitionId": partition,
                        "queueName": item.queue, "status": status,
                    })
                }
            }
        }
    }
}
