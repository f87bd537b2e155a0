//! The three pop routes: claim partitions for a consumer group under one lease, long-polling
//! when asked to.

use std::time::Duration;

use axum::extract::State as AxState;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use uuid::Uuid;

use regent_broker::naming::QUEUE_MODE;
use regent_broker::subscription::start_point;
use regent_config::Config;
use regent_service::pop::{Delivery, PopRequest, Popped, Target};

use super::auth::Principal;
use super::error::ApiError;
use super::handover::respond;
use super::params::Params;
use super::path::PathParams;
use super::time::micros;
use super::{AppState, State};

pub async fn pop_queue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(queue): PathParams<String>,
    params: Params,
) -> Result<Response, ApiError> {
    run(&s, &who, Target::Queue(queue), &params).await
}

pub async fn pop_partition(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((queue, partition)): PathParams<(String, String)>,
    params: Params,
) -> Result<Response, ApiError> {
    run(&s, &who, Target::Partition(queue, partition), &params).await
}

/// `GET /api/v1/pop?namespace=…&task=…`: documented by Queen and called by its client when
/// a consumer names no queue.
pub async fn pop_scope(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    params: Params,
) -> Result<Response, ApiError> {
    run(&s, &who, scope(&params)?, &params).await
}

/// `GET /api/v1/pop`'s target: a namespace, a task, or both.
pub(crate) fn scope(params: &Params) -> Result<Target, ApiError> {
    let namespace = params.str("namespace").map(str::to_string);
    let task = params.str("task").map(str::to_string);
    if namespace.is_none() && task.is_none() {
        return Err(ApiError::bad_request("namespace or task is required"));
    }
    Ok(Target::Scope { namespace, task })
}

/// The knobs only the answer needs.
pub(crate) struct Echo {
    autopilot: bool,
    batch: i64,
    partitions: i64,
}

async fn run(
    s: &AppState,
    who: &Principal,
    target: Target,
    p: &Params,
) -> Result<Response, ApiError> {
    let (req, echo) = ask(&s.config, p, target)?;
    let popped = s.service.pop(&who.tenant, &req).await?;
    Ok(answer(popped, &req, &echo))
}

/// The request's knobs with Queen's defaults and clamps.
pub(crate) fn ask(c: &Config, p: &Params, target: Target) -> Result<(PopRequest, Echo), ApiError> {
    let autopilot = p.flag("autopilot", false);
    let default_batch = if autopilot {
        c.autopilot_batch_size
    } else {
        c.default_batch_size
    };
    let batch = p
        .int("batch")
        .unwrap_or(default_batch)
        .clamp(1, c.max_batch_size);
    let partitions = match target {
        Target::Partition(..) => 1,
        _ => p.int("partitions").unwrap_or(1).clamp(1, 1000),
    };
    let timeout_ms = p
        .int("timeout")
        .map(|t| t.max(0) as u64)
        .unwrap_or(c.default_timeout)
        .min(c.max_timeout);
    let mode = p
        .str("subscriptionMode")
        .or(Some(c.default_subscription_mode.as_str()));
    let start = start_point(mode, p.str("subscriptionFrom"), chrono::Utc::now())
        .map_err(|e| ApiError::bad_request(e.0))?;
    let req = PopRequest {
        target,
        batch,
        partitions,
        wait: p.flag("wait", false),
        timeout: Duration::from_millis(timeout_ms),
        group: p.str("consumerGroup").unwrap_or(QUEUE_MODE).to_string(),
        auto_ack: p.flag("autoAck", false),
        start,
    };
    let echo = Echo {
        autopilot,
        batch,
        partitions,
    };
    Ok((req, echo))
}

fn answer(popped: Popped, req: &PopRequest, echo: &Echo) -> Response {
    let empty = |partition_id: Value, lease_id: Value| {
        json!({
            "success": true, "queue": req.target.queue_name(),
            "partition": req.target.partition_name().unwrap_or(""),
            "partitionId": partition_id, "leaseId": lease_id, "consumerGroup": req.group,
            "messages": [],
        })
    };
    let body = match popped {
        Popped::Delivered(d) => return delivered(d, req, echo),
        Popped::Nothing(code) => json!({"success": false, "error": code, "messages": []}),
        Popped::Empty {
            partition_id,
            window_buffer,
        } => {
            let mut body = empty(json!(partition_id), json!(""));
            if window_buffer {
                body["windowBufferActive"] = json!(true);
            }
            body
        }
        Popped::TimedOut => empty(Value::Null, Value::Null),
        Popped::Paused => {
            let mut body = empty(Value::Null, Value::Null);
            body["paused"] = json!(true);
            body
        }
    };
    Json(with_autopilot(body, echo)).into_response()
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

/// The answer with messages, serialised once: payloads go out as the JSON text stored. The
/// lease is handed over with its last bytes.
fn delivered(d: Delivery, req: &PopRequest, echo: &Echo) -> Response {
    let lease = d.lease_id.map(|l| l.to_string()).unwrap_or_default();
    let messages = d
        .partitions
        .iter()
        .flat_map(|part| {
            part.messages.iter().map(|m| MessageOut {
                id: m.message.message_id,
                transaction_id: &m.message.transaction_id,
                trace_id: m.message.trace_id,
                data: &m.message.payload,
                producer_sub: m.message.producer_sub.as_deref(),
                created_at: micros(m.created_at),
                partition_id: part.partition_id,
                partition: &part.partition,
                queue: &part.queue,
                lease_id: &lease,
                consumer_group: &req.group,
            })
        })
        .collect();
    let first = &d.partitions[0];
    let body = MessagesOut {
        success: true,
        queue: &first.queue,
        partition: &first.partition,
        partition_id: first.partition_id,
        lease_id: &lease,
        consumer_group: &req.group,
        partitions_claimed: d.partitions.len(),
        messages,
        autopilot: echo.autopilot.then(|| autopilot_echo(echo)),
    };
    let json = serde_json::to_string(&body).expect("the answer serialises");
    respond(json, d.handover)
}

/// The 1.2+ autopilot echo: what the broker chose for the knobs the client left out.
fn autopilot_echo(e: &Echo) -> Value {
    let mut echo = Map::new();
    echo.insert("partitions".into(), json!(e.partitions));
    echo.insert("batch".into(), json!(e.batch));
    echo.insert("waitMs".into(), json!(0));
    Value::Object(echo)
}

fn with_autopilot(mut body: Value, e: &Echo) -> Value {
    if e.autopilot {
        if let Value::Object(m) = &mut body {
            m.insert("autopilot".into(), autopilot_echo(e));
        }
    }
    body
}
