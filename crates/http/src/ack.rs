//! `POST /api/v1/ack` and `/ack/batch`: acknowledgement as an offset commit, exactly as the
//! seed contract says. Both answer 200 with one element per item, in request order.

use axum::extract::State as AxState;
use axum::http::Method;
use axum::Extension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use regent_rules::ack_plan::ItemOutcome;
use regent_rules::naming::QUEUE_MODE;
use regent_rules::status::AckStatus;
use regent_service::ack::SentAck;

use super::answer::Answer;
use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::openapi::{Doc, Tag};
use super::read;
use super::routes::{route, Entry, Level::ReadWrite};
use super::State;

/// Claiming messages, acknowledging them, extending their lease (`crate::pop`, `crate::lease`).
pub(crate) const TAG: Tag = (
    "consume",
    "Claiming messages under a lease, acknowledging them (an offset commit per partition and group), extending the lease.",
);

pub(crate) fn routes() -> Vec<Entry> {
    let results =
        "One result per item, in request order (all per-item outcomes live inside a 200).";
    vec![
        route(Method::POST, "/api/v1/ack", ReadWrite, ack_single)
            .doc(Doc::op(TAG, "Acknowledge one message")
                .body_of::<AckItem>(true, "The ack.")
                .fails(400, "`bad body: empty request body`, `bad body: expected a JSON object`, `bad body: <parser message>`.")
                .answers::<Vec<AckResult>>(200, results))
            .reads_body(&[
                r#"{"transactionId": "inv-3001", "partitionId": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d",
                    "status": "completed", "leaseId": "0190a6c4-0000-7000-8000-000000000001",
                    "consumerGroup": "ledger", "error": null}"#,
                r#"{"transactionId": "t", "partitionId": "p", "status": "failed", "error": "boom"}"#,
                r#"{"transactionId": "t", "partitionId": "p", "status": "dlq", "consumerGroup": null}"#,
            ], parse_single),
        route(Method::POST, "/api/v1/ack/batch", ReadWrite, ack_batch)
            .doc(Doc::op(TAG, "Acknowledge several messages")
                .body_of::<AckBatch>(true, "The acks.")
                .fails(400, "`bad body: acknowledgments array is required`, `bad body: acknowledgments[<i>] must be an object`, `bad body: empty request body`, `bad body: <parser message>`.")
                .answers::<Vec<AckResult>>(200, results))
            .reads_body(&[
                r#"{"consumerGroup": "ledger", "acknowledgments": [
                    {"transactionId": "inv-3001", "partitionId": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d",
                     "status": "completed", "leaseId": "0190a6c4-0000-7000-8000-000000000001"},
                    {"transactionId": "inv-3002", "partitionId": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d",
                     "status": "failed", "leaseId": "0190a6c4-0000-7000-8000-000000000001",
                     "error": "tax service timeout"}]}"#,
                r#"{"acknowledgments": []}"#,
            ], parse_batch),
    ]
}

// Every field is read without refusal (`read::lenient`).
/// One ack: a field that is not a non-empty string is absent, and takes its default.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "AckItem")]
pub(crate) struct AckItem {
    /// The message to ack; absent is `""`, which resolves to nothing (an `unresolvable` item,
    /// not a 400).
    #[schemars(with = "Option<String>")]
    transaction_id: Option<Value>,
    /// The partition's UUID (from the pop), not its name.
    #[schemars(with = "Option<String>")]
    partition_id: Option<Value>,
    /// Case-sensitive: absent, null, `completed`, `success`, `acked`, `ok` complete; `retry`
    /// redelivers without charging the retry budget; `dlq` dead-letters at once; `failed` and
    /// ANY other value (even `Completed`) is a nack that charges the budget.
    #[schemars(with = "Option<String>", extend("default" = "completed"))]
    #[schemars(extend("examples" = ["completed", "failed", "retry", "dlq"]))]
    status: Option<Value>,
    /// When given, the ack is checked against that live lease (`invalid or expired lease`
    /// otherwise); without one there is no lease check.
    #[schemars(with = "Option<String>")]
    lease_id: Option<Value>,
    /// The dead-letter reason, if this ack dead-letters.
    #[schemars(with = "Option<String>")]
    error: Option<Value>,
    /// Single route only: the batch route reads the top-level one.
    #[schemars(with = "Option<String>", extend("default" = QUEUE_MODE))]
    consumer_group: Option<Value>,
}

/// The acks of `POST /api/v1/ack/batch`, in order, and their one group.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct AckBatch {
    #[schemars(with = "Vec<AckItem>")]
    acknowledgments: Option<Value>,
    /// The group of every item.
    #[schemars(with = "Option<String>", extend("default" = QUEUE_MODE))]
    consumer_group: Option<Value>,
}

/// A field as the ack contract reads it: anything but a non-empty string is absent.
fn text(v: &Option<Value>) -> Option<String> {
    read::lenient(v.as_ref()).map(str::to_string)
}

/// An ack item's fields; an object always has them (each may be absent).
fn item(v: &Value) -> AckItem {
    read::fields(v).unwrap_or_default()
}

/// One ack as sent, with the contract's defaults for absent or null fields.
pub(crate) fn parse_ack(v: &Value) -> SentAck {
    let f = item(v);
    // A non-string status is "anything else": a nack. Only absent or null completes.
    let status = match &f.status {
        None => AckStatus::normalise(None),
        Some(Value::String(s)) => AckStatus::normalise(Some(s)),
        Some(_) => AckStatus::Failed,
    };
    SentAck {
        transaction_id: text(&f.transaction_id).unwrap_or_default(),
        partition_id: text(&f.partition_id).unwrap_or_default(),
        lease_id: text(&f.lease_id),
        status,
        error: text(&f.error),
    }
}

/// An ack item's group (the single route's, a transaction's ack operation's).
pub(crate) fn group_of(v: &Value) -> String {
    group(&item(v).consumer_group)
}

fn group(v: &Option<Value>) -> String {
    text(v).unwrap_or_else(|| QUEUE_MODE.to_string())
}

/// What became of one ack item.
#[derive(Serialize, JsonSchema)]
pub(crate) struct AckResult {
    /// The item's position in the request.
    index: usize,
    #[serde(rename = "transactionId")]
    transaction_id: String,
    /// The broker carried out the instruction (a correctly processed nack is true).
    success: bool,
    /// Why the item was refused: `consumer not found`, `invalid or expired lease`, `already
    /// committed: the cursor moved past this message before this ack`, `unresolvable:
    /// transaction not in the ack window (hash purged or never pushed); if leased, the
    /// message redelivers`, `ack flush failed; lease will expire and redeliver`, `pool`,
    /// `partition not owned by tenant`, `superseded: …`, or the storage layer's text.
    error: Option<String>,
    /// This ack ended the live lease of its (partition, group).
    #[serde(rename = "leaseReleased")]
    lease_released: bool,
    /// This ack filed a dead letter.
    dlq: bool,
    /// A `completed` at or below the cursor: nothing changed.
    noop: bool,
}

impl AckResult {
    fn of(index: usize, transaction_id: String, o: ItemOutcome) -> AckResult {
        AckResult {
            index,
            transaction_id,
            success: o.success,
            error: o.error,
            lease_released: o.lease_released,
            dlq: o.dlq,
            noop: o.noop,
        }
    }
}

async fn process(
    s: &super::AppState,
    who: &Principal,
    acks: Vec<SentAck>,
    group: &str,
) -> Result<Answer<Vec<AckResult>>, ApiError> {
    let ids: Vec<String> = acks.iter().map(|a| a.transaction_id.clone()).collect();
    let outcomes = s.service.ack(&who.tenant, acks, group).await?;
    let out = ids
        .into_iter()
        .zip(outcomes)
        .enumerate()
        .map(|(i, (id, o))| AckResult::of(i, id, o))
        .collect();
    Ok(Answer(out))
}

async fn ack_single(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Answer<Vec<AckResult>>, ApiError> {
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

async fn ack_batch(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Answer<Vec<AckResult>>, ApiError> {
    let (acks, group) = parse_batch(&body)?;
    process(&s, &who, acks, &group).await
}

/// `POST /api/v1/ack/batch`'s body: the acks, in order, and their one consumer group.
pub(crate) fn parse_batch(body: &RawBody) -> Result<(Vec<SentAck>, String), ApiError> {
    let v = body.ack_json()?;
    // A body that is not an object holds no acknowledgments either.
    let b = read::fields::<AckBatch>(&v).ok();
    let Some(Value::Array(items)) = b.as_ref().and_then(|b| b.acknowledgments.as_ref()) else {
        return Err(ApiError::bad_request(
            "bad body: acknowledgments array is required",
        ));
    };
    if let Some(bad) = items.iter().position(|i| !i.is_object()) {
        return Err(ApiError::bad_request(format!(
            "bad body: acknowledgments[{bad}] must be an object"
        )));
    }
    let group = group(&b.as_ref().and_then(|b| b.consumer_group.clone()));
    Ok((items.iter().map(parse_ack).collect(), group))
}
