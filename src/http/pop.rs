//! The pop routes: claim partitions for a consumer group under a lease, long-polling when
//! asked to.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State as AxState};
use axum::Json;
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use super::error::ApiError;
use super::params::Params;
use super::time::micros;
use super::{AppState, State};
use crate::broker::naming::QUEUE_MODE;
use crate::broker::subscription::start_point;
use crate::store::pop::{diagnose_empty, pop, EmptyReason, PopOutcome, PopRequest};
use crate::store::queues::{find_queue, QueueRow};

/// An answer is sent this long before the client's `timeout`, so it always arrives first.
const DEADLINE_MARGIN: Duration = Duration::from_millis(50);
const FIRST_RECHECK: Duration = Duration::from_millis(100);
const MAX_RECHECK: Duration = Duration::from_secs(1);

pub async fn pop_queue(
    AxState(s): State,
    Path(queue): Path<String>,
    params: Params,
) -> Result<Json<Value>, ApiError> {
    run(s, queue, None, params).await.map(Json)
}

pub async fn pop_partition(
    AxState(s): State,
    Path((queue, partition)): Path<(String, String)>,
    params: Params,
) -> Result<Json<Value>, ApiError> {
    run(s, queue, Some(partition), params).await.map(Json)
}

struct Ask {
    batch: i64,
    partitions: i64,
    wait: bool,
    timeout: Duration,
    group: String,
    auto_ack: bool,
    autopilot: bool,
}

fn ask(s: &AppState, p: &Params, partition_route: bool) -> Ask {
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
    let partitions = if partition_route {
        1
    } else {
        p.int("partitions").unwrap_or(1).clamp(1, 1000)
    };
    let timeout_ms = p
        .int("timeout")
        .map(|t| t.max(0) as u64)
        .unwrap_or(s.config.default_timeout);
    Ask {
        batch,
        partitions,
        wait: p.flag("wait", false),
        timeout: Duration::from_millis(timeout_ms),
        group: p.str("consumerGroup").unwrap_or(QUEUE_MODE).to_string(),
        auto_ack: p.flag("autoAck", false),
        autopilot,
    }
}

async fn run(
    s: Arc<AppState>,
    queue: String,
    partition: Option<String>,
    p: Params,
) -> Result<Value, ApiError> {
    let started = Instant::now();
    let a = ask(&s, &p, partition.is_some());
    let mode = p
        .str("subscriptionMode")
        .or(Some(s.config.default_subscription_mode.as_str()));
    let start = start_point(mode, p.str("subscriptionFrom"), chrono::Utc::now())
        .map_err(|e| ApiError::bad_request(e.0))?;
    let tenant = s.tenant();
    let deadline = started + a.timeout.saturating_sub(DEADLINE_MARGIN);
    let notify = s.wakeups.for_queue(tenant, &queue);
    let mut shutdown = s.shutting_down.clone();
    let mut recheck = FIRST_RECHECK;

    loop {
        // Registered before the attempt, so a push that commits during it still wakes us.
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();

        // The lookup's connection goes back to the pool before the attempt takes another:
        // holding both would let as many concurrent pops as the pool has connections
        // wait on each other forever.
        let found = find_queue(&s.store.client().await?, tenant, &queue).await?;
        let outcome = match found {
            None => Err(if partition.is_some() {
                "partition_not_found"
            } else {
                "no_available_partition"
            }),
            Some(q) => attempt(&s, &q, partition.as_deref(), &a, start).await?,
        };
        match outcome {
            Ok(Delivery::Messages(body)) => return Ok(with_autopilot(body, &a)),
            Ok(Delivery::Shape(body)) if !a.wait => return Ok(with_autopilot(body, &a)),
            Err(code) if !a.wait => {
                return Ok(with_autopilot(
                    json!({"success": false, "error": code, "messages": []}),
                    &a,
                ))
            }
            _ => {}
        }
        let now = Instant::now();
        if now >= deadline || *shutdown.borrow() {
            return Ok(with_autopilot(
                json!({
                    "success": true, "queue": queue, "partition": partition.clone().unwrap_or_default(),
                    "partitionId": null, "leaseId": null, "consumerGroup": a.group, "messages": [],
                }),
                &a,
            ));
        }
        tokio::select! {
            _ = &mut notified => recheck = FIRST_RECHECK,
            _ = tokio::time::sleep(recheck.min(deadline - now)) => recheck = (recheck * 2).min(MAX_RECHECK),
            _ = shutdown.changed() => {}
        }
    }
}

enum Delivery {
    Messages(Value),
    /// An answer without messages that is still a success shape (window buffer, nothing
    /// readable yet).
    Shape(Value),
}

async fn attempt(
    s: &AppState,
    q: &QueueRow,
    partition: Option<&str>,
    a: &Ask,
    start: crate::broker::subscription::StartPoint,
) -> Result<Result<Delivery, &'static str>, ApiError> {
    let req = PopRequest {
        queue_id: q.id,
        partition,
        group: &a.group,
        start,
        max_partitions: a.partitions,
        batch: a.batch,
        lease_seconds: q.options.lease_seconds(),
        delayed_processing_seconds: q.options.delayed_processing_seconds(),
        window_buffer_seconds: q.options.window_buffer_seconds(),
        auto_ack: a.auto_ack,
    };
    let (out, reason) = crate::in_transaction!(s.store, |tx| {
        let out = pop(tx, &req).await?;
        let reason = match (partition, out.partitions.is_empty()) {
            (Some(name), true) => {
                Some(diagnose_empty(tx, q.id, name, &a.group, req.window_buffer_seconds).await?)
            }
            _ => None,
        };
        Ok((out, reason))
    })?;
    if !out.partitions.is_empty() {
        return Ok(Ok(Delivery::Messages(messages_body(s, q, a, out))));
    }
    let base = |partition_id: Value, extra: Option<(&str, Value)>| {
        let mut m = json!({
            "success": true, "queue": q.name, "partition": partition.unwrap_or(""),
            "partitionId": partition_id, "leaseId": "", "consumerGroup": a.group, "messages": [],
        });
        if let Some((k, v)) = extra {
            m[k] = v;
        }
        m
    };
    Ok(match reason {
        None => Err("no_available_partition"),
        Some(EmptyReason::PartitionNotFound) => Err("partition_not_found"),
        Some(EmptyReason::LeaseHeld) => Err("lease_held"),
        Some(EmptyReason::WindowBufferActive { partition_id }) => Ok(Delivery::Shape(base(
            json!(partition_id),
            Some(("windowBufferActive", json!(true))),
        ))),
        Some(EmptyReason::NothingReadable) => Ok(Delivery::Shape(base(Value::Null, None))),
    })
}

fn messages_body(s: &AppState, q: &QueueRow, a: &Ask, out: PopOutcome) -> Value {
    let lease = out.lease_id.map(|l| l.to_string()).unwrap_or_default();
    let first = &out.partitions[0];
    let (first_name, first_id) = (first.partition.clone(), first.partition_id);
    let claimed = out.partitions.len();
    let mut messages = Vec::new();
    for part in out.partitions {
        for m in part.messages {
            let data = if m.encrypted {
                match s.cipher.as_ref().map(|c| c.decrypt(&m.payload)) {
                    Some(Ok(v)) => v,
                    _ => {
                        tracing::warn!(queue = %q.name, "cannot decrypt payload; delivering the envelope");
                        m.payload
                    }
                }
            } else {
                m.payload
            };
            messages.push(json!({
                "id": m.message_id, "transactionId": m.transaction_id, "traceId": m.trace_id,
                "data": data, "producerSub": m.producer_sub, "createdAt": micros(m.created_at),
                "partitionId": part.partition_id, "partition": part.partition, "queue": q.name,
                "leaseId": lease, "consumerGroup": a.group,
            }));
        }
    }
    json!({
        "success": true, "queue": q.name, "partition": first_name, "partitionId": first_id,
        "leaseId": lease, "consumerGroup": a.group, "partitionsClaimed": claimed,
        "messages": messages,
    })
}

/// The 1.2+ autopilot echo: what the broker chose for the knobs the client left out.
fn with_autopilot(mut body: Value, a: &Ask) -> Value {
    if a.autopilot {
        if let Value::Object(m) = &mut body {
            let mut echo = Map::new();
            echo.insert("partitions".into(), json!(a.partitions));
            echo.insert("batch".into(), json!(a.batch));
            echo.insert("waitMs".into(), json!(0));
            m.insert("autopilot".into(), Value::Object(echo));
        }
    }
    body
}
