//! `POST /api/v1/configure`: create a queue or replace its whole configuration.

use axum::extract::State as AxState;
use axum::{Extension, Json};
use serde_json::{json, Map, Value};

use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::time::millis;
use super::State;
use regent_broker::options::{QueueOptions, BOOL_DEFAULTS, DLQ_FLAGS, INT_DEFAULTS};
use regent_service::queues::Configure;

/// The configure body, read.
pub(crate) struct ConfigureBody {
    pub queue: String,
    pub namespace: String,
    pub task: String,
    pub options: QueueOptions,
}

pub(crate) fn parse_configure(body: &RawBody) -> Result<ConfigureBody, ApiError> {
    let v = body.json()?;
    // An empty name is a name, as in Queen 0.15 (a push may name it too).
    let queue = match v.get("queue") {
        Some(Value::String(q)) => super::push::name("queue", q)?,
        _ => return Err(ApiError::bad_request("queue is required")),
    };
    let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let options = match v.get("options") {
        None | Some(Value::Null) => QueueOptions::default(),
        Some(Value::Object(o)) => parse_options(o)?,
        Some(_) => return Err(ApiError::bad_request("options must be an object")),
    };
    Ok(ConfigureBody {
        queue,
        namespace: text("namespace"),
        task: text("task"),
        options,
    })
}

pub async fn configure(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Json<Value>, ApiError> {
    let c = parse_configure(&body)?;
    let configure = Configure {
        name: &c.queue,
        namespace: &c.namespace,
        task: &c.task,
        options: &c.options,
    };
    let (q, default_partition) = s.service.configure(&who.tenant, &configure).await?;
    let row = q.row;
    Ok(Json(json!({
        "configured": true,
        "queueId": row.id,
        "partitionId": default_partition,
        "queue": row.name,
        "namespace": row.namespace,
        "task": row.task,
        "createdAt": millis(row.created_at),
        "options": echo_options(&q.options),
    })))
}

/// Integers may come as JSON numbers or numeric strings (Queen casts through text); `null`
/// is the same as absent. Anything else is the client's mistake.
fn parse_options(o: &Map<String, Value>) -> Result<QueueOptions, ApiError> {
    let int = |k: &str| -> Result<Option<i64>, ApiError> {
        match o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
                .map(Some)
                .ok_or_else(|| ApiError::bad_request(format!("{k} must be an integer"))),
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| ApiError::bad_request(format!("{k} must be an integer"))),
            Some(_) => Err(ApiError::bad_request(format!("{k} must be an integer"))),
        }
    };
    let flag = |k: &str| -> Result<Option<bool>, ApiError> {
        match o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s == "true" => Ok(Some(true)),
            Some(Value::String(s)) if s == "false" => Ok(Some(false)),
            Some(_) => Err(ApiError::bad_request(format!("{k} must be a boolean"))),
        }
    };
    let opts = QueueOptions {
        lease_time: int("leaseTime")?,
        retry_limit: int("retryLimit")?,
        retry_delay: int("retryDelay")?,
        max_size: int("maxSize")?,
        ttl: int("ttl")?,
        dead_letter_queue: flag("deadLetterQueue")?,
        dlq_after_max_retries: flag("dlqAfterMaxRetries")?,
        priority: int("priority")?,
        delayed_processing: int("delayedProcessing")?,
        window_buffer: int("windowBuffer")?,
        retention_seconds: int("retentionSeconds")?,
        completed_retention_seconds: int("completedRetentionSeconds")?,
        retention_enabled: flag("retentionEnabled")?,
        encryption_enabled: flag("encryptionEnabled")?,
        max_wait_time_seconds: int("maxWaitTimeSeconds")?,
    };
    for (k, v) in [
        ("leaseTime", opts.lease_time),
        ("retryLimit", opts.retry_limit),
        ("delayedProcessing", opts.delayed_processing),
        ("windowBuffer", opts.window_buffer),
    ] {
        if v.is_some_and(|n| n < 0) {
            return Err(ApiError::bad_request(format!("{k} must not be negative")));
        }
    }
    Ok(opts)
}

/// Every option with its effective value; the dead-letter flags as stored, `null` meaning
/// "never set", so the tri-state that decides dead-lettering is visible.
pub(crate) fn echo_options(o: &QueueOptions) -> Value {
    let stored = serde_json::to_value(o).expect("options serialize");
    let mut out = Map::new();
    for (k, d) in INT_DEFAULTS {
        out.insert(k.into(), stored.get(k).cloned().unwrap_or(json!(d)));
    }
    for k in DLQ_FLAGS {
        out.insert(k.into(), stored.get(k).cloned().unwrap_or(Value::Null));
    }
    for k in BOOL_DEFAULTS {
        out.insert(k.into(), stored.get(k).cloned().unwrap_or(json!(false)));
    }
    Value::Object(out)
}
