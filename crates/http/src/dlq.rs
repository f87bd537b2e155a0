//! `GET /api/v1/dlq`: dead letters, newest failure first, with the `total` the Python client
//! reads.

use axum::extract::State as AxState;
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::auth::Principal;
use super::error::ApiError;
use super::params::Params;
use super::time::millis;
use super::State;
use regent_service::dead_letters::Filter;

fn instant(p: &Params, key: &str) -> Result<Option<DateTime<Utc>>, ApiError> {
    p.str(key)
        .map(|s| {
            DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| ApiError::bad_request(format!("{key} must be an ISO-8601 timestamp")))
        })
        .transpose()
}

pub async fn list(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let filter = Filter {
        queue: p.str("queue"),
        group: p.str("consumerGroup"),
        partition: p.str("partition"),
        from: instant(&p, "from")?,
        to: instant(&p, "to")?,
        limit: p.int("limit").unwrap_or(100).clamp(1, 1000),
        offset: p.int("offset").unwrap_or(0).max(0),
    };
    let (letters, total) = s.service.dead_letters(&who.tenant, &filter).await?;
    let messages: Vec<Value> = letters
        .into_iter()
        .map(|d| {
            let m = d.message.message;
            json!({
                "deadLetterId": d.id, "id": m.message_id, "transactionId": m.transaction_id,
                "partitionId": d.partition_id, "queue": d.queue, "partition": d.partition,
                "consumerGroup": d.group, "errorMessage": d.error, "retryCount": d.retry_count,
                "data": m.payload, "producerSub": m.producer_sub, "traceId": m.trace_id,
                "createdAt": millis(d.message.created_at), "failedAt": millis(d.failed_at),
            })
        })
        .collect();
    Ok(Json(json!({
        "messages": messages,
        "pagination": { "limit": filter.limit, "offset": filter.offset },
        "total": total,
    })))
}
