//! `POST /api/v1/transaction`: acks and pushes in ONE PostgreSQL transaction, so a pipeline
//! stage hands work forward with no window in which the ack landed and the push did not.
//! Any refused ack rolls the bundle back; a retried bundle is harmless (push dedup, ack noop).

use axum::extract::State as AxState;
use axum::{Extension, Json};
use serde_json::{json, Value};
use uuid::Uuid;

use super::ack::{group_acks, group_of, parse_ack, SentAck};
use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::push::{append_prepared, parse_item, prepare, PushItem, Verdict};
use super::State;
use crate::activity::Op as Counted;
use crate::broker::ack_plan::{ItemOutcome, INVALID_LEASE};
use crate::store::ack::{ack_group, AckGroup, LeaseCheck};
use crate::store::lease::all_live;
use crate::store::push::Dedup;

/// One entry of the flattened index space: an ack op, or one pushed item.
enum Op {
    Ack { ack: SentAck, group: String },
    Push(PushItem),
}

/// The transaction body is read as a tree (its shape is small and irregular); push items go
/// back to JSON text for the shared item parser.
fn raw(v: &Value) -> Result<Box<serde_json::value::RawValue>, ApiError> {
    serde_json::value::to_raw_value(v)
        .map_err(|e| ApiError::bad_request(format!("Invalid JSON: {e}")))
}

fn parse_ops(v: &Value) -> Result<Vec<Op>, ApiError> {
    let Some(Value::Array(ops)) = v.get("operations") else {
        return Err(ApiError::bad_request("operations array required"));
    };
    if ops.is_empty() {
        return Err(ApiError::bad_request("operations array cannot be empty"));
    }
    let mut out = Vec::new();
    for op in ops {
        match op.get("type").and_then(Value::as_str) {
            Some("ack") => out.push(Op::Ack {
                ack: parse_ack(op),
                group: group_of(op),
            }),
            Some("push") => match op.get("items") {
                Some(Value::Array(items)) => {
                    for i in items {
                        out.push(Op::Push(parse_item(&raw(i)?, &["payload", "data"])?));
                    }
                }
                Some(_) => return Err(ApiError::bad_request("items array is required")),
                None => out.push(Op::Push(parse_item(&raw(op)?, &["payload", "data"])?)),
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

/// Why the bundle was rolled back (a business outcome, answered with 200 `success:false`).
struct Refused(String);

pub async fn transaction(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Json<Value>, ApiError> {
    s.activity.request(Counted::Transaction);
    let v = body.json()?;
    let ops = parse_ops(&v)?;
    let required: Vec<String> = match v.get("requiredLeases") {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(a)) => {
            let mut l: Vec<String> = a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            l.sort();
            l.dedup();
            l
        }
        Some(_) => return Err(ApiError::bad_request("requiredLeases must be an array")),
    };
    let bundle_id = Uuid::now_v7();
    let tenant: &str = &who.tenant;

    // Acks: an op without its own leaseId borrows the bundle's single required lease.
    let mut acks: Vec<(usize, SentAck, String)> = Vec::new();
    let mut pushes: Vec<(usize, PushItem)> = Vec::new();
    for (i, op) in ops.into_iter().enumerate() {
        match op {
            Op::Ack { mut ack, group } => {
                if ack.lease_id.is_none() && required.len() == 1 {
                    ack.lease_id = Some(required[0].clone());
                }
                acks.push((i, ack, group));
            }
            Op::Push(p) => pushes.push((i, p)),
        }
    }
    let total = acks.len() + pushes.len();
    // Groups per consumer group, then sorted by (partition, group): the global lock order.
    let mut groups: Vec<(AckGroup, Vec<usize>)> = Vec::new();
    let mut by_group: std::collections::BTreeMap<&str, Vec<(usize, SentAck)>> = Default::default();
    for (i, a, g) in &acks {
        by_group
            .entry(g.as_str())
            .or_default()
            .push((*i, a.clone()));
    }
    for (g, list) in by_group {
        let sent: Vec<SentAck> = list.iter().map(|(_, a)| a.clone()).collect();
        for (group, idx) in group_acks(&sent, g) {
            groups.push((group, idx.iter().map(|k| list[*k].0).collect()));
        }
    }
    groups.sort_by(|a, b| (&a.0.partition_id, &a.0.group).cmp(&(&b.0.partition_id, &b.0.group)));
    super::ack::know_offsets(&s, groups.iter_mut().map(|(g, _)| g));

    let mut push_items: Vec<PushItem> = pushes.iter().map(|(_, p)| p.clone()).collect();
    super::push::stamp(&mut push_items, &who);
    let room = s
        .limits
        .reserve(&s.store, &who.tenant, push_items.len() as i64)
        .await??;
    let result = crate::commit_if!(s.store, |tx| {
        // Partition creation first: the head of the global lock order.
        let prepared = prepare(tx, &s, tenant, &push_items).await?;
        // Checked before the acks run (they may end these very leases). A bundle whose
        // leases are gone is still accepted when every ack in it replays an ack already
        // committed, so re-sending a committed bundle after a lost answer is harmless.
        let leases_live = all_live(tx, tenant, &required).await?;
        let invalid = || Refused(format!("ACK operation failed: {INVALID_LEASE}"));
        if !leases_live && groups.is_empty() {
            return Ok(Err(invalid()));
        }
        let mut ack_out: Vec<(usize, ItemOutcome)> = Vec::new();
        let mut reopened = Vec::new();
        for (group, idx) in &groups {
            let acked = match ack_group(tx, tenant, group, LeaseCheck::AllowReplay).await {
                Ok(a) => a,
                Err(e) if e.is_client_error() => {
                    return Ok(Err(Refused(format!("ACK operation failed: {e}"))))
                }
                Err(e) => return Err(e),
            };
            reopened.extend(acked.reopened.map(|q| (q, group.group.clone())));
            for (pos, o) in idx.iter().zip(acked.plan.items) {
                if !o.success {
                    let why = o.error.clone().unwrap_or_default();
                    return Ok(Err(Refused(format!("ACK operation failed: {why}"))));
                }
                ack_out.push((*pos, o));
            }
        }
        if !leases_live && !ack_out.iter().all(|(_, o)| o.noop) {
            return Ok(Err(invalid()));
        }
        // Careful: an optimistic duplicate would void the acks' work along with the pushes.
        let verdicts = append_prepared(tx, &prepared, Dedup::Careful).await?;
        if let Some(Verdict::Failed { error }) = verdicts
            .iter()
            .find(|v| matches!(v, Verdict::Failed { .. }))
        {
            return Ok(Err(Refused(format!("PUSH operation failed: {error}"))));
        }
        let mut written = prepared.written(tenant);
        written.reopened = reopened;
        Ok(Ok((ack_out, verdicts, written)))
    });
    let (ack_out, verdicts, written) = match result {
        Ok(Ok(r)) => r,
        Ok(Err(Refused(error))) => {
            room.released();
            return Ok(Json(json!({
                "transactionId": bundle_id, "success": false, "error": error, "results": [],
            })));
        }
        Err(e) => return Err(e.into()),
    };
    room.committed(super::push::queued(&verdicts));
    s.activity.carried(
        Counted::Transaction,
        super::push::queued(&verdicts) as usize,
    );
    s.announce(&written);
    let mut results: Vec<Value> = vec![Value::Null; total];
    for (pos, o) in ack_out {
        let txid = &acks
            .iter()
            .find(|(i, _, _)| *i == pos)
            .expect("ack op")
            .1
            .transaction_id;
        results[pos] = json!({
            "index": pos, "type": "ack", "success": true, "transactionId": txid, "error": null,
            "dlq": o.dlq, "leaseReleased": o.lease_released, "noop": o.noop,
        });
    }
    for ((pos, item), v) in pushes.iter().zip(verdicts) {
        results[*pos] = match v {
            Verdict::Queued {
                message_id,
                partition,
            }
            | Verdict::Duplicate {
                message_id,
                partition,
            } => {
                let status = if matches!(v, Verdict::Queued { .. }) {
                    "queued"
                } else {
                    "duplicate"
                };
                json!({
                    "index": pos, "type": "push", "success": true, "transactionId": item.transaction_id,
                    "messageId": message_id, "partitionId": partition, "queueName": item.queue,
                    "status": status,
                })
            }
            Verdict::Failed { error } => json!({
                "index": pos, "type": "push", "success": false, "transactionId": item.transaction_id,
                "error": error, "queueName": item.queue,
            }),
        };
    }
    Ok(Json(
        json!({ "transactionId": bundle_id, "success": true, "results": results }),
    ))
}
