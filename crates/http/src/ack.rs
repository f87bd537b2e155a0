//! `POST /api/v1/ack` and `/ack/batch`: acknowledgement as an offset commit, exactly as the
//! seed contract says. Both answer 200 with one element per item, in request order.

use axum::extract::State as AxState;
use axum::{Extension, Json};
use serde_json::{json, Value};

use regent_broker::ack_plan::ItemOutcome;
use regent_broker::naming::QUEUE_MODE;
use regent_broker::status::AckStatus;
use regent_service::ack::SentAck;

use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::State;

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// One ack as sent, with the contract's defaults for absent or null fields.
pub(crate) fn parse_ack(v: &Value) -> SentAck {
    // A non-string status is "anything else": a nack. Only absent or null completes.
    let status = match v.get("status") {
        None | Some(Value::Null) => AckStatus::normalise(None),
        Some(Value::String(s)) => AckStatus::normalise(Some(s)),
        Some(_) => AckStatus::Failed,
    };
    SentAck {
        transaction_id: text(v, "transactionId").unwrap_or_default(),
        partition_id: text(v, "partitionId").unwrap_or_default(),
        lease_id: text(v, "leaseId"),
        status,
        error: text(v, "error"),
    }
}

pub(crate) fn group_of(v: &Value) -> String {
    text(v, "consumerGroup").unwrap_or_else(|| QUEUE_MODE.to_string())
}

fn outcome_json(index: usize, transaction_id: &str, o: &ItemOutcome) -> Value {
    json!({
        "index": index, "transactionId": transaction_id, "success": o.success, "error": o.error,
        "leaseReleased": o.lease_released, "dlq": o.dlq, "noop": o.noop,
    })
}

async fn process(
    s: &super::AppState,
    who: &Principal,
    acks: Vec<SentAck>,
    group: &str,
) -> Result<Json<Value>, ApiError> {
    let ids: Vec<String> = acks.iter().map(|a| a.transaction_id.clone()).collect();
    let outcomes = s.service.ack(&who.tenant, acks, group).await?;
    let out = ids
        .iter()
        .zip(&outcomes)
        .enumerate()
        .map(|(i, (id, o))| outcome_json(i, id, o))
        .collect();
    Ok(Json(Value::Array(out)))
}

pub async fn ack_single(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Json<Value>, ApiError> {
    let (ack, group) = parse_single(&body)?;
    process(&s, &who, vec![ack], &group).await
}

/// `POST /api/v1/ack`'s body: one ack and its consumer group.
pub(crate) fn parse_single(body: &RawBody) -> Result<(SentAck, String), ApiError> {
    let v = body.ack_json()?;
    if !v.is_object() {
        return Err(ApiError::bad_request("bad body: expected a JSON object"));
    }
    Ok((parse_ack(&v), group_of(&v)))
}

pub async fn ack_batch(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Json<Value>, ApiError> {
    let (acks, group) = parse_batch(&body)?;
    process(&s, &who, acks, &group).await
}

/// `POST /api/v1/ack/batch`'s body: the acks, in order, and their one consumer group.
pub(crate) fn parse_batch(body: &RawBody) -> Result<(Vec<SentAck>, String), ApiError> {
    let v = body.ack_json()?;
    let Some(Value::Array(items)) = v.get("acknowledgments") else {
        return Err(ApiError::bad_request(
            "bad body: acknowledgments array is required",
        ));
    };
    if let Some(bad) = items.iter().position(|i| !i.is_object()) {
        return Err(ApiError::bad_request(format!(
            "bad body: acknowledgments[{bad}] must be an object"
        )));
    }
    Ok((items.iter().map(parse_ack).collect(), group_of(&v)))
}
