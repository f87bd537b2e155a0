//! The three pop routes: claim partitions for a consumer group under one lease, long-polling
//! when asked to.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State as AxState;

use super::path::PathParams;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use tokio::time::Instant;
use uuid::Uuid;

use super::auth::Principal;
use super::error::ApiError;
use super::handover::Handover;
use super::params::Params;
use super::time::micros;
use super::{AppState, State};
use crate::activity::Op;
use crate::broker::naming::QUEUE_MODE;
use crate::broker::subscription::{start_point, StartPoint};
use crate::deliveries::Delivered;
use crate::store::pop::{diagnose_empty, pop, DeliveredPartition, EmptyReason, PopRequest, Sweep};
use crate::store::queues::{find_queue, find_scoped, QueueRow};
use crate::wakeup::Due;

/// An answer is sent this long before the client's `timeout`, so it always arrives first.
const DEADLINE_MARGIN: Duration = Duration::from_millis(50);
const FIRST_RECHECK: Duration = Duration::from_millis(100);
const MAX_RECHECK: Duration = Duration::from_secs(1);

/// What a pop may claim from.
enum Target {
    /// Any partition of one queue.
    Queue(String),
    /// One named partition of one queue.
    Partition(String, String),
    /// Any partition of any queue in a namespace and/or task, highest priority first.
    Scope {
        namespace: Option<String>,
        task: Option<String>,
    },
}

impl Target {
    fn queue_name(&self) -> &str {
        match self {
            Target::Queue(q) | Target::Partition(q, _) => q,
            Target::Scope { .. } => "",
        }
    }

    fn partition_name(&self) -> &str {
        match self {
            Target::Partition(_, p) => p,
            _ => "",
        }
    }
}

pub async fn pop_queue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(queue): PathParams<String>,
    params: Params,
) -> Result<Response, ApiError> {
    run(s, &who.tenant, Target::Queue(queue), params).await
}

pub async fn pop_partition(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((queue, partition)): PathParams<(String, String)>,
    params: Params,
) -> Result<Response, ApiError> {
    run(s, &who.tenant, Target::Partition(queue, partition), params).await
}

/// `GET /api/v1/pop?namespace=…&task=…`: documented by Queen and called by its client when
/// a consumer names no queue.
pub async fn pop_scope(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    params: Params,
) -> Result<Response, ApiError> {
    let namespace = params.str("namespace").map(str::to_string);
    let task = params.str("task").map(str::to_string);
    if namespace.is_none() && task.is_none() {
        return Err(ApiError::bad_request("namespace or task is required"));
    }
    run(s, &who.tenant, Target::Scope { namespace, task }, params).await
}

/// The request's knobs, defaults applied.
struct Ask {
    batch: i64,
    partitions: i64,
    wait: bool,
    timeout: Duration,
    group: String,
    auto_ack: bool,
    autopilot: bool,
    start: StartPoint,
}

fn ask(s: &AppState, p: &Params, target: &Target) -> Result<Ask, ApiError> {
    let autopilot = p.flag("autopilot", false);
    let default_batch = if autopilot {
        s.config.autopilot_batch_size
    } else {
        s.config.default_batch_size
    };
    let batch = p
        .int("batch")
        .unwrap_or(default_batch)
        .clamp(1, s.config.max_batch_size);
    let partitions = match target {
        Target::Partition(..) => 1,
        _ => p.int("partitions").unwrap_or(1).clamp(1, 1000),
    };
    let timeout_ms = p
        .int("timeout")
        .map(|t| t.max(0) as u64)
        .unwrap_or(s.config.default_timeout);
    let mode = p
        .str("subscriptionMode")
        .or(Some(s.config.default_subscription_mode.as_str()));
    let start = start_point(mode, p.str("subscriptionFrom"), chrono::Utc::now())
        .map_err(|e| ApiError::bad_request(e.0))?;
    Ok(Ask {
        batch,
        partitions,
        wait: p.flag("wait", false),
        timeout: Duration::from_millis(timeout_ms),
        group: p.str("consumerGroup").unwrap_or(QUEUE_MODE).to_string(),
        auto_ack: p.flag("autoAck", false),
        autopilot,
        start,
    })
}

/// What one attempt found.
enum Found {
    /// The answer, serialised once: payloads go out as the JSON text stored; with the
    /// handover of its lease unless the pop auto-acked.
    Messages(String, Option<Handover>),
    /// A success shape without messages (window buffer filling, nothing readable yet).
    Shape(Value),
    /// Nothing to claim, with Queen's error code.
    Nothing(&'static str),
}

async fn run(
    s: Arc<AppState>,
    tenant: &str,
    target: Target,
    p: Params,
) -> Result<Response, ApiError> {
    s.activity.request(Op::Pop);
    let started = Instant::now();
    let a = ask(&s, &p, &target)?;
    let deadline = started + a.timeout.saturating_sub(DEADLINE_MARGIN);
    let notify = match &target {
        Target::Scope { .. } => s.wakeups.for_tenant(tenant),
        _ => s.wakeups.for_group(tenant, target.queue_name(), &a.group),
    };
    let mut shutdown = s.shutting_down.clone();
    let mut recheck = FIRST_RECHECK;

    loop {
        // Registered before the attempt, so a push that commits during it still wakes us.
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();

        let found = attempt(&s, tenant, &target, &a).await?;
        match found {
            Found::Messages(body, Some(lease)) => return Ok(lease.respond(body)),
            Found::Messages(body, None) => return Ok(json_text(body)),
            Found::Shape(body) if !a.wait => {
                return Ok(Json(with_autopilot(body, &a)).into_response())
            }
            Found::Nothing(code) if !a.wait => {
                let body = json!({"success": false, "error": code, "messages": []});
                return Ok(Json(with_autopilot(body, &a)).into_response());
            }
            _ => {}
        }
        let now = Instant::now();
        if now >= deadline || *shutdown.borrow() {
            let body = json!({
                "success": true, "queue": target.queue_name(), "partition": target.partition_name(),
                "partitionId": null, "leaseId": null, "consumerGroup": a.group, "messages": [],
            });
            return Ok(Json(with_autopilot(body, &a)).into_response());
        }
        tokio::select! {
            _ = &mut notified => recheck = FIRST_RECHECK,
            _ = tokio::time::sleep(recheck.min(deadline - now)) => recheck = (recheck * 2).min(MAX_RECHECK),
            _ = shutdown.changed() => {}
        }
    }
}

/// One claim-and-read over the target's queues, in one transaction.
async fn attempt(
    s: &Arc<AppState>,
    tenant: &str,
    target: &Target,
    a: &Ask,
) -> Result<Found, ApiError> {
    // The lookup's connection goes back to the pool before the transaction takes another:
    // holding both would let as many concurrent pops as the pool has connections wait on
    // each other forever.
    let queues: Vec<QueueRow> = {
        let client = s.store.client().await?;
        match target {
            Target::Queue(q) | Target::Partition(q, _) => {
                find_queue(&client, tenant, q).await?.into_iter().collect()
            }
            Target::Scope { namespace, task } => {
                find_scoped(&client, tenant, namespace.as_deref(), task.as_deref()).await?
            }
        }
    };
    let partition = match target {
        Target::Partition(_, p) => Some(p.as_str()),
        _ => None,
    };
    if queues.is_empty() {
        return Ok(Found::Nothing(if partition.is_some() {
            "partition_not_found"
        } else {
            "no_available_partition"
        }));
    }

    // A partition route sweeps only its own partition, so it keeps its own clock: it must not
    // stand in for the queue-wide sweep of the same group.
    let sweep_key = match partition {
        Some(p) => format!("{}\u{0}{p}", a.group),
        None => a.group.clone(),
    };
    let lease_id = Uuid::now_v7();
    // Before the claim: if this request is dropped from here on, what it claimed is released.
    let handover = (!a.auto_ack).then(|| Handover::open(s, lease_id, tenant));
    let (claimed, reason) = crate::in_transaction!(s.store, |tx| {
        let mut claimed: Vec<(&QueueRow, DeliveredPartition)> = Vec::new();
        let (mut batch, mut partitions) = (a.batch, a.partitions);
        for q in &queues {
            if batch == 0 || partitions == 0 {
                break;
            }
            let due = s.cursor_sweeps.due(q.id, &sweep_key);
            // Once a second per group (with the full sweep) the claim walks in claim order
            // regardless of the ready list, so a partition whose hint was lost (its lease
            // expired, another broker pushed) is served within the interval.
            let hint = match (partition, &due) {
                (Some(_), _) | (None, Due::All) => Vec::new(),
                (None, _) => s.ready.take(q.id, &a.group, partitions as usize),
            };
            let req = PopRequest {
                hint: &hint,
                queue_id: q.id,
                lease_id,
                partition,
                group: &a.group,
                start: a.start,
                max_partitions: partitions,
                batch,
                lease_seconds: q.options.lease_seconds(),
                delayed_processing_seconds: q.options.delayed_processing_seconds(),
                window_buffer_seconds: q.options.window_buffer_seconds(),
                auto_ack: a.auto_ack,
                sweep: match &due {
                    Due::No => Sweep::No,
                    Due::All => Sweep::All,
                    Due::Only(ids) => Sweep::Only(ids),
                },
            };
            for d in pop(tx, &req).await?.partitions {
                batch -= d.messages.len() as i64;
                partitions -= 1;
                claimed.push((q, d));
            }
        }
        let reason = match (partition, claimed.is_empty()) {
            (Some(name), true) => Some(
                diagnose_empty(
                    tx,
                    queues[0].id,
                    name,
                    &a.group,
                    queues[0].options.window_buffer_seconds(),
                )
                .await?,
            ),
            _ => None,
        };
        Ok((claimed, reason))
    })?;

    if !claimed.is_empty() {
        s.activity
            .carried(Op::Pop, claimed.iter().map(|(_, d)| d.messages.len()).sum());
        if !a.auto_ack {
            remember(s, lease_id, &claimed);
        }
        let lease = (!a.auto_ack).then_some(lease_id);
        return Ok(Found::Messages(
            messages_body(s, a, lease, claimed),
            handover,
        ));
    }
    if let Some(h) = handover {
        h.claimed_nothing();
    }
    let empty = |partition_id: Value| {
        json!({
            "success": true, "queue": target.queue_name(), "partition": target.partition_name(),
            "partitionId": partition_id, "leaseId": "", "consumerGroup": a.group, "messages": [],
        })
    };
    Ok(match reason {
        None => Found::Nothing("no_available_partition"),
        Some(EmptyReason::PartitionNotFound) => Found::Nothing("partition_not_found"),
        Some(EmptyReason::LeaseHeld) => Found::Nothing("lease_held"),
        Some(EmptyReason::WindowBufferActive { partition_id }) => {
            let mut body = empty(json!(partition_id));
            body["windowBufferActive"] = json!(true);
            Found::Shape(body)
        }
        Some(EmptyReason::NothingReadable) => Found::Shape(empty(Value::Null)),
    })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MessageOut<'a> {
    id: Uuid,
    transaction_id: &'a str,
    trace_id: Option<Uuid>,
    data: &'a RawValue,
    producer_sub: Option<&'a str>,
    created_at: String,
    partition_id: Uuid,
    partition: &'a str,
    queue: &'a str,
    lease_id: &'a str,
    consumer_group: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MessagesOut<'a> {
    success: bool,
    queue: &'a str,
    partition: &'a str,
    partition_id: Uuid,
    lease_id: &'a str,
    consumer_group: &'a str,
    partitions_claimed: usize,
    messages: Vec<MessageOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    autopilot: Option<Value>,
}

fn messages_body(
    s: &AppState,
    a: &Ask,
    lease: Option<Uuid>,
    claimed: Vec<(&QueueRow, DeliveredPartition)>,
) -> String {
    let lease = lease.map(|l| l.to_string()).unwrap_or_default();
    // Decrypted payloads need an owner that outlives the borrowed answer.
    let decrypted: Vec<Vec<Option<Box<RawValue>>>> = claimed
        .iter()
        .map(|(q, part)| {
            part.messages
                .iter()
                .map(|m| {
                    m.encrypted.then(|| {
                        match s.cipher.as_ref().map(|c| c.decrypt(&m.payload)) {
                            Some(Ok(v)) => v,
                            _ => {
                                tracing::warn!(queue = %q.name, "cannot decrypt payload; delivering the envelope");
                                m.payload.clone()
                            }
                        }
                    })
                })
                .collect()
        })
        .collect();
    let mut messages = Vec::new();
    for ((q, part), plain) in claimed.iter().zip(&decrypted) {
        for (m, p) in part.messages.iter().zip(plain) {
            messages.push(MessageOut {
                id: m.message_id,
                transaction_id: &m.transaction_id,
                trace_id: m.trace_id,
                data: p.as_deref().unwrap_or(&m.payload),
                producer_sub: m.producer_sub.as_deref(),
                created_at: micros(m.created_at),
                partition_id: part.partition_id,
                partition: &part.partition,
                queue: &q.name,
                lease_id: &lease,
                consumer_group: &a.group,
            });
        }
    }
    let (first_queue, first) = (&claimed[0].0.name, &claimed[0].1);
    let body = MessagesOut {
        success: true,
        queue: first_queue,
        partition: &first.partition,
        partition_id: first.partition_id,
        lease_id: &lease,
        consumer_group: &a.group,
        partitions_claimed: claimed.len(),
        messages,
        autopilot: a.autopilot.then(|| autopilot_echo(a)),
    };
    serde_json::to_string(&body).expect("the answer serialises")
}

/// A JSON answer already serialised.
fn json_text(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The 1.2+ autopilot echo: what the broker chose for the knobs the client left out.
fn autopilot_echo(a: &Ask) -> Value {
    let mut echo = Map::new();
    echo.insert("partitions".into(), json!(a.partitions));
    echo.insert("batch".into(), json!(a.batch));
    echo.insert("waitMs".into(), json!(0));
    Value::Object(echo)
}

fn with_autopilot(mut body: Value, a: &Ask) -> Value {
    if a.autopilot {
        if let Value::Object(m) = &mut body {
            m.insert("autopilot".into(), autopilot_echo(a));
        }
    }
    body
}

/// Records what the lease delivered, so its acks resolve without the transaction index.
fn remember(s: &AppState, lease_id: Uuid, claimed: &[(&QueueRow, DeliveredPartition)]) {
    let lasts = claimed
        .iter()
        .map(|(q, _)| q.options.lease_seconds())
        .max()
        .unwrap_or_default();
    s.deliveries.record(
        lease_id,
        Duration::from_secs(lasts.max(0) as u64),
        claimed.iter().flat_map(|(_, d)| {
            d.messages.iter().map(|m| Delivered {
                partition: d.partition_id,
                transaction_id: &m.transaction_id,
                offset: m.offset,
                created_at: m.created_at,
            })
        }),
    );
}
