//! `POST /api/v1/ack` and `/ack/batch`: acknowledgement as an offset commit, exactly as the
//! seed contract says. Both answer 200 with one element per item, in request order.

use axum::extract::State as AxState;
use axum::{Extension, Json};
use serde_json::{json, Value};

use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::State;
use crate::activity::Op;
use crate::broker::ack_plan::{AckPlan, ItemOutcome};
use crate::broker::naming::QUEUE_MODE;
use crate::broker::status::AckStatus;
use crate::store::ack::{AckGroup, AckRequestItem};

/// One ack as sent, with the contract's defaults for absent or null fields.
#[derive(Clone, Debug)]
pub(crate) struct SentAck {
    pub transaction_id: String,
    pub partition_id: String,
    pub lease_id: Option<String>,
    pub item: AckRequestItem,
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

pub(crate) fn parse_ack(v: &Value) -> SentAck {
    // A non-string status is "anything else": a nack. Only absent or null completes.
    let status = match v.get("status") {
        None | Some(Value::Null) => AckStatus::normalise(None),
        Some(Value::String(s)) => AckStatus::normalise(Some(s)),
        Some(_) => AckStatus::Failed,
    };
    let transaction_id = text(v, "transactionId").unwrap_or_default();
    SentAck {
        partition_id: text(v, "partitionId").unwrap_or_default(),
        lease_id: text(v, "leaseId"),
        item: AckRequestItem {
            status,
            transaction_id: transaction_id.clone(),
            error: text(v, "error"),
        },
        transaction_id,
    }
}

pub(crate) fn group_of(v: &Value) -> String {
    text(v, "consumerGroup").unwrap_or_else(|| QUEUE_MODE.to_string())
}

/// Groups items by (partitionId, leaseId) in first-appearance order; returns the groups and,
/// per group, the request positions of its items.
pub(crate) fn group_acks(acks: &[SentAck], consumer_group: &str) -> Vec<(AckGroup, Vec<usize>)> {
    let mut groups: Vec<(AckGroup, Vec<usize>)> = Vec::new();
    for (i, a) in acks.iter().enumerate() {
        match groups
            .iter_mut()
            .find(|(g, _)| g.partition_id == a.partition_id && g.lease_id == a.lease_id)
        {
            Some((g, idx)) => {
                g.items.push(a.item.clone());
                idx.push(i);
            }
            None => groups.push((
                AckGroup {
                    partition_id: a.partition_id.clone(),
                    group: consumer_group.to_string(),
                    lease_id: a.lease_id.clone(),
                    items: vec![a.item.clone()],
                    known: None,
                },
                vec![i],
            )),
        }
    }
    groups
}

pub(crate) fn outcome_json(index: usize, transaction_id: &str, o: &ItemOutcome) -> Value {
    json!({
        "index": index, "transactionId": transaction_id, "success": o.success, "error": o.error,
        "leaseReleased": o.lease_released, "dlq": o.dlq, "noop": o.noop,
    })
}

/// Fills in the offsets this broker delivered under each group's lease, where it knows them.
pub(crate) fn know_offsets<'a>(
    s: &super::AppState,
    groups: impl IntoIterator<Item = &'a mut AckGroup>,
) {
    for g in groups {
        if let Some(lease) = &g.lease_id {
            g.known = s.deliveries.resolve(
                lease,
                &g.partition_id,
                g.items.iter().map(|i| i.transaction_id.as_str()),
            );
        }
    }
}

/// Forgets the deliveries of leases the acks ended.
pub(crate) fn forget_ended(s: &super::AppState, leases: &[Option<String>], plans: &[AckPlan]) {
    for (lease, plan) in leases.iter().zip(plans) {
        if let Some(lease) = lease {
            if plan.items.iter().any(|o| o.lease_released) {
                s.deliveries.forget(lease);
            }
        }
    }
}

async fn process(
    s: &super::AppState,
    tenant: &str,
    acks: Vec<SentAck>,
    consumer_group: &str,
) -> Result<Value, ApiError> {
    let (mut groups, positions): (Vec<AckGroup>, Vec<Vec<usize>>) =
        group_acks(&acks, consumer_group).into_iter().unzip();
    know_offsets(s, &mut groups);
    let leases: Vec<Option<String>> = groups.iter().map(|g| g.lease_id.clone()).collect();
    // Each group resolves on its own; concurrent requests' groups share a commit (fusion).
    s.activity.request(Op::Ack);
    let plans = s.acks.ack(tenant, groups).await?;
    let acknowledged = plans
        .iter()
        .flat_map(|p| &p.items)
        .filter(|o| o.success)
        .count();
    s.activity.carried(Op::Ack, acknowledged);
    forget_ended(s, &leases, &plans);

    let mut out: Vec<Value> = vec![Value::Null; acks.len()];
    for (idx, plan) in positions.iter().zip(plans) {
        for (pos, outcome) in idx.iter().zip(&plan.items) {
            out[*pos] = outcome_json(*pos, &acks[*pos].transaction_id, outcome);
        }
    }
    Ok(Value::Array(out))
}

pub async fn ack_single(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Json<Value>, ApiError> {
    let v = body.ack_json()?;
    if !v.is_object() {
        return Err(ApiError::bad_request("bad body: expected a JSON object"));
    }
    Ok(Json(
        process(&s, &who.tenant, vec![parse_ack(&v)], &group_of(&v)).await?,
    ))
}

pub async fn ack_batch(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Json<Value>, ApiError> {
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
    let acks: Vec<SentAck> = items.iter().map(parse_ack).collect();
    Ok(Json(process(&s, &who.tenant, acks, &group_of(&v)).await?))
}
