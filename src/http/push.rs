//! `POST /api/v1/push`, and the push half of `/api/v1/transaction`.

use std::collections::BTreeMap;

use axum::extract::State as AxState;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use uuid::Uuid;

use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::{AppState, State};
use crate::activity::Op;
use crate::broker::naming::DEFAULT_PARTITION;
use crate::broker::push_plan::repeats;
use crate::peers::Announcement;
use crate::store::push::{append_many, Dedup, NewMessage};
use crate::store::queues::{resolve_partitions, PartitionRef};
use crate::store::StoreError;

/// One validated push item.
#[derive(Clone, Debug)]
pub(crate) struct PushItem {
    pub queue: String,
    pub partition: String,
    /// JSON text, exactly as sent.
    pub payload: Box<RawValue>,
    pub transaction_id: String,
    pub trace_id: Option<Uuid>,
    /// The pushing token's `sub`: set by the route from the verified token, never read from
    /// the body (a client's own `producerSub` is ignored).
    pub producer_sub: Option<String>,
}

/// Stamps the verified token's `sub` on every item (nothing when authentication is off).
pub(crate) fn stamp(items: &mut [PushItem], principal: &Principal) {
    let sub = principal.sub.as_deref();
    for i in items {
        i.producer_sub = sub.map(str::to_string);
    }
}

/// Names and transaction ids are index keys: PostgreSQL cannot store a NUL in text, and a
/// btree entry must fit in a page, so both are refused here rather than by the database.
pub(crate) const MAX_NAME_BYTES: usize = 512;

pub(crate) fn name(field: &str, v: &str) -> Result<String, ApiError> {
    if v.len() > MAX_NAME_BYTES {
        return Err(ApiError::bad_request(format!(
            "{field} must be at most {MAX_NAME_BYTES} bytes"
        )));
    }
    if v.contains('\0') {
        return Err(ApiError::bad_request(format!(
            "{field} must not contain NUL"
        )));
    }
    Ok(v.to_string())
}

/// Validates one item with Queen's texts. Only the small fields are parsed: the payload stays
/// the JSON text the client sent, all the way into the log and back out on pop.
/// `payload_keys` lists where the payload may sit (the transaction route also takes `data`).
pub(crate) fn parse_item(item: &RawValue, payload_keys: &[&str]) -> Result<PushItem, ApiError> {
    /// The fields a push item may carry, each still JSON text; anything else is ignored.
    #[derive(Deserialize)]
    struct Fields<'a> {
        #[serde(borrow)]
        queue: Option<&'a RawValue>,
        #[serde(borrow)]
        partition: Option<&'a RawValue>,
        #[serde(borrow, rename = "transactionId")]
        transaction_id: Option<&'a RawValue>,
        #[serde(borrow, rename = "traceId")]
        trace_id: Option<&'a RawValue>,
        #[serde(borrow, default)]
        payload: Present<'a>,
        #[serde(borrow, default)]
        data: Present<'a>,
    }
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
        Value::String(q) if !q.is_empty() => name("Queue", &q)?,
        Value::String(_) => return Err(ApiError::bad_request("Queue must be a non-empty string")),
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
        payload,
        transaction_id,
        trace_id,
        producer_sub: None,
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

/// The verdict for one pushed item.
/// How many new messages a push wrote.
pub(crate) fn queued(verdicts: &[Verdict]) -> i64 {
    verdicts
        .iter()
        .filter(|v| matches!(v, Verdict::Queued { .. }))
        .count() as i64
}

#[derive(Clone, Debug)]
pub(crate) enum Verdict {
    Queued { message_id: Uuid, partition: Uuid },
    Duplicate { message_id: Uuid, partition: Uuid },
    Failed { error: String },
}

/// Items resolved to partitions, encrypted where their queue asks, deduplicated within the
/// request, and grouped by partition in lock order.
pub(crate) struct Prepared {
    /// Per partition, in id order: the request positions and the messages.
    groups: BTreeMap<Uuid, (Vec<usize>, Vec<NewMessage>)>,
    /// Items that repeat an earlier item of the same request: (item, earlier item).
    repeats: Vec<(usize, usize)>,
    failed: Vec<(usize, String)>,
    /// The queues written to, with how many partitions of each (how many pops to wake).
    queues: Vec<(String, usize)>,
    /// (queue id, partition id) of the partitions created (their consumers should sweep).
    created: Vec<(Uuid, Uuid)>,
    /// (queue id, partition id) of every partition with messages to append.
    partitions: Vec<(Uuid, Uuid)>,
    len: usize,
}

impl Prepared {
    /// What to announce once the transaction has committed.
    pub(crate) fn written(&self, tenant: &str) -> Announcement {
        Announcement {
            tenant: tenant.to_string(),
            queues: self.queues.clone(),
            created: self.created.clone(),
            partitions: self.partitions.clone(),
            reopened: Vec::new(),
        }
    }
}

/// Resolves the items to partitions (creating missing ones) inside the caller's transaction,
/// then builds the messages.
pub(crate) async fn prepare(
    tx: &deadpool_postgres::Transaction<'_>,
    s: &AppState,
    tenant: &str,
    items: &[PushItem],
) -> Result<Prepared, StoreError> {
    let pairs: Vec<(String, String)> = items
        .iter()
        .map(|i| (i.queue.clone(), i.partition.clone()))
        .collect();
    let (parts, created) = resolve_partitions(tx, tenant, &pairs).await?;
    let refs: Vec<&PartitionRef> = pairs
        .iter()
        .map(|k| parts.get(k).expect("resolve_partitions returns every pair"))
        .collect();
    let keys: Vec<(Uuid, &str)> = items
        .iter()
        .zip(&refs)
        .map(|(i, p)| (p.id, i.transaction_id.as_str()))
        .collect();
    let mut prepared = Prepared {
        groups: BTreeMap::new(),
        repeats: vec![],
        failed: vec![],
        queues: vec![],
        created,
        partitions: vec![],
        len: items.len(),
    };
    for (idx, (item, rep)) in items.iter().zip(repeats(&keys)).enumerate() {
        if let Some(first) = rep {
            prepared.repeats.push((idx, first));
            continue;
        }
        let part = refs[idx];
        let encrypted = part.options.encrypted();
        let payload = match (encrypted, &s.cipher) {
            (false, _) => item.payload.clone(),
            (true, Some(c)) => c.encrypt(&item.payload),
            (true, None) => {
                prepared.failed.push((
                    idx,
                    "queue requires encryption but the broker has no QUEEN_ENCRYPTION_KEY".into(),
                ));
                continue;
            }
        };
        if !prepared.groups.contains_key(&part.id) {
            prepared.partitions.push((part.queue_id, part.id));
            match prepared.queues.iter_mut().find(|(q, _)| *q == part.queue) {
                Some((_, n)) => *n += 1,
                None => prepared.queues.push((part.queue.clone(), 1)),
            }
        }
        let group = prepared.groups.entry(part.id).or_default();
        group.0.push(idx);
        group.1.push(NewMessage {
            message_id: Uuid::now_v7(),
            transaction_id: item.transaction_id.clone(),
            payload,
            trace_id: item.trace_id,
            producer_sub: item.producer_sub.clone(),
            encrypted,
        });
    }
    Ok(prepared)
}

/// Appends every group inside the caller's transaction, partitions in id order (the global
/// lock order). Returns one verdict per item.
pub(crate) async fn append_prepared(
    tx: &deadpool_postgres::Transaction<'_>,
    p: &Prepared,
    dedup: Dedup,
) -> Result<Vec<Verdict>, StoreError> {
    let mut out: Vec<Option<Verdict>> = vec![None; p.len];
    let batches: Vec<(Uuid, &[NewMessage])> = p
        .groups
        .iter()
        .map(|(pid, (_, msgs))| (*pid, msgs.as_slice()))
        .collect();
    let appended = append_many(tx, &batches, dedup).await?;
    for ((pid, (idxs, _)), verdicts) in p.groups.iter().zip(appended) {
        for (idx, v) in idxs.iter().zip(verdicts) {
            let (message_id, partition) = (v.message_id, *pid);
            out[*idx] = Some(if v.duplicate {
                Verdict::Duplicate {
                    message_id,
                    partition,
                }
            } else {
                Verdict::Queued {
                    message_id,
                    partition,
                }
            });
        }
    }
    for (idx, error) in &p.failed {
        out[*idx] = Some(Verdict::Failed {
            error: error.clone(),
        });
    }
    for (idx, first) in &p.repeats {
        out[*idx] = Some(match out[*first].clone() {
            Some(Verdict::Queued {
                message_id,
                partition,
            })
            | Some(Verdict::Duplicate {
                message_id,
                partition,
            }) => Verdict::Duplicate {
                message_id,
                partition,
            },
            other => other.expect("an earlier item has a verdict"),
        });
    }
    Ok(out
        .into_iter()
        .map(|v| v.expect("every item has a verdict"))
        .collect())
}

pub async fn push(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Response, ApiError> {
    s.activity.request(Op::Push);
    let raw = body.raw_json()?;
    let items_required = || ApiError::bad_request("items array is required");
    let top: HashMap<String, &RawValue> =
        serde_json::from_str(raw.get()).map_err(|_| items_required())?;
    let list: Vec<&RawValue> = top
        .get("items")
        .and_then(|r| serde_json::from_str(r.get()).ok())
        .ok_or_else(items_required)?;
    let mut items = list
        .into_iter()
        .map(|i| parse_item(i, &["payload"]))
        .collect::<Result<Vec<_>, _>>()?;
    stamp(&mut items, &who);
    if items.is_empty() {
        return Ok((StatusCode::CREATED, Json(json!([]))).into_response());
    }
    // Room under the tenant's cap is held before anything is written, so a refusal is whole.
    let room = s
        .limits
        .reserve(&s.store, &who.tenant, items.len() as i64)
        .await??;
    let (items, verdicts) = s.pushes.push(&who.tenant, items).await?;
    room.committed(queued(&verdicts));
    s.activity.carried(Op::Push, queued(&verdicts) as usize);
    let results: Vec<PushResult<'_>> = items
        .iter()
        .zip(&verdicts)
        .enumerate()
        .map(|(index, (item, v))| {
            let mut r = PushResult {
                index,
                transaction_id: &item.transaction_id,
                status: "queued",
                message_id: None,
                partition_id: None,
                trace_id: None,
                queue_name: None,
                queue: None,
                partition: None,
                error: None,
            };
            match v {
                Verdict::Queued {
                    message_id,
                    partition,
                } => {
                    r.message_id = Some(*message_id);
                    r.partition_id = Some(*partition);
                    r.trace_id = Some(item.trace_id);
                    r.queue_name = Some(&item.queue);
                }
                Verdict::Duplicate {
                    message_id,
                    partition,
                } => {
                    r.status = "duplicate";
                    r.message_id = Some(*message_id);
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
        })
        .collect();
    let body = serde_json::to_string(&results).expect("push results serialise");
    Ok((
        StatusCode::CREATED,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response())
}

/// One element of the push answer, with Queen's mixed key casing.
#[derive(Serialize)]
struct PushResult<'a> {
    index: usize,
    transaction_id: &'a str,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    partition_id: Option<Uuid>,
    /// Present (possibly null) on queued items only.
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_id: Option<Option<Uuid>>,
    #[serde(rename = "queueName", skip_serializing_if = "Option::is_none")]
    queue_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    queue: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    partition: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}
